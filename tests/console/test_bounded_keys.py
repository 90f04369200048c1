"""Keys whose work is bounded: what a key does on the UI's thread must not grow
with a payload, a history or how often it was pressed. Behaviour only (counts of
what was built or visited), never a time: benchmarks/bench_console.py measures
the latencies."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from console.screens import help as help_module
from console.screens.help import HelpScreen
from console.screens.session import SessionScreen
from console.screens.sessions import SessionsScreen
from engine.store.sqlite import SQLiteStore

from .big_store import big_store, loop_session
from .conftest import details_text, make_app, settle
from .scenarios import build_store


async def test_the_help_is_laid_out_once_however_often_it_is_opened(monkeypatch: Any) -> None:
    """``?`` built and laid out the whole help table from the registry on every
    press (a Rich table measures and wraps every cell each time it is drawn)."""
    tables: list[int] = []
    real = help_module.help_table

    def counted(*args: Any, **kw: Any) -> Any:
        tables.append(1)
        return real(*args, **kw)

    monkeypatch.setattr(help_module, "help_table", counted)
    app = make_app(await build_store())
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        assert isinstance(app.screen, SessionsScreen)
        for _ in range(3):
            await pilot.press("question_mark")
            await settle(pilot)
            assert isinstance(app.screen, HelpScreen)
            await pilot.press("escape")
            await settle(pilot)
            assert isinstance(app.screen, SessionsScreen)
        assert len(tables) == 1
        from console.screens.help import help_cache

        (drawn,) = [d for key, d in help_cache(app).drawn.items() if key[0] == "table"]
        widths = len(drawn.lines)  # laid out at each width tried (with and without a scrollbar)
        await pilot.press("question_mark")
        await settle(pilot)
        await pilot.press("escape")
        await settle(pilot)
        assert len(drawn.lines) == widths and len(tables) == 1
        await pilot.press("i")  # another screen lists other keys: its own table, once
        await settle(pilot)
        for _ in range(2):
            await pilot.press("question_mark")
            await settle(pilot)
            await pilot.press("escape")
            await settle(pilot)
        assert len(tables) == 2


@pytest.mark.parametrize("size", [(80, 24), (120, 40)], ids=["80x24", "120x40"])
async def test_the_first_question_mark_finds_its_help_laid_out(size: tuple[int, int], monkeypatch: Any) -> None:
    """A screen's help is laid out in a thread worker when the screen is shown, at
    the widths its box will have: the first ``?`` lays nothing out either."""
    from console.screens.help import help_cache
    from console.widgets.drawn import Drawn

    on_ui: list[tuple[int, int]] = []
    real = Drawn.draw

    def draw(self: Drawn, console: Any, options: Any) -> Any:
        if threading.current_thread() is threading.main_thread() and (options.max_width, options.min_width) not in self.lines:
            on_ui.append((options.max_width, options.min_width))
        return real(self, console, options)

    monkeypatch.setattr(Drawn, "draw", draw)
    app = make_app(await build_store())
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        for screen_key in ("", "i"):
            if screen_key:
                await pilot.press(screen_key)
                await settle(pilot)
            assert help_cache(app).drawn  # laid out before any ? was pressed
            await pilot.press("question_mark")
            await settle(pilot)
            assert isinstance(app.screen, HelpScreen)
            assert on_ui == []
            await pilot.press("escape")
            await settle(pilot)


def strips_made(monkeypatch: Any) -> list[str]:
    """The text of every strip made from now on."""
    from textual.strip import Strip

    made: list[str] = []
    real = Strip.__init__

    def init(self: Strip, segments: Any, cell_length: int | None = None) -> None:
        segments = list(segments)
        made.append("".join(s.text for s in segments))
        real(self, segments, cell_length)

    monkeypatch.setattr(Strip, "__init__", init)
    return made


def last_line(lines: list[Any]) -> str:
    return next(t for t in ("".join(s.text for s in line).strip() for line in reversed(lines)) if t)


async def test_the_help_makes_strips_of_the_lines_it_shows(monkeypatch: Any) -> None:
    """``?`` turned every line of the help (about 300 at 120 columns) into a strip on
    each paint, where the box shows 30: a line below the window is now made only
    when it is scrolled into view, and then it is shown as it was."""
    from console.screens.help import help_cache

    app = make_app(await build_store())
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        made = strips_made(monkeypatch)
        await pilot.press("question_mark")
        await settle(pilot)
        assert isinstance(app.screen, HelpScreen)
        table = app.screen.query_one("#help-table")
        (drawn,) = [d for key, d in help_cache(app).drawn.items() if key[0] == "table"]
        lines = drawn.draw(app.console, app.console_options.update(width=table.content_size.width))
        box = app.screen.query_one("#help-box")
        assert len(lines) > box.size.height  # the help is taller than its box
        last = last_line(lines)
        assert not any(last in m for m in made)  # off screen: never made into a strip
        await pilot.press("end")
        await settle(pilot)
        assert box.scroll_y == box.max_scroll_y > 0
        assert any(last in m for m in made)  # scrolled into view: drawn
        shown = [table.render_line(y).text for y in range(len(lines))]
        assert [t.rstrip() for t in shown] == ["".join(s.text for s in line).rstrip() for line in lines]


async def test_the_details_pane_walks_only_the_lines_in_view(monkeypatch: Any) -> None:
    """The details pane walked every line of a payload's preview (hundreds) at each
    layout pass to count them, and again to paint them: ``n`` onto the 1 MB payload's
    node and moving the focus away and back lay it out once and make strips of the
    lines in view, the rest when scrolled to."""
    from console.widgets.details import Details
    from console.widgets.drawn import Drawn

    walked: list[int] = []
    real = Drawn.__rich_console__

    def whole(self: Drawn, console: Any, options: Any) -> Any:
        walked.append(1)
        return real(self, console, options)

    app = make_app(await big_store())
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        app.open_session("big")
        await settle(pilot)
        monkeypatch.setattr(Drawn, "__rich_console__", whole)
        made = strips_made(monkeypatch)
        for key in ("n", "tab", "shift+tab"):
            await pilot.press(key)
            await settle(pilot)
        assert "SKU-000000" in details_text(app)
        assert walked == []  # neither measured nor painted through the whole preview
        pane = app.screen.query_one(Details)
        body = pane.query_one("#details-body")
        lines = Drawn(lambda: pane.shown).draw(app.console, app.console_options.update(width=body.content_size.width))
        assert len(lines) > 3 * pane.size.height
        last = last_line(lines)
        assert not any(last in m for m in made)
        pane.scroll_end(animate=False)
        await settle(pilot)
        assert any(last in m for m in made)


async def test_a_started_console_leaves_its_startup_objects_out_of_full_collections() -> None:
    """Every full pass of the cyclic collector walked all the console's modules, styles
    and widgets (40-80 ms, inside whichever key it fell on): once the first screen is
    up they are frozen, and given back to the collector when the app ends."""
    import gc

    app = make_app(await build_store())
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        assert isinstance(app.screen, SessionsScreen)
        assert gc.get_freeze_count() > 10_000
    assert gc.get_freeze_count() == 0


async def test_n_on_a_long_loop_visits_the_runs_that_wait_not_the_history(tmp_path: Path, monkeypatch: Any) -> None:
    """``n`` on a session that looped 2,000 times walked every run of the
    invocation (twice) to find the next waiting one: now it visits the waiting
    runs and their ancestors, and the tree is not rebuilt."""
    store = await SQLiteStore.open(tmp_path / "loop.sqlite")
    session, events, _inv = loop_session(4000)
    await store.bulk_load([(session, events)])
    app = make_app(store)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        app.open_session("long-loop")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, SessionScreen) and not screen.history_loading
        assert len(screen.proj.nodes) > 1900
        await pilot.press("g")  # the cursor on the invocation, above the waiting run
        await settle(pilot)
        visited: list[str] = []
        real_get = screen.proj.get

        def get(invocation_id: str, path: str) -> Any:
            visited.append(path)
            return real_get(invocation_id, path)

        loads: list[int] = []
        real_load = screen.run_tree.load
        monkeypatch.setattr(screen.proj, "get", get)
        monkeypatch.setattr(screen.run_tree, "load", lambda *a, **kw: (loads.append(1), real_load(*a, **kw))[1])
        await pilot.press("n")
        await settle(pilot)
        assert screen.run_tree.cursor_path == "crawl@1/review@1"
        assert loads == []
        assert len(visited) < 50, len(visited)  # the waiting run and its ancestors, not 2,000 runs
        await pilot.press("n")  # wraps around to the only one
        await settle(pilot)
        assert screen.run_tree.cursor_path == "crawl@1/review@1" and len(visited) < 100
    await store.close()


async def test_the_details_pane_lays_a_payload_preview_out_once(monkeypatch: Any) -> None:
    """The details pane was laid out again on every repaint (focus moving away and
    back, the layout pass and the paint each wrapped the whole preview): it keeps
    the lines of each width it was drawn at."""
    from rich.json import JSON

    renders: list[int] = []
    real = JSON.__rich__

    def counted(self: JSON) -> Any:
        renders.append(1)
        return real(self)

    monkeypatch.setattr(JSON, "__rich__", counted)
    app = make_app(await big_store())
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        app.open_session("big")
        await settle(pilot)
        await pilot.press("n")  # the waiting node: its 1 MB payload, previewed
        await settle(pilot)
        assert "SKU-000000" in details_text(app)
        first = len(renders)
        assert first >= 1
        for key in ("tab", "shift+tab", "tab", "shift+tab"):
            await pilot.press(key)
            await settle(pilot)
        assert len(renders) == first


async def test_a_replay_step_over_a_new_loop_run_leaves_the_fold_shut(tmp_path: Path) -> None:
    """``]`` onto the start of a loop's next run, the cursor on the run before it: the
    tree was rebuilt keeping the cursor on that run, now one of the earlier runs, so
    the fold of 1,000 earlier runs was opened and drawn (minutes on a 50,000-run
    loop). The cursor goes to the run that took its place; the fold stays shut."""
    from console.screens.replay import ReplayScreen, ReplaySource
    from console.widgets.node_tree import FOLD

    store = await SQLiteStore.open(tmp_path / "loop.sqlite")
    session, events, _inv = loop_session(4000)
    await store.bulk_load([(session, events)])
    # after 2,002 events the last applied is the end of step@1000; the next starts step@1001
    app = make_app(store, replay=ReplaySource(session_id="long-loop", at=2002))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, ReplayScreen)
        tree = screen.run_tree
        assert tree.cursor_path == "crawl@1/step@1000"
        await pilot.press("right_square_bracket")
        await settle(pilot)
        assert screen.position == 2003
        assert tree.cursor_path == "crawl@1/step@1001"
        assert FOLD + "crawl@1" in tree._folds  # never populated
        assert tree.last_line < 20
    await store.close()
