"""Issue 16: an attention-first home and one navigation vocabulary.

The home opens in triage order with a summary line; ``j``/``k``, ``g``/``G``,
``ctrl+d``/``ctrl+u``, Home/End move in every table, tree and log; ``/`` finds
(``n``/``N``); shift+letter and a header click sort; ``y`` copies via OSC 52 and
says what it cannot know; ``ctrl+c`` quits like ``q``; the footer shows what
applies; ``:audit`` mirrors ``hitl audit``."""

from __future__ import annotations

import base64
from typing import Any

import pytest

from console.answering.jobs import WriteJob
from console.app import HitlApp
from console.screens.answer_dialogs import QuitGuard
from console.screens.audit import AuditScreen
from console.screens.inbox import InboxScreen
from console.screens.session import SessionScreen
from console.screens.sessions import SessionsScreen
from console.widgets.event_log import EventLog, column_widths
from console.widgets.format import fit_widths
from console.widgets.nav import FindBar
from console.widgets.node_tree import NodeTree
from console.widgets.plain import DataTable
from console.widgets.summary import summary_text
from engine.home import HomeSummary, sparkline
from engine.store import MemoryStore

from .conftest import focused, press_each, running, settle
from .scenarios import NOW, build_store

TRIAGE = ["billing-stuck", "billing-failed", "drafting-loop", "labelling-fan", "support-multi", "onboard-nested", "refund-partial"]
"""The home's rows: what stopped mid-run first, then what failed, then the oldest open interrupt first."""


@pytest.fixture
async def store() -> MemoryStore:
    return await build_store()


def notes(app: HitlApp) -> list[str]:
    return [n.message for n in app._notifications]


def row_ids(table: DataTable[Any]) -> list[str]:
    return [str(k.value) for k in table.rows]


def footer_keys(app: HitlApp) -> dict[str, str]:
    """What the footer shows now: key -> label, enabled bindings with show=True."""
    return {
        b.binding.key_display or key: b.binding.description
        for key, b in app.screen.active_bindings.items()
        if b.binding.show and b.enabled
    }


# ---------------------------------------------------------------- the home


async def test_home_opens_in_triage_order_with_a_summary_line(store):
    async with running(store, (200, 40), expect=SessionsScreen) as (app, pilot, screen):
        assert row_ids(screen.query_one(DataTable)) == TRIAGE
        s = screen.summary
        assert s is not None
        assert (s.waiting, s.interrupted, s.in_doubt, s.failed, s.running, s.total) == (5, 1, 1, 1, 0, 9)
        line = str(screen.query_one("#sessions-summary").render())
        assert "5 waiting · 1 interrupted · 1 in doubt · 1 failed · 0 running" in line
        assert "oldest 2d21h" in line  # drafting-loop's interrupt, raised 2d21h before NOW
        assert "open: labelling 2 · refunds 2 · drafting 1" in line
        assert "raised/h (24h)" in line


def test_summary_fits_the_width_and_never_cuts_a_count():
    s = HomeSummary(waiting=1234, interrupted=2, in_doubt=1, failed=17, running=3, total=2000,
                    oldest_open_at=NOW - 7200, open_by_app=(("refunds", 1000), ("labels", 234)),
                    raised_per_hour=(0,) * 20 + (1, 4, 8, 2))
    for width in (60, 80, 120, 200):
        text = summary_text(s, NOW, width).plain
        assert len(text) <= width or width < 64, (width, text)
        assert "1,234 waiting" in text and "17 failed" in text and "3 running" in text
    assert "oldest 2h00m" in summary_text(s, NOW, 90).plain
    wide = summary_text(s, NOW, 200).plain
    assert "refunds 1,000 · labels 234" in wide and sparkline(list(s.raised_per_hour)) in wide
    assert sparkline([0, 1, 4, 8]) == "▁▂▅█" and sparkline([0, 0]) == "▁▁"


async def test_slash_searches_ids_users_apps_and_interrupt_ids(store):
    async with running(store, (120, 30)) as (app, pilot, _):
        table = app.screen.query_one(DataTable)
        for text, expected in (("dave", ["labelling-fan"]), ("onboarding", ["onboard-nested"]),
                               ("ops-1", ["refund-partial"]), ("drafting", ["drafting-loop"])):
            await pilot.press("slash", *text, "enter")
            await settle(pilot)
            assert row_ids(table) == expected, text
            await pilot.press("escape")  # clears the text filter
            await settle(pilot)
        assert row_ids(table) == TRIAGE


# ---------------------------------------------------------------- moving


