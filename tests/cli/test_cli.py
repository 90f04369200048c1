"""Every `hitl` subcommand against a demo store, including each error path."""

from __future__ import annotations

import json
import sys
import types
from pathlib import Path

import pytest

from engine.models import NodeStatus
from sample_sessions import incident
from sample_sessions.demo import EXPECTED

from .conftest import BULK, LONG_ITERATIONS, Hitl, json_lines, ok, operator_error
from .helpers import invocation_ids, projection, session_events, start_session

NAMED = set(EXPECTED)


# ------------------------------------------------------------------ sessions
def test_sessions_lists_every_named_session_with_its_status(hitl: Hitl) -> None:
    data = json.loads(ok(hitl("sessions", "--json", "--limit", "1000")))
    rows = {s["id"]: s for s in data["sessions"]}
    assert set(rows) >= NAMED
    assert len(rows) == len(NAMED) + BULK
    for sid, e in EXPECTED.items():
        assert (rows[sid]["status"], rows[sid]["open_interrupts"]) == (e.status, e.open_ids), sid
    table = ok(hitl("sessions", "--limit", "1000"))
    assert table.splitlines()[0].split() == ["SESSION", "APP", "USER", "STATUS", "OPEN", "INV", "EVENTS", "UPDATED"]
    assert any(
        line.split()[:4] == ["refund-multi-1", "refund_approval", "carol", "waiting"] for line in table.splitlines()
    )


def test_sessions_filters(hitl: Hitl) -> None:
    def ids(*args: str) -> set[str]:
        return {s["id"] for s in json.loads(ok(hitl("sessions", "--json", "--limit", "1000", *args)))["sessions"]}

    assert ids("--status", "failed") >= {"incident-failed-1"}
    assert all(EXPECTED[s].status == "failed" for s in ids("--status", "failed") & NAMED)
    assert ids("--app", "incident") & NAMED == {s for s, e in EXPECTED.items() if e.app_name == "incident"}
    assert ids("--user", "carol") == {s for s, e in EXPECTED.items() if e.user_id == "carol"}
    # the store was written with a clock in the past: everything is older than an hour, nothing older than 100 years
    assert ids("--older-than", "1h") == ids()
    assert ids("--older-than", "36500d") == set()
    assert ids("--text", "deploy-") == ids("--search", "deploy-") == {s for s in NAMED if s.startswith("deploy-")}


def test_sessions_paginate_with_cursor(hitl: Hitl) -> None:
    seen: list[str] = []
    cursor = None
    for _ in range(20):
        args = ["sessions", "--json", "--limit", "7"] + (["--cursor", cursor] if cursor else [])
        page = json.loads(ok(hitl(*args)))
        seen += [s["id"] for s in page["sessions"]]
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert len(seen) == len(set(seen)) == len(NAMED) + BULK
    text = ok(hitl("sessions", "--limit", "3"))
    assert "more: --cursor " in text
    operator_error(hitl("sessions", "--cursor", "not-a-cursor"), "cursor")
    operator_error(hitl("inbox", "--cursor", "[1]"), "cursor")


def test_sessions_bad_duration_is_a_usage_error(hitl: Hitl) -> None:
    result = hitl("sessions", "--older-than", "2 fortnights")
    assert result.exit_code == 2
    assert "not a duration" in result.stderr


def test_global_options_also_after_the_subcommand(hitl: Hitl, db: Path) -> None:
    # --db before and --json after the subcommand
    data = json.loads(ok(hitl("sessions", "--json", "--status", "cancelled")))
    assert [s["id"] for s in data["sessions"]] == ["refund-cancelled-1"]


# ---------------------------------------------------------------------- show
def test_show_prints_tree_with_run_ids_statuses_and_open_ids(hitl: Hitl) -> None:
    text = ok(hitl("show", "refund-multi-1"))
    assert text.count("\ninvocation ") == 3
    assert "refund@2" in text and "refund@3" in text
    assert "waits on finance-order-2002: Finance: refund" in text
    assert "risk_approval@1" in text
    lines = [line.split() for line in text.splitlines()]
    assert ["risk_approval@1", "COMPLETED", '{"approved":true,"note":"known', 'customer"}'] in lines


def test_show_partial_answers_failures_and_retries(hitl: Hitl) -> None:
    text = ok(hitl("show", "incident-waiting-1"))
    inc = incident.incident_id("disk usage 91% on db-2")
    assert f"waits on mitigate-{inc}" in text and f"answered statuspage-{inc}" in text
    failed = [line.split() for line in ok(hitl("show", "incident-failed-1")).splitlines()]
    assert failed[-1][:3] == ["mitigate@1", "FAILED", "PAGER_503:"]
    verify = [line for line in ok(hitl("show", "deploy-waiting-1")).splitlines() if "verify@2" in line]
    assert verify and "COMPLETED" in verify[0] and "(after 1 failed attempt)" in verify[0]


