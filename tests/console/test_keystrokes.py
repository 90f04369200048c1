"""Keystroke counts for the three everyday jobs, from the console's first screen,
every key counted; the store is the oracle afterwards.

1. one boolean approval with a reason: ``i e y ctrl+s o k ctrl+s`` -- 7 keys;
2. 24 labels, one per image: ``i / label enter a e``, a digit per image,
   ``ctrl+s ctrl+s`` -- 36 keys (the 24 digits are the answers themselves);
3. 40 alike refunds, with a filter and the per-item dry run: ``i / FILTER enter
   a b y ctrl+s ctrl+s`` -- 5 keys after the filter (tests/console/test_bulk_answer.py
   counts them too)."""

from __future__ import annotations

import pytest
from textual.widgets import DataTable

from console.screens.answer import AnswerScreen
from console.screens.bulk_answer import BulkAnswerScreen
from console.screens.inbox import InboxScreen
from tests import bulk_store

from .answer_store import demo_store, invocation, label_ids
from .test_answer import app_for, settle, wait_until
from .test_answer_form import answers
from .test_bulk_answer import Keys, console, filter_inbox, open_ids

pytestmark = pytest.mark.usefixtures("operator")  # $USER, no hitl.toml


async def test_one_boolean_approval_with_a_reason_is_7_keys() -> None:
    store = await demo_store()
    app = app_for(store)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        keys = Keys(pilot)
        await keys("i")
        inbox = app.screen
        assert isinstance(inbox, InboxScreen)
        await wait_until(pilot, lambda: inbox.selected is not None)
        row = inbox.selected
        await keys("e", "y")
        await wait_until(pilot, lambda: isinstance(app.screen, AnswerScreen) and app.screen.submit_problem() is None)
        await keys("ctrl+s")
        await keys("o", "k", "ctrl+s")
        await wait_until(pilot, lambda: app.screen is inbox and not inbox.sending)
        assert keys.count == 7
    assert row is not None and row.interrupt_id not in await open_ids(store)
    audit = (await store.audit_log(action="answer", limit=10)).items
    mine = next(a for a in audit if row.interrupt_id in str(a.details))
    assert mine.reason == "ok" and mine.operator == "tester"


async def test_24_labels_are_36_keys() -> None:
    store = await demo_store()
    inv, ids = await label_ids(store)
    assert len(ids) == 24
    picks = [str(1 + n % 5) for n in range(24)]
    app = app_for(store)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        keys = Keys(pilot)
        await keys("i", "slash")
        await keys.type("label")
        await keys("enter", "a", "e")
        screen = app.screen
        assert isinstance(screen, AnswerScreen) and sorted(screen.selected) == sorted(ids)
        await keys(*picks)
        await wait_until(pilot, lambda: screen.submit_problem() is None)
        await keys("ctrl+s", "ctrl+s")
        await wait_until(pilot, lambda: isinstance(app.screen, InboxScreen) and not app.screen.sending)
        assert keys.count == 36
    labels = ["cat", "dog", "bird", "fish", "other"]
    _, after = await invocation(store, "labels-partial-1")
    assert not after.open_interrupts(inv)
    assert (await answers(store, "labels-partial-1"))[-1] == {i: labels[int(k) - 1] for i, k in zip(ids, picks, strict=True)}


async def test_40_alike_refunds_with_a_filter_and_a_dry_run_per_item() -> None:
    async with console() as (store, app, keys):
        await filter_inbox(keys, bulk_store.FILTER)
        await keys("a", "b", "y")
        dialog = app.screen
        assert isinstance(dialog, BulkAnswerScreen) and dialog.plan is not None
        table = dialog.query_one("#bulk-items", DataTable)
        assert table.row_count == 40  # the dry run, one row per item, before anything is written
        await keys("ctrl+s", "ctrl+s")
        assert dialog.result is not None and dialog.result.summary().endswith(": 40 applied, 0 refused of 40 invocations")
        assert keys.count == 3 + len(bulk_store.FILTER) + 5
    still = await open_ids(store)
    assert not any(f"finance-{o}" in still for o in bulk_store.SMALL)