async def test_table_keys_move_the_cursor_and_end_then_enter_opens_the_last_row(store):
    async with running(store, (120, 30)) as (app, pilot, _):
        table = app.screen.query_one(DataTable)
        await pilot.press("j", "j")
        assert table.cursor_row == 2
        await pilot.press("k")
        assert table.cursor_row == 1
        await pilot.press("G")
        assert table.cursor_row == len(TRIAGE) - 1
        await pilot.press("g")
        assert table.cursor_row == 0
        await pilot.press("ctrl+d")
        assert table.cursor_row > 0
        await pilot.press("ctrl+u")
        assert table.cursor_row == 0
        await pilot.press("end", "enter")  # was: the view scrolled, the cursor stayed on row 0
        await settle(pilot)
        assert isinstance(app.screen, SessionScreen) and app.screen.session_id == TRIAGE[-1]
        await press_each(pilot, "escape")
        await pilot.press("home", "enter")
        await settle(pilot)
        assert isinstance(app.screen, SessionScreen) and app.screen.session_id == TRIAGE[0]


async def test_inbox_table_keys(store):
    async with running(store, (120, 30), "i", expect=InboxScreen) as (app, pilot, inbox):
        table = inbox.query_one(DataTable)
        await pilot.press("G")
        assert table.cursor_row == len(inbox.rows) - 1
        await pilot.press("k", "k", "g", "j")
        assert table.cursor_row == 1
        await pilot.press("end", "enter")
        await settle(pilot)
        last = inbox.rows[-1]
        assert isinstance(app.screen, SessionScreen) and app.screen.session_id == last.session_id
        assert app.screen.run_tree.cursor_path == last.path


async def test_tree_keys_move_the_cursor(store):
    async with running(store, (120, 40), session="refund-partial") as (app, pilot, _):
        tree = focused(app, NodeTree)
        await pilot.press("g")
        assert tree.cursor_line == 0 and tree.cursor_path is None  # the invocation line
        await pilot.press("j")
        assert tree.cursor_path == "refund@1"
        await pilot.press("G")
        assert tree.cursor_line == tree.last_line and tree.cursor_path == "refund@1/pay@1" or tree.cursor_line == tree.last_line
        last = tree.cursor_path
        await pilot.press("k")
        assert tree.cursor_path != last and tree.cursor_line == tree.last_line - 1
        await pilot.press("home")
        assert tree.cursor_line == 0
        await pilot.press("end")
        assert tree.cursor_line == tree.last_line
        await pilot.press("ctrl+u")
        assert tree.cursor_line < tree.last_line
        await pilot.press("ctrl+d")
        assert tree.cursor_line == tree.last_line


async def test_log_keys_move_the_cursor(store):
    async with running(store, (120, 40), session="drafting-loop") as (app, pilot, _):
        log = focused(app, EventLog)
        await pilot.press("g")
        assert log.cursor == 0
        await pilot.press("j", "j")
        assert log.cursor == 2
        await pilot.press("k")
        assert log.cursor == 1
        await pilot.press("G")
        assert log.cursor == log.total - 1
        await pilot.press("home")
        assert log.cursor == 0
        await pilot.press("ctrl+d")
        half = log.cursor
        assert half > 0
        await pilot.press("ctrl+u")
        assert log.cursor == 0
        await pilot.press("end")
        assert log.cursor == log.total - 1


async def test_audit_table_keys(store):
    async with running(store, (140, 30), command="audit") as (app, pilot, _):
        audit = app.screen
        assert isinstance(audit, AuditScreen) and len(audit.rows) >= 3
        table = audit.query_one(DataTable)
        await pilot.press("G")
        assert table.cursor_row == len(audit.rows) - 1
        await pilot.press("g", "j")
        assert table.cursor_row == 1
        await pilot.press("end", "enter")
        await settle(pilot)
        assert isinstance(app.screen, SessionScreen) and app.screen.session_id == audit.rows[-1].session_id


# ---------------------------------------------------------------- finding


