"""The home's first paint judges liveness with one read of the page's lease rows
(``leases_of``), not a liveness check per session; what needs the events --
nodes in doubt -- is judged after the paint, and a reload keeps the last verdict
until the next one (no IN DOUBT flicker). The numbers are in
``benchmarks/bench_console.py`` (first_paint_s, first_paint_cpu_s)."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from console.messages import LivenessJudged, SessionsLoaded
from console.screens.sessions import SessionsScreen
from console.widgets.plain import DataTable
from engine.liveness import new_owner, page_verdicts
from engine.models import Content, Event, NodeInfo
from engine.store import MemoryStore
from engine.store.base import Lease
from engine.store.workers import TurnRequest

from .conftest import drive, make_app, settle
from .scenarios import build_store

READS = ("leases_of", "list_leases", "get_lease", "list_invocations", "invocation_events", "events", "get_snapshot",
         "snapshot_and_events")
"""The store reads a liveness check makes."""


@pytest.fixture
async def store() -> MemoryStore:
    return await build_store()


def count_reads(store: MemoryStore) -> Counter[str]:
    calls: Counter[str] = Counter()
    for name in READS:
        method = getattr(store, name, None)
        if method is None:
            continue

        def counted(*args: Any, _m: Any = method, _n: str = name, **kwargs: Any) -> Any:
            calls[_n] += 1
            return _m(*args, **kwargs)

        setattr(store, name, counted)
    return calls


async def test_first_paint_reads_the_pages_leases_once_and_in_doubt_follows(store, monkeypatch):
    calls = count_reads(store)
    loaded: list[tuple[Counter[str], SessionsLoaded]] = []
    judged: list[LivenessJudged] = []
    on_loaded, on_judged = SessionsScreen.on_sessions_loaded, SessionsScreen.on_liveness_judged

    def spy_loaded(self: SessionsScreen, message: SessionsLoaded) -> None:
        loaded.append((Counter(calls), message))
        on_loaded(self, message)

    def spy_judged(self: SessionsScreen, message: LivenessJudged) -> None:
        judged.append(message)
        on_judged(self, message)

    monkeypatch.setattr(SessionsScreen, "on_sessions_loaded", spy_loaded)
    monkeypatch.setattr(SessionsScreen, "on_liveness_judged", spy_judged)
    app = make_app(store)
    async with app.run_test(size=(120, 30)) as pilot:
        await settle(pilot)
        before, first = loaded[0]
        # one read of lease rows for the whole page; no per-session liveness check before the paint
        assert before["leases_of"] == 1, before
        assert not any(before[n] for n in READS if n != "leases_of"), before
        assert first.stopped == {"billing-stuck": (True, False)}  # stopped mid-run: seen from the leases alone
        assert "billing-stuck" in first.judge
        # after the paint: the full verdict, with the node in doubt
        assert judged and judged[0].stopped == {"billing-stuck": (True, True)}
        screen = app.screen
        assert isinstance(screen, SessionsScreen)
        table = screen.query_one(DataTable)
        assert table.get_cell("billing-stuck", "status").plain == "⚠ INTERRUPTED IN DOUBT"
        assert str(next(iter(table.rows)).value) == "billing-stuck"  # what stopped mid-run goes first
        # a reload's first verdict keeps the judged one: no "INTERRUPTED" without "IN DOUBT" in between
        screen.action_refresh()
        await settle(pilot)
        _, again = loaded[-1]
        assert again.stopped["billing-stuck"] == (True, True)


async def test_a_live_running_session_is_not_listed_in_triage(store):
    """A RUNNING session whose turn holds a live lease is running, not stopped: the
    first verdict leaves it out of the triage list, and the full one agrees."""
    await store.create_session("billing", "hal", "billing-live")
    await store.append_event("billing-live", Event(invocation_id="y", author="user", content=Content.from_text("o")))
    await store.acquire_lease("billing-live", "y", new_owner(), 60.0)
    await store.append_event("billing-live", Event(invocation_id="y", author="billing", node_info=NodeInfo(
        path="billing@1", run_id="1", lifecycle="start", is_container=True)))
    app = make_app(store)
    async with app.run_test(size=(120, 30)) as pilot:
        screen = await drive(pilot, expect=SessionsScreen)
        assert "billing-live" not in {r.id for r in screen.rows} and "billing-live" not in screen.stopped
        assert screen.verdicts.get("billing-live", "unjudged") == (None, False)  # judged: not stopped, not queued


def test_page_verdicts_from_lease_rows_alone():
    def lease(sid: str, expires: float) -> Lease:
        return Lease(session_id=sid, invocation_id="i", owner="o", acquired_at=0.0, renewed_at=0.0, expires_at=expires)

    def request(sid: str, held: str | None = None) -> TurnRequest:
        return TurnRequest(app_name="app", session_id=sid, invocation_id="i", kind="continue", payload={},
                           requested_at=1.0, held=held)

    rows = [("a", "running"), ("b", "running"), ("c", "waiting"), ("d", "waiting"), ("e", "completed"),
            ("f", "running"), ("g", "running"), ("h", "waiting")]
    requests = {(r.session_id, r.invocation_id): r for r in (request("f"), request("g", held="in doubt"), request("h"))}
    stopped, queued, judge = page_verdicts(rows, [lease("b", 10_000.0), lease("c", 0.0)], requests, now=100.0)
    assert stopped == {"a", "g"}  # running, no live lease, no runnable request (g's is held: nodes in doubt)
    assert queued == {"f"}  # running, no live lease, a request a worker will run
    # the running ones, any with a lease row or a turn request (h: an answer queued while the index
    # still says waiting); d and e need nothing more
    assert judge == ["a", "b", "c", "f", "g", "h"]