def test_show_json_matches_the_projection(hitl: Hitl, db: Path) -> None:
    data = json.loads(ok(hitl("show", "labels-partial-1", "--json")))
    (inv,) = data["invocations"]
    nodes = {n["path"]: n for n in inv["nodes"]}
    proj = projection(db, "labels-partial-1")
    for run in proj.runs(inv["invocation_id"]):
        assert nodes[run.path]["status"] == run.status.value
    children = [n for n in inv["nodes"] if n["depth"] == 2]
    assert len(children) == 36
    assert sum(1 for n in children if n["status"] == "COMPLETED") == 12
    assert sum(len(n["pending"]) for n in children) == 24


def test_show_collapses_loop_iterations_unless_all_runs(hitl: Hitl) -> None:
    text = ok(hitl("show", "deploy-long-1"))
    n = LONG_ITERATIONS
    assert f"deploy@{n + 1}" in text and "deploy@1 " not in text
    assert f"(+{n} earlier runs)" in text
    full = ok(hitl("show", "deploy-long-1", "--all-runs"))
    assert all(f"deploy@{i}" in full for i in range(1, n + 2))


def test_show_invocation_prefix(hitl: Hitl, db: Path) -> None:
    invs = invocation_ids(db, "refund-multi-1")
    text = ok(hitl("show", "refund-multi-1", "--invocation", invs[1][:10]))
    assert text.count("\ninvocation ") == 1 and invs[1] in text
    operator_error(hitl("show", "refund-multi-1", "--invocation", "zzz"), "zzz")


def test_show_missing_session(hitl: Hitl) -> None:
    operator_error(hitl("show", "no-such-session"), "no-such-session", "does not exist")


def test_missing_database_file_is_an_operator_error(hitl: Hitl, tmp_path: Path) -> None:
    operator_error(hitl("sessions", db_path=tmp_path / "nope.sqlite"), "no session database")


# --------------------------------------------------------------------- inbox
def test_inbox_lists_open_interrupts_oldest_first(hitl: Hitl) -> None:
    data = json.loads(ok(hitl("inbox", "--json", "--limit", "10000")))
    rows = data["interrupts"]
    named = [r for r in rows if r["session_id"] in NAMED]
    assert len(named) == sum(e.open_ids for e in EXPECTED.values())
    assert [r["raised_at"] for r in rows] == sorted(r["raised_at"] for r in rows)
    assert {"finance-order-1001", "risk-order-1001", "risk-order-1002"} <= {r["interrupt_id"] for r in rows}
    text = ok(hitl("inbox", "--session", "refund-partial-1"))
    (row,) = text.splitlines()[1:]
    assert "refund@1/risk_approval@1" in row and "risk-order-1002" in row and "Risk: any fraud signal" in row
    assert ok(hitl("inbox", "--app", "document_review", "--json")).count("signoff-") >= 1


# -------------------------------------------------------------------- resume
def test_resume_dry_run_writes_nothing(hitl: Hitl, db: Path) -> None:
    before = session_events(db, "refund-partial-1")[1]
    text = ok(hitl("resume", "refund-partial-1", 'risk-order-1002={"approved": true}', "--dry-run"))
    assert "nothing was written" in text
    assert "refund@1/risk_approval@1" in text and "auto-complete" in text
    assert len(session_events(db, "refund-partial-1")[1]) == len(before)
    plan = json.loads(
        ok(hitl("resume", "refund-partial-1", 'risk-order-1002={"approved": true}', "--dry-run", "--json"))
    )
    assert plan["resolves"] == ["risk-order-1002"] and plan["still_open"] == []
    assert {c["path"]: c["effect"] for c in plan["changes"]} == {
        "refund@1": "re-execute",
        "refund@1/risk_approval@1": "auto-complete",
    }


