"""Bad input, each case: a clear error naming what was wrong, exit code 1 with
one line and no traceback for the CLI, and nothing written (the store's logical
contents, every table, and the file's bytes, are compared before and after).

The README's "Limits" section documents the answer size limit tested here.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from engine import Content, Runner
from engine.errors import (
    AlreadyResolvedError,
    AmbiguousInterruptError,
    HitlError,
    InvalidResponseError,
    MixedInvocationsError,
    ResumeRejected,
    SessionNotFoundError,
    TextToWaitingInvocationError,
    TextWithResponsesError,
    UnknownInterruptError,
)
from engine.models import FunctionResponse, Part
from engine.responses import MAX_RESPONSE_BYTES
from engine.store import MemoryStore
from engine.store.sqlite import SQLiteStore
from tests.cli.conftest import ok, operator_error

from . import crash_app
from .conftest import Hitl, logical_dump
from .test_cancel_final import store_bytes

YES = '{"approved": true}'
CRASH_APP = f"{crash_app.APP}=tests.reliability.crash_app:workflow"


@pytest.fixture
def ambiguous(db: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> str:
    """Session ``twice``: the crash app started twice, so ``finance`` and
    ``risk`` are open in two invocations at once."""
    monkeypatch.setenv("HITL_CRASH_EFFECTS", str(tmp_path / "effects.log"))

    async def go() -> None:
        async with SQLiteStore.open(db) as store:
            runner = Runner(crash_app.APP, crash_app.workflow, store)
            for order in ("order-a", "order-b"):
                async for _ in runner.run("u", "twice", Content.from_text(order)):
                    pass

    asyncio.run(go())
    return "twice"


def _files(tmp_path: Path, hitl: Hitl) -> dict[str, Path]:
    good = ok(hitl("export", "refund-completed-1")).splitlines(keepends=True)
    files: dict[str, Path] = {}

    def put(name: str, data: bytes) -> None:
        files[name] = tmp_path / name
        files[name].write_bytes(data)

    put("big.json", json.dumps({"approved": True, "note": "x" * (MAX_RESPONSE_BYTES + 10)}).encode())
    put("huge.json", b'"' + b"x" * (2 * MAX_RESPONSE_BYTES + 10) + b'"')
    put("latin1.json", '{"approved": true, "note": "caf\u00e9"}'.encode("latin-1"))
    put("binary.jsonl", "".join(good).encode()[:200] + b"\xff\xfe\x00garbage\n" + "".join(good[3:]).encode())
    middle = len(good) // 2
    put("bad-line.jsonl", "".join([*good[:middle], '{"seq": 99, "event": {"oops"\n', *good[middle:]]).encode())
    put("reordered.jsonl", "".join([good[0], good[2], good[1], *good[3:]]).encode())
    put("truncated.jsonl", "".join(good[:-2]).encode())
    not_open = [json.loads(line) for line in good]
    answer_at = next(i for i, obj in enumerate(not_open) if "event" in obj and obj["event"].get("content", {}).get("parts", [{}])[0].get("function_response"))
    not_open.insert(1, {**not_open[answer_at], "seq": 1})
    for n, obj in enumerate(not_open[1:], start=1):
        obj["seq"] = n
    not_open[0]["session"]["last_seq"] += 1
    put("answer-before-ask.jsonl", "".join(json.dumps(o) + "\n" for o in not_open).encode())
    put("not-an-export.jsonl", b'{"hello": "world"}\n')
    put("empty.jsonl", b"")
    return files


# (args, needles): every case exits 1 with one line containing the needles and writes nothing.
CASES: dict[str, tuple[list[str], list[str]]] = {
    "malformed JSON answer": (["resume", "refund-waiting-1", "finance-order-1001={approved: true}"], ["finance-order-1001", "not valid JSON"]),
    "unquoted string answer": (["resume", "refund-waiting-1", "finance-order-1001=yes"], ["JSON quotes"]),
    "answer without ID=": (["resume", "refund-waiting-1", "finance-order-1001"], ["is not ID=JSON"]),
    "same id twice": (["resume", "refund-waiting-1", f"finance-order-1001={YES}", f"finance-order-1001={YES}"], ["answered twice"]),
    "schema: wrong type": (["resume", "refund-waiting-1", 'finance-order-1001={"approved": "maybe"}'], ["invalid answer for finance-order-1001", "approved"]),
    "schema: missing field": (["resume", "refund-waiting-1", "finance-order-1001={}"], ["finance-order-1001", "approved"]),
    "schema: one bad of two": (["resume", "refund-waiting-1", f"finance-order-1001={YES}", 'risk-order-1001={"approved": 2}'], ["risk-order-1001"]),
    "schema: enum": (["resume", "deploy-waiting-1", 'gate-3={"decision": "yolo"}'], ["gate-3", "decision"]),
    "unknown id": (["resume", "refund-waiting-1", f"nope-1={YES}"], ["no open interrupt with id nope-1"]),
    "unknown and known id": (["resume", "refund-waiting-1", f"finance-order-1001={YES}", f"nope-2={YES}"], ["nope-2"]),
    "already answered id": (["resume", "refund-partial-1", f"finance-order-1002={YES}"], ["finance-order-1002", "already answered"]),
    "FR for a completed invocation": (["resume", "refund-completed-1", f"risk-order-1003={YES}"], ["risk-order-1003", "already answered"]),
    "FR for a cancelled invocation": (["resume", "refund-cancelled-1", f"finance-order-1005={YES}"], ["finance-order-1005", "cancelled"]),
    "ids of two invocations": (["resume", "refund-multi-1", f"finance-order-2001={YES}", f"finance-order-2003={YES}"], ["different invocations", "finance-order-2001", "finance-order-2003"]),
    "ambiguous id": (["--app", CRASH_APP, "resume", "twice", f"finance={YES}"], ["finance", "open in several invocations", "--invocation"]),
    "unknown invocation": (["resume", "refund-waiting-1", f"finance-order-1001={YES}", "--invocation", "ffff"], ["ffff", "is not in session"]),
    "answer of another invocation": (["resume", "refund-multi-1", f"finance-order-2001={YES}", "--invocation", "@second"], ["finance-order-2001"]),
    "answer over the size limit": (["resume", "refund-waiting-1", "finance-order-1001=@big.json"], [f"the limit is {MAX_RESPONSE_BYTES}"]),
    "answer file far over the limit": (["resume", "refund-waiting-1", "finance-order-1001=@huge.json"], ["the limit is", "Limits"]),
    "answer file not UTF-8": (["resume", "refund-waiting-1", "finance-order-1001=@latin1.json"], ["not UTF-8"]),
    "answer file missing": (["resume", "refund-waiting-1", "finance-order-1001=@missing.json"], ["cannot read missing.json"]),
    "import: non-UTF-8 bytes": (["import", "@binary.jsonl", "--as", "x"], ["line ", "not valid UTF-8", "nothing was imported"]),
    "import: bad line in the middle": (["import", "@bad-line.jsonl", "--as", "x"], ["is not valid JSON", "nothing was imported"]),
    "import: lines out of order": (["import", "@reordered.jsonl", "--as", "x"], ["out of order"]),
    "import: truncated": (["import", "@truncated.jsonl", "--as", "x"], ["truncated"]),
    "import: answer before its question": (["import", "@answer-before-ask.jsonl", "--as", "x"], ["not open at that point"]),
    "import: not an export": (["import", "@not-an-export.jsonl"], ["header"]),
    "import: empty file": (["import", "@empty.jsonl"], ["empty"]),
    "import: existing session id": (["import", "@good.jsonl"], ["already exists"]),
    "show: no such session": (["show", "no-such-session"], ["no-such-session", "does not exist"]),
    "resume: no such session": (["resume", "no-such-session", f"a={YES}"], ["no-such-session", "does not exist"]),
    "redrive: no such session": (["redrive", "no-such-session", "x"], ["does not exist"]),
    "cancel: no such session": (["cancel", "no-such-session", "x"], ["does not exist"]),
    "events: no such session": (["events", "no-such-session"], ["does not exist"]),
    "export: no such session": (["export", "no-such-session"], ["does not exist"]),
    "replay: no such session": (["replay", "no-such-session"], ["does not exist"]),
    "redrive: unknown invocation": (["redrive", "refund-waiting-1", "ffff"], ["ffff", "is not in session"]),
    "redrive: a waiting invocation": (["redrive", "refund-waiting-1", "@first"], ["only a failed or interrupted invocation"]),
    "cancel: a completed invocation": (["cancel", "refund-completed-1", "@first"], ["COMPLETED", "nothing to cancel"]),
    "app that does not import": (["--app", "refund_approval=no_such_module.deep:workflow", "resume", "refund-waiting-1", f"finance-order-1001={YES}"], ["refund_approval", "cannot be loaded", "No module named"]),
    "app that is not a node": (["--app", "refund_approval=tests.cli.ghost_app:not_a_node", "resume", "refund-waiting-1", f"finance-order-1001={YES}"], ["not a workflow node"]),
    "app not registered": (["resume", "twice", f"finance={YES}", "--invocation", "@first", "--via", "local"], [crash_app.APP, "is not registered"]),
    "replay: past the end": (["replay", "refund-waiting-1", "--at", "9999"], ["past its end"]),
    "bad page cursor": (["sessions", "--cursor", "not-a-cursor"], ["cursor"]),
}


def _invocations(hitl: Hitl, session: str) -> list[str]:
    return [i["invocation_id"] for i in json.loads(ok(hitl("--json", "show", session)))["invocations"]]


@pytest.mark.parametrize("case", list(CASES))
def test_bad_cli_input_is_one_clear_line_and_writes_nothing(
    case: str, hitl: Hitl, db: Path, tmp_path: Path, ambiguous: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    args, needles = CASES[case]
    files = _files(tmp_path, hitl)
    files["good.jsonl"] = tmp_path / "good.jsonl"
    files["good.jsonl"].write_text(ok(hitl("export", "refund-completed-1")))
    monkeypatch.chdir(tmp_path)  # @file answers resolve here
    resolved = []
    for a in args:
        if a.startswith("@") and a[1:] in files and not a.endswith(".json"):
            a = str(files[a[1:]])
        elif a in ("@first", "@second"):
            session = next(x for x in args if x in ("refund-waiting-1", "refund-completed-1", "refund-multi-1", "twice"))
            a = _invocations(hitl, session)[0 if a == "@first" else 1]
        resolved.append(a)
    assert hitl("sessions").exit_code == 0  # first-open effects before the baseline
    before, before_bytes = logical_dump(db), store_bytes(db)
    err = operator_error(hitl(*resolved), *needles)
    assert len(err) < 600, f"an error line should be short: {len(err)} characters"
    assert logical_dump(db) == before, f"{case}: something was written"
    assert store_bytes(db) == before_bytes, f"{case}: the file is not byte-identical"


# ------------------------------------------------------------------ engine API


async def _waiting_store() -> tuple[MemoryStore, Runner, str]:
    from sample_sessions import refund_approval

    store = MemoryStore()
    runner = Runner("refund_approval", refund_approval.workflow, store)
    first = None
    async for event in runner.run("u", "s", Content.from_text("order-1")):
        first = first or event
    assert first is not None
    return store, runner, first.invocation_id


async def _dump(store: MemoryStore) -> Any:
    events = [e.event.to_json() for e in await store.events("s")]
    return events, await store.list_leases("s"), (await store.audit_log(limit=1000)).items, await store.get_session("s")


def _fr(iid: str, value: Any) -> Part:
    return Part(function_response=FunctionResponse(id=iid, name="request_input", response=value))


BAD_MESSAGES: dict[str, tuple[Any, type[HitlError], str]] = {
    "text mixed with FRs": (
        lambda inv: Content(parts=[Part(text="approved, go ahead"), _fr("finance-order-1", {"approved": True})]),
        TextWithResponsesError,
        "only FunctionResponses",
    ),
    "text to a waiting invocation": (
        lambda inv: (Content.from_text("please pay"), inv),
        TextToWaitingInvocationError,
        "is waiting for answers",
    ),
    "an id answered twice in one message": (
        lambda inv: Content(parts=[_fr("finance-order-1", {"approved": True}), _fr("finance-order-1", {"approved": False})]),
        ResumeRejected,
        "answered twice",
    ),
    "unknown id": (lambda inv: Content.from_responses({"nope": True}), UnknownInterruptError, "nope"),
    "schema failure": (lambda inv: Content.from_responses({"finance-order-1": {"approved": "maybe"}}), InvalidResponseError, "approved"),
    "not JSON-serialisable": (lambda inv: Content.from_responses({"finance-order-1": {"approved": True, "x": object()}}), InvalidResponseError, "JSON"),
    "over the size limit": (
        lambda inv: Content.from_responses({"finance-order-1": {"approved": True, "note": "x" * MAX_RESPONSE_BYTES}}),
        InvalidResponseError,
        "the limit is",
    ),
    "wrapped result that fails the schema": (
        lambda inv: Content.from_responses({"finance-order-1": {"result": '{"approved": "nope"}'}}),
        InvalidResponseError,
        "approved",
    ),
    "ids of two invocations": (
        lambda inv: Content.from_responses({"finance-order-1": {"approved": True}, "finance-order-2": {"approved": True}}),
        MixedInvocationsError,
        "different invocations",
    ),
}


@pytest.mark.parametrize("case", list(BAD_MESSAGES))
async def test_bad_messages_to_the_runner_write_nothing(case: str) -> None:
    store, runner, inv = await _waiting_store()
    async for _ in runner.run("u", "s", Content.from_text("order-2")):
        pass
    build, error, needle = BAD_MESSAGES[case]
    message = build(inv)
    message, target = message if isinstance(message, tuple) else (message, None)
    before = await _dump(store)
    with pytest.raises(error, match=needle):
        async for _ in runner.run("u", "s", message, target):
            pass
    assert await _dump(store) == before


async def test_ambiguous_and_already_resolved_at_the_runner() -> None:
    store = MemoryStore()
    runner = Runner(crash_app.APP, crash_app.workflow, store)
    invs = []
    for order in ("a", "b"):
        first = None
        async for event in runner.run("u", "s", Content.from_text(order)):
            first = first or event
        invs.append(first.invocation_id)
    before = await _dump(store)
    with pytest.raises(AmbiguousInterruptError, match="finance"):
        async for _ in runner.run("u", "s", Content.from_responses({"finance": {"approved": True}})):
            pass
    assert await _dump(store) == before
    async for _ in runner.run("u", "s", Content.from_responses({"finance": {"approved": True}}), invs[0]):
        pass  # naming the invocation settles it
    before = await _dump(store)
    with pytest.raises(AlreadyResolvedError, match=r"finance was already answered \(at event"):
        async for _ in runner.run("u", "s", Content.from_responses({"finance": {"approved": True}}), invs[0]):
            pass
    with pytest.raises(SessionNotFoundError, match="nope"):
        async for _ in runner.run("u", "nope", Content.from_responses({"finance": True})):
            pass
    assert await _dump(store) == before


def test_figures_bad_inputs_tried() -> None:
    """Counted in the report: every CLI case, every runner case, the two above."""
    total = len(CASES) + len(BAD_MESSAGES) + 3
    print(f"\nbad inputs: {len(CASES)} CLI cases, {len(BAD_MESSAGES) + 3} runner cases ({total} in all)")
    assert len(CASES) >= 40
