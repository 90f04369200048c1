"""Answering with the form made from each id's schema (issue 16), from the keyboard:
a boolean approval, an enum, a section and a list, invalid until chosen, apply
to all selected, the JSON view and back. Every answer goes through the real
Runner; the assertions read the store afterwards. The key lists are the whole
operator input (each ``pilot.press`` argument is one keystroke), so their
lengths are the keystroke counts the issue asks for."""

from __future__ import annotations

import json
from typing import Any

import pytest
from textual.widgets import Footer
from textual.widgets._footer import FooterKey

from console.screens.answer import AnswerScreen
from console.screens.answer_dialogs import ConfirmWrite, OutcomeScreen
from console.widgets.form_fields import ChoiceField, InputField
from engine.models import NodeStatus
from engine.store import MemoryStore

from .answer_store import demo_store, invocation, label_ids, new_incident, shipping_store
from .test_answer import answering, app_for, editor, editor_screen, open_session, settle, wait_until

OLD_BOOLEAN_KEYS = ["e", "f7", *'{"approved":true}', "ctrl+s", "ctrl+s"]
"""Before the form: open, select the template's text, type the JSON, submit, confirm (21 keys)."""


pytestmark = pytest.mark.usefixtures("operator")  # $USER, no hitl.toml


async def answers(store: MemoryStore, session_id: str) -> list[dict[str, Any]]:
    """Every answer message's responses, in order (what the engine stored)."""
    out = []
    for se in await store.events(session_id):
        if se.event.kind == "response":
            out.append({p.function_response.id: p.function_response.response for p in se.event.content.parts
                        if p.function_response is not None})
    return out


async def press(pilot: Any, keys: list[str]) -> None:
    """Each key, then let the screen handle it (a submit opens a dialog, the dry run runs)."""
    for key in keys:
        if key == "ctrl+s":
            screen = pilot.app.screen
            if isinstance(screen, AnswerScreen):
                await wait_until(pilot, lambda s=screen: s.submit_problem() is None or "dry run" not in (
                    s.submit_problem() or ""))
        await pilot.press(key)
        await settle(pilot, 1)


async def test_one_boolean_approval_takes_four_keys() -> None:
    """e (open), y (approve), ctrl+s (submit), ctrl+s (confirm): approved true is stored."""
    store = await demo_store()
    app = app_for(store)
    keys = ["e", "y", "ctrl+s", "ctrl+s"]
    async with app.run_test(size=(120, 40)) as pilot:
        await open_session(pilot, "refund-waiting-1")
        await press(pilot, keys)
        await wait_until(pilot, lambda: isinstance(app.screen, OutcomeScreen))
    assert (await answers(store, "refund-waiting-1"))[-1] == {"finance-order-1001": {"approved": True, "note": ""}}
    assert len(keys) == 4 and len(OLD_BOOLEAN_KEYS) == 21


async def test_an_answer_is_invalid_until_the_operator_chooses() -> None:
    """The old `e ctrl+s ctrl+s` (a prefilled false) submits nothing now: the banner says why."""
    store = await demo_store()
    last = (await store.get_session("refund-waiting-1")).last_seq
    async with answering(store, "refund-waiting-1") as (app, pilot, _):
        await press(pilot, ["e", "ctrl+s", "ctrl+s"])
        screen = app.screen
        assert isinstance(screen, AnswerScreen)  # no confirmation opened
        ed = editor(screen, "finance-order-1001")
        assert ed.mode == "form" and ed.check.value == {} and not ed.check.ok
        assert ed.check.errors == ["approved: required -- press y or n"]
        banner = str(screen.query_one("#answer-banner").render())
        assert "Not ready to submit" in banner and "approved: required -- press y or n" in banner
        assert "approved: required" in (screen.submit_problem() or "")
        field = ed.query_one(ChoiceField)
        assert field.has_focus and field.get() is not None and field.chosen is None
        assert "default" not in str(field.render())  # approved has no default: nothing is suggested
        await press(pilot, ["n"])  # a decision: reject
        assert ed.check.ok and ed.check.value == {"approved": False}
        assert "Not ready" not in str(screen.query_one("#answer-banner").render())
        await press(pilot, ["shift+tab", "backspace"])  # back to it, and clear it: invalid again
        assert not ed.check.ok and field.chosen is None
    assert (await store.get_session("refund-waiting-1")).last_seq == last


