"""Safety: read-only really is read-only, every operator write is audited,
secrets are masked in what the CLI shows, stored data is only ever parsed as
JSON and workflow code is imported only from registered apps."""

from __future__ import annotations

import ast
import asyncio
import inspect
import json
import sqlite3
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from console.cli import cli
from engine import Content, Runner
from engine.apps import AppRegistry, AppUnavailableError
from engine.errors import HitlError, ReadOnlyError
from engine.models import Session
from engine.redact import DEFAULT_SECRET_PATTERNS, MASK, is_secret_key, mask, mask_event, secret_patterns
from engine.store.sqlite import SQLiteStore
from engine.store.workers import Settle
from tests.cli.conftest import json_lines, ok, operator_error

from . import secret_app
from .conftest import REPO, Hitl, logical_dump, read_commands

# ------------------------------------------------------------------ read-only

READS = {
    "get_session",
    "deadline_timers",  # builds the timers object; its writes are refused by the read-only connection
    "notification_ledger",  # builds the ledger object; likewise
    "metric_reads",
    "list_sessions",
    "events",
    "event_at",
    "event_rows",
    "invocation_events",
    "lease_and_news",
    "corrupt_events",
    "list_invocations",
    "invocation_count",
    "lookup_interrupts",
    "open_interrupts",
    "get_snapshot",
    "snapshot_and_events",
    "get_projection_checkpoint",
    "last_projection_checkpoint",
    "export_session",
    "get_lease",
    "list_leases",
    "leases_of",
    "audit_log",
    "integrity_check",
    "close",
    "turn_requests",
    "turn_requests_of",
    "get_turn_request",
    "interrupted_turns",
    "settled_held_requests",
    "list_workers",
    "change_counter",
    "overview",
}


def _write_calls(store: SQLiteStore, lines: list[str]) -> dict[str, Any]:
    """One call of every SQLiteStore method that writes."""
    from engine.models import Event

    ev = Event(invocation_id="inv", author="user", content=Content.from_text("x"))
    return {
        "create_session": lambda: store.create_session("app", "u", "new"),
        "append_event": lambda: store.append_event("refund-waiting-1", ev),
        "append_events": lambda: store.append_events("refund-waiting-1", [ev]),
        "put_snapshot": lambda: store.put_snapshot("refund-waiting-1", "inv", 1, {}),
        "put_projection_checkpoints": lambda: store.put_projection_checkpoints("refund-waiting-1", [(1, {})]),
        "import_session": lambda: store.import_session(lines, session_id="copy", operator="x"),
        "bulk_load": lambda: store.bulk_load([(Session(id="b", app_name="a", user_id="u"), [ev])]),
        "acquire_lease": lambda: store.acquire_lease("refund-waiting-1", "inv", "me", 60),
        "renew_lease": lambda: store.renew_lease("refund-waiting-1", "inv", "me", 60),
        "release_lease": lambda: store.release_lease("refund-waiting-1", "inv", "me"),
        "acquire_and_append": lambda: store.acquire_and_append("refund-waiting-1", "inv", [ev], owner="me", ttl=60),
        "append_and_release": lambda: store.append_and_release("refund-waiting-1", "inv", [ev], owner="me"),
        "append_and_settle": lambda: store.append_and_settle(
            "refund-waiting-1", "inv", [ev], owner="me", settle=Settle("me", 1.0)
        ),
        "checkpoint": lambda: store.checkpoint(),
        **_worker_write_calls(store),
    }


