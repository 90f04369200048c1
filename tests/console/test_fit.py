"""Issue 16, layout that fits the terminal: the inbox's columns are fitted to the
width like the sessions list's (ids, paths and questions give way; a status or an
age is never cut), the footer keeps what applies now on one line at 80 columns
(``t`` replay and ``v`` graph on the session screen, ``⏎ Open`` on the home's
first paint), node-tree labels use the tree's width (and follow a resize)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from rich.style import Style
from textual.widgets import Footer
from textual.widgets._footer import FooterKey

from console.app import HitlApp
from console.screens.inbox import InboxScreen, asks
from console.screens.session import SessionScreen
from console.screens.sessions import SessionsScreen
from console.widgets.format import age
from console.widgets.node_tree import NodeTree
from console.widgets.plain import DataTable
from engine import START, Content, RequestInput, Runner, Workflow, node
from engine.store import MemoryStore

from .conftest import drive, make_app, settle
from .scenarios import NOW, pin, run_scenarios

LONG_QUESTION = "Approve the refund of 1,250 EUR to the customer whose parcel never arrived in Bergen?"
LONG_OUTPUT = {"order": "order-2026-000417", "customer": "c-88121", "lines": ["boots", "scarf", "gloves"]}


def _asking(workflow: str, first: str, second: str, interrupt_id: str) -> Workflow:
    """``first`` returns LONG_OUTPUT, ``second`` asks LONG_QUESTION."""

    async def output(node_input: Any) -> dict[str, Any]:
        return LONG_OUTPUT

    async def question(node_input: Any) -> Any:
        yield RequestInput(LONG_QUESTION, response_schema=bool, interrupt_id=interrupt_id)

    return Workflow(workflow, [(START, node(output, name=first), node(question, name=second))])


LONG = _asking("refund_of_a_lost_parcel", "look_up_the_order_and_its_customer",
               "approve_the_refund_of_the_lost_parcel", "approve-refund-of-lost-parcel-order-417")
"""Long names: a long node path and interrupt id for the inbox."""
SHORT_NAMES = _asking("lost", "lookup", "approve", "lost-417")
"""Short names, a long question and output: what the tree's width decides."""


async def _store() -> MemoryStore:
    raw = MemoryStore()
    await run_scenarios(raw)
    async for _ in Runner("refunds-for-lost-parcels", LONG, raw).run(
            "customer-care-team-north", "lost-parcel-refund-order-2026-000417", Content.from_text("go")):
        pass
    async for _ in Runner("lost", SHORT_NAMES, raw).run("u", "lost-417", Content.from_text("go")):
        pass
    return await pin(raw)


@pytest.fixture(scope="module")
def store() -> MemoryStore:
    return asyncio.run(_store())


def shown_keys(app: HitlApp) -> list[FooterKey]:
    footer = app.screen.query_one(Footer)
    return [k for k in footer.query(FooterKey) if not k.has_class("-command-palette")]


def footer_fits(app: HitlApp) -> None:
    """Every key of the footer is drawn inside the screen, the palette key too, none under it."""
    footer = app.screen.query_one(Footer)
    keys = list(footer.query(FooterKey))
    palette = [k for k in keys if k.has_class("-command-palette")]
    assert palette and palette[0].region.right <= app.size.width
    for k in keys:
        if k not in palette:
            assert k.region.right <= palette[0].region.x, (k.key, k.region, palette[0].region)


# ---------------------------------------------------------------- the inbox's columns


async def open_inbox(pilot: Any) -> tuple[InboxScreen, DataTable]:
    """From the home, ``i``: the inbox screen and its table, loaded."""
    await settle(pilot)
    await pilot.press("i")
    await settle(pilot)
    inbox = pilot.app.screen
    assert isinstance(inbox, InboxScreen)
    return inbox, inbox.query_one("#inbox-table", DataTable)


@pytest.mark.parametrize("width", [80, 120, 200])
async def test_inbox_columns_fit_the_width_and_never_cut_a_status_or_an_age(store, width):
    app = make_app(store)
    async with app.run_test(size=(width, 30)) as pilot:
        inbox, table = await open_inbox(pilot)
        drawn = sum(c.get_render_width(table) for c in table.columns.values())
        assert drawn <= table.scrollable_content_region.width, (width, drawn)
        for r in inbox.rows:
            key = inbox._key(r)
            assert table.get_cell(key, "status").plain == inbox._status_word(r)
            assert table.get_cell(key, "age").plain == age(r.raised_at, NOW)
        long = next(r for r in inbox.rows if r.message == LONG_QUESTION)
        key = inbox._key(long)
        question = table.get_cell(key, "asks").plain
        if "node" in inbox.shown:  # a narrow inbox leaves the path out (test_inbox_width)
            path = table.get_cell(key, "node").plain
            assert path.startswith("…") and long.path.endswith(path[1:])  # a path keeps its end (the node)
        if width == 200:  # the ids whole; the question longer than the old fixed 32 characters
            for col, value in (("interrupt", long.interrupt_id), ("session", long.session_id), ("app", long.app_name)):
                assert table.get_cell(key, col).plain == value
            assert len(question) > 50 and question[:-1] in asks(long)
        else:
            assert question.endswith("…") and question[:-1] in asks(long)