async def test_an_enum_and_optional_defaults_then_a_second_id() -> None:
    """incident: the action by number key, page_oncall shown with its default, the status page id next."""
    store = await demo_store()
    inv, proj = await new_incident(store, "incident-new", "cpu 99% on web-3")
    mitigate, notice = [i.id for i in proj.open_interrupts(inv)]
    async with answering(store, "incident-new") as (app, pilot, _):
        await press(pilot, ["a", "e"])
        screen = app.screen
        assert isinstance(screen, AnswerScreen)
        action = editor(screen, mitigate).query(ChoiceField).first()
        page = editor(screen, mitigate).query(ChoiceField).last()
        assert action.has_focus and [o[1] for o in action.options] == ["restart", "rollback", "scale_up", "ignore"]
        assert "default: true" in str(page.render()) and page.chosen is None  # shown, not chosen
        await press(pilot, ["2"])  # rollback; the focus moves on to page_oncall
        assert page.has_focus and editor(screen, mitigate).check.value == {"action": "rollback"}
        assert editor(screen, mitigate).check.ok  # page_oncall is optional: its default applies
        await press(pilot, ["tab", "y"])  # skip page_oncall (default), publish: yes
        text = editor(screen, notice).query_one(InputField)
        assert text.input.has_focus
        await press(pilot, [*"degraded", "ctrl+s", "ctrl+s"])
        await wait_until(pilot, lambda: isinstance(app.screen, OutcomeScreen))
    stored = (await answers(store, "incident-new"))[-1]
    assert stored == {mitigate: {"action": "rollback", "page_oncall": True},  # the default, filled by the engine
                      notice: {"publish": True, "text": "degraded"}}


async def test_a_section_and_a_list_with_inline_validation() -> None:
    """shipping: approve, the address section (zip checked against its minimum), tags added and removed."""
    store = await shipping_store()
    async with answering(store, "shipping-1", (120, 50)) as (app, pilot, _):
        await press(pilot, ["e"])
        screen = app.screen
        assert isinstance(screen, AnswerScreen) and screen.selected == ["ship-S-1", "note-S-1"]
        ship, note = editor(screen, "ship-S-1"), editor(screen, "note-S-1")
        assert note.mode == "json" and note.form is None and note.text == ""  # int | str: JSON only, said why
        assert "JSON only: anyOf: a choice between 2 schemas" in str(note.query_one(".answer-view-note").render())
        await press(pilot, ["y", *"Oslo", "tab", *"123"])
        zip_field = next(f for f in ship.query(InputField) if f.spec.path == "address.zip")
        assert ship.check.errors == ["address.zip: 123 is less than the minimum of 1000"]  # the engine's words
        assert "less than the minimum" in str(zip_field.query_one(".form-error").render())
        await press(pilot, ["4"])
        assert ship.check.ok and ship.check.value == {"approve": True, "address": {"city": "Oslo", "zip": 1234}}
        await press(pilot, ["tab", "+", "1", "+", "3", "+", "2"])  # three tags: one too many
        assert ship.check.value["tags"] == ["fragile", "express", "gift"]
        assert not ship.check.ok and ship.check.errors[0].startswith("tags: ")
        await press(pilot, ["-"])  # remove the last
        assert ship.check.ok and ship.check.value["tags"] == ["fragile", "express"]
        note.set_text('"call first"')
        await settle(pilot)
        await press(pilot, ["ctrl+s", "ctrl+s"])
        await wait_until(pilot, lambda: isinstance(app.screen, OutcomeScreen))
    stored = (await answers(store, "shipping-1"))[-1]
    assert stored == {"ship-S-1": {"approve": True, "address": {"city": "Oslo", "zip": 1234},
                                   "tags": ["fragile", "express"], "boxes": 1},  # boxes: the default
                      "note-S-1": "call first"}


