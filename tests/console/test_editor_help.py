"""The response editor's help lists what keys mean in an answer's form -- y / n,
the digits of a choice, + / -, tab -- apart from what the same keys mean in a
list (y copies there)."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from console.screens.answer import AnswerScreen
from console.screens.help import HelpScreen, form_keys_table

from .answer_store import demo_store
from .test_answer import app_for, open_session, settle

pytestmark = pytest.mark.usefixtures("operator")  # $USER, no hitl.toml


async def test_the_editor_help_lists_y_n_and_digit_answers() -> None:
    store = await demo_store()
    app = app_for(store)
    async with app.run_test(size=(120, 40)) as pilot:
        await open_session(pilot, "refund-waiting-1")
        await pilot.press("e")
        await settle(pilot)
        assert isinstance(app.screen, AnswerScreen)
        app.action_help()  # ? in a focused field would be typed: the palette and F1 reach the same action
        await settle(pilot)
        help_screen = app.screen
        assert isinstance(help_screen, HelpScreen)
        assert help_screen.query("#help-form-keys")
        out = Console(width=120, record=True, file=io.StringIO())
        out.print(form_keys_table())
        text = out.export_text()
        assert "y / n" in text and "yes / no" in text and "1-9" in text and "choice" in text
        await pilot.press("escape")
        await settle(pilot)
        await open_session(pilot, "refund-waiting-1")
        app.action_help()
        await settle(pilot)
        assert not app.screen.query("#help-form-keys")  # the session screen has no form
