"""Issue 16: every main screen at 80x24, 120x36 and 200x50, on the pinned fixture
store (sessions, session, inbox, replay) and the answer fixture (answer): columns
and truncation follow the width, a path gives way before what identifies the
screen, counts and statuses are never cut. The sessions list's snapshots are
also the home summary's. Regenerate with ``pytest tests/console/test_sizes.py
--snapshot-update`` and look at them (``tests/console/test_snapshot_files.py``
turns an SVG into text)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from textual.pilot import Pilot

from console.screens.answer import AnswerScreen
from console.screens.replay import ReplaySource
from engine.store import MemoryStore

from .answer_store import demo_store
from .conftest import drive, keys_then_settle, make_app, settle
from .scenarios import build_store_sync
from .test_answer import app_for, wait_until

SIZES = [(80, 24), (120, 36), (200, 50)]
STORE_PATH = "/srv/hitl/teams/payments/stores/hitl-production.sqlite"
"""A long store path: it is shortened before the title loses anything."""


@pytest.fixture(scope="module")
def store() -> MemoryStore:
    return build_store_sync()


def _id(size: tuple[int, int]) -> str:
    return f"{size[0]}x{size[1]}"


@pytest.mark.parametrize("size", SIZES, ids=_id)
def test_home(snap_compare, store, size):
    """The home: the summary line, the triage order, columns sized to the width."""
    app = make_app(store)
    app.store_label = STORE_PATH
    assert snap_compare(app, terminal_size=size, run_before=keys_then_settle())


@pytest.mark.parametrize("size", SIZES, ids=_id)
def test_session(snap_compare, store, size):
    """A session: the title keeps the session id (the store path gives way), the
    log's author and path columns grow with the width."""

    async def run_before(pilot: Pilot[Any]) -> None:
        await drive(pilot, session="refund-partial")

    app = make_app(store)
    app.store_label = STORE_PATH
    assert snap_compare(app, terminal_size=size, run_before=run_before)


@pytest.mark.parametrize("size", SIZES, ids=_id)
def test_inbox(snap_compare, store, size):
    assert snap_compare(make_app(store), terminal_size=size, run_before=keys_then_settle("i"))


@pytest.mark.parametrize("size", SIZES, ids=_id)
def test_replay(snap_compare, store, size):
    async def run_before(pilot: Pilot[Any]) -> None:
        for _ in range(2):
            await pilot.app.workers.wait_for_complete()
            await pilot.pause()

    app = make_app(store, replay=ReplaySource(session_id="drafting-loop", at=9))
    assert snap_compare(app, terminal_size=size, run_before=run_before)


pytestmark = pytest.mark.usefixtures("operator")  # $USER, no hitl.toml


@pytest.mark.parametrize("size", SIZES, ids=_id)
def test_answer(snap_compare, size):
    """The response editor for the 24 labels: the banner's counts are never cut."""
    store = asyncio.run(demo_store())

    async def run_before(pilot: Pilot[Any]) -> None:
        await drive(pilot, session="labels-partial-1")
        await pilot.press("A", "e")
        await settle(pilot)
        screen = pilot.app.screen
        assert isinstance(screen, AnswerScreen)
        await wait_until(pilot, lambda: screen.preview is not None or screen.values() is None)
        await settle(pilot)

    assert snap_compare(app_for(store), terminal_size=size, run_before=run_before)