async def test_twenty_four_labels_one_key_each() -> None:
    """labels-partial-1: A (all ids), e, one number key per image (the focus moves on), submit, confirm."""
    store = await demo_store()
    inv, ids = await label_ids(store)
    assert len(ids) == 24
    picks = [str(1 + n % 5) for n in range(24)]
    keys = ["A", "e", *picks, "ctrl+s", "ctrl+s"]
    async with answering(store, "labels-partial-1") as (app, pilot, _):
        await press(pilot, keys)
        await wait_until(pilot, lambda: isinstance(app.screen, OutcomeScreen))
    labels = ["cat", "dog", "bird", "fish", "other"]
    assert (await answers(store, "labels-partial-1"))[-1] == {i: labels[int(k) - 1] for i, k in zip(ids, picks, strict=True)}
    assert len(keys) == 28
    _, after = await invocation(store, "labels-partial-1")
    assert not after.open_interrupts(inv)


async def test_apply_to_all_selected_then_edit_the_exception() -> None:
    """24 labels: pick bird once, ctrl+g gives it to the other 23, then the one exception: 7 keys."""
    store = await demo_store()
    inv, ids = await label_ids(store)
    app = app_for(store)
    keys = ["A", "e", "3", "ctrl+g", "2", "ctrl+s", "ctrl+s"]  # the focus is on the 2nd image after the first pick
    async with app.run_test(size=(120, 40)) as pilot:
        await open_session(pilot, "labels-partial-1")
        await press(pilot, keys[:4])
        screen = app.screen
        assert isinstance(screen, AnswerScreen)
        assert all(editor(screen, i).check.value == "bird" for i in ids)
        await press(pilot, keys[4:])
        await wait_until(pilot, lambda: isinstance(app.screen, OutcomeScreen))
    stored = (await answers(store, "labels-partial-1"))[-1]
    assert stored == {i: "dog" if i == ids[1] else "bird" for i in ids}


async def test_apply_to_all_skips_other_schemas_and_needs_a_valid_answer() -> None:
    store = await shipping_store()
    async with answering(store, "shipping-1", (120, 50)) as (app, pilot, _):
        await press(pilot, ["e", "ctrl+g"])  # nothing answered yet: nothing applied
        screen = app.screen
        assert isinstance(screen, AnswerScreen)
        note = editor(screen, "note-S-1")
        assert note.text == "" and not editor(screen, "ship-S-1").check.ok
        await press(pilot, ["y", *"Oslo", "tab", *"1234", "ctrl+g"])
        assert note.text == ""  # another schema: left as it was


async def test_json_view_and_back_keep_the_same_value() -> None:
    """ctrl+t shows the form's value as JSON; edited there, ctrl+t shows it in the form; what the form
    cannot show stays JSON (said why), and is still the engine's to refuse."""
    store = await demo_store()
    async with answering(store, "refund-waiting-1") as (app, pilot, _):
        await press(pilot, ["e", "y", "ctrl+t"])
        screen = app.screen
        assert isinstance(screen, AnswerScreen)
        ed = editor(screen, "finance-order-1001")
        assert ed.mode == "json" and json.loads(ed.text_area.text) == {"approved": True}
        assert ed.text_area.has_focus
        await press(pilot, ["f7", *'{"approved": false, "note": "duplicate"}', "ctrl+t"])
        assert ed.mode == "form" and ed.check.value == {"approved": False, "note": "duplicate"}
        assert ed.query(ChoiceField).first().chosen == 1  # "n"
        assert next(iter(ed.query(InputField))).input.value == "duplicate"
        await press(pilot, ["ctrl+t", "f7", *'{"approved": "yes"}', "ctrl+t"])  # a string: not a form choice
        assert ed.mode == "json" and ed.check.value == {"approved": "yes"}
        assert ed.check.ok  # the engine takes "yes" for true (pydantic's lax booleans): so does the editor
        await press(pilot, ["f7", *'{"approved": "maybe"}'])
        assert not ed.check.ok and ed.check.errors == ['approved: expected boolean, got "maybe"']
        await press(pilot, ["f7", *'{"approved": true, "note": "ok"}', "ctrl+t", "ctrl+s"])
        assert ed.mode == "form"
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmWrite))
        await press(pilot, ["ctrl+s"])
        await wait_until(pilot, lambda: isinstance(app.screen, OutcomeScreen))
    assert (await answers(store, "refund-waiting-1"))[-1] == {"finance-order-1001": {"approved": True, "note": "ok"}}
    inv, proj = await invocation(store, "refund-waiting-1")
    assert proj.get(inv, "refund@1/finance_approval@1").status is NodeStatus.COMPLETED  # type: ignore[union-attr]