def test_resume_streams_events_and_records_operator_and_reason(hitl: Hitl, db: Path) -> None:
    text = ok(
        hitl(
            "resume",
            "refund-partial-1",
            'risk-order-1002={"approved": true}',
            "--operator",
            "olga",
            "--reason",
            "KYC ok",
        )
    )
    lines = text.splitlines()
    assert lines[0].startswith("response") and "by olga (KYC ok)" in lines[0]
    assert any(line.split()[:3] == ["end", "refund@1/pay@1", "COMPLETED"] for line in lines)
    assert lines[-1].endswith(": COMPLETED")
    _, events = session_events(db, "refund-partial-1")
    (fr,) = [
        s.event for s in events if s.event.kind == "response" and s.event.function_responses[0].id == "risk-order-1002"
    ]
    assert fr.custom_metadata == {"action": "resume", "operator": "olga", "reason": "KYC ok"}
    # default operator: $USER
    ok(hitl("resume", "refund-waiting-1", 'finance-order-1001={"approved": false, "note": "no"}'))
    _, events = session_events(db, "refund-waiting-1")
    assert events[-1].event.kind != "response"
    assert [s.event for s in events if s.event.kind == "response"][-1].custom_metadata["operator"] == "tester"


def test_resume_json_stream(hitl: Hitl) -> None:
    rows = json_lines(
        ok(hitl("resume", "review-waiting-1", 'signoff-q3-security-report={"decision": "approve"}', "--json"))
    )
    assert rows[0]["kind"] == "response"
    starts = [r for r in rows if r["kind"] == "start"]
    assert starts[0]["path"] == "document@1" and "re-executes with the same run id" in starts[0]["markers"][0]
    assert rows[-1] == {"kind": "summary", "invocation_id": rows[0]["invocation_id"], "status": "COMPLETED", "open": []}


def test_resume_value_from_file(hitl: Hitl, db: Path, tmp_path: Path) -> None:
    answer = tmp_path / "a.json"
    answer.write_text('{"approved": true, "note": "from a file"}')
    ok(hitl("resume", "refund-partial-1", f"risk-order-1002=@{answer}"))
    proj = projection(db, "refund-partial-1")
    (inv,) = proj.invocations
    assert proj.get(inv, "refund@1/risk_approval@1").output == {"approved": True, "note": "from a file"}
    operator_error(
        hitl("resume", "refund-waiting-1", f"risk-order-1001=@{tmp_path / 'missing.json'}"),
        "risk-order-1001",
        "cannot read",
    )


def test_resume_partial_answer_to_a_leaf_runs_nothing(hitl: Hitl, db: Path) -> None:
    start_session(db, incident.app_name, incident.workflow, "incident-new", "cpu 99% on web-3")
    inc = incident.incident_id("cpu 99% on web-3")
    plan = json.loads(
        ok(hitl("resume", "incident-new", f'statuspage-{inc}={{"publish": true}}', "--dry-run", "--json"))
    )
    assert plan["runs_anything"] is False
    assert {c["path"]: c["effect"] for c in plan["changes"]} == {"incident@1/choose_mitigation@1": "keep waiting"}
    text = ok(hitl("resume", "incident-new", f'statuspage-{inc}={{"publish": true}}'))
    assert "answered; nothing ran" in text and f"mitigate-{inc}" in text
    assert projection(db, "incident-new").open_interrupts()[0].id == f"mitigate-{inc}"


@pytest.mark.parametrize(
    ("session", "answer", "needles"),
    [
        ("refund-waiting-1", "nope-1=true", ["nope-1", "no open interrupt"]),
        ("refund-partial-1", 'finance-order-1002={"approved": true}', ["finance-order-1002", "already answered"]),
        (
            "refund-waiting-1",
            'finance-order-1001={"approved": "maybe"}',  # "yes" is coerced to true (DESIGN.md 3.7)
            ["finance-order-1001", "approved: expected boolean"],
        ),
        ("refund-waiting-1", "finance-order-1001={approved: true", ["finance-order-1001", "not valid JSON"]),
        ("refund-waiting-1", "label-x=cat", ["label-x", "not valid JSON", "JSON quotes"]),
        ("refund-waiting-1", "just-an-id", ["just-an-id", "ID=JSON"]),
        ("no-such-session", "x=1", ["no-such-session", "does not exist"]),
    ],
)
def test_resume_rejections_write_nothing(hitl: Hitl, db: Path, session: str, answer: str, needles: list[str]) -> None:
    before = session_events(db, session)[1] if session in NAMED else None
    for extra in ([], ["--dry-run"]):
        operator_error(hitl("resume", session, answer, *extra), *needles)
    if before is not None:
        assert len(session_events(db, session)[1]) == len(before)


