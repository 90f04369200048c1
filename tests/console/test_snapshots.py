"""Snapshot tests of the console's screens on a pinned fixture store.

Everything that varies is pinned: ids and timestamps (``scenarios.pin``), the
clock (``NOW``), the time zone (UTC, conftest), no cursor blink, no timers.
Regenerate with ``pytest tests/console --snapshot-update`` and look at them.
"""

from __future__ import annotations

import asyncio

import pytest

from engine.store import MemoryStore

from .conftest import CorruptingStore, copy_into, keys_then_settle, make_app
from .scenarios import build_store_sync

# Rows of the sessions list (newest activity first), for "down" presses.
ROW = {
    "refund-new": 0,
    "refund-partial": 1,
    "billing-stuck": 2,
    "onboard-nested": 3,
    "support-multi": 4,
    "labelling-fan": 5,
    "drafting-loop": 6,
    "billing-failed": 7,
    "refund-done": 8,
}


def open_keys(session: str) -> list[str]:
    """From the home (triage order): every session by activity (o), then down to it."""
    return ["o"] + ["down"] * ROW[session] + ["enter"]


@pytest.fixture(scope="module")
def store() -> MemoryStore:
    return build_store_sync()


def test_sessions_list(snap_compare, store):
    """Home: every session with status word, open count, oldest open age, last activity."""
    assert snap_compare(make_app(store), terminal_size=(80, 24), run_before=keys_then_settle())


def test_sessions_filtered(snap_compare, store):
    """Quick status filter 1 (waiting), then text filter "ref": only refund-partial."""
    assert snap_compare(
        make_app(store),
        terminal_size=(80, 24),
        run_before=keys_then_settle("1", "slash", "r", "e", "f", "enter"),
    )


def test_sessions_sorted_by_oldest_interrupt(snap_compare, store):
    """The home's triage order (the default since issue 16), waiting sessions only."""
    assert snap_compare(make_app(store), terminal_size=(80, 24), run_before=keys_then_settle("1"))


def test_empty_store(snap_compare):
    assert snap_compare(make_app(MemoryStore()), terminal_size=(80, 24), run_before=keys_then_settle())


def test_inbox(snap_compare, store):
    """Every open interrupt, oldest first, with node path and run ids."""
    assert snap_compare(make_app(store), terminal_size=(100, 24), run_before=keys_then_settle("i"))


def test_session_parallel_fanout_partially_answered(snap_compare, store):
    """finance answered (auto-completed), legal and ops still WAITING; cursor on the first waiting node."""
    assert snap_compare(
        make_app(store), terminal_size=(100, 30), run_before=keys_then_settle(*open_keys("refund-partial"))
    )


def test_session_next_waiting_details(snap_compare, store):
    """n moves to ops@1: its pending interrupt with message, payload and schema."""
    assert snap_compare(
        make_app(store), terminal_size=(100, 34), run_before=keys_then_settle(*open_keys("refund-partial"), "n")
    )


def test_session_nested_workflow_waiting(snap_compare, store):
    assert snap_compare(
        make_app(store), terminal_size=(100, 30), run_before=keys_then_settle(*open_keys("onboard-nested"))
    )


def test_session_dynamic_children(snap_compare, store):
    """ctx.run_node children of an orchestration node: label@1..3, one answered."""
    assert snap_compare(
        make_app(store), terminal_size=(100, 30), run_before=keys_then_settle(*open_keys("labelling-fan"))
    )


def test_session_loop_with_several_runs(snap_compare, store):
    """draft/review/decide ran 3/3/2 times; the snapshot dropped old runs, history restores them."""
    assert snap_compare(
        make_app(store), terminal_size=(100, 30), run_before=keys_then_settle(*open_keys("drafting-loop"))
    )


def test_session_failed_node(snap_compare, store):
    """The cursor starts on the failed leaf; its error and attempts are in the details."""
    assert snap_compare(
        make_app(store), terminal_size=(100, 30), run_before=keys_then_settle(*open_keys("billing-failed"))
    )


def test_session_in_doubt_node(snap_compare, store):
    """A start record without an end: RUNNING and flagged in doubt."""
    assert snap_compare(
        make_app(store), terminal_size=(100, 30), run_before=keys_then_settle(*open_keys("billing-stuck"))
    )


def test_session_event_json(snap_compare, store):
    """Tab to the log: the details pane shows the selected event as JSON."""
    assert snap_compare(
        make_app(store),
        terminal_size=(100, 34),
        run_before=keys_then_settle(*open_keys("refund-partial"), "tab", "tab", "up", "up", "up"),
    )


def test_session_invocation_picker(snap_compare, store):
    assert snap_compare(
        make_app(store), terminal_size=(100, 30), run_before=keys_then_settle(*open_keys("support-multi"), "p")
    )


def test_session_small_terminal(snap_compare, store):
    """80x24: tree, details and log all fit; labels are cut, not wrapped."""
    assert snap_compare(
        make_app(store), terminal_size=(80, 24), run_before=keys_then_settle(*open_keys("onboard-nested"))
    )


def test_session_large_terminal(snap_compare, store):
    """A big terminal: the panes grow, labels and summaries are no longer cut."""
    assert snap_compare(
        make_app(store), terminal_size=(180, 50), run_before=keys_then_settle(*open_keys("refund-partial"))
    )


def test_corrupted_rows_warning(snap_compare):
    """Two rows of refund-partial cannot be read: a banner names them, the rest is shown."""

    async def build() -> CorruptingStore:
        from .scenarios import build_store

        return await copy_into(await build_store(snapshots=False), CorruptingStore({("refund-partial", 6), ("refund-partial", 12)}))

    store = asyncio.run(build())
    assert snap_compare(
        make_app(store), terminal_size=(100, 30), run_before=keys_then_settle(*open_keys("refund-partial"))
    )


def test_help_screen(snap_compare, store):
    assert snap_compare(
        make_app(store), terminal_size=(100, 40), run_before=keys_then_settle(*open_keys("refund-partial"), "question_mark")
    )


def test_read_only_mode(snap_compare, store):
    """Read-only: badge in the title bar, write actions greyed out in the footer."""
    assert snap_compare(
        make_app(store, read_only=True),
        terminal_size=(120, 30),
        run_before=keys_then_settle(*open_keys("billing-failed")),
    )


def test_read_only_help(snap_compare, store):
    assert snap_compare(
        make_app(store, read_only=True),
        terminal_size=(100, 60),
        run_before=keys_then_settle(*open_keys("billing-failed"), "question_mark"),
    )


def test_command_mode(snap_compare, store):
    """`:` opens the prompt at the bottom with completion from the registry."""
    assert snap_compare(make_app(store), terminal_size=(80, 24), run_before=keys_then_settle("colon", "i", "n"))
