"""Keyboard navigation with Pilot: sessions list → session → WAITING node → details;
inbox → node; command mode; palette; read-only; errors as notifications."""

from __future__ import annotations

from typing import Any

import pytest
from textual.widgets import DataTable

from console.app import HitlApp
from console.screens.inbox import InboxScreen
from console.screens.session import SessionScreen
from console.screens.sessions import SessionsScreen
from console.widgets.event_log import EventLog
from console.widgets.node_tree import NodeTree
from engine.errors import StoreError
from engine.store import MemoryStore

from .conftest import details_text, press_each, running, settle
from .scenarios import build_store


@pytest.fixture
async def store() -> MemoryStore:
    return await build_store()


def notes(app: HitlApp) -> list[str]:
    return [n.message for n in app._notifications]


async def test_keyboard_to_waiting_node_shows_its_interrupt(store):
    async with running(store, (100, 34)) as (app, pilot, _):
        assert isinstance(app.screen, SessionsScreen)
        await pilot.press("1")  # waiting sessions only, in triage order (oldest open interrupt first)
        await settle(pilot)
        table = app.screen.query_one(DataTable)
        ids = [str(k.value) for k in table.rows]
        assert ids == ["drafting-loop", "labelling-fan", "support-multi", "onboard-nested", "refund-partial"]
        await pilot.press("G")  # the last row: refund-partial
        await press_each(pilot, "enter")
        screen = app.screen
        assert isinstance(screen, SessionScreen) and screen.session_id == "refund-partial"
        tree = screen.query_one(NodeTree)
        assert tree.cursor_path == "refund@1/legal@1"  # the first waiting node
        await press_each(pilot, "n")
        assert tree.cursor_path == "refund@1/ops@1"
        text = details_text(app)
        assert "refund@1/ops@1" in text
        assert "WAITING" in text
        assert "pending interrupts (1)" in text
        assert "ops-1" in text and "Can ops ship the return label?" in text
        assert "schema    boolean" in text  # the response schema, readable (engine.schema_view)
        assert '"order": "order-2"' in text  # the payload
        await pilot.press("n")  # wraps around
        await settle(pilot)
        assert tree.cursor_path == "refund@1/legal@1"
        await press_each(pilot, "escape")
        assert isinstance(app.screen, SessionsScreen)


async def test_auto_completed_node_shows_resolved_answer(store):
    async with running(store, (100, 34), session="refund-partial", expect=SessionScreen) as (app, pilot, screen):
        screen.run_tree.select_path("refund@1/finance@1")
        await settle(pilot)
        text = details_text(app)
        assert "COMPLETED" in text and "output (answers)" in text
        assert "resolved interrupts (1)" in text and "finance-1" in text
        assert "answer" in text and "true" in text


async def test_inbox_enter_jumps_to_the_node(store):
    async with running(store, (120, 30), "i", expect=InboxScreen) as (app, pilot, inbox):
        assert [r.interrupt_id for r in inbox.rows] == [
            "review-3", "label-a", "label-c", "triage-t2", "sign-off", "legal-1", "ops-1",
        ]
        for _ in range(4):
            await pilot.press("down")
        await press_each(pilot, "enter")
        screen = app.screen
        assert isinstance(screen, SessionScreen) and screen.session_id == "onboard-nested"
        assert screen.run_tree.cursor_path == "onboard@1/review@1/sign_off@1"
        assert "Sign the onboarding packet?" in details_text(app)
        await press_each(pilot, "escape")
        assert isinstance(app.screen, InboxScreen)


async def test_inbox_jump_picks_the_right_invocation(store):
    """support-multi has two invocations; the inbox row belongs to the second."""
    async with running(store, (120, 30), "i") as (app, pilot, _):
        for _ in range(3):
            await pilot.press("down")
        screen = await press_each(pilot, "enter", expect=SessionScreen)
        assert screen.invocation_id == "inv2"
        assert screen.run_tree.cursor_path == "support@2/triage@1"


async def test_invocation_picker_switches_tree(store):
    async with running(store, (100, 30), session="support-multi") as (app, pilot, _):
        screen = app.screen
        assert isinstance(screen, SessionScreen) and screen.invocation_id == "inv2"
        await press_each(pilot, "p")
        await pilot.press("up", "enter")
        await settle(pilot)
        assert screen.invocation_id == "inv1"
        assert screen.run_tree.proj.root("inv1").status.value == "COMPLETED"  # type: ignore[union-attr]


async def test_loop_history_restores_earlier_runs(store):
    async with running(store, (100, 30), session="drafting-loop", expect=SessionScreen) as (app, pilot, screen):
        assert screen.complete
        runs = sorted(r.path for r in screen.proj.runs("inv1"))
        assert "drafting@1/draft@1" in runs and "drafting@1/review@1" in runs and "drafting@1/review@3" in runs
        assert screen.run_tree.node_for("drafting@1/draft@1") is not None