def test_json_errors_say_where_and_suggest_quotes_only_for_a_bare_word(hitl: Hitl, tmp_path: Path) -> None:
    answer = "finance-order-1001="
    err = operator_error(hitl("resume", "refund-waiting-1", answer + '{"approved": true,}', "--dry-run"), "at column 19")
    assert "JSON quotes" not in err  # a typo in an object: sending it as a string would be wrong advice
    operator_error(hitl("resume", "refund-waiting-1", answer + "yes", "--dry-run"), "at column 1", "\'\"yes\"\'")
    multi = tmp_path / "answer.json"
    multi.write_text('{\n "approved": true,\n "note": 5,,\n}')
    operator_error(hitl("resume", "refund-waiting-1", f"{answer}@{multi}", "--dry-run"), "at line 3, column 12")
    err = operator_error(
        hitl("resume", "refund-waiting-1", answer + "@-", "--dry-run", input='{"approved": true, "note": "a\x1bb"}'),
        "Invalid control character at column 30",
    )
    assert " at at " not in err
    err = operator_error(hitl("bulk-answer", "app=refund_approval", "--answer", '{"approved": tru}', "--dry-run"), "at column 14")
    assert "JSON quotes" not in err
    operator_error(hitl("bulk-answer", "app=refund_approval", "--answer", "approve", "--dry-run"), "JSON quotes")
    lines = ok(hitl("export", "refund-completed-1")).splitlines()
    cut = tmp_path / "cut.jsonl"
    cut.write_text(lines[0] + "\n" + lines[1][:60] + "\n")  # an import line is one line: its column only
    err = operator_error(hitl("import", str(cut), "--as", "x"), "line 2", "at column 61")
    assert "line 1," not in err


def test_resume_ids_of_two_invocations_must_be_split(hitl: Hitl) -> None:
    operator_error(
        hitl(
            "resume", "refund-multi-1", 'finance-order-2001={"approved": true}', 'finance-order-2003={"approved": true}'
        ),
        "different invocations",
    )


def test_read_only_store_refuses_resume_but_allows_dry_run(hitl: Hitl, db: Path) -> None:
    before = session_events(db, "refund-waiting-1")[1]
    answer = 'finance-order-1001={"approved": true}'
    operator_error(hitl("--read-only", "resume", "refund-waiting-1", answer), "read-only")
    operator_error(hitl("resume", "refund-waiting-1", answer, "--read-only"), "read-only")
    operator_error(
        hitl("cancel", "refund-waiting-1", invocation_ids(db, "refund-waiting-1")[0], "--read-only"), "read-only"
    )
    ok(hitl("--read-only", "resume", "refund-waiting-1", answer, "--dry-run"))
    assert len(session_events(db, "refund-waiting-1")[1]) == len(before)


def test_resume_of_an_unregistered_app_says_why(hitl: Hitl, db: Path, tmp_path: Path) -> None:
    from tests.cli import ghost_app

    start_session(db, "ghost", ghost_app.workflow, "ghost-1", "hello")
    ok(hitl("show", "ghost-1"))  # reading needs no workflow code
    written = len(session_events(db, "ghost-1")[1])
    operator_error(hitl("resume", "ghost-1", "boo=true", "--via", "local"), "'ghost'", "not registered", "--app")
    operator_error(
        hitl("--app", "ghost=tests.cli.ghost_app:not_a_node", "resume", "ghost-1", "boo=true"), "not a workflow node"
    )
    operator_error(
        hitl("--app", "ghost=tests.cli.no_such_module:wf", "resume", "ghost-1", "boo=true"), "cannot be loaded"
    )
    assert len(session_events(db, "ghost-1")[1]) == written
    config = tmp_path / "hitl.toml"
    config.write_text('[apps]\nghost = "tests.cli.ghost_app:workflow"\n')
    text = ok(hitl("resume", "ghost-1", "boo=true", "--config", str(config)))
    assert text.splitlines()[-1].endswith(": COMPLETED")


def a_ghost_worker_follows(db: Path, session_id: str, inv: str) -> str:
    """Start a worker with the ghost app's code and follow ``inv`` until it settles."""
    import asyncio

    from engine import handoff
    from engine.store.sqlite import SQLiteStore
    from engine.worker import Worker
    from tests.cli import ghost_app

    async def go() -> str:
        async with SQLiteStore.open(db) as store:
            worker = Worker(store, {"ghost": ghost_app.workflow}, heartbeat=0.2)
            task = asyncio.ensure_future(worker.run())
            try:
                return await handoff.follow(store, session_id, inv, timeout=60)
            finally:
                worker.stop()
                await task

    return asyncio.run(go())


