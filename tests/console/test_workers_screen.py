"""The workers screen (issue 18): opened from command mode (``:workers``) or the
palette, over the workers' heartbeats and the queued turns in the store."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from engine.store.sqlite import SQLiteStore
from engine.store.workers import TurnRequest, WorkerRecord

from .conftest import keys_then_settle, make_app, settle
from .scenarios import NOW

COMMAND = ["colon", *"workers", "enter"]


async def _fill(db: Path) -> None:
    async with SQLiteStore.open(db) as store:
        await store.create_session("refunds", "u", "r-1")
        await store.create_session("billing", "u", "b-1")
        for wid, host, apps, beat in (
            ("w-live", "svc-a", ["refunds"], NOW - 1),
            ("w-stale", "svc-b", ["billing"], NOW - 600),
        ):
            await store.put_worker(WorkerRecord(
                worker_id=wid, host=host, pid=4242, apps=apps, versions={a: "0123abcd4567" for a in apps},
                current=["r-1/inv-1"] if wid == "w-live" else [], started_at=NOW - 3600, heartbeat_at=beat,
                stale_after=6.0,
            ))
        await store.request_turn(TurnRequest(app_name="refunds", session_id="r-1", invocation_id="inv-1",
                                             kind="continue", requested_at=NOW - 5))
        await store.request_turn(TurnRequest(app_name="billing", session_id="b-1", invocation_id="inv-2",
                                             kind="continue", requested_at=NOW - 5))


@pytest.fixture
def db(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)  # a relative path: the title bar shows the same text in every run
    path = Path("workers.sqlite")
    asyncio.run(_fill(path))
    return path


def test_workers_screen(snap_compare: Any, db: Path) -> None:
    """A live worker of refunds (one turn), a stale one of billing; billing's queued turn has no live worker."""
    assert snap_compare(make_app(None, db_path=db), terminal_size=(110, 24), run_before=keys_then_settle(*COMMAND))


async def test_workers_screen_lists_live_and_stale_workers_and_the_queue(db: Path) -> None:
    from console.screens.workers import WorkersScreen

    app = make_app(None, db_path=db)
    async with app.run_test(size=(110, 24)) as pilot:
        await settle(pilot)
        for key in COMMAND:
            await pilot.press(key)
        await settle(pilot)
        assert isinstance(app.screen, WorkersScreen)
        text = str(app.screen.query_one("#workers").render())
        assert "● live  running   svc-a:4242" in text and "refunds (0123abcd4567)" in text and "turns 1" in text
        assert "○ stale running   svc-b:4242" in text
        assert "refunds: 1 runnable, 0 waiting for an acknowledged re-drive; 1 live worker(s)" in text
        assert "billing: 1 runnable, 0 waiting for an acknowledged re-drive; 0 live worker(s)" in text
        await pilot.press("escape")
        await settle(pilot)
        assert not isinstance(app.screen, WorkersScreen)