def _worker_write_calls(store: SQLiteStore) -> dict[str, Any]:
    """The workers' writes (issue 18)."""
    from engine.store.workers import TurnRequest, WorkerRecord

    req = TurnRequest(app_name="a", session_id="refund-waiting-1", invocation_id="inv", kind="continue", requested_at=1.0)
    worker = WorkerRecord(worker_id="w", host="h", pid=1, apps=["a"], started_at=1.0, heartbeat_at=1.0, stale_after=1.0)
    return {
        "request_turn": lambda: store.request_turn(req),
        "claim_turn_request": lambda: store.claim_turn_request("refund-waiting-1", "inv", "me", 60),
        "unclaim_turn_request": lambda: store.unclaim_turn_request("refund-waiting-1", "inv", "me"),
        "drop_turn_request": lambda: store.drop_turn_request("refund-waiting-1", "inv"),
        "invocation_graph": lambda: store.invocation_graph("refund-waiting-1", "inv", "g"),
        "put_worker": lambda: store.put_worker(worker),
        "drop_worker": lambda: store.drop_worker("w"),
        "append_and_queue": lambda: store.append_and_queue(
            "refund-waiting-1", "inv", [], owner="me", invocation_after=None, request=req
        ),
        "claim_next_turn": lambda: store.claim_next_turn(["a"], "me", 60),
        "finish_turn_request": lambda: store.finish_turn_request("refund-waiting-1", "inv", "me", 1.0),
        "adopt_turn": lambda: store.adopt_turn(req),
        "drop_held_request": lambda: store.drop_held_request(req),
    }


async def refuses_every_write(
    store: Any, cls: type, reads: set[str], write_calls: Callable[[Any, list[str]], dict[str, Any]]
) -> None:
    """Every public method of ``cls``, the read-only ``store``'s class, is one of ``reads`` or one of
    ``write_calls(store, lines)``, and each of those is refused, nothing written."""
    public = {n for n, v in inspect.getmembers(cls) if not n.startswith("_") and callable(v)} - {"open"}
    lines = [line async for line in store.export_session("refund-waiting-1")]
    writes = write_calls(store, lines)
    # Every public method is either a known read or a write tested here: a new
    # method must be classified before this test passes again.
    assert public == reads | set(writes), sorted(public ^ (reads | set(writes)))
    for call in writes.values():
        with pytest.raises(ReadOnlyError, match="read-only; nothing was written"):
            await call()


async def test_no_write_path_of_a_read_only_sqlite_store_is_reachable(db: Path) -> None:
    before, before_bytes = logical_dump(db), db.read_bytes()
    async with SQLiteStore.open(db, read_only=True) as store:
        await refuses_every_write(store, SQLiteStore, READS, _write_calls)
        # Below the Python checks, the connection itself cannot write (mode=ro, query_only).
        assert store._driver is not None
        with pytest.raises(sqlite3.OperationalError, match="readonly|read-only|query_only"):
            await store._driver.run(lambda conn: conn.execute("DELETE FROM events"))
        assert (await store.get_session("refund-waiting-1")).last_seq > 0  # reads work
    assert logical_dump(db) == before
    assert db.read_bytes() == before_bytes


WRITING_COMMANDS = {
    "resume": ["resume", "refund-waiting-1", 'finance-order-1001={"approved": true}'],
    "redrive": ["redrive", "incident-failed-1", "-"],  # the invocation id is filled in
    "cancel": ["cancel", "refund-waiting-1", "-"],
    "import": ["import", "-"],  # the export file is filled in
    "demo": ["demo"],
    "migrate": ["migrate"],
    "copy": ["copy", "--from", "-", "--to", "-"],  # the stores are filled in
    "start": ["start", "refund_approval", "--session", "read-only-1", "order-9"],
    "worker": ["worker", "--app", "refund_approval=sample_sessions.refund_approval:workflow"],
    "bulk-answer": ["bulk-answer", "node=finance_approval", "--answer", '{"approved": true}'],
    "notify": ["notify", "--once"],
    "claim": ["claim", "refund-waiting-1", "finance-order-1001"],
    "assign": ["assign", "refund-waiting-1", "finance-order-1001", "--to", "ann"],
    "release": ["release", "refund-waiting-1", "finance-order-1001"],
}
READING_COMMANDS = {
    "sessions": ["sessions"],
    "show": ["show", "refund-partial-1"],
    "inbox": ["inbox"],
    "events": ["events", "refund-partial-1"],
    "replay": ["replay", "refund-partial-1"],
    "export": ["export", "refund-partial-1"],
    "audit": ["audit"],
    "workers": ["workers"],
    "notifications": ["notifications"],
}
CONFIGURED_READS = {"link"}
"""Reads only, and needs [notify] public_url and a link secret in hitl.toml
(tests/notify/test_answer_links.py runs it)."""
SERVING_COMMANDS = {"serve"}
"""Runs until stopped; writes only through the consoles it starts, which --read-only makes
read-only (tests/browser/test_serve_units.py::test_viewer_console_is_read_only_and_pinned)."""