async def test_letters_typed_in_a_choice_stay_in_the_field() -> None:
    """incident: ``a`` / ``A`` typed into the focused enum are the field's (a letter moves
    its cursor to the next option starting with it), never the editor's "select the
    node's / every id" keys; enter then chooses."""
    store = await demo_store()
    inv, proj = await new_incident(store, "incident-keys", "cpu 99% on web-3")
    mitigate = proj.open_interrupts(inv)[0].id
    async with answering(store, "incident-keys") as (app, pilot, _):
        app.screen.answering.answer([mitigate])  # the editor over this one id
        await wait_until(pilot, lambda: isinstance(app.screen, AnswerScreen) and bool(app.screen.editors()))
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, AnswerScreen) and screen.selected == [mitigate]
        action = editor(screen, mitigate).query(ChoiceField).first()
        assert action.has_focus and action.cursor == 0
        await press(pilot, ["A", "a"])  # no option starts with a: nothing moves, nothing else is selected
        assert screen.selected == [mitigate] and action.has_focus and action.chosen is None
        await press(pilot, ["r"])  # restart -> the next one starting with r: rollback
        assert action.cursor == 1 and action.chosen is None and screen.selected == [mitigate]
        await press(pilot, ["s", "enter"])  # scale_up, chosen
        assert editor(screen, mitigate).check.value == {"action": "scale_up"}
        assert screen.selected == [mitigate]


async def test_the_answers_pane_is_lit_while_the_focus_is_in_it() -> None:
    """The Answers border is lit while the focus is on one of its fields, also after a
    choice moves the focus on, and not once the focus is on the id list."""
    store = await demo_store()
    async with answering(store, "labels-partial-1") as (app, pilot, _):
        screen = await editor_screen(pilot, "A", "e")
        box = screen.editors_box
        assert box is not None
        first = screen.focused
        assert first is not None and box in first.ancestors
        assert box.has_class("-focus-within")
        await press(pilot, ["3"])  # the first image: bird; the focus moves on to the second
        assert screen.focused is not first and box in screen.focused.ancestors
        assert box.has_class("-focus-within")
        screen.id_list.focus()
        await settle(pilot)
        assert not box.has_class("-focus-within")
        await press(pilot, ["tab"])
        assert box.has_class("-focus-within") == (box in screen.focused.ancestors)


async def test_a_focus_move_does_not_rebuild_the_footer() -> None:
    """A choice moves the focus on, which changes nothing the footer shows: its keys
    stay the same widgets (Textual's footer rebuilt them, and reflowed the screen, at
    every focus move). The answers screen's own keys are still shown."""
    store = await demo_store()
    async with answering(store, "labels-partial-1") as (app, pilot, _):
        screen = await editor_screen(pilot, "A", "e")
        footer = screen.query_one(Footer)
        before = list(footer.query(FooterKey))
        first = screen.focused
        await press(pilot, ["1", "2"])
        assert screen.focused is not first
        after = list(footer.query(FooterKey))
        assert after == before and all(k.is_attached for k in after)
        assert {"ctrl+s", "ctrl+g"} <= {k.key for k in after}
