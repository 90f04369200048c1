"""The submit dialog keeps its title and its buttons in view at 80x24 (they
scrolled out of the box, the reason field focused in the middle)."""

from __future__ import annotations

import pytest
from textual.widgets import Button

from console.screens.answer_dialogs import ConfirmWrite

from .answer_store import demo_store
from .test_answer import app_for, open_session, settle, wait_until

pytestmark = pytest.mark.usefixtures("operator")  # $USER, no hitl.toml


@pytest.mark.parametrize("size", [(80, 24), (120, 40)])
async def test_the_submit_dialog_shows_its_title_and_buttons(size) -> None:
    store = await demo_store()
    app = app_for(store)
    async with app.run_test(size=size) as pilot:
        await open_session(pilot, "refund-waiting-1")
        await pilot.press("e", "y")
        await settle(pilot)
        await wait_until(pilot, lambda: app.screen.submit_problem() is None)
        await pilot.press("ctrl+s")
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmWrite))
        await settle(pilot)
        dialog = app.screen
        box = dialog.query_one("#confirm-box")
        title = dialog.query_one(".modal-title")
        buttons = list(dialog.query(Button))
        reason = dialog.query_one("#confirm-reason")
        inside = box.content_region
        for w in (title, *buttons, reason):
            r = w.region
            assert r.height and inside.y <= r.y and r.bottom <= inside.bottom, (w, r, inside)
        assert "Submit" in str(title.render())
