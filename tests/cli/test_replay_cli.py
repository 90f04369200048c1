"""`hitl replay`: per-event JSON (the statuses the console's Replay screen shows,
plus markers), --at, --diff-from, --file without a store, and --ui."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from engine.projection import project
from engine.views import node_statuses

from .conftest import Hitl, json_lines, ok, operator_error
from .helpers import session_events


def test_json_gives_every_event_its_markers_changes_and_node_statuses(hitl: Hitl, db: Path) -> None:
    _, events = session_events(db, "refund-partial-1")
    rows = json_lines(ok(hitl("replay", "refund-partial-1", "--json")))
    assert [r["position"] for r in rows] == list(range(1, len(events) + 1))
    for k, row in enumerate(rows, start=1):
        proj = project([(s.seq, s.event) for s in events[:k]])
        inv = events[k - 1].event.invocation_id
        assert row["of"] == len(events) and row["seq"] == events[k - 1].seq
        assert row["nodes"] == node_statuses(proj, inv), k
        assert row["open"] == [i.id for i in proj.open_interrupts(inv)]
    answer = next(r for r in rows if r["kind"] == "response")
    kinds = {m["kind"]: m for m in answer["markers"]}
    assert "by fiona (monthly run)" in kinds["answer"]["text"]
    assert kinds["auto-complete"]["path"] == "refund@1/finance_approval@1"
    assert answer["statuses"] == {"refund@1": "PENDING", "refund@1/finance_approval@1": "COMPLETED"}
    changed = {(c["area"], c["key"]): (c["before"], c["after"]) for c in answer["changes"]}
    assert changed[("interrupt", "finance-order-1002")][0] == "open"
    assert rows[0]["markers"][0]["kind"] == "invocation"


def test_at_shows_the_event_that_led_there(hitl: Hitl) -> None:
    rows = json_lines(ok(hitl("replay", "incident-redriven-1", "--json")))
    redrive = next(r["position"] for r in rows if r["kind"] == "redrive")
    data = json.loads(ok(hitl("replay", "incident-redriven-1", "--at", str(redrive), "--json")))
    assert data["event"]["kind"] == "redrive"
    assert [m["kind"] for m in data["event"]["markers"]] == ["redrive"]
    assert data["event"]["statuses"]["incident@1/mitigate@1"] == "PENDING"
    text = ok(hitl("replay", "incident-redriven-1", "--at", str(redrive)))
    assert "redrive by sam (pager API back)" in text


def test_diff_from_m_to_n(hitl: Hitl) -> None:
    rows = json_lines(ok(hitl("replay", "incident-redriven-1", "--json")))
    failed = next(r["position"] for r in rows if r["statuses"].get("incident@1") == "FAILED")
    data = json.loads(
        ok(hitl("replay", "incident-redriven-1", "--at", str(len(rows)), "--diff-from", str(failed), "--json"))
    )
    changes = {(c["area"], c["key"]): (c["before"], c["after"]) for c in data["changes"]}
    assert changes[("node", "incident@1 status")] == ("FAILED", "COMPLETED")
    assert changes[("node", "incident@1/mitigate@1 status")] == ("FAILED", "COMPLETED")
    assert changes[("node", "incident@1/close@1")] == (None, "new run COMPLETED")
    assert changes[("state", "pager_calls")] == (1, 2)
    text = ok(hitl("replay", "incident-redriven-1", "--at", str(len(rows)), "--diff-from", str(failed)))
    assert f"from event {failed} to event {len(rows)}" in text and "FAILED -> COMPLETED" in text
    assert hitl("replay", "incident-redriven-1", "--diff-from", "3").exit_code == 2
    operator_error(hitl("replay", "incident-redriven-1", "--at", "3", "--diff-from", "999"), "past its end")


def test_file_replay_equals_the_store_replay(hitl: Hitl, tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_text(ok(hitl("export", "deploy-waiting-1")))
    assert json_lines(ok(hitl("replay", "--file", str(path), "--json"))) == json_lines(
        ok(hitl("replay", "deploy-waiting-1", "--json"))
    )


@pytest.fixture
def opened(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    """Calls of the console's run_app (recorded instead of opening a terminal UI)."""
    calls: list[dict[str, Any]] = []
    monkeypatch.setattr("console.app.run_app", lambda db, **kw: calls.append({"db": db, **kw}))
    return calls


def test_ui_opens_the_console_replay_read_only(
    hitl: Hitl, db: Path, tmp_path: Path, opened: list[dict[str, Any]]
) -> None:
    from console.screens.replay import ReplaySource

    ok(hitl("replay", "incident-failed-1", "--ui", "--at", "7"))
    assert opened[-1]["read_only"] is True
    assert opened[-1]["replay"] == ReplaySource(session_id="incident-failed-1", at=7)
    assert Path(opened[-1]["db"]) == db
    path = tmp_path / "s.jsonl"
    path.write_text(ok(hitl("export", "incident-failed-1")))
    ok(hitl("replay", "--file", str(path), "--ui"))
    assert opened[-1]["replay"] == ReplaySource(file=path)