async def test_find_in_the_tree_with_semicolon_and_comma_then_n_is_next_waiting_again(store):
    async with running(store, (120, 40), session="refund-partial") as (app, pilot, _):
        screen = app.screen
        tree = screen.query_one(NodeTree)
        tree.focus()
        await pilot.press("g", "slash", *"WAITING", "enter")
        await settle(pilot)
        assert not screen.query(FindBar)  # enter keeps the text and closes the box
        matches = tree.matches()
        assert len(matches) >= 4  # the invocation, refund@1, legal@1, ops@1
        assert all("WAITING" in (tree.nav_text(i) or "") for i in matches)
        assert tree.cursor_line == matches[0]
        await pilot.press("semicolon")
        assert tree.cursor_line == matches[1]
        await pilot.press("semicolon", "semicolon", "semicolon")
        assert tree.cursor_line == matches[4 % len(matches)]  # wraps around
        await pilot.press("comma")
        assert tree.cursor_line == matches[3 % len(matches)]
        assert any("match 1 of" in n for n in notes(app))
        # esc in the box clears the find; n is the screen's "next waiting node" with or without one
        await pilot.press("slash", "escape")
        await settle(pilot)
        assert tree.find_query == ""
        tree.select_path("refund@1/legal@1")
        await settle(pilot)
        await press_each(pilot, "n")
        assert tree.cursor_path == "refund@1/ops@1"


async def test_find_in_the_log_and_filter_in_the_inbox(store):
    async with running(store, (120, 40), session="drafting-loop") as (app, pilot, _):
        log = focused(app, EventLog)
        await pilot.press("g", "slash", *"interrupt", "enter")
        await settle(pilot)
        hits = log.matches()
        assert hits and log.cursor == hits[0]
        await pilot.press("semicolon")
        assert log.cursor == hits[1 % len(hits)]
        await pilot.press("comma")
        assert log.cursor == hits[0]
        await pilot.press("slash", *"nothing-like-this", "enter")
        await settle(pilot)
        assert any('No line matches "nothing-like-this"' in n for n in notes(app))
        # The inbox's `/` is its filter (app=, node=, age>, text, payload fields:
        # tests/console/test_bulk_answer.py), as the sessions list's `/` is its own.
        await pilot.press("escape", "escape")
        await settle(pilot)
        inbox = await press_each(pilot, "i", expect=InboxScreen)
        everything = len(inbox.rows)
        await pilot.press("slash", *"app=refunds", "enter")
        await settle(pilot)
        assert inbox.rows and all(r.app_name == "refunds" for r in inbox.rows) and len(inbox.rows) < everything


# ---------------------------------------------------------------- sorting


async def test_sort_by_shift_letter_and_by_a_header_click(store):
    async with running(store, (140, 30), expect=SessionsScreen) as (app, pilot, screen):
        table = screen.query_one(DataTable)
        apps = lambda: [next(r.app_name for r in screen.rows if r.id == k) for k in row_ids(table)]  # noqa: E731
        await pilot.press("P")  # APP, ascending
        await settle(pilot)
        assert apps() == sorted(apps())
        assert table.columns[next(k for k in table.columns if k.value == "app")].label.plain == "APP ▲"
        await pilot.press("P")  # again: reversed
        await settle(pilot)
        assert apps() == sorted(apps(), reverse=True)
        assert "sort: app ▼ (loaded rows)" in str(screen.query_one("#sessions-info").render())
        await pilot.press("P")  # a third time: the triage order again
        await settle(pilot)
        assert row_ids(table) == TRIAGE
        # a click on the OPEN header sorts by open interrupts
        x = 1 + sum(c.get_render_width(table) for c in list(table.columns.values())[:1])
        await pilot.click(DataTable, offset=(x + 1, 0))
        await settle(pilot)
        assert screen.sort_column == "open"
        opens = [next(r.open_interrupts for r in screen.rows if r.id == k) for k in row_ids(table)]
        assert opens == sorted(opens)


# ---------------------------------------------------------------- copying


def capture_driver(app: HitlApp) -> list[str]:
    written: list[str] = []
    driver = app._driver
    assert driver is not None
    original = driver.write

    def write(data: str) -> None:
        written.append(data)
        original(data)

    driver.write = write  # type: ignore[method-assign]
    return written


async def test_y_sends_osc52_and_says_it_cannot_confirm(store):
    async with running(store, (120, 30)) as (app, pilot, _):
        written = capture_driver(app)
        await press_each(pilot, "y")
        sent = "\x1b]52;c;" + base64.b64encode(TRIAGE[0].encode()).decode() + "\a"
        assert sent in written
        said = notes(app)[-1]
        assert said.startswith(f"Sent session id to the terminal clipboard (OSC 52): {TRIAGE[0]}")
        assert "does not confirm" in said and "Copied" not in said
        # the tree: the node path; the log: the event as JSON
        app.open_session("refund-partial")
        await settle(pilot)
        await press_each(pilot, "y")
        assert written[-1] == "\x1b]52;c;" + base64.b64encode(b"refund@1/legal@1").decode() + "\a"
        focused(app, EventLog)
        await pilot.press("g", "y")
        await settle(pilot)
        copied = base64.b64decode(written[-1][len("\x1b]52;c;") : -1]).decode()
        assert '"invocation_id": "inv1"' in copied and notes(app)[-1].startswith("Sent event 1 as JSON")