def _invocation(hitl: Hitl, session: str) -> str:
    return json.loads(ok(hitl("--json", "show", session)))["invocations"][0]["invocation_id"]


def test_every_writing_cli_command_fails_with_read_only_and_writes_nothing(
    hitl: Hitl, db: Path, tmp_path: Path
) -> None:
    assert set(cli.commands) == set(WRITING_COMMANDS) | set(READING_COMMANDS) | CONFIGURED_READS | SERVING_COMMANDS, (
        "classify the new command"
    )
    export = tmp_path / "export.jsonl"
    export.write_text(ok(hitl("export", "refund-partial-1")))
    args = {k: list(v) for k, v in WRITING_COMMANDS.items()}
    args["redrive"][2] = _invocation(hitl, "incident-failed-1")
    args["cancel"][2] = _invocation(hitl, "refund-waiting-1")
    args["import"] = ["import", str(export), "--as", "copy"]
    args["copy"] = ["copy", "--from", str(db), "--to", str(tmp_path / "copy.sqlite")]
    before, before_bytes = logical_dump(db), db.read_bytes()
    for name, argv in args.items():
        for placement in (["--read-only", *argv], [*argv, "--read-only"]):
            operator_error(hitl(*placement), "read-only")
        assert logical_dump(db) == before, f"hitl {name} --read-only wrote something"
    assert db.read_bytes() == before_bytes
    for argv in READING_COMMANDS.values():
        ok(hitl("--read-only", *argv))
    ok(hitl("--read-only", "resume", "refund-waiting-1", 'finance-order-1001={"approved": true}', "--dry-run"))
    ok(hitl("--read-only", "bulk-answer", "node=finance_approval", "--answer", '{"approved": true}', "--dry-run"))
    assert logical_dump(db) == before


async def test_the_read_only_console_opens_the_store_read_only(db: Path) -> None:
    from console.app import HitlApp

    before = logical_dump(db)
    app = HitlApp(db_path=db, read_only=True, poll_interval=None, refresh_interval=None, cursor_blink=False)
    async with app.run_test() as pilot:
        for _ in range(50):
            await pilot.pause(0.02)
            if app._store is not None:
                break
        store = app.store
        assert store.read_only is True
        for call in _write_calls(store, []).values():  # type: ignore[arg-type]
            with pytest.raises(ReadOnlyError):
                await call()
    assert logical_dump(db) == before


# ---------------------------------------------------------------------- audit