async def test_command_mode(store):
    async with running(store, (100, 30)) as (app, pilot, _):
        await pilot.press("colon", *"sessions status=failed", "enter")
        await settle(pilot)
        table = app.screen.query_one(DataTable)
        assert [str(k.value) for k in table.rows] == ["billing-failed"]
        # The rest through the same entry point the prompt submits to.
        app.run_command("open drafting-loop")
        await settle(pilot)
        assert isinstance(app.screen, SessionScreen) and app.screen.session_id == "drafting-loop"
        app.run_command(":inbox")
        await settle(pilot)
        assert isinstance(app.screen, InboxScreen)
        app.run_command("sessions")
        await settle(pilot)
        assert isinstance(app.screen, SessionsScreen)
        assert app.screen.query_state.status is None
        app.run_command("frobnicate")
        await settle(pilot)
        assert any("unknown command :frobnicate" in n for n in notes(app))
        app.run_command("sessions status=sleepy")
        await settle(pilot)
        assert any("unknown status 'sleepy'" in n for n in notes(app))


async def test_palette_offers_only_what_applies(store):
    async with running(store, (100, 30), session="refund-partial") as (app, pilot, _):
        offered = {a.id for a, _ in app.applicable_actions(app.screen)}
        assert {"tree.next_waiting", "tree.follow", "nav.last", "inbox.show", "app.help"} <= offered
        assert "session.invocations" not in offered  # one invocation only
        assert "invocation.redrive" not in offered  # waiting, not failed
        assert {"interrupts.answer", "invocation.cancel"} <= offered
        assert "sessions.open" not in offered  # another screen's action
        await press_each(pilot, "escape")
        offered = {a.id for a, _ in app.applicable_actions(app.screen)}
        assert {"sessions.open", "sessions.filter", "sessions.status.waiting"} <= offered
        assert "tree.next_waiting" not in offered


async def test_palette_runs_an_action(store):
    async with running(store, (100, 30), session="refund-partial", expect=SessionScreen) as (app, pilot, screen):
        await press_each(pilot, "ctrl+p")
        await pilot.press(*"follow live")
        await settle(pilot)
        await press_each(pilot, "enter")
        assert screen.follow is True


async def test_read_only_disables_write_actions(store):
    async with running(store, (100, 30), session="billing-failed", read_only=True) as (app, pilot, _):
        screen = app.screen
        assert screen.check_action("redrive", ()) is None
        assert screen.check_action("cancel", ()) is None
        assert screen.check_action("answer", ()) is None
        assert screen.check_action("toggle_follow", ()) is True
        offered = {a.id for a, _ in app.applicable_actions(screen)}
        assert not any(a.startswith(("interrupts.", "invocation.")) for a in offered)
        await pilot.press("colon", *"invocation.redrive", "enter")
        await settle(pilot)
        assert any("read-only" in n for n in notes(app))


async def test_write_actions_confirm_and_say_what_to_run(store):
    """R asks first, showing the equivalent command; esc backs out, nothing written."""
    from console.screens.answer_dialogs import ConfirmWrite

    async with running(store, (100, 30), session="billing-failed") as (app, pilot, _):
        assert app.screen.check_action("redrive", ()) is True
        last = (await store.get_session("billing-failed")).last_seq
        dialog = await press_each(pilot, "R", expect=ConfirmWrite)
        assert "hitl redrive billing-failed inv1" in str(dialog.query_one("#confirm-command").render())
        await press_each(pilot, "escape")
        assert isinstance(app.screen, SessionScreen)
        assert (await store.get_session("billing-failed")).last_seq == last


async def test_help_lists_keys_of_the_current_screen(store):
    async with running(store, (100, 40), "question_mark", session="refund-partial") as (app, pilot, _):
        from console.screens.help import HelpScreen

        help_screen = app.screen
        assert isinstance(help_screen, HelpScreen)
        ids = {a.id for _, acts in help_screen.sections for a in acts}
        assert {"tree.next_waiting", "nav.last", "app.quit", "invocation.cancel"} <= ids
        assert "sessions.filter" not in ids
        await press_each(pilot, "escape")
        assert isinstance(app.screen, SessionScreen)


async def test_unknown_session_is_a_notification_not_a_crash(store):
    async with running(store, (100, 30)) as (app, pilot, _):
        await pilot.press("colon", *"open nope", "enter")
        await settle(pilot)
        assert isinstance(app.screen, SessionsScreen)
        assert any("session 'nope' does not exist" in n for n in notes(app))


class FailingStore(MemoryStore):
    async def list_sessions(self, **kw: Any) -> Any:
        raise StoreError("the database /tmp/x.sqlite is locked by another process; try again")


async def test_store_error_is_one_line_notification():
    async with running(FailingStore(), (100, 30)) as (app, pilot, _):
        assert notes(app) == ["the database /tmp/x.sqlite is locked by another process; try again"]
        assert isinstance(app.screen, SessionsScreen)


