"""Snapshots of the Replay screen on the sample apps' demo sessions: an
interrupt, a partial answer (with its inferred auto-completion), a
re-execution with the same run id, a loop iteration, a failure and the diff
view, a re-drive.

Pinned like the other console snapshots: the demo's simulated clock and seeded
ids (``replay_store``), the console clock (``NOW``), UTC, no cursor blink, no
timers. Regenerate with ``pytest tests/console/test_replay_snapshots.py
--snapshot-update`` and look at them.
"""

from __future__ import annotations

from typing import Any

import pytest
from textual.pilot import Pilot

from console.screens.replay import ReplaySource
from engine.store import MemoryStore

from .conftest import make_app
from .replay_store import build_replay_store

SIZE = (120, 36)


@pytest.fixture(scope="module")
def store() -> MemoryStore:
    return build_replay_store()


def keys_then_settle(*keys: str):  # type: ignore[no-untyped-def]
    """Settle (the history loads in a worker), press the keys, settle again.
    Lighter than conftest's: a replay has no timers to wait for while paused."""

    async def run_before(pilot: Pilot[Any]) -> None:
        for _ in range(2):
            await pilot.app.workers.wait_for_complete()
            await pilot.pause()
        if keys:
            await pilot.press(*keys)
            await pilot.app.workers.wait_for_complete()
            await pilot.pause()

    return run_before


def replay(store: MemoryStore, session_id: str, at: int | None = None):  # type: ignore[no-untyped-def]
    return make_app(store, replay=ReplaySource(session_id=session_id, at=at))


def test_replay_at_an_interrupt(snap_compare, store):
    """:at 9: risk_approval raises its interrupt; finance still waits on its own."""
    app = replay(store, "refund-partial-1", at=0)
    assert snap_compare(app, terminal_size=SIZE, run_before=keys_then_settle("colon", *"at 9", "enter"))


def test_replay_partial_answer(snap_compare, store):
    """}: fiona answers finance only (with her reason); finance auto-completes
    (inferred: no event of its own), the workflow becomes PENDING, risk still waits."""
    app = replay(store, "refund-partial-1", at=0)
    assert snap_compare(app, terminal_size=SIZE, run_before=keys_then_settle("right_curly_bracket"))


def test_replay_re_execution(snap_compare, store):
    """The reviewer (rerun_on_resume=True) re-executes with the same run id after its answer."""
    app = replay(store, "review-completed-1", at=13)
    keys = ("right_square_bracket",) * 3
    assert snap_compare(app, terminal_size=SIZE, run_before=keys_then_settle(*keys))


def test_replay_loop_iteration(snap_compare, store):
    """The loop re-triggers deploy: a fresh run (deploy@2) after the answer to gate-1."""
    app = replay(store, "deploy-waiting-1", at=15)
    assert snap_compare(app, terminal_size=SIZE, run_before=keys_then_settle())


def test_replay_failure(snap_compare, store):
    """mitigate fails after the answer; the cursor is on it, its error in the details."""
    app = replay(store, "incident-failed-1", at=15)
    assert snap_compare(app, terminal_size=SIZE, run_before=keys_then_settle())


def test_replay_failure_diff(snap_compare, store):
    """m at the answer, G to the failure, d: statuses, outputs, new runs, interrupts, state."""
    app = replay(store, "incident-failed-1", at=9)
    assert snap_compare(app, terminal_size=SIZE, run_before=keys_then_settle("m", "G", "d"))


def test_replay_redrive(snap_compare, store):
    """{ from the end: the operator's re-drive, and the runs it makes PENDING."""
    app = replay(store, "incident-redriven-1")
    assert snap_compare(app, terminal_size=SIZE, run_before=keys_then_settle("left_curly_bracket"))