def test_every_operator_write_is_audited_and_listed(hitl: Hitl, db: Path, tmp_path: Path) -> None:
    t0 = time.time()
    ok(hitl("resume", "refund-waiting-1", 'finance-order-1001={"approved": true}', "--operator", "ann", "--reason", "r1"))
    ok(hitl("redrive", "incident-failed-1", _invocation(hitl, "incident-failed-1"), "--operator", "bob", "--reason", "r2"))
    ok(hitl("cancel", "refund-partial-1", _invocation(hitl, "refund-partial-1"), "--operator", "ann", "--reason", "r3"))
    export = tmp_path / "e.jsonl"
    export.write_text(ok(hitl("export", "refund-completed-1")))
    n_events = len(export.read_text().splitlines()) - 1
    ok(hitl("import", str(export), "--as", "restored", "--operator", "cid", "--reason", "r4"))
    ok(hitl("resume", "refund-waiting-1", 'risk-order-1001={"approved": true}'))  # default operator: $USER
    t1 = time.time()

    rows = json.loads(ok(hitl("--json", "audit", "--since", "10m")))["audit"]
    got = [(r["action"], r["operator"], r["reason"], r["session_id"]) for r in rows]
    assert got == [
        ("answer", "tester", None, "refund-waiting-1"),
        ("import", "cid", "r4", "restored"),
        ("cancel", "ann", "r3", "refund-partial-1"),
        ("redrive", "bob", "r2", "incident-failed-1"),
        ("answer", "ann", "r1", "refund-waiting-1"),
    ]
    assert all(t0 - 1 <= r["at"] <= t1 + 1 for r in rows)
    assert rows[1]["details"] == {
        "events": n_events,
        "source": str(export.resolve()),
        "original_id": "refund-completed-1",
    }
    assert rows[4]["details"] == {"ids": ["finance-order-1001"]} and rows[4]["seq"] and rows[4]["event_id"]

    by_ann = json.loads(ok(hitl("--json", "audit", "--operator", "ann")))["audit"]
    assert {r["reason"] for r in by_ann} == {"r1", "r3"}
    by_session = json.loads(ok(hitl("--json", "audit", "--session", "refund-waiting-1", "--since", "10m")))["audit"]
    assert [r["operator"] for r in by_session] == ["tester", "ann"]
    imports = json.loads(ok(hitl("--json", "audit", "--action", "import")))["audit"]
    assert [r["session_id"] for r in imports] == ["restored"]
    older = json.loads(ok(hitl("--json", "audit", "--until", str(t0 - 1))))["audit"]
    assert older and all(r["at"] < t0 - 1 for r in older)  # the demo's own answers (its clock is in the past)
    assert not {r["reason"] for r in older} & {"r1", "r2", "r3", "r4"}
    text = ok(hitl("audit", "--since", "10m"))
    assert "TIME" in text and "OPERATOR" in text
    for needle in ("answered finance-order-1001", "ann", "r1", "re-drove", "cancelled", f"imported {n_events} events", "cid"):
        assert needle in text, needle
    page1 = json.loads(ok(hitl("--json", "audit", "--limit", "2")))
    page2 = json.loads(ok(hitl("--json", "audit", "--limit", "2", "--cursor", page1["next_cursor"])))
    assert [r["seq"] for r in page1["audit"]] != [r["seq"] for r in page2["audit"]]
    operator_error(hitl("audit", "--cursor", "garbage"), "cursor")
    result = hitl("audit", "--since", "last tuesday")
    assert result.exit_code == 2 and "not a time" in result.output


# -------------------------------------------------------------------- masking


def test_mask_masks_values_of_secret_keys_at_any_depth() -> None:
    value = {
        "user": "ann",
        "Password": "p",
        "db": {"API-KEY": "k", "apiKey": "k2", "rows": [{"refreshToken": "t"}, {"note": "fine"}]},
        "client_secret": {"nested": "whole value masked"},
        "tokens": ("a", {"my_token": 1}),
    }
    original = json.loads(json.dumps(value, default=list))
    masked = mask(value)
    assert masked == {
        "user": "ann",
        "Password": MASK,
        "db": {"API-KEY": MASK, "apiKey": MASK, "rows": [{"refreshToken": MASK}, {"note": "fine"}]},
        "client_secret": MASK,
        "tokens": MASK,
    }
    assert json.loads(json.dumps(value, default=list)) == original  # the input is untouched
    plain = {"a": [1, {"b": 2}]}
    assert mask(plain) is plain and mask("password") == "password" and mask(None) is None
    assert mask({"iban": "DE00"}, ["iban"]) == {"iban": MASK}
    assert mask({"password": "x"}, []) == {"password": "x"}
    assert is_secret_key("X_Api_Key") and not is_secret_key("apikeys_count_x".replace("key", "ke"))
    assert {"password", "secret", "token", "api_key", "authorization", "cookie", "passwd"} <= set(DEFAULT_SECRET_PATTERNS)


