"""Snapshots of the response editor: a schema error, the dry run, the after view.

Pinned like the other console snapshots (clock, zone, no cursor blink, no timers);
the demo store comes from the sample apps with a fixed epoch; the write in the
after view runs under ``frozen_engine`` so its events' times and ids are fixed too.
Regenerate with ``pytest tests/console/test_answer_snapshots.py --snapshot-update``.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from sample_sessions.clock import frozen_engine

from .answer_store import EPOCH, demo_store
from .conftest import drive
from .test_answer import app_for, editor, editor_screen, settle, submit, wait_until

SIZE = (120, 36)


pytestmark = pytest.mark.usefixtures("operator")  # $USER, no hitl.toml


def open_editor(session_id: str, keys: tuple[str, ...], answers: dict[str, str]) -> Any:
    async def run_before(pilot: Any) -> None:
        await drive(pilot, session=session_id, wait=settle)
        screen = await editor_screen(pilot, *keys)
        for iid, text in answers.items():
            editor(screen, iid).set_text(text)
        await settle(pilot)
        await wait_until(pilot, lambda: screen.preview is not None or screen.values() is None)
        await settle(pilot)

    return run_before


def test_editor_with_a_schema_error(snap_compare):
    """Both refund ids selected; finance's answer has a string where the schema wants a boolean."""
    store = asyncio.run(demo_store())
    run_before = open_editor(
        "refund-waiting-1",
        ("A", "e"),
        {"finance-order-1001": '{\n  "approved": "maybe",\n  "note": "ok"\n}', "risk-order-1001": '{"approved": true}'},
    )
    assert snap_compare(app_for(store), terminal_size=SIZE, run_before=run_before)


def test_editor_dry_run(snap_compare):
    """finance answered alone: it auto-completes, the join waits for risk, risk stays open; the command."""
    store = asyncio.run(demo_store())
    run_before = open_editor("refund-waiting-1", ("space", "e"), {"finance-order-1001": '{"approved": true}'})
    assert snap_compare(app_for(store), terminal_size=SIZE, run_before=run_before)


def test_after_view(snap_compare):
    """fan-a answered: ask_a auto-completed, ship_a a new run, state changed, fan-b still open."""
    store = asyncio.run(demo_store())
    before = open_editor("fanout-1", ("space", "e"), {"fan-a": "true"})

    async def run_before(pilot: Any) -> None:
        await before(pilot)
        with frozen_engine(EPOCH + 7.6 * 86400, seed="after-view"):
            await submit(pilot, "ok")
        await settle(pilot)

    assert snap_compare(app_for(store), terminal_size=SIZE, run_before=run_before)
