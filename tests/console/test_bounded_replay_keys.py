"""Keys on a long loop's session and replay do work bounded by what the screen
shows, not by the history: counts of the runs read, the events applied and the
footer rebuilt, never a time (benchmarks/bench_console.py measures the latencies)."""

from __future__ import annotations

import gc
import threading
from pathlib import Path
from typing import Any

from textual.widgets._footer import FooterKey

from console import heap
from console.screens.replay import ReplayScreen, ReplaySource
from console.screens.session import SessionScreen
from console.screens.sessions import SessionsScreen
from console.widgets.footer import FittedFooter
from console.widgets.node_tree import FOLD
from engine.projection import Projection
from engine.store.sqlite import SQLiteStore

from .big_store import loop_session
from .conftest import details_text, make_app, settle

LOOP_EVENTS = 4000
"""About 2,000 runs of ``step`` under ``crawl@1``, then ``review@1`` waits."""


async def loop_store(tmp_path: Path) -> SQLiteStore:
    store = await SQLiteStore.open(tmp_path / "loop.sqlite")
    session, events, _inv = loop_session(LOOP_EVENTS)
    await store.bulk_load([(session, events)])
    return store


async def open_loop(app: Any, pilot: Any) -> SessionScreen:
    """The long loop's session screen, every run of the loop folded in."""
    await settle(pilot)
    app.open_session("long-loop")
    await settle(pilot)
    screen = app.screen
    assert isinstance(screen, SessionScreen) and not screen.history_loading
    return screen


def count_calls(monkeypatch: Any, cls: type, name: str) -> list[int]:
    """Count calls of ``cls.name`` from now on (the returned list grows by one per call)."""
    calls: list[int] = []
    real = getattr(cls, name)

    def counted(*args: Any, **kw: Any) -> Any:
        calls.append(1)
        return real(*args, **kw)

    monkeypatch.setattr(cls, name, counted)
    return calls


async def test_replay_steps_over_a_long_loop_read_the_rows_not_the_runs(tmp_path: Path, monkeypatch: Any) -> None:
    """``]`` onto a loop's next run and ``[`` back rebuilt the tree by folding all
    1,000 earlier runs of ``step`` (engine.views.visible_children read every one):
    now a step reads the runs on the rows it draws, and the fold says the same."""
    store = await loop_store(tmp_path)
    app = make_app(store, replay=ReplaySource(session_id="long-loop", at=2002))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        assert isinstance(screen := app.screen, ReplayScreen) and screen.position == 2002
        tree, reads = screen.run_tree, count_calls(monkeypatch, Projection, "get")
        # event 2003 starts step@1001; 2002 ends step@1000; 2001 starts step@1000
        for key, position, row, earlier in (
            ("right_square_bracket", 2003, "crawl@1/step@1001", 1000),
            ("left_square_bracket", 2002, "crawl@1/step@1000", 999),
            ("left_square_bracket", 2001, "crawl@1/step@1000", 999),
            ("right_square_bracket", 2002, "crawl@1/step@1000", 999),
        ):
            reads.clear()
            await pilot.press(key)
            await settle(pilot)
            assert screen.position == position
            assert tree.cursor_path == row
            fold = tree._by_path[FOLD + "crawl@1"]
            assert f"{earlier:,} earlier runs" in str(fold.label)
            assert FOLD + "crawl@1" in tree._folds  # still shut: never listed
            assert len(reads) < 200, (key, position, len(reads))  # the rows drawn; not 1,000 runs
    await store.close()


async def test_a_replay_jump_applies_at_most_one_checkpoint_interval(tmp_path: Path, monkeypatch: Any) -> None:
    """``G`` from the middle of a long history folded every event up to the end on
    the UI's thread: the history is folded once in the loader's thread, so a jump
    starts from the checkpoint before it."""
    store = await loop_store(tmp_path)
    app = make_app(store, replay=ReplaySource(session_id="long-loop", at=100))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, ReplayScreen) and screen.replay is not None
        applied = count_calls(monkeypatch, Projection, "apply")
        await pilot.press("G")
        await settle(pilot)
        assert screen.position == screen.total == LOOP_EVENTS
        assert len(applied) <= screen.replay.checkpoint_every + 1, len(applied)  # not 3,900
        assert screen.run_tree.cursor_path == "crawl@1"  # the last event ends the root (WAITING)
    await store.close()


async def test_the_invocation_details_count_runs_without_walking_them(tmp_path: Path, monkeypatch: Any) -> None:
    """``g`` puts the cursor on the invocation, whose details count its runs by
    status: they were counted over every run of the loop on each highlight; the
    projection keeps the counts as it folds."""
    store = await loop_store(tmp_path)
    app = make_app(store)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_loop(app, pilot)
        runs = count_calls(monkeypatch, Projection, "runs")
        reads = count_calls(monkeypatch, Projection, "get")
        await pilot.press("g")
        await settle(pilot)
        assert screen.run_tree.cursor_path is None  # the invocation's row
        text = details_text(app)
        done = sum(1 for r in screen.proj.nodes.values() if r.status.value == "COMPLETED")
        assert done > 1900
        assert f"{done} completed" in text and "waiting" in text
        assert runs == [] and len(reads) < 50, (len(runs), len(reads))
    await store.close()