async def test_y_without_a_terminal_says_it_could_not_copy(store):
    async with running(store, (120, 30)) as (app, pilot, _):
        driver, app._driver = app._driver, None
        try:
            await app.screen.query_one(DataTable).action_copy()
        finally:
            app._driver = driver
        await pilot.pause()
        assert notes(app)[-1] == "Cannot copy session id: no terminal is attached to receive it."


# ---------------------------------------------------------------- quitting, footer


async def test_ctrl_c_quits_like_q(store):
    async with running(store, (100, 30)) as (app, pilot, _):
        await pilot.press("ctrl+c")
        await pilot.pause()
        assert app._exit  # type: ignore[attr-defined]


async def test_ctrl_c_asks_first_while_a_write_runs(store):
    async with running(store, (100, 30)) as (app, pilot, _):
        app.write_started(WriteJob(kind="answer", session_id="refund-partial", invocation_id="inv1",
                                           app_name="refunds", user_id="alice", operator="op", reason=None))
        await press_each(pilot, "ctrl+c")
        assert isinstance(app.screen, QuitGuard) and app.is_running


async def test_footer_shows_what_applies_from_the_first_paint(store):
    async with running(store, (160, 30)) as (app, pilot, _):
        keys = footer_keys(app)
        assert keys.get("⏎") == "Open" or keys.get("enter") == "Open", keys
        assert keys.get("/") == "Filter" and "y" not in keys  # y (copy) is in the help: the footer keeps its room
        app.open_session("refund-partial")
        await settle(pilot)
        keys = footer_keys(app)
        assert keys.get("t") == "Replay" and keys.get("n") == "Next", keys


# ---------------------------------------------------------------- audit


async def test_audit_view_filters_like_hitl_audit(store):
    async with running(store, (160, 30)) as (app, pilot, _):
        everything = (await store.audit_log(limit=1000)).items
        app.run_command("audit")
        await settle(pilot)
        audit = app.screen
        assert isinstance(audit, AuditScreen)
        assert audit.rows == everything and everything
        app.run_command("audit session=drafting-loop")
        await settle(pilot)
        assert app.screen is audit
        assert audit.rows == (await store.audit_log(session_id="drafting-loop")).items and audit.rows
        assert "session=drafting-loop" in str(audit.query_one("#audit-info").render())
        app.run_command("audit action=cancel")
        await settle(pilot)
        assert audit.rows == [] and "No operator writes match action=cancel" in str(
            audit.query_one("#audit-empty").render()
        )
        app.run_command("audit since=1d")  # a day before the console's clock: nothing that recent
        await settle(pilot)
        assert audit.rows == (await store.audit_log(since=NOW - 86400)).items
        app.run_command("audit until=1d operator=nobody")
        await settle(pilot)
        assert audit.rows == []
        app.run_command("audit action=sleep")
        await settle(pilot)
        assert any("unknown action 'sleep'" in n for n in notes(app))
        app.run_command("audit since=yesterdayish")
        await settle(pilot)
        assert any("since=" in n and "is not a time" in n for n in notes(app))
        app.run_command("audit colour=red")
        await settle(pilot)
        assert any("unknown :audit filter colour=" in n for n in notes(app))


# ---------------------------------------------------------------- widths


def test_column_widths_grow_with_the_terminal():
    assert column_widths(80) == (20, 10)
    path, author = column_widths(200)
    assert author >= len("fetch_order") and path > 20
    assert fit_widths({"a": 20, "u": 10, "s": 30}, 60, order=("u", "a", "s"), minimum={"u": 5, "a": 6, "s": 10}) == {
        "a": 20, "u": 10, "s": 30}
    # first every column gives way down to a comfortable 14 (in order), only then to its minimum
    assert fit_widths({"a": 20, "u": 10, "s": 30}, 50, order=("u", "a", "s"), minimum={"u": 5, "a": 6, "s": 10}) == {
        "a": 14, "u": 10, "s": 26}
    assert fit_widths({"a": 20, "u": 10, "s": 30}, 30, order=("u", "a", "s"), minimum={"u": 5, "a": 6, "s": 10}) == {
        "a": 11, "u": 5, "s": 14}
