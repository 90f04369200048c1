"""Read commands touch only what they show (the timings are in
benchmarks/bench_read_scale.py; here, the access pattern that makes them):
``events`` reads in bounded pages, ``replay --at N`` reads events up to N only,
``show`` loads each invocation from its snapshot, not the whole log."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from console.cli import loads as cli_mod
from console.cli import reads as cli_reads
from engine.store.sqlite import SQLiteStore
from engine.store.sqlite.event_log import EventLog
from tests.cli.conftest import ok

from .conftest import Hitl


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, Any]]:
    seen: list[tuple[str, Any]] = []
    events, rows, inv_events = SQLiteStore.events, SQLiteStore.event_rows, SQLiteStore.invocation_events

    async def spy_events(self: SQLiteStore, session_id: str, *a: Any, **kw: Any) -> Any:
        seen.append(("events", kw.get("limit")))
        return await events(self, session_id, *a, **kw)

    async def spy_rows(self: SQLiteStore, session_id: str, *a: Any, **kw: Any) -> Any:
        seen.append(("events", kw.get("limit")))  # the same page read, the stored text unparsed
        return await rows(self, session_id, *a, **kw)

    async def spy_inv(self: SQLiteStore, session_id: str, invocation_id: str, *a: Any, **kw: Any) -> Any:
        out = await inv_events(self, session_id, invocation_id, *a, **kw)
        seen.append(("invocation_events", len(out)))
        return out

    log_rows = EventLog.rows

    def spy_log(self: EventLog, after_seq: int, limit: int) -> Any:
        seen.append(("events", limit))  # `hitl events`' plain-sqlite3 read of a file: the same page read
        return log_rows(self, after_seq, limit)

    monkeypatch.setattr(SQLiteStore, "events", spy_events)
    monkeypatch.setattr(SQLiteStore, "event_rows", spy_rows)
    monkeypatch.setattr(SQLiteStore, "invocation_events", spy_inv)
    monkeypatch.setattr(EventLog, "rows", spy_log)
    monkeypatch.setattr(cli_mod, "EVENTS_PAGE", 10)
    monkeypatch.setattr(cli_reads, "EVENTS_PAGE", 10)  # (reads imported the name)
    return seen


def test_events_streams_in_pages(hitl: Hitl, calls: list[tuple[str, Any]]) -> None:
    text = ok(hitl("events", "deploy-long-1"))
    total = json.loads(ok(hitl("--json", "show", "deploy-long-1")))["session"]["last_seq"]
    assert len(text.splitlines()) == total > 10
    limits = [limit for name, limit in calls if name == "events"]
    assert limits and all(limit is not None and limit <= 10 for limit in limits), limits
    assert len(limits) >= total // 10


def test_replay_at_reads_only_up_to_n(hitl: Hitl, calls: list[tuple[str, Any]]) -> None:
    text = ok(hitl("replay", "deploy-long-1", "--at", "5"))
    total = json.loads(ok(hitl("--json", "show", "deploy-long-1")))["session"]["last_seq"]
    assert f"at event 5 of {total}" in text
    assert [c for c in calls if c[0] == "events"] == [("events", 4)]  # events 1-4, then event 5 alone


def test_show_loads_invocations_from_snapshots(hitl: Hitl, db: Path, calls: list[tuple[str, Any]]) -> None:
    ok(hitl("show", "deploy-long-1"))
    assert not [c for c in calls if c[0] == "events"], calls  # never the whole log
    # The snapshot written at the end of the last turn leaves (almost) nothing to fold.
    assert all(n <= 5 for name, n in calls if name == "invocation_events"), calls
    shown = ok(hitl("show", "deploy-long-1"))
    assert "earlier runs" in shown  # the collapsed loop still says how many iterations it hides


def test_show_all_runs_folds_in_pages(hitl: Hitl, calls: list[tuple[str, Any]]) -> None:
    shown = ok(hitl("show", "deploy-long-1", "--all-runs"))
    limits = [limit for name, limit in calls if name == "events"]
    assert limits and all(limit is not None and limit <= 10 for limit in limits), limits  # never the whole log
    assert "earlier runs" not in shown and shown.count("deploy@") > 1  # every iteration is there