async def test_stepping_off_the_end_enables_the_step_key_in_place(tmp_path: Path, monkeypatch: Any) -> None:
    """``[`` at the end of the history makes ``]`` apply again: the footer was
    composed anew (every key remounted, the whole screen laid out again); it now
    marks that key enabled where it is."""
    store = await loop_store(tmp_path)
    app = make_app(store, replay=ReplaySource(session_id="long-loop"))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, ReplayScreen) and screen.position == screen.total
        footer = screen.query_one(FittedFooter)

        def step_key() -> FooterKey:
            (key,) = [k for k in footer.query(FooterKey) if k.key == "right_square_bracket"]
            return key

        assert step_key().has_class("-disabled")
        before = step_key()
        recomposed = count_calls(monkeypatch, FittedFooter, "recompose")
        await pilot.press("left_square_bracket")
        await settle(pilot)
        assert screen.position == screen.total - 1
        assert not step_key().has_class("-disabled") and not step_key()._disabled
        assert step_key() is before and recomposed == []
        await pilot.press("right_square_bracket")  # the key works: back at the end, disabled again
        await settle(pilot)
        assert screen.position == screen.total and step_key().has_class("-disabled")
    await store.close()


async def test_a_long_history_is_kept_out_of_full_collections_while_it_is_shown(tmp_path: Path) -> None:
    """A full pass of the garbage collector over a long loop's runs took over 100 ms
    on whatever key it fell on: the session screen freezes what it loaded and lets
    it go when it closes."""
    store = await loop_store(tmp_path)
    app = make_app(store)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        assert not heap.holding()
        app.open_session("long-loop")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, SessionScreen) and not screen.history_loading
        assert heap.holding() and gc.get_freeze_count() > 0
        await pilot.press("escape")
        await settle(pilot)
        assert isinstance(app.screen, SessionsScreen)
        assert not heap.holding() and gc.get_freeze_count() == 0
    await store.close()



async def test_opening_a_fold_of_a_long_loop_lists_a_window_of_its_runs(tmp_path: Path) -> None:
    """``enter`` on ``⋯ 1,996 earlier runs`` built a row for every one of them (a
    46,000-run loop froze the screen): a fold lists its latest ``FOLD_WINDOW``
    runs under a fold of the rest, opened the same way; a run deep in it is still
    reached (its folds opened on the way)."""
    from console.widgets.node_tree import FOLD_WINDOW

    store = await loop_store(tmp_path)
    app = make_app(store)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_loop(app, pilot)
        tree = screen.run_tree
        key = FOLD + "crawl@1"
        fold = tree._by_path[key]
        earlier = len(tree._folds[key])
        assert earlier > 1900 and f"{earlier:,} earlier runs" in str(fold.label)
        tree.focus()
        tree.move_cursor(fold)
        nodes = len(tree._by_path)
        await pilot.press("enter")
        await settle(pilot)
        assert fold.is_expanded and key not in tree._folds
        assert len(tree._by_path) - nodes == FOLD_WINDOW + 1  # the window and the fold of the rest
        rest, *window = fold.children
        assert f"{earlier - FOLD_WINDOW:,} earlier runs" in str(rest.label)
        assert [n.data for n in window] == [f"crawl@1/step@{i}" for i in range(earlier - FOLD_WINDOW + 1, earlier + 1)]
        tree.move_cursor(rest)
        await pilot.press("enter")  # the next window, older runs
        await settle(pilot)
        assert len(rest.children) == FOLD_WINDOW + 1
        assert tree.select_path("crawl@1/step@3")  # deep in the rest: its windows open on the way
        await settle(pilot)
        assert tree.cursor_path == "crawl@1/step@3"
        assert len(tree._by_path) < earlier + 50  # windows opened, every run listed once at most
    await store.close()


async def test_typing_a_find_in_a_long_loop_opens_one_window_and_labels_no_folded_run(tmp_path: Path, monkeypatch: Any) -> None:
    """Typing ``/step@1`` in the tree of a 2,000-run loop labelled every folded run
    and unfolded every window holding a match, on each key (a 46,000-run loop: seconds
    per key): the folded runs' texts are made in a thread (when a long history loads,
    else when a find first needs them), and a key opens at most the one window the
    cursor lands in, around the matching run."""
    from console.widgets.node_tree import FOLD_WINDOW, NodeTree

    store = await loop_store(tmp_path)
    app = make_app(store)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_loop(app, pilot)
        tree = screen.run_tree
        tree.focus()
        nodes = len(tree._by_path)
        on_ui: list[int] = []
        label = NodeTree._label

        def counted(self: Any, *args: Any) -> Any:
            if threading.current_thread() is threading.main_thread():
                on_ui.append(1)
            return label(self, *args)

        monkeypatch.setattr(NodeTree, "_label", counted)
        await pilot.press("slash", *"step@1")
        await settle(pilot)
        assert len(tree._by_path) - nodes <= FOLD_WINDOW + 1  # one window opened, not every matching one
        assert len(on_ui) <= FOLD_WINDOW + 1  # the window's rows on the UI's thread, no folded run's text
        assert tree.cursor_path is not None and "step@1" in tree.cursor_path
        await pilot.press("enter", "semicolon")
        await settle(pilot)
        assert tree.cursor_path is not None and "step@1" in tree.cursor_path
    await store.close()
