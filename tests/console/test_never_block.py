"""Never block: a 1 MB interrupt payload opens, moves and answers like a small
one. Panes show a bounded preview (what was cut is said in place); ``w`` shows
the whole value, serialised in a worker. Behaviour only: what the panes hold."""

from __future__ import annotations

import io
import threading
from typing import Any

import pytest
from textual.widgets import TextArea

from console.screens.answer import AnswerScreen
from console.screens.help import HelpScreen
from console.screens.session import SessionScreen
from console.widgets.preview import ValueScreen, bounded
from engine.store import MemoryStore

from .big_store import BIG_ROWS, big_payload, big_store
from .conftest import details_text, drive, make_app, settle


def test_bounded_keeps_a_fixed_budget_whatever_the_size() -> None:
    small, cut = bounded({"a": 1, "b": [1, 2]})
    assert (small, cut) == ({"a": 1, "b": [1, 2]}, False)
    big, cut = bounded(big_payload())
    assert cut
    assert len(big["rows"]) < 40
    assert big["rows"][-1] == f"… {BIG_ROWS - len(big['rows']) + 1:,} more items"
    text, cut = bounded("x" * 10_000)
    assert cut and text.endswith("(10,000 characters)")


async def _open_big(pilot: Any) -> SessionScreen:
    app = pilot.app
    await settle(pilot)
    app.open_session("big")
    await settle(pilot)
    screen = app.screen
    assert isinstance(screen, SessionScreen)
    return screen


async def test_a_megabyte_payload_shows_a_preview_and_w_shows_all() -> None:
    app = make_app(await big_store())
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await _open_big(pilot)
        await pilot.press("n")  # the waiting node
        await settle(pilot)
        assert screen.run_tree.cursor_path == "bigorder@1/big_order@1"
        text = details_text(app)
        assert "SKU-000000" in text and "SKU-007999" not in text
        assert "more items" in text and "w shows all" in text
        assert len(text.splitlines()) < 400
        await pilot.press("question_mark")
        await settle(pilot)
        assert isinstance(app.screen, HelpScreen)
        await pilot.press("escape")
        await settle(pilot)
        await pilot.press("w")
        await settle(pilot)
        viewer = app.screen
        assert isinstance(viewer, ValueScreen) and viewer.ready
        whole = viewer.query_one(TextArea).text
        assert "SKU-007999" in whole and "more items" not in whole
        await pilot.press("escape")
        await settle(pilot)
        assert app.screen is screen


async def test_the_answer_editor_shows_a_bounded_payload() -> None:
    app = make_app(await big_store())
    async with app.run_test(size=(120, 40)) as pilot:
        await _open_big(pilot)
        await pilot.press("n", "e")
        await settle(pilot)
        assert isinstance(app.screen, AnswerScreen)
        side = str(app.screen.query_one(".answer-payload").render())
        assert "SKU-000000" in side and "SKU-007999" not in side and "shows all" in side


class _GatedReplay:
    """A replay cursor whose folding waits for the test (a state, not a pause):
    the diff is known to be mid-way when the test acts."""

    started = threading.Event()
    release = threading.Event()

    def __new__(cls, events: Any) -> Any:
        from engine.replay import Replay

        class Gated(Replay):
            def seek(self, position: int) -> Any:
                cls.started.set()
                assert cls.release.wait(30)
                return super().seek(position)

        return Gated(events)


async def _wait(pilot: Any, predicate: Any) -> None:
    for _ in range(3000):  # bounded: a state the console reaches on its own
        if predicate():
            return
        await pilot.pause(0.01)
    raise AssertionError("state not reached")


