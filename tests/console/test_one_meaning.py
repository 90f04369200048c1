"""Keys that mean one thing: focus never sits in a text field the operator did
not open, so the keys an empty screen names do what it says. Pilot presses keys
and the screen's state is checked afterwards."""

from __future__ import annotations

import pytest
from textual.widgets import Input

from console.screens.inbox import InboxScreen
from console.screens.sessions import SessionsScreen
from engine.store import MemoryStore

from .conftest import drive, make_app, settle
from .scenarios import build_store


@pytest.fixture
async def store() -> MemoryStore:
    return await build_store()


@pytest.mark.parametrize("size", [(80, 24), (120, 40)])
async def test_an_empty_result_leaves_the_filter_box_alone_and_0_clears(store, size):
    app = make_app(store)
    async with app.run_test(size=size) as pilot:
        screen = await drive(pilot, expect=SessionsScreen)
        await pilot.press("0", "slash", *"zzz-nothing", "enter")
        await settle(pilot)
        assert not screen.rows and screen.query_state.text == "zzz-nothing"
        assert not isinstance(screen.focused, Input)
        await pilot.press("0")  # what the empty screen says to press
        await settle(pilot)
        assert screen.query_one("#filter", Input).value == ""
        assert screen.query_state.text is None and screen.rows


async def test_an_empty_inbox_filter_keeps_keys_out_of_the_box(store):
    app = make_app(store)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await drive(pilot, "i", expect=InboxScreen)
        await pilot.press("slash", *"zzz-nothing", "enter")
        await settle(pilot)
        assert not screen.rows
        assert not isinstance(screen.focused, Input)
        await pilot.press("h")  # the sessions screen, not an 'h' typed into the box
        await settle(pilot)
        assert isinstance(app.screen, SessionsScreen)


async def test_selected_and_unselected_ids_read_without_colour() -> None:
    from console.screens.answer import AnswerScreen

    from .answer_store import demo_store

    app = make_app(await demo_store())
    async with app.run_test(size=(120, 40)) as pilot:
        await drive(pilot, session="refund-waiting-1")
        await pilot.press("n", "e")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, AnswerScreen)
        ids = screen.query_one("#answer-ids")
        lines = [ids.render_line(y).text for y in range(ids.option_count)]
        assert sorted(line[:4] for line in lines) == ["[ ] ", "[x] "], lines  # the node n lands on: selected
        assert "▐" not in "".join(lines)
