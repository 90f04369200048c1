"""The inbox's bulk answer, driven from the keyboard; the store is the oracle.

tests/bulk_store.py: 40 small old refunds across 30 sessions, 5 big, 3 young,
and 1 small old refund of an app whose code is not registered here
(``legacy_refunds``: its answer is refused). "Approve the 40 refunds under 50
EUR older than 2 h" is: ``i``, ``/``, the filter, enter, ``a``, ``b``, ``y``
(the same schema form as a single answer), ``ctrl+s``, ``ctrl+s``."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

import pytest
from textual.widgets import DataTable

from console.screens.answer_dialogs import ConfirmWrite
from console.screens.bulk_answer import BulkAnswerScreen
from console.screens.inbox import InboxScreen
from console.widgets.bulk_input import BulkAnswerInput
from engine import bulk
from engine.store import MemoryStore
from sample_sessions.demo import FIXTURE_EPOCH
from tests import bulk_store

from .conftest import make_app, settle

NO_APP = " ".join(t for t in bulk_store.FILTER.split() if not t.startswith("app="))


async def refunds() -> tuple[MemoryStore, bulk_store.Built]:
    store = MemoryStore()
    return store, await bulk_store.build(store, FIXTURE_EPOCH)


def app_on(store: MemoryStore, built: bulk_store.Built, **kw: Any) -> Any:
    return make_app(store, clock=lambda: built.now, registry=bulk_store.registry(), **kw)


class Keys:
    """Presses keys and counts them (the keystroke numbers of the report)."""

    def __init__(self, pilot: Any) -> None:
        self.pilot = pilot
        self.count = 0

    async def __call__(self, *keys: str) -> None:
        for key in keys:
            await self.pilot.press(key)
            self.count += 1
        await settle(self.pilot)

    async def type(self, text: str) -> None:
        await self(*list(text))


@contextlib.asynccontextmanager
async def console(**kw: Any) -> AsyncIterator[tuple[MemoryStore, Any, Keys]]:
    """The refunds store, the console over it at 120x36, and a key counter."""
    store, built = await refunds()
    app = app_on(store, built, **kw)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        yield store, app, Keys(pilot)


async def filter_inbox(keys: Keys, text: str) -> None:
    """``i``, ``/``, the filter, enter."""
    await keys("i", "slash")
    await keys.type(text)
    await keys("enter")


async def open_ids(store: MemoryStore) -> set[str]:
    return {r.interrupt_id for r in (await store.open_interrupts(limit=1000)).items}


async def batch_rows(store: MemoryStore) -> list[Any]:
    return [r for r in (await store.audit_log(action="answer", limit=500)).items if r.details.get("batch")]


async def test_approve_the_40_refunds_under_50_eur_older_than_2h(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("USER", "ann")
    async with console() as (store, app, keys):
        await filter_inbox(keys, bulk_store.FILTER)
        inbox = app.screen
        assert isinstance(inbox, InboxScreen) and len(inbox.rows) == 40
        await keys("a")
        assert len(inbox.marks) == 40
        await keys("b")
        dialog = app.screen
        assert isinstance(dialog, BulkAnswerScreen) and len(dialog.groups) == 40
        assert dialog.where == bulk_store.FILTER  # the marks are exactly the filter's rows
        assert dialog.query_one(BulkAnswerInput).form is not None  # one schema: its form, not raw JSON
        await keys("y")  # approved: yes
        assert dialog.plan is not None
        assert dialog.plan.summary() == "40 interrupts in 40 invocations: 40 auto-complete, 0 re-execute, 0 refused"
        await keys("ctrl+s")
        confirm = app.screen
        assert isinstance(confirm, ConfirmWrite)
        assert "hitl bulk-answer app=refund_approval node=finance_approval" in str(
            confirm.query_one("#confirm-command").render())
        await keys("ctrl+s")
        assert app.screen is dialog and dialog.result is not None
        assert dialog.result.summary().endswith(": 40 applied, 0 refused of 40 invocations")
        table = dialog.query_one("#bulk-items", DataTable)
        assert [str(table.get_row_at(i)[0]) for i in range(table.row_count)] == ["applied"] * 40
        assert keys.count - 3 - len(bulk_store.FILTER) == 5  # after the filter: a b y ctrl+s ctrl+s
        await keys("escape")
        assert app.screen is inbox and inbox.marks == {}
    still = await open_ids(store)
    assert not any(f"finance-{o}" in still for o in bulk_store.SMALL)
    assert all(f"finance-{o}" in still for o in bulk_store.BIG + bulk_store.YOUNG + bulk_store.LEGACY)
    rows = await batch_rows(store)
    assert len(rows) == 40 and len({r.details["batch"] for r in rows}) == 1
    assert {r.operator for r in rows} == {"ann"}


async def test_space_marks_rows_across_sessions_and_only_those_are_answered() -> None:
    async with console() as (store, app, keys):
        await filter_inbox(keys, "node=finance_approval")
        inbox = app.screen
        assert isinstance(inbox, InboxScreen)
        await keys("space", "down", "space", "down", "down", "space")
        marked = list(inbox.marks.values())
        assert len({r.session_id for r in marked}) == 3
        assert "● 3 marked: 3 invocations, 3 sessions" in str(inbox.query_one("#inbox-info").render())
        await keys("e")  # several invocations: e goes to the bulk dialog too
        dialog = app.screen
        assert isinstance(dialog, BulkAnswerScreen) and dialog.where == ""
        assert [g.interrupt_ids for g in dialog.groups] == [[r.interrupt_id] for r in marked]
        await keys("y")
        await keys("ctrl+s", "ctrl+s")
        assert dialog.result is not None and dialog.result.ok
    still = await open_ids(store)
    assert all(r.interrupt_id not in still for r in marked)
    assert len(still) == 98 - 3  # nothing else was answered


async def test_a_refused_item_is_listed_with_its_reason_stays_marked_and_the_others_are_applied() -> None:
    async with console() as (store, app, keys):
        await filter_inbox(keys, NO_APP)
        await keys("a", "b")
        dialog = app.screen
        assert isinstance(dialog, BulkAnswerScreen) and len(dialog.groups) == 41
        await keys("y")
        assert dialog.plan is not None and dialog.plan.count("refused") == 1
        summary = str(dialog.query_one("#bulk-summary").render())
        assert "40 auto-complete, 0 re-execute, 1 refused" in summary and bulk_store.LEGACY_APP in summary
        await keys("ctrl+s", "ctrl+s")
        assert dialog.result is not None and [r.group.session_id for r in dialog.result.not_applied] == ["legacy-1"]
        summary = str(dialog.query_one("#bulk-summary").render())
        assert ": 40 applied, 1 refused of 41 invocations" in summary and "1 not applied" in summary
        table = dialog.query_one("#bulk-items", DataTable)
        row = table.get_row_at(table.cursor_row)  # the refusal is under the cursor, with its reason
        assert str(row[0]) == "refused" and str(row[1]) == "legacy-1" and bulk_store.LEGACY_APP in str(row[4])
        await keys("escape")
        inbox = app.screen
        assert isinstance(inbox, InboxScreen)
        assert [r.session_id for r in inbox.marks.values()] == ["legacy-1"]  # what was not applied stays marked
    still = await open_ids(store)
    assert f"finance-{bulk_store.LEGACY[0]}" in still
    assert not any(f"finance-{o}" in still for o in bulk_store.SMALL)
    assert len(await batch_rows(store)) == 40


async def test_an_invalid_answer_cannot_be_submitted_and_nothing_is_written() -> None:
    async with console() as (store, app, keys):
        before = {s.id: s.event_count for s in (await store.list_sessions(limit=100)).items}
        await filter_inbox(keys, bulk_store.FILTER)
        await keys("b")  # no marks: the filtered rows
        dialog = app.screen
        assert isinstance(dialog, BulkAnswerScreen) and len(dialog.groups) == 40
        await keys("ctrl+s")  # nothing written yet: nothing prefilled
        assert app.screen is dialog
        await keys("tab", "tab")  # past the fields without choosing
        assert dialog.plan is None and not dialog.query_one(BulkAnswerInput).check.ok
        await keys("ctrl+s")
        assert app.screen is dialog and dialog.result is None
    assert {s.id: s.event_count for s in (await store.list_sessions(limit=100)).items} == before


async def test_read_only_shows_the_dry_run_and_refuses_to_submit() -> None:
    async with console(read_only=True) as (store, app, keys):
        await filter_inbox(keys, bulk_store.FILTER)
        await keys("b")
        dialog = app.screen
        assert isinstance(dialog, BulkAnswerScreen)
        await keys("y")
        assert dialog.plan is not None and dialog.plan.count("auto-complete") == 40
        await keys("ctrl+s")
        assert app.screen is dialog and dialog.result is None
    assert await batch_rows(store) == []


async def test_a_bad_filter_is_said_and_not_applied_and_esc_clears_a_filter() -> None:
    async with console() as (store, app, keys):
        await keys("i")
        inbox = app.screen
        assert isinstance(inbox, InboxScreen)
        everything = len(inbox.rows)
        await keys("slash")
        await keys.type("age<2h")
        await keys("enter")
        assert inbox.where.empty and len(inbox.rows) == everything
        assert any("only age>DURATION" in n.message for n in app._notifications)
        await keys("escape", "slash")
        await keys.type("grace")  # bare words: the message text
        await keys("enter")
        assert inbox.where == bulk.Where(text="grace")
        assert inbox.rows and all("grace" in r.message.lower() for r in inbox.rows)
        await keys("escape")
        assert inbox.where.empty and len(inbox.rows) == everything


# ---------------------------------------------------------------- snapshots
@pytest.fixture
def pinned_batch(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("USER", "ann")
    monkeypatch.setattr(bulk, "new_batch_id", lambda: "batch-000000000001")


def _scene(submit: bool) -> Any:
    async def run_before(pilot: Any) -> None:
        await settle(pilot)
        keys = Keys(pilot)
        await filter_inbox(keys, NO_APP)
        await keys("a", "b", "y")
        if submit:
            await keys("ctrl+s", "ctrl+s")
            screen = pilot.app.screen
            assert isinstance(screen, BulkAnswerScreen)
            table = screen.query_one("#bulk-items", DataTable)

            def cursor_row_on_screen() -> bool:
                top = int(table.scroll_y)
                return screen.result is not None and top <= table.cursor_row < top + table.size.height - 1

            for _ in range(400):  # the batch done and the first refusal scrolled into view (state, not time)
                if cursor_row_on_screen():
                    break
                await settle(pilot)
            assert cursor_row_on_screen()
            await settle(pilot)

    return run_before


def test_bulk_dialog_dry_run_summary(snap_compare, pinned_batch) -> None:
    """41 marked (no app= in the filter): 40 auto-complete, 1 refused with its reason."""
    store = MemoryStore()
    built = _build(store)
    assert snap_compare(app_on(store, built), terminal_size=(120, 36), run_before=_scene(False))


def test_bulk_dialog_partial_failure_results(snap_compare, pinned_batch) -> None:
    """After the submit: 40 applied, 1 refused; the refusal under the cursor, the list stays."""
    store = MemoryStore()
    built = _build(store)
    assert snap_compare(app_on(store, built), terminal_size=(120, 36), run_before=_scene(True))


def _build(store: MemoryStore) -> bulk_store.Built:
    import asyncio

    return asyncio.run(bulk_store.build(store, FIXTURE_EPOCH))


def test_distinguishing_fields_are_what_differs_between_items() -> None:
    from engine.views import distinguishing_fields

    rows = [{"order_id": "o1", "customer": "Grace", "amount": 26.5, "currency": "EUR", "lines": [1]},
            {"order_id": "o2", "customer": "Ada", "amount": 38.0, "currency": "EUR", "lines": [2]}]
    assert distinguishing_fields(rows) == ["order_id", "customer", "amount"]
    assert distinguishing_fields(rows, limit=2) == ["order_id", "customer"]
    assert distinguishing_fields(rows[:1]) == []


@pytest.mark.parametrize("size", [(80, 24), (120, 40)])
async def test_bulk_rows_show_what_tells_the_items_apart_and_five_fit(size: tuple[int, int]) -> None:
    store, built = await refunds()
    app = app_on(store, built)
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        keys = Keys(pilot)
        await filter_inbox(keys, bulk_store.FILTER)
        await keys("b", "y")
        dialog = app.screen
        assert isinstance(dialog, BulkAnswerScreen) and dialog.plan is not None
        table = dialog.query_one("#bulk-items", DataTable)
        item = str(table.get_row_at(0)[2])
        assert "customer=" in item and "amount=" in item
        assert table.size.height - 1 >= 5, table.size  # the header, then at least 5 rows in view