def test_resume_of_an_unregistered_app_is_left_to_a_worker(hitl: Hitl, db: Path) -> None:
    """Issue 18: without the app's code the answer is validated against the stored
    schema, stored and queued; the command says no worker is alive and returns."""
    from tests.cli import ghost_app

    start_session(db, "ghost", ghost_app.workflow, "ghost-3", "hello")
    inv = invocation_ids(db, "ghost-3")[0]
    written = len(session_events(db, "ghost-3")[1])
    operator_error(hitl("resume", "ghost-3", 'boo="x"'), "boo")  # still validated against the stored schema
    assert len(session_events(db, "ghost-3")[1]) == written
    text = ok(hitl("resume", "ghost-3", "boo=true", "--no-wait"))
    assert "stored; no worker for ghost is alive" in text
    assert "not waiting (--no-wait)" in text
    assert projection(db, "ghost-3").invocation_status(inv) is NodeStatus.PENDING  # queued, not run
    text = ok(hitl("workers"))
    assert "queued ghost: 1 runnable" in text
    text = ok(hitl("redrive", "ghost-3", inv, "--no-wait"))  # a re-drive without the code is queued too
    assert "stored; no worker for ghost is alive" in text
    assert "not waiting (--no-wait): follow it with `hitl events ghost-3 --tail`" in text  # the answer's wording
    assert "queued ghost: 1 runnable" in ok(hitl("workers"))  # the same turn, not a second one

    assert a_ghost_worker_follows(db, "ghost-3", inv) == "settled"
    assert projection(db, "ghost-3").invocation_status(inv) is NodeStatus.COMPLETED
    assert "no live workers" in ok(hitl("workers"))


def test_start_without_the_code_is_queued_for_a_worker(hitl: Hitl, db: Path) -> None:
    """Issue 18: ``hitl start --via worker`` appends a start request a worker picks
    up; with ``--via auto`` an app with no code here and no live worker is refused
    (a mistyped name must not wait forever), nothing written."""
    before = db.read_bytes()
    operator_error(hitl("start", "ghost", "--session", "ghost-9", "hello"), "ghost")  # auto: nobody serves it
    assert db.read_bytes() == before
    text = ok(hitl("start", "ghost", "--session", "ghost-9", "hello", "--via", "worker", "--no-wait"))
    assert "stored; no worker for ghost is alive" in text and "not waiting (--no-wait)" in text
    assert "queued ghost: 1 runnable" in ok(hitl("workers"))
    inv = ok(hitl("start", "ghost", "--session", "ghost-9", "hello", "--via", "worker", "--no-wait", "--json"))
    inv = json.loads(inv.splitlines()[0])["invocation_id"]  # a second start request: its own invocation

    assert a_ghost_worker_follows(db, "ghost-9", inv) == "settled"
    assert projection(db, "ghost-9").invocation_status(inv) is NodeStatus.WAITING  # ghost asks for boo


def test_resume_with_app_option_on_the_command(hitl: Hitl, db: Path) -> None:
    from tests.cli import ghost_app

    start_session(db, "ghost", ghost_app.workflow, "ghost-2", "hello")
    ok(hitl("resume", "ghost-2", "boo=false", "--app", "ghost=tests.cli.ghost_app:workflow"))
    assert projection(db, "ghost-2").invocation_status(invocation_ids(db, "ghost-2")[0]) is NodeStatus.COMPLETED


# ----------------------------------------------------------- redrive, cancel
def test_redrive_failed_invocation(hitl: Hitl, db: Path) -> None:
    (inv,) = invocation_ids(db, "incident-failed-1")
    text = ok(hitl("redrive", "incident-failed-1", inv[:8], "--reason", "pager back"))
    assert text.splitlines()[0].startswith("redrive") and "pager back" in text.splitlines()[0]
    assert "incident@1/mitigate@1 re-executes with the same run id" in text
    proj = projection(db, "incident-failed-1")
    assert proj.invocation_status(inv) is NodeStatus.COMPLETED
    assert proj.get(inv, "incident@1/triage@1").starts == 1


def test_redrive_of_a_non_failed_invocation_is_refused(hitl: Hitl, db: Path) -> None:
    (inv,) = invocation_ids(db, "refund-completed-1")
    operator_error(hitl("redrive", "refund-completed-1", inv), inv, "COMPLETED")
    operator_error(hitl("redrive", "refund-completed-1", "ffffffff"), "ffffffff")


def test_cancel_closes_open_interrupts(hitl: Hitl, db: Path) -> None:
    (inv,) = invocation_ids(db, "refund-waiting-1")
    text = ok(hitl("cancel", "refund-waiting-1", inv, "--reason", "duplicate"))
    assert "closed finance-order-1001, risk-order-1001" in text
    inbox = json.loads(ok(hitl("inbox", "--session", "refund-waiting-1", "--json")))
    assert inbox["interrupts"] == []
    proj = projection(db, "refund-waiting-1")
    assert proj.invocation_status(inv) is NodeStatus.CANCELLED
    operator_error(hitl("cancel", "refund-waiting-1", inv), "was cancelled by tester", "reason: duplicate", "final")
    operator_error(hitl("resume", "refund-waiting-1", 'risk-order-1001={"approved": true}'), "risk-order-1001")


