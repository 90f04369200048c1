"""The home list lists everything its summary line counts as work: a failed
session (it needs a re-drive) is a row, in the attention order -- after what
stopped mid-run, before what merely waits. (It counted "1 failed" and listed no
failed session.)"""

from __future__ import annotations

import pytest
from textual.widgets import DataTable

from console.screens.sessions import SessionsScreen
from engine.status import SessionStatus
from engine.store import MemoryStore

from .conftest import make_app, settle
from .scenarios import build_store


@pytest.mark.parametrize("size", [(80, 24), (120, 40)])
async def test_every_counted_session_is_listed_in_the_attention_order(size) -> None:
    store: MemoryStore = await build_store()
    app = make_app(store)
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, SessionsScreen)
        s = screen.summary
        assert s is not None and s.failed == 1
        table = screen.query_one(DataTable)
        listed = [str(k.value) for k in table.rows]
        by_id = {r.id: r for r in screen.rows}
        failed = [i for i in listed if by_id[i].status == SessionStatus.FAILED]
        waiting = [i for i in listed if by_id[i].status == SessionStatus.WAITING and i not in screen.stopped]
        stopped = [i for i in listed if i in screen.stopped]
        assert len(failed) == s.failed and len(stopped) == s.interrupted and len(waiting) == s.waiting
        assert listed == stopped + failed + waiting  # the attention order
        line = str(table.get_row(failed[0])[0])
        assert "FAILED" in line


@pytest.mark.parametrize("size", [(80, 24), (120, 40)], ids=["80x24", "120x40"])
async def test_a_held_turn_is_counted_and_listed(size, tmp_path) -> None:
    """An answer left to a worker that found a node in doubt is held for an
    operator's acknowledged re-drive: the summary line counts it (interrupted)
    and the home list shows it, first -- its index still says waiting with no
    open interrupt, so the triage read (open interrupts, running, failed) missed it."""
    from engine import handoff
    from engine.store.sqlite import SQLiteStore
    from tests.reliability.test_queued_display import HELD, _ghost_sessions

    db = tmp_path / "held.sqlite"
    async with SQLiteStore.open(db) as store:
        invs = await _ghost_sessions(store, 3)
        for sid in invs:
            assert (await handoff.queue_answer(store, sid, {"boo": True}, operator="op")).error is None
        assert await store.claim_turn_request("g-0", invs["g-0"], "w-1", 30)
        await store.unclaim_turn_request("g-0", invs["g-0"], "w-1", held=HELD)
    app = make_app(None, db_path=db)
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, SessionsScreen)
        s = screen.summary
        assert s is not None and (s.interrupted, s.queued, s.waiting) == (1, 2, 0)
        assert "1 interrupted" in str(screen.query_one("#sessions-summary").render())
        table = screen.query_one(DataTable)
        listed = [str(k.value) for k in table.rows]
        assert listed == ["g-0"], listed  # counted, so listed; the two queued ones wait for a worker
        assert "g-0" in screen.stopped
        assert "INTERRUPTED" in str(table.get_row("g-0")[0])