def test_secret_patterns_come_from_defaults_config_and_options(tmp_path: Path) -> None:
    cfg = tmp_path / "hitl.toml"
    cfg.write_text('[secrets]\npatterns = ["iban", "ssn"]\n')
    assert secret_patterns(cfg, ["pin"]) == (*DEFAULT_SECRET_PATTERNS, "iban", "ssn", "pin")
    bad = tmp_path / "bad.toml"
    bad.write_text("[secrets]\npatterns = 'iban'\n")
    with pytest.raises(HitlError, match="list of strings"):
        secret_patterns(bad)


@pytest.fixture
def secret_session(hitl: Hitl, db: Path) -> str:
    async def go() -> None:
        async with SQLiteStore.open(db) as store:
            runner = Runner("secret_app", secret_app.workflow, store)
            async for _ in runner.run("u", "vault-1", Content.from_text("connect")):
                pass

    asyncio.run(go())
    return "vault-1"


def test_cli_output_masks_secrets_unless_show_secrets(hitl: Hitl, db: Path, secret_session: str, tmp_path: Path) -> None:
    app = ["--app", "secret_app=tests.reliability.secret_app:workflow"]
    answer = 'rotate={"rotate": true, "new_password": "' + secret_app.SECRET + '"}'
    ok(hitl("resume", secret_session, answer, "--dry-run", *app))
    outputs = {
        "dry run": ok(hitl("resume", secret_session, answer, "--dry-run", *app)),
        "dry run json": ok(hitl("--json", "resume", secret_session, answer, "--dry-run", *app)),
    }
    outputs["resume"] = ok(hitl("resume", secret_session, answer, *app, "--operator", "ann"))
    invocation = _invocation(hitl, secret_session)
    commands = {
        **read_commands(secret_session),
        "replay at": ["replay", secret_session, "--at", "6"],
        "replay json": ["--json", "replay", secret_session, "--at", "9"],
    }
    for name, argv in commands.items():
        outputs[name] = ok(hitl(*argv))
    for name, text in outputs.items():
        assert secret_app.SECRET not in text, f"hitl {name} shows a secret"
    assert MASK in outputs["show json"] and "eu-west-1" in outputs["show json"]  # only secrets are masked
    assert "db.internal" in outputs["events json"] and invocation in outputs["show json"]
    # The data itself is intact: --show-secrets shows it, and export is a faithful copy.
    assert secret_app.SECRET in ok(hitl("--json", "show", secret_session, "--show-secrets"))
    assert secret_app.SECRET in ok(hitl("events", secret_session, "--json", "--show-secrets"))
    assert secret_app.SECRET in ok(hitl("export", secret_session))
    # Extra patterns: from hitl.toml and --secret-pattern.
    shown = ok(hitl("--json", "show", secret_session))
    assert "eu-west-1" in shown
    assert "eu-west-1" not in ok(hitl("--json", "show", secret_session, "--secret-pattern", "region"))
    cfg = tmp_path / "hitl.toml"
    cfg.write_text('[secrets]\npatterns = ["host"]\n')
    assert "db.internal" not in ok(hitl("--config", str(cfg), "--json", "events", secret_session))


def test_mask_event_touches_payloads_only(secret_session: str, db: Path) -> None:
    async def events() -> list[Any]:
        async with SQLiteStore.open(db, read_only=True) as store:
            return [s.event for s in await store.events(secret_session)]

    for event in asyncio.run(events()):
        masked = mask_event(event)
        assert (masked.id, masked.kind, masked.path, masked.node_info and masked.node_info.status) == (
            event.id,
            event.kind,
            event.path,
            event.node_info and event.node_info.status,
        )
        assert secret_app.SECRET not in masked.to_json()
        for call in masked.function_calls:  # the schema of an answer is not a secret
            assert "new_password" in json.dumps(call.args["response_schema"])