# -------------------------------------------------------------------- events
def test_events_lists_the_log(hitl: Hitl, db: Path) -> None:
    _, stored = session_events(db, "refund-partial-1")
    lines = ok(hitl("events", "refund-partial-1")).splitlines()
    assert len(lines) == len(stored)
    assert lines[0].split()[:4] == ["1", *lines[0].split()[1:3], "message"]
    assert "answers finance-order-1002 by fiona" in ok(hitl("events", "refund-partial-1"))
    rows = json_lines(ok(hitl("events", "refund-partial-1", "--after", "3", "--limit", "2", "--json")))
    assert [r["seq"] for r in rows] == [4, 5] and rows[0]["id"] == stored[3].event.id
    operator_error(hitl("events", "no-such-session"), "no-such-session")


def test_action_registry_cli_templates_are_real_commands(hitl: Hitl, db: Path) -> None:
    """console/actions.py names a headless command per action; each must parse."""
    from console.actions import ACTIONS

    (inv,) = invocation_ids(db, "refund-waiting-1")
    values = {
        "session_id": "refund-waiting-1",
        "invocation_id": inv,
        "interrupt_id": "finance-order-1001",
        "status": "waiting",
        "text": "refund",
        "position": "5",  # replay.* templates: an event number and a marked one
        "mark": "2",
    }
    for action in ACTIONS:
        if not action.cli or action.read_only_disabled:
            continue
        args = [a for a in action.cli.format(**values).split()[1:] if a != "--tail"]  # --tail never returns
        result = hitl(*args)
        assert result.exit_code == 0, f"{action.id}: {action.cli}: {result.output}"
    # the write templates: resume with --answer, redrive/cancel take SESSION INVOCATION
    ok(hitl("resume", "refund-waiting-1", "--answer", 'finance-order-1001={"approved": true}', "--dry-run"))


# -------------------------------------------------------------------- replay
def test_replay_every_event_with_status_changes(hitl: Hitl, db: Path) -> None:
    _, events = session_events(db, "incident-redriven-1")
    rows = json_lines(ok(hitl("replay", "incident-redriven-1", "--json")))
    assert [r["seq"] for r in rows] == [s.seq for s in events]
    failed = [r for r in rows if r["statuses"].get("incident@1/mitigate@1") == "FAILED"]
    assert len(failed) == 1
    redrive = next(r for r in rows if r["kind"] == "redrive")
    assert redrive["statuses"]["incident@1/mitigate@1"] == "PENDING"
    assert rows[-1]["statuses"] == {"incident@1": "COMPLETED"}
    text = ok(hitl("replay", "incident-redriven-1"))
    assert "answer to mitigate-" in text and "auto-completed from the answer" in text


def test_replay_at_shows_the_tree_at_that_event(hitl: Hitl, db: Path) -> None:
    rows = json_lines(ok(hitl("replay", "incident-redriven-1", "--json")))
    failed_at = next(r["seq"] for r in rows if r["statuses"].get("incident@1") == "FAILED")
    text = ok(hitl("replay", "incident-redriven-1", "--at", str(failed_at)))
    assert f"at event {failed_at} of {len(rows)}" in text
    assert any(line.split()[:2] == ["mitigate@1", "FAILED"] for line in text.splitlines())
    data = json.loads(ok(hitl("replay", "incident-redriven-1", "--at", "0", "--json")))
    assert data["invocations"] == [] and data["of"] == len(rows)
    operator_error(hitl("replay", "incident-redriven-1", "--at", "9999"), "past its end")


def test_replay_needs_a_session_or_a_file(hitl: Hitl) -> None:
    assert hitl("replay").exit_code == 2


# ------------------------------------------------------------- export/import
def test_export_import_roundtrip_and_replay_from_file(hitl: Hitl, db: Path, tmp_path: Path) -> None:
    exported = ok(hitl("export", "refund-completed-1"))
    lines = exported.splitlines()
    assert json.loads(lines[0])["format"] == "hitl-session"
    path = tmp_path / "s.jsonl"
    path.write_text(exported)
    text = ok(hitl("import", str(path), "--as", "refund-copy"))
    assert "imported session refund-copy" in text
    a, b = session_events(db, "refund-completed-1"), session_events(db, "refund-copy")
    assert [s.event for s in a[1]] == [s.event for s in b[1]]
    assert a[0].state == b[0].state
    assert ok(hitl("show", "refund-copy")).split("\n", 1)[1] == ok(hitl("show", "refund-completed-1")).split("\n", 1)[1]
    from_file = json_lines(ok(hitl("replay", "--file", str(path), "--json")))
    from_store = json_lines(ok(hitl("replay", "refund-completed-1", "--json")))
    assert from_file == from_store
    # importing the same id again is a conflict; a broken file names its line
    operator_error(hitl("import", str(path)), "refund-completed-1", "already exists")
    bad = tmp_path / "bad.jsonl"
    bad.write_text(lines[0] + "\n" + lines[1][:-5] + "\n")
    operator_error(hitl("import", str(bad), "--as", "x"), "line 2")
    operator_error(hitl("export", "no-such-session"), "no-such-session")