async def test_a_replay_diff_runs_in_a_worker_shows_progress_and_esc_cancels(monkeypatch) -> None:
    from console.screens import replay_diff
    from console.screens.replay import DiffScreen, ReplayScreen, ReplaySource
    from sample_sessions.demo import FIXTURE_EPOCH, build_demo

    monkeypatch.setattr(replay_diff, "Replay", _GatedReplay)
    monkeypatch.setattr(replay_diff, "STEP", 2)
    _GatedReplay.started.clear()
    _GatedReplay.release.clear()
    store = MemoryStore()
    await build_demo(store, epoch=FIXTURE_EPOCH, long_iterations=3)
    app = make_app(store, replay=ReplaySource(session_id="incident-redriven-1", at=3))
    async with app.run_test(size=(90, 26)) as pilot:
        replay = await drive(pilot, expect=ReplayScreen)
        await pilot.press("m", "G", "d")
        await _wait(pilot, _GatedReplay.started.is_set)
        modal = app.screen
        assert isinstance(modal, DiffScreen) and modal.rows is None
        assert "computing" in str(modal.query_one("#diff-title").render()) and "esc: cancel" in str(
            modal.query_one("#diff-title").render())
        await pilot.press("escape")  # handled while the worker folds
        assert app.screen is replay
        _GatedReplay.release.set()
        await settle(pilot)
        assert modal.rows is None  # cancelled: never finished

        # Not gated: the diff completes with progress counted to the later position.
        _GatedReplay.started.clear()
        await pilot.press("d")
        await settle(pilot)
        modal = app.screen
        assert isinstance(modal, DiffScreen) and modal.rows is not None
        assert modal.done_events == modal.second
        assert "change" in str(modal.query_one("#diff-title").render())


@pytest.mark.parametrize("size", [(80, 24), (120, 40)])
async def test_a_diff_of_thousands_of_changes_is_paged(size: tuple[int, int]) -> None:
    """A page is what the pane shows: a key lays out a window's worth of rows,
    never a fixed 200 (a page of 200 folded rows took a second to draw)."""
    from rich.console import Console

    from console.screens.replay_diff import DiffScreen
    from engine.models import Content, Event

    events = [Event(invocation_id="i", author="user", timestamp=1.0, content=Content.from_text("x"),
                    state_delta={f"k{n:04d}": n}) for n in range(4005)]
    app = make_app(MemoryStore())
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        modal = DiffScreen(0, len(events), list(range(1, len(events) + 1)), events, app.redactor)
        app.push_screen(modal)
        await settle(pilot)
        assert modal.rows is not None and len(modal.rows) == 4005
        body = modal.query_one("#diff-body")
        per_page = modal.page_size()
        assert per_page < size[1]  # the pane's lines, not the whole diff
        pages = (4005 + per_page - 1) // per_page

        def shown() -> str:
            console = Console(width=size[0], record=True, file=io.StringIO())
            console.print(body.shown)
            return console.export_text()

        def listed() -> list[str]:
            return [line.split()[1] for line in shown().splitlines() if line.startswith("state")]

        title = str(modal.query_one("#diff-title").render())
        assert f"page 1 of {pages}" in title and "4,005 changes" in title
        assert listed() == [f"k{n:04d}" for n in range(per_page)]
        assert "4,005 state keys" in shown()
        await pilot.press("right")
        await settle(pilot)
        assert f"page 2 of {pages}" in str(modal.query_one("#diff-title").render())
        assert listed() == [f"k{n:04d}" for n in range(per_page, 2 * per_page)]
        # every row of a page is in view: nothing of it is below the pane
        assert body.virtual_size.height <= body.scrollable_content_region.height + 1
        await pilot.press("left", "left")
        await settle(pilot)
        assert listed()[0] == "k0000"


async def test_the_editor_for_24_ids_opens_with_the_first_and_fills_in() -> None:
    """The screen is usable (the first answer focused) before every editor is
    built; keys typed then count, in order."""
    from console.screens import answer as answer_mod
    from console.screens.answer import AnswerScreen

    from .answer_store import demo_store

    store = await demo_store()
    app = make_app(store)
    async with app.run_test(size=(120, 40)) as pilot:
        await drive(pilot, "A", session="labels-partial-1")
        await pilot.press("e", "1", "2", "3")  # one burst: typed while the editors fill in
        screen = app.screen
        assert isinstance(screen, AnswerScreen)
        assert screen.opened_with == answer_mod.FIRST_EDITORS  # opened at once

        await settle(pilot)
        assert not screen.filling and len(screen.editors()) == 24
        assert [e.check.value for e in screen.editors()[:4]] == ["cat", "dog", "bird", None]