async def test_columns_drawn_narrow_widen_with_the_terminal(store):
    """A console drawn before its real size arrives (a browser's, under load) re-fits on
    the resize: the cells are whole again and their columns as wide as the cells (the
    table keeps a column's width when a cell is updated, so the rows are drawn again)."""

    def whole(table: DataTable, keys: list[str], col: str) -> None:
        for key in keys:
            text = table.get_cell(key, col).plain
            assert not text.endswith("…"), (col, text)
            assert table.columns[col].get_render_width(table) >= len(text) + 2, (col, text)

    app = make_app(store)
    async with app.run_test(size=(60, 24)) as pilot:
        home = await drive(pilot, expect=SessionsScreen)
        table = home.query_one(DataTable)
        assert any(table.get_cell(r.id, "session").plain.endswith("…") for r in home.rows)
        await pilot.resize_terminal(200, 40)
        await settle(pilot)
        whole(table, [r.id for r in home.rows], "session")
        await pilot.resize_terminal(60, 24)
        await settle(pilot)
        inbox, table = await open_inbox(pilot)
        await pilot.resize_terminal(200, 40)
        await settle(pilot)
        whole(table, [inbox._key(r) for r in inbox.rows], "interrupt")


# ---------------------------------------------------------------- sorting the inbox and the audit view


async def test_inbox_sorts_by_shift_letter_and_header_click(store):
    app = make_app(store)
    async with app.run_test(size=(160, 30)) as pilot:
        inbox, table = await open_inbox(pilot)
        oldest_first = [str(k.value) for k in table.rows]

        def sessions() -> list[str]:
            return [str(k.value).split("\x1f")[0] for k in table.rows]

        await pilot.press("I")  # SESSION id, ascending
        await settle(pilot)
        assert sessions() == sorted(sessions(), key=str.lower) and sessions() != [k.split("\x1f")[0] for k in oldest_first]
        assert table.columns[next(k for k in table.columns if k.value == "session")].label.plain == "SESSION ▲"
        assert "sorted by session ▲ (loaded rows)" in str(inbox.query_one("#inbox-info").render())
        await pilot.press("I")
        await settle(pilot)
        assert sessions() == sorted(sessions(), key=str.lower, reverse=True)
        await pilot.press("I")  # a third time: the inbox's own order (oldest first)
        await settle(pilot)
        assert [str(k.value) for k in table.rows] == oldest_first
        await pilot.press("W")  # AGE ▲: the youngest first
        await settle(pilot)
        raised = [next(r.raised_at for r in inbox.rows if inbox._key(r) == str(k.value)) for k in table.rows]
        assert raised == sorted(raised, reverse=True)
        # a click on the APP header (the last column) sorts by app
        x = sum(c.get_render_width(table) for c in list(table.columns.values())[:-1]) + 1
        await pilot.click(DataTable, offset=(x, 0))
        await settle(pilot)
        assert inbox.sort_column == "app"
        apps = [next(r.app_name for r in inbox.rows if inbox._key(r) == str(k.value)) for k in table.rows]
        assert apps == sorted(apps, key=str.lower)


async def test_audit_view_sorts_by_shift_letter(store):
    app = make_app(store)
    async with app.run_test(size=(160, 30)) as pilot:
        await drive(pilot, command="audit")
        audit = app.screen
        table = audit.query_one("#audit-table", DataTable)
        assert len(audit.rows) > 1

        def times() -> list[float]:
            by_key = {str(k.value): k for k in table.rows}
            return [next(r.at for r in audit.rows if f"{r.at!r}\x1f{r.session_id}\x1f{r.seq}\x1f{r.action}" == key)
                    for key in by_key]

        assert times() == sorted(times(), reverse=True)  # newest first
        await pilot.press("T")  # TIME ▲: the oldest first
        await settle(pilot)
        assert times() == sorted(times())
        assert "sorted by time ▲ (loaded rows)" in str(audit.query_one("#audit-info").render())
        await pilot.press("I")  # SESSION id
        await settle(pilot)
        assert audit.sort_column == "session"