# ---------------------------------------------------------------------- demo
def test_demo_command_builds_then_keeps(tmp_path: Path, hitl: Hitl) -> None:
    target = tmp_path / "fresh.sqlite"
    text = ok(hitl("demo", "--long-iterations", "1", "--clock", "1700000000", db_path=target))
    assert text.count("created ") == len(EXPECTED)
    again = ok(hitl("demo", "--long-iterations", "1", db_path=target))
    assert again.count("kept ") == len(EXPECTED)
    rebuilt = json.loads(
        ok(hitl("demo", "--fresh", "--long-iterations", "1", "--sessions", "3", "--json", db_path=target))
    )
    assert len(rebuilt["created"]) == len(EXPECTED) and rebuilt["bulk"] == 3
    operator_error(hitl("--read-only", "demo", db_path=target), "read-only")


# --------------------------------------------------------------- the console
def test_no_subcommand_opens_the_console(hitl: Hitl, db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[tuple] = []
    fake = types.ModuleType("console.app")
    fake.run_app = lambda path, read_only, registry, **kw: calls.append((path, read_only, registry, kw))  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "console.app", fake)
    ok(hitl("--read-only", "--app", "ghost=tests.cli.ghost_app:workflow", "--show-secrets", "--secret-pattern", "pin"))
    ((path, read_only, registry, kw),) = calls
    assert Path(path) == db and read_only is True
    assert "ghost" in registry and "refund_approval" in registry
    assert kw["show_secrets"] is True and "pin" in kw["secret_patterns"]


def test_no_subcommand_without_the_console_ui(hitl: Hitl, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "console.app", None)
    operator_error(hitl(), "console UI", "hitl --help")


def test_unknown_option_is_a_usage_error(hitl: Hitl) -> None:
    assert hitl("sessions", "--colour").exit_code == 2
    assert hitl("resume", "refund-waiting-1").exit_code == 2  # no ID=JSON


def test_operator_defaults_to_the_config_like_the_console(hitl: Hitl, tmp_path: Path) -> None:
    config = tmp_path / "hitl.toml"
    config.write_text('[console]\noperator = "fiona"\n')
    answer = 'finance-order-1001={"approved": true, "note": "ok"}'
    ok(hitl("--config", str(config), "resume", "refund-waiting-1", answer))
    rows = json.loads(ok(hitl("audit", "--session", "refund-waiting-1", "--json")))
    newest = rows["audit"][0]
    assert newest["operator"] == "fiona"


def test_dry_run_says_what_runs_next_from_the_workflow_graph(hitl: Hitl) -> None:
    answer = 'risk-order-1002={"approved": true, "note": "ok"}'
    text = ok(hitl("resume", "refund-partial-1", answer, "--dry-run"))
    assert "next:       approvals (join) runs: every branch is complete" in text
    plan = json.loads(ok(hitl("resume", "refund-partial-1", answer, "--dry-run", "--json")))
    assert plan["next"] == ["approvals (join) runs: every branch is complete"]
    partial = json.loads(ok(hitl("resume", "refund-waiting-1", 'finance-order-1001={"approved": true, "note": "x"}',
                                 "--dry-run", "--json")))
    assert partial["next"] == ["approvals (join) waits for risk_approval"]


# ----------------------------------------------------------- issue 11: refusals
def test_cancel_requires_a_reason_and_writes_nothing_without_one(hitl: Hitl, db: Path) -> None:
    (inv,) = invocation_ids(db, "refund-waiting-1")
    _, before = session_events(db, "refund-waiting-1")
    for argv in ([], ["--reason", "  "]):
        operator_error(hitl("cancel", "refund-waiting-1", inv, *argv), "needs a reason", "--reason", "nothing was written")
    assert len(session_events(db, "refund-waiting-1")[1]) == len(before)
    assert projection(db, "refund-waiting-1").invocation_status(inv) is NodeStatus.WAITING


