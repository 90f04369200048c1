"""Keys that arrive in a burst are applied in the order they were typed.

A fast typist, a paste without bracketed paste, a loaded machine or the browser
console's websocket can deliver several keys before the console handles the
first. Textual runs a text field's bound keys (backspace, arrows, home/end)
only after they bubble to the app, so characters typed after a backspace were
inserted first and then deleted: ``false``, 5 x backspace, ``true`` became
``fals`` (seen in the browser test under load: Textual issue #6605). Each key
here is posted without waiting for the previous one to be handled; the store
is checked afterwards.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from textual import events
from textual.app import App, ComposeResult

from console.screens.answer_dialogs import ConfirmWrite
from console.widgets.keys import OrderedTextArea, TextInput

from .answer_store import demo_store
from .test_answer import app_for, editor_screen, open_session, settle, wait_until

pytestmark = pytest.mark.usefixtures("operator")  # $USER, no hitl.toml


async def burst(pilot: Any, *keys: str) -> None:
    """Post every key at once, as a terminal read of several bytes does, then let them all be handled."""
    for key in keys:
        pilot.app.post_message(events.Key(key, key if len(key) == 1 else None))
    await settle(pilot)


class Fields(App[None]):
    def compose(self) -> ComposeResult:
        yield TextInput(id="line")
        yield OrderedTextArea('{\n  "approved": false\n}', id="area")


async def test_a_burst_with_editing_keys_in_it_edits_in_typed_order() -> None:
    app = Fields()
    async with app.run_test() as pilot:
        area = app.query_one(OrderedTextArea)
        area.focus()
        await burst(pilot, "down", "end", *["backspace"] * 5, *"true")
        assert area.text == '{\n  "approved": true\n}'
        line = app.query_one(TextInput)
        line.focus()
        await burst(pilot, *"aproved", "home", "right", "p", "end", "backspace", "d", "ctrl+w", *"ok")
        assert line.value == "ok"  # ctrl+w deleted the word "approved" after it was complete
        await burst(pilot, *"abc", "left", "backspace", "x")
        assert line.value == "okaxc"


async def test_an_answer_and_reason_typed_in_bursts_are_stored_as_typed() -> None:
    store = await demo_store()
    app = app_for(store)
    async with app.run_test(size=(120, 40)) as pilot:
        await open_session(pilot, "refund-waiting-1")
        screen = await editor_screen(pilot, "e")
        (editor,) = screen.editors()
        assert editor.interrupt.id == "finance-order-1001" and editor.mode == "form"
        await pilot.press("ctrl+t")  # the JSON view: a skeleton with the required key, no value
        assert screen.focused is editor.text_area and editor.text == '{\n  "approved": \n}'
        await burst(pilot, "ctrl+home", "down", "end", *"tru", "backspace", "backspace", *"rue")
        assert json.loads(editor.text) == {"approved": True}
        await wait_until(pilot, lambda: screen.submit_problem() is None)
        await pilot.press("ctrl+s")
        await settle(pilot)
        assert isinstance(pilot.app.screen, ConfirmWrite)
        await burst(pilot, *"aproved in a hury", "left", "left", "r", "home", "right", "p")
        await pilot.press("ctrl+s")
        await wait_until(pilot, lambda: not isinstance(pilot.app.screen, ConfirmWrite))
        await settle(pilot)
    (audit,) = [a for a in (await store.audit_log(session_id="refund-waiting-1")).items if a.action == "answer"]
    assert audit.reason == "approved in a hurry"
    events_ = [stored.event for stored in await store.events("refund-waiting-1")]
    answers = [e for e in events_ if (e.custom_metadata or {}).get("reason") == "approved in a hurry"]
    assert [a.content.parts[0].function_response.response for a in answers] == [{"approved": True, "note": ""}]


async def test_choices_typed_in_a_burst_land_one_per_field() -> None:
    """A choice moves the focus on; keys of the same burst that the app handed to the field
    before the focus moved go to the field that has it now: 1 2 3 label three images."""
    store = await demo_store()
    app = app_for(store)
    async with app.run_test(size=(120, 40)) as pilot:
        await open_session(pilot, "labels-partial-1")
        screen = await editor_screen(pilot, "A", "e")
        first, second, third = screen.editors()[:3]
        await burst(pilot, "1", "2", "3")
        await settle(pilot)
        assert [first.check.value, second.check.value, third.check.value] == ["cat", "dog", "bird"]


class TwoLines(App[None]):
    def compose(self) -> ComposeResult:
        yield TextInput(id="street")
        yield TextInput(id="city")


async def test_keys_typed_in_the_same_burst_as_tab_land_in_the_next_field() -> None:
    """``Q``, tab, ``Berlin`` in one burst: street is ``Q``, city is ``Berlin``
    (the keys after the tab landed in street: ``QBerlin``)."""
    app = TwoLines()
    async with app.run_test() as pilot:
        app.query_one("#street", TextInput).focus()
        await pilot.pause()
        await burst(pilot, "Q", "tab", *"Berlin", "shift+tab")
        assert app.query_one("#street", TextInput).value == "Q"
        assert app.query_one("#city", TextInput).value == "Berlin"
        assert app.focused is app.query_one("#street", TextInput)  # shift+tab in the burst: back, in order