async def test_sessions_paginate_as_the_cursor_nears_the_end():
    store = MemoryStore()
    for i in range(250):
        await store.create_session("bulk", "u", f"s{i:04d}")
    async with running(store, (100, 30), expect=SessionsScreen) as (app, pilot, screen):
        table = screen.query_one(DataTable)
        assert table.row_count == 0  # the home opens in triage order: nothing here needs attention
        await pilot.press("o")  # every session, by last activity
        await settle(pilot)
        assert table.row_count == 100 and screen.next_cursor
        await press_each(pilot, "ctrl+end")
        assert table.row_count == 200
        table.scroll_end(animate=False)  # scrolling to the bottom loads more too
        await settle(pilot)
        assert table.row_count == 250 and screen.next_cursor is None
        assert len({str(k.value) for k in table.rows}) == 250


async def test_event_log_is_virtual():
    """10,000 events: no widget per event, a bounded cache, pages fetched on demand."""
    from engine.models import Content, Event

    store = MemoryStore()
    await store.create_session("bulk", "u", "big")
    for i in range(10_000):
        await store.append_event("big", Event(invocation_id="inv", author="user", content=Content.from_text(f"m{i}")))
    async with running(store, (100, 30), session="big") as (app, pilot, _):
        log = app.screen.query_one(EventLog)
        assert log.total == 10_000
        assert len(log.children) == 0
        assert log.cursor_seq == 10_000
        assert log.line(10_000) is not None and log.line(1) is None
        log.focus()
        await press_each(pilot, "g")
        assert log.cursor_seq == 1 and log.line(1) is not None
        cached = sum(len(p) for p in log._pages.values())
        assert cached <= 2 * log.PAGE
        assert "m0" in details_text(app)


async def test_sort_by_oldest_open_interrupt_pages_from_the_store(store):
    """The home opens in triage order, from the store: waiting sessions only, the
    one with the oldest open interrupt first (not a re-sort of loaded rows); `o`
    switches to every session by last activity."""
    async with running(store, (120, 40)) as (app, pilot, _):
        screen = app.screen
        shown = [r.id for r in screen.rows]
        expected = [r.id for r in (await store.list_sessions(order="oldest_open", limit=500)).items]
        # issue 11: what stopped mid-run (billing-stuck, no process) comes before what merely waits,
        # and what failed (a re-drive) between them
        assert shown == ["billing-stuck", "billing-failed", *[e for e in expected if e != "billing-failed"]]
        ages = [r.oldest_open_at for r in screen.rows[2:]]
        assert ages == sorted(ages)
        await press_each(pilot, "o")
        assert [r.id for r in screen.rows] == [r.id for r in (await store.list_sessions(limit=500)).items]
        assert "sort: last activity" in str(screen.query_one("#sessions-info").render())


async def test_i_from_a_session_opened_from_the_inbox_goes_back_to_that_inbox(store):
    """The inbox, a session opened from it, then ``i`` again: back on the one inbox
    (the session popped), not a second inbox pushed over the first -- its fixed id
    made that a DuplicateIds crash. The same for ``:audit``."""
    async with running(store, (120, 34), "i") as (app, pilot, _):
        inbox = app.screen
        assert isinstance(inbox, InboxScreen) and inbox.rows
        await press_each(pilot, "enter")
        assert isinstance(app.screen, SessionScreen)
        await press_each(pilot, "i")
        assert app.screen is inbox
        assert sum(isinstance(s, InboxScreen) for s in app.screen_stack) == 1
        for _ in range(2):  # the audit view, a session opened from it, :audit again
            await pilot.press("colon", *"audit", "enter")
            await settle(pilot)
            audit = app.screen
            assert type(audit).__name__ == "AuditScreen"
        await press_each(pilot, "enter")
        assert isinstance(app.screen, SessionScreen)
        await pilot.press("colon", *"audit", "enter")
        await settle(pilot)
        assert app.screen is audit
        assert sum(type(s).__name__ == "AuditScreen" for s in app.screen_stack) == 1
        await press_each(pilot, "escape")
        assert app.screen is inbox  # what was under the audit view is still there


async def test_a_command_typed_in_one_burst_is_not_lost(store):
    """``:audit`` and enter arriving at once (typed fast, pasted, sent by tmux):
    ``:`` opens the command line before the next keys are handed out, and those
    that come before its input has focus go into it, in order -- before, they
    went to the table below and were dropped, and enter ran an empty command.
    A ``:`` typed into a text field is still a character there."""
    from textual import events
    from textual.widgets import Input

    async with running(store, (120, 34)) as (app, pilot, _):
        for key, char in [("colon", ":"), *[(c, c) for c in "audit"], ("enter", "\r")]:
            app.post_message(events.Key(key, char))  # all queued before any is handled
        await settle(pilot)
        assert type(app.screen).__name__ == "AuditScreen", app.screen_stack
        await pilot.press("i", "slash")  # the inbox's filter field
        await settle(pilot)
        assert isinstance(app.focused, Input)
        await pilot.press(*"node:x")
        await settle(pilot)
        assert app.focused.value == "node:x" and type(app.screen).__name__ == "InboxScreen"