def test_cancel_on_a_terminal_asks_first(hitl: Hitl, db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (inv,) = invocation_ids(db, "refund-waiting-1")
    monkeypatch.setattr("console.cli.writes.interactive", lambda: True)
    res = hitl("cancel", "refund-waiting-1", inv, "--reason", "dup", input="n\n")
    operator_error(res, "not cancelled", "nothing was written")
    assert "Cancel invocation" in res.output and "This is final" in res.output
    assert projection(db, "refund-waiting-1").invocation_status(inv) is NodeStatus.WAITING
    ok(hitl("cancel", "refund-waiting-1", inv, "--reason", "dup", input="y\n"))
    assert projection(db, "refund-waiting-1").invocation_status(inv) is NodeStatus.CANCELLED


def test_cancel_with_yes_does_not_ask(hitl: Hitl, db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (inv,) = invocation_ids(db, "refund-waiting-1")
    monkeypatch.setattr("console.cli.writes.interactive", lambda: True)
    text = ok(hitl("cancel", "refund-waiting-1", inv, "--reason", "dup", "--yes"))
    assert "Cancel invocation" not in text


def test_text_output_neutralises_terminal_control_and_json_stays_exact(hitl: Hitl, db: Path) -> None:
    nasty = "\x1b]52;c;SGVsbG8=\x07[b]x[/b]\u202e\x1b[2J"
    sid = "refund-waiting-1"
    (inv,) = invocation_ids(db, sid)
    ok(hitl("cancel", sid, inv, "--reason", nasty, "--operator", "op\x1b[31m"))
    text = ok(hitl("events", sid))
    assert "\x1b" not in text and "\u202e" not in text and "\x07" not in text
    assert "␛]52;c;SGVsbG8=␇[b]x[/b]" in text
    events = json_lines(ok(hitl("--json", "events", sid)))
    assert any((e.get("custom_metadata") or {}).get("reason") == nasty for e in events)


def test_sessions_status_interrupted_lists_runs_whose_process_died(hitl: Hitl, db: Path) -> None:
    import asyncio

    from engine.models import Content, Event, NodeInfo
    from engine.store.sqlite import SQLiteStore

    async def strand() -> None:  # a start record and nothing after it, no lease: the process died
        store = await SQLiteStore.open(db)
        try:
            await store.create_session("billing", "gina", "billing-stuck")
            await store.append_event("billing-stuck", Event(invocation_id="x", author="user", content=Content.from_text("o-5")))
            await store.append_event("billing-stuck", Event(
                invocation_id="x", author="billing",
                node_info=NodeInfo(path="billing@1", run_id="1", lifecycle="start", is_container=True, rerun_on_resume=True),
            ))
        finally:
            await store.close()

    asyncio.run(strand())
    text = ok(hitl("sessions", "--status", "interrupted"))
    assert "billing-stuck" in text and "interrupted mid-run" in text
    assert len([ln for ln in text.splitlines() if ln.startswith(("refund", "incident", "billing"))]) == 1
    assert "billing-stuck" not in ok(hitl("sessions", "--status", "waiting"))


def test_dry_run_for_an_unregistered_app_says_the_real_command_would_refuse(hitl: Hitl, db: Path) -> None:
    import asyncio

    from engine import START, Content, RequestInput, Runner, Workflow, node
    from engine.store.sqlite import SQLiteStore

    @node
    async def ask(node_input: object) -> object:
        yield RequestInput("ok?", response_schema=bool, interrupt_id="q-1")

    async def start() -> None:  # a session of an app this CLI has no code for
        store = await SQLiteStore.open(db)
        try:
            async for _ in Runner("elsewhere", Workflow("wf", [(START, ask)]), store).run("u", "alien-1", Content.from_text("go")):
                pass
        finally:
            await store.close()

    asyncio.run(start())
    _, before = session_events(db, "alien-1")
    res = hitl("resume", "alien-1", "q-1=true", "--dry-run", "--via", "local")
    operator_error(res, "the real command would refuse", "elsewhere")
    assert "q-1" in res.output  # the plan is still shown
    text = ok(hitl("resume", "alien-1", "q-1=true", "--dry-run"))  # issue 18: the default hands it to a worker
    assert "leave the turn to a worker of elsewhere" in text
    res = hitl("--json", "resume", "alien-1", "q-1=true", "--dry-run", "--via", "local")
    assert res.exit_code == 1 and json.loads(res.output.splitlines()[0])["would_run"] is False
    operator_error(hitl("resume", "alien-1", "q-1=true", "--via", "local"), "elsewhere")  # and indeed it does
    assert len(session_events(db, "alien-1")[1]) == len(before)