# --------------------------------------------------------- parsing and imports

FORBIDDEN_CALLS = {"eval", "exec", "compile", "__import__", "execfile"}
FORBIDDEN_MODULES = {"pickle", "cPickle", "_pickle", "marshal", "shelve", "dill", "cloudpickle", "jsonpickle", "yaml"}
IMPORTERS = {Path("engine/apps.py"), Path("console/serve/forkserver.py")}
"""The only modules allowed to import code by name: the registered app specs, and
hitl serve's fork server preloading its fixed list of the project's own modules."""
METADATA_READERS = {Path("console/cli/plugin_lookup.py")}
"""The only module allowed to import ``importlib.metadata`` (never code by name): the
stand-in that lets pydantic's plugin loader import without it (it imports that one
module, by a fixed ``import`` statement, when the loader first reads from it)."""


def _sources() -> list[Path]:
    return sorted(p for d in ("engine", "console", "sample_sessions") for p in (REPO / d).rglob("*.py"))


def test_stored_data_is_only_ever_parsed_as_json() -> None:
    """No pickle/marshal/yaml, no eval/exec anywhere in the product; code is
    imported by name only in the app registry."""
    problems: list[str] = []
    for path in _sources():
        rel = path.relative_to(REPO)
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(rel))
        for n in ast.walk(tree):
            if isinstance(n, ast.Import | ast.ImportFrom):
                names = [a.name for a in n.names] if isinstance(n, ast.Import) else [n.module or ""]
                for name in names:
                    if name.split(".")[0] in FORBIDDEN_MODULES:
                        problems.append(f"{rel}:{n.lineno} imports {name}")
                    if name.split(".")[0] == "importlib" and rel not in IMPORTERS and not (
                        isinstance(n, ast.Import) and name == "importlib.metadata" and rel in METADATA_READERS
                    ):
                        problems.append(f"{rel}:{n.lineno} imports importlib")
            elif isinstance(n, ast.Call):
                f = n.func
                name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else ""
                builtin = isinstance(f, ast.Name) or (
                    isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id == "builtins"
                )
                if builtin and name in FORBIDDEN_CALLS:
                    problems.append(f"{rel}:{n.lineno} calls {name}()")
                if name == "import_module" and rel not in IMPORTERS:
                    problems.append(f"{rel}:{n.lineno} calls import_module()")
    assert problems == []
    assert len(_sources()) > 20  # the scan saw the code base


def test_code_named_by_session_data_is_never_imported(hitl: Hitl, db: Path) -> None:
    """A session whose app name is a module path is not a way to import code."""
    bait = "tests.reliability.never_imported_bait"

    async def go() -> None:
        async with SQLiteStore.open(db) as store:
            await store.create_session(bait, "u", "bait-1")
            await store.create_session("os.path:join", "u", "bait-2")

    asyncio.run(go())
    assert bait not in sys.modules
    for sid in ("bait-1", "bait-2"):
        err = operator_error(hitl("redrive", sid, "x"), "is not in session")  # no invocation: nothing to run
        assert "Traceback" not in err
    with pytest.raises(AppUnavailableError, match="is not registered"):
        AppRegistry().get(bait)
    assert bait not in sys.modules
    # A crafted payload is data: shown, never evaluated.
    payload = "__import__('os').system('touch /tmp/hitl-pwned')"
    answer = json.dumps({"approved": True, "note": payload})
    ok(hitl("resume", "refund-waiting-1", f"finance-order-1001={answer}"))
    assert not Path("/tmp/hitl-pwned").exists()
    assert payload in ok(hitl("--json", "show", "refund-waiting-1"))
    assert json_lines(ok(hitl("--json", "events", "refund-waiting-1")))
