"""Snapshots of the answer form (issue 16): a boolean not chosen yet (invalid until
chosen, the banner says why), a boolean chosen, an enum, a section with an inline
error and a list, and the JSON-only fallback beside it.

Pinned like the other console snapshots (clock, zone, no cursor blink); the
stores come from the sample apps at a fixed epoch. Regenerate with
``pytest tests/console/test_answer_form_snapshots.py --snapshot-update``.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from .answer_store import demo_store, shipping_store
from .conftest import drive
from .test_answer import app_for, editor_screen, settle, wait_until

SIZE = (120, 36)


pytestmark = pytest.mark.usefixtures("operator")  # $USER, no hitl.toml


def keys_then(session_id: str, *keys: str, form_top: bool = False) -> Any:
    """Open ``session_id``, press ``keys``, wait until the dry run matches the values.

    ``form_top``: then scroll each answer form box to its top. A box is as tall as
    its fields now (the editors pane scrolls a taller form), so this only guards
    against a box scrolled to keep the focused field in view, whose landing varied
    from run to run (one line apart under load)."""

    async def run_before(pilot: Any) -> None:
        await drive(pilot, session=session_id, wait=settle)
        screen = await editor_screen(pilot, *keys)
        await wait_until(pilot, lambda: screen.values() is None or screen.preview_for == screen.values())
        await settle(pilot)
        if form_top:
            boxes = list(screen.query(".answer-form-box"))
            for box in boxes:
                box.scroll_home(animate=False, immediate=True)
            await settle(pilot)
            await wait_until(pilot, lambda: all(box.scroll_y == 0 for box in boxes))
            await settle(pilot)

    return run_before


def test_form_boolean_invalid_until_chosen(snap_compare):
    """refund: `e` -- approved * with y / n, nothing chosen, the banner says why it cannot be submitted."""
    store = asyncio.run(demo_store())
    assert snap_compare(app_for(store), terminal_size=SIZE, run_before=keys_then("refund-waiting-1", "e"))


def test_form_boolean_chosen(snap_compare):
    """refund: `e y` -- yes chosen, the note's default shown, the dry run beside it."""
    store = asyncio.run(demo_store())
    assert snap_compare(app_for(store), terminal_size=SIZE, run_before=keys_then("refund-waiting-1", "e", "y"))


def test_form_enum(snap_compare):
    """labels: one image, `3` picks bird from the five labels."""
    store = asyncio.run(demo_store())
    assert snap_compare(app_for(store), terminal_size=SIZE,
                        run_before=keys_then("labels-partial-1", "space", "e", "3"))


def test_form_nested_object_and_list(snap_compare):
    """shipping: the address section with the zip below its minimum (the engine's words under the
    field), two tags added; the int | str id beside it is JSON only, and says why."""
    store = asyncio.run(shipping_store())
    assert snap_compare(app_for(store), terminal_size=(120, 64), run_before=keys_then(
        "shipping-1", "e", "y", *"Oslo", "tab", *"123", "tab", "+", "1", "+", "3", form_top=True))