def test_one_sort_helper_for_every_table_screen():
    """The sessions list, the inbox and the audit view sort with the same mixin, and each
    column key of theirs has a registry action (so the help lists it)."""
    from console.actions import BY_ID
    from console.screens.audit import COLUMNS as AUDIT_COLUMNS
    from console.screens.audit import AuditScreen
    from console.screens.base import SortableRows
    from console.screens.inbox import COLUMNS as INBOX_COLUMNS
    from console.screens.sessions import COLUMNS as SESSION_COLUMNS

    for screen, area, columns in ((SessionsScreen, "sessions", SESSION_COLUMNS), (InboxScreen, "inbox", INBOX_COLUMNS),
                                  (AuditScreen, "audit", AUDIT_COLUMNS)):
        assert issubclass(screen, SortableRows) and "action_sort_column" not in vars(screen)
        for key, _label in columns:
            action = BY_ID[f"{area}.sort.{key}"]
            assert action.key and action.key.isupper() and key in screen.SORT_KEYS, action.id


# ---------------------------------------------------------------- the footer


async def test_session_footer_fits_80_columns_with_replay_and_graph(store):
    app = make_app(store)
    async with app.run_test(size=(80, 24)) as pilot:
        await drive(pilot, session="refund-partial")
        assert isinstance(app.screen, SessionScreen)
        keys = {k.key: k.description for k in shown_keys(app)}
        assert keys.get("t") == "Replay" and keys.get("v") == "Graph", keys
        assert keys.get("e") == "Answer" and keys.get("question_mark") == "Help", keys
        footer_fits(app)
        # the keys that did not fit are still in the help
        await pilot.press("question_mark")
        await settle(pilot)
        from console.screens.help import HelpScreen

        help_screen = app.screen
        assert isinstance(help_screen, HelpScreen)
        listed = {a.id for _title, actions in help_screen.sections for a in actions}
        assert {"session.invocations", "invocation.redrive", "app.command", "inbox.show"} <= listed


async def test_footer_refits_on_resize(store):
    app = make_app(store)
    async with app.run_test(size=(200, 40)) as pilot:
        await drive(pilot, session="refund-partial")
        wide = {k.key for k in shown_keys(app)}
        assert {"colon", "i"} <= wide  # room for the app-wide keys too
        await pilot.resize_terminal(80, 24)
        await settle(pilot)
        narrow = {k.key for k in shown_keys(app)}
        assert {"e", "n", "v", "t", "question_mark"} <= narrow < wide
        footer_fits(app)


async def test_home_footer_shows_open_on_its_first_paint(store):
    """The frame that first draws the rows already has ``⏎ Open`` in its footer, enabled."""
    app = make_app(store)
    seen: list[dict[str, bool]] = []
    original = SessionsScreen._show_rows

    def spy(self: SessionsScreen) -> None:
        original(self)
        if not seen and self.rows:
            self.call_after_refresh(lambda: seen.append(
                {k.key: not k.has_class("-disabled") for k in self.query(FooterKey)}))

    SessionsScreen._show_rows = spy  # type: ignore[method-assign]
    try:
        async with app.run_test(size=(80, 24)) as pilot:
            await settle(pilot)
            assert seen and seen[0].get("enter") is True, seen
            footer_fits(app)
    finally:
        SessionsScreen._show_rows = original  # type: ignore[method-assign]


# ---------------------------------------------------------------- node-tree labels


def tree_lines(tree: NodeTree) -> list[str]:
    lines = []
    for i in range(tree.last_line + 1):
        node = tree.get_node_at_line(i)
        if node is not None:
            lines.append(tree.render_label(node, Style(), Style()).plain)
    return lines


async def test_node_tree_labels_use_the_trees_width_and_follow_a_resize(store):
    app = make_app(store)
    async with app.run_test(size=(200, 50)) as pilot:
        await drive(pilot, session="lost-417")
        tree = app.screen.query_one(NodeTree)
        wide = tree_lines(tree)
        ask = next(line for line in wide if "approve@1" in line)
        question = ask.split('"', 1)[1].rstrip('"…')
        assert len(question) > 40 and LONG_QUESTION.startswith(question)  # it was cut at 40, whatever the width
        looked = next(line for line in wide if "lookup@1" in line)
        assert len(looked.split("→ ", 1)[1].rstrip("…")) > 40  # the output too
        room = tree.scrollable_content_region.width
        assert ask.endswith("…") and len(ask) + tree._guide_width(tree.get_node_at_line(wide.index(ask))) == room
        await pilot.resize_terminal(80, 24)
        await settle(pilot)
        narrow = tree_lines(tree)
        room = tree.scrollable_content_region.width
        for line, node_line in zip(narrow, range(tree.last_line + 1), strict=False):
            node = tree.get_node_at_line(node_line)
            assert len(line) + tree._guide_width(node) <= room, line
        ask = next(line for line in narrow if "approve@1" in line)
        assert ask.endswith("…") and "◆ WAITING" in ask  # cut at the edge, the status kept whole
        await pilot.resize_terminal(200, 50)
        await settle(pilot)
        assert tree_lines(tree) == wide
