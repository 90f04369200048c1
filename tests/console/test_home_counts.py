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
