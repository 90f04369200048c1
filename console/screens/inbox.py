"""The inbox: every open interrupt of the store, oldest first.

Each row addresses one interrupt fully -- interrupt id, node path with run id,
invocation and session -- so ids reused across loop iterations or invocations
cannot be confused. Enter opens the session at that node. STATUS is the
interrupt's invocation as engine.liveness sees it: ``WAITING``, or
``INTERRUPTED`` (a turn of it stopped mid-run: answers are refused until it is
re-driven) with ``IN DOUBT`` when a node may already have done its side effect.

``/`` filters by app, node, age, message text and payload fields (the terms of
:func:`engine.bulk.parse_where`, as ``hitl bulk-answer`` and ``hitl inbox``
read them); a filtered inbox lists every match (no paging). Rows are marked
across sessions (``space``; ``A`` every row of the invocation; ``a`` every
filtered row) and answered: ``e`` in the session's editor when they belong to
one invocation, ``b`` with one answer for all of them (the bulk dialog, which
also takes the filtered rows when none is marked).

The inbox is a work queue: a submit from the editor that ``e`` opened comes
straight back here with the cursor on the next open row while the turn runs (keys
typed meanwhile are the inbox's); the outcome is one line when it comes, and a
refused answer reopens its editor with the text as typed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any, ClassVar

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.coordinate import Coordinate
from textual.widgets import Input

from engine import bulk
from engine.deadlines import due_at, time_left
from engine.errors import HitlError
from engine.liveness import interrupted_invocations, turn_requests_by_invocation
from engine.models import REQUEST_INPUT_FUNCTIONS
from engine.store.base import InterruptRecord, Page
from engine.views import approvals_of_rows

from ..actions import bindings
from ..answering.owners import ask_assignee, change_owners, owned_by_others
from ..answering.selection import AnswerDraft
from ..messages import InboxLoaded, StoreFailed, WriteDone
from ..text import literal
from ..widgets.answer_views import outcome_error, outcome_line
from ..widgets.footer import FittedFooter
from ..widgets.format import age, choose_columns, fit_widths, short, short_id, short_tail
from ..widgets.keys import TextInput
from ..widgets.plain import Static
from .base import PagedTableScreen, SortableRows, StatusTable, focus_list, keep_out_of_text
from .bulk_answer import BulkAnswerScreen
from .loaders import one_line
from .owner_dialogs import AnswerOwned
from .session import SessionScreen

PAGE = 100
REFRESH_CAP = 1000

COLUMNS = (
    ("status", "STATUS"),
    ("age", "AGE"),
    ("due", "DUE"),
    ("interrupt", "INTERRUPT"),
    ("session", "SESSION"),
    ("asks", "ASKS"),
    ("node", "NODE (run ids)"),
    ("app", "APP"),
    ("owner", "OWNER"),
)

SHOWN_BY_WIDTH = ("session", "owner", "interrupt", "app", "node")
"""Beside STATUS, AGE, DUE (while a row has a deadline) and ASKS (always shown), the columns a narrow inbox shows, most
wanted first: each while it fits at its :data:`READABLE` width (a new column goes
into this order where it ranks; OWNER only while a row has one; 80 columns show
STATUS AGE SESSION ASKS)."""

READABLE = {"asks": 34, "session": 20, "owner": 12, "interrupt": 20, "app": 16, "node": 24}
"""The width a column needs to be worth showing (less when its values are shorter)."""


def asks(rec: InterruptRecord) -> str:
    """The RequestInput message, or the function name of another long-running call."""
    if rec.name in REQUEST_INPUT_FUNCTIONS and rec.message:
        return rec.message
    return rec.name + (f": {rec.message}" if rec.message else "")


def _due_first(r: InterruptRecord) -> tuple[bool, float]:
    due = due_at(r.args, r.raised_at)
    return (due is None, due or 0.0)


class InboxScreen(SortableRows, PagedTableScreen):
    """Open interrupts; rows can be selected (ids of one invocation: one message
    answers one invocation) and answered in the session's response editor."""

    AREA = "inbox"
    HELP_AREAS = ("inbox",)
    BINDINGS: ClassVar[list[BindingType]] = bindings("inbox")
    SORT_KEYS: ClassVar[dict[str, Callable[[Any], Any]]] = {
        "status": lambda r: 0,  # by liveness: :meth:`sort_key`
        "age": lambda r: -r.raised_at,  # ▲: youngest first (the inbox's own order is oldest first)
        "due": lambda r: _due_first(r),  # ▲: due first (overdue first of all); none last
        "interrupt": lambda r: r.interrupt_id.lower(),
        "session": lambda r: r.session_id.lower(),
        "asks": lambda r: asks(r).lower(),
        "node": lambda r: r.path.lower(),
        "app": lambda r: r.app_name.lower(),
        "owner": lambda r: (r.owner is None, (r.owner or "").lower()),  # owned first, by name
    }
    """Column sort (shift+letter, or a header click) of the rows loaded so far."""

    def __init__(self, app_name: str | None = None) -> None:
        super().__init__(id="inbox-screen")
        self.app_name = app_name
        self.rows: list[InterruptRecord] = []
        self.stopped: dict[tuple[str, str], tuple[bool, bool]] = {}
        """(session, invocation) -> (stopped mid-run, a node in doubt): engine.liveness, once per load."""
        self.next_cursor: str | None = None
        self._busy = False
        self._busy_more = False
        self.loaded_once = False
        self._generation = 0
        self.marks: dict[str, InterruptRecord] = {}
        """The marked rows, across sessions, in marking order (``space``, ``A``, ``a``)."""
        self.where: bulk.Where = bulk.Where()
        """The filter (``/``); empty: the paged inbox."""
        self.owner_column = False
        """OWNER is a candidate column while a loaded row has an owner (a store nobody claims in keeps its layout)."""
        self.approvals: dict[tuple[str, str], str] = {}
        """(session, interrupt id) -> ``1 of 2 approvals``, read with each page."""
        self.with_due = False
        """DUE is shown (never cut) while a loaded row has a deadline (engine.deadlines), likewise."""
        self.shown: tuple[str, ...] = tuple(k for k, _ in COLUMNS)
        """The columns the width leaves room for (:meth:`_widths`)."""
        self.columns_set: tuple[str, ...] = ()
        """The columns the table has now."""
        self.sending: set[tuple[str, str]] = set()
        """(session, interrupt) of answers submitted whose turn has not come back: not
        listed (a reload while the turn runs would show them still open)."""

    def compose(self) -> ComposeResult:
        yield self.compose_title("hitl ▸ Inbox")
        yield Static("", id="inbox-info", classes="infoline")
        yield TextInput(
            placeholder="/ filter: app=NAME node=NAME age>2h text amount<50 currency=EUR  (enter: apply · esc: close)",
            id="inbox-filter", classes="-hidden",
        )
        yield StatusTable(id="inbox-table", cursor_type="row", zebra_stripes=True)
        yield Static("", id="inbox-empty", classes="empty -hidden")
        yield FittedFooter()

    def on_mount(self) -> None:
        table = self.query_one("#inbox-table", StatusTable)
        self._set_columns(tuple(k for k, _ in COLUMNS if k not in ("due", "owner")))
        table.focus()
        self.query_one("#inbox-filter", Input).cursor_blink = self.hitl.cursor_blink
        self.watch(table, "scroll_y", self._scrolled, init=False)
        self.reload()
        if self.hitl.refresh_interval:
            self.set_interval(self.hitl.refresh_interval, self._periodic_refresh)

    def set_app(self, app_name: str | None) -> None:
        self.app_name = app_name
        self.rows, self.next_cursor = [], None
        self.query_one("#inbox-table", StatusTable).clear()
        self.reload()

    # ------------------------------------------------------------ loading
    def reload(self, *, limit: int = PAGE) -> None:
        self._generation += 1
        self._busy, self._busy_more = True, False
        self._load(limit, None, False, self._generation)

    def _periodic_refresh(self) -> None:
        if not self._busy and not self._busy_more and self.is_current:
            self.reload(limit=min(max(len(self.rows), PAGE), REFRESH_CAP))

    def _load_more(self) -> None:
        if self._busy or self._busy_more or not self.next_cursor:
            return
        self._busy_more = True
        self._load(PAGE, self.next_cursor, True, self._generation)

    @work(group="inbox-load", exit_on_error=False)
    async def _load(self, limit: int, cursor: str | None, append: bool, generation: int) -> None:
        try:
            store = self.hitl.store
            if not self.where.empty:  # every match: the payload tests are not a store query, so no paging
                where = replace(self.where, app=self.where.app or self.app_name)
                page = Page(items=await bulk.select(store, where, now=self.hitl.clock()))
            else:
                page = await store.open_interrupts(app_name=self.app_name, limit=limit, cursor=cursor)
            stopped: dict[tuple[str, str], tuple[bool, bool]] = {}
            sids = list(dict.fromkeys(r.session_id for r in page.items))
            requests = await turn_requests_by_invocation(store, sids)  # the page's turn requests: one read
            for sid in sids:  # liveness, once per session shown (queued for a worker: not interrupted)
                for h in await interrupted_invocations(store, sid, requests=requests):
                    stopped[(sid, h.invocation_id)] = (True, bool(h.in_doubt))
            approvals = await approvals_of_rows(store, page.items)  # only rows a multi-approver rule covers
        except Exception as e:  # noqa: BLE001 -- shown as a one-line notification
            self.post_message(StoreFailed(one_line(e)))
            return
        if generation == self._generation:
            self.post_message(InboxLoaded(page.items, page.next_cursor, append=append, stopped=stopped,
                                          approvals=approvals))

    def on_store_failed(self, message: StoreFailed) -> None:
        self._busy = self._busy_more = False
        self.error(message.text)

    def on_inbox_loaded(self, message: InboxLoaded) -> None:
        if message.append:
            self._busy_more = False
            known = {self._key(r) for r in self.rows}
            self.rows += [r for r in message.rows if self._key(r) not in known]
        else:
            self._busy = False
            self.rows = [r for r in message.rows if (r.session_id, r.interrupt_id) not in self.sending]
            self.stopped = {}
        self.stopped.update(message.stopped)
        if not message.append:
            self.approvals = {}
        self.approvals.update(message.approvals)
        self.next_cursor = message.next_cursor
        self.loaded_once = True
        self._show_rows()

    def _asks(self, r: InterruptRecord) -> str:
        """What it asks, and how far its approvals are under a multi-approver rule."""
        progress = self.approvals.get((r.session_id, r.interrupt_id))
        return f"{asks(r)} · {progress}" if progress else asks(r)

    @staticmethod
    def _key(r: InterruptRecord) -> str:
        return f"{r.session_id}\x1f{r.invocation_id}\x1f{r.interrupt_id}"

    # ------------------------------------------------------------ drawing
    def sort_key(self, column: str) -> Callable[[Any], Any] | None:
        if column == "status":  # what stopped mid-run (in doubt first) before what merely waits
            return lambda r: [not flag for flag in reversed(self._stopped(r))]  # in doubt, interrupted, waiting
        return super().sort_key(column)

    def sort_changed(self) -> None:
        table = self.query_one("#inbox-table", StatusTable)
        for key, label in COLUMNS:
            if key in self.shown:
                table.set_column_label(key, self.header_label(key, label))
        self._show_rows()

    def _set_columns(self, keys: tuple[str, ...]) -> None:
        """Show the columns ``keys`` (in :data:`COLUMNS` order); their rows are re-added."""
        table = self.query_one("#inbox-table", StatusTable)
        table.clear(columns=True)
        for key, label in COLUMNS:
            if key in keys:
                table.add_column(self.header_label(key, label), key=key)
        self.columns_set = keys

    def on_resize(self) -> None:
        if self.rows:
            self._show_rows()

    def _widths(self, rows: list[InterruptRecord], now: float) -> dict[str, int]:
        """The columns shown and their widths, fitted to the table's width. Statuses and
        ages are never cut; the question (ASKS) always shows; the other columns are
        chosen by :data:`SHOWN_BY_WIDTH` while each fits at a readable width
        (:data:`READABLE`), so 80 columns show the question whole enough to read
        instead of every column cut to a stub; then :func:`fit_widths` sizes the chosen
        ones (the node path gives way first, its end -- the node -- kept)."""
        header = dict(COLUMNS)
        natural = {
            "interrupt": max((len(r.interrupt_id) + (2 if self._key(r) in self.marks else 0) for r in rows), default=0),
            "session": max((len(r.session_id) for r in rows), default=0),
            "asks": max((len(self._asks(r)) for r in rows), default=0),
            "node": max((len(r.path) for r in rows), default=0),
            "app": max((len(r.app_name) for r in rows), default=0),
            **({"owner": max((len(self._owner_label(r, now)) for r in rows), default=0)} if self.owner_column else {}),
        }
        natural = {k: max(v, len(header[k])) for k, v in natural.items()}
        status = max((len(self._status_word(r)) for r in rows), default=0)
        ages = max((len(age(r.raised_at, now)) for r in rows), default=0)
        dues = max((len(self._due(r, now)) for r in rows), default=0) if self.with_due else -2
        table = self.query_one("#inbox-table", StatusTable)
        overflow = len(rows) + 1 > (table.size.height or self.size.height)
        scrollbar = table.styles.scrollbar_size_vertical if overflow else 0  # 2 columns in the console's theme
        fixed = (max(status, len(header["status"])) + max(ages, len(header["age"]))
                 + (max(dues, len(header["due"])) + 2 if self.with_due else 0) + 2 * 2 + scrollbar)
        width = table.size.width or self.size.width or 80
        then = tuple(k for k in SHOWN_BY_WIDTH if k in natural)  # OWNER only while some row has one
        chosen = choose_columns(natural, width - fixed, first=("asks",), then=then, readable=READABLE)
        always = ("status", "age", "due") if self.with_due else ("status", "age")
        self.shown = tuple(k for k, _ in COLUMNS if k in (*always, *chosen))
        room = width - fixed - 2 * len(chosen)
        minimum = {"asks": 10, "node": len(header["node"]), "app": 5, "session": 9, "interrupt": 9, "owner": 5}
        widths = fit_widths({k: natural[k] for k in chosen}, room,
                            order=tuple(k for k in ("node", "asks", "owner", "app", "session", "interrupt") if k in chosen),
                            minimum={k: min(minimum[k], natural[k]) for k in chosen})
        return {**dict.fromkeys(natural, 0), **widths}

    @staticmethod
    def _due(r: InterruptRecord, now: float) -> str:
        """Time left to the interrupt's deadline (``3h12m left``, ``overdue 5m``), or ``-``."""
        return time_left(due_at(r.args, r.raised_at), now) or "-"

    def _owner_label(self, r: InterruptRecord, now: float) -> str:
        return self.hitl.policy.owner_label(r.owner, r.owned_at, now)

    def _stopped(self, r: InterruptRecord) -> tuple[bool, bool]:
        return self.stopped.get((r.session_id, r.invocation_id), (False, False))

    def _status_word(self, r: InterruptRecord) -> str:
        stopped = self._stopped(r)
        return "⚠ INTERRUPTED IN DOUBT" if stopped[1] else "⚠ INTERRUPTED" if stopped[0] else "◆ WAITING"

    def _cells(self, r: InterruptRecord, now: float, widths: dict[str, int]) -> list[Text | str]:
        """The cells of the shown columns."""
        table = self.query_one("#inbox-table", StatusTable)
        red = self.hitl.redactor
        cells: dict[str, Callable[[], Text | str]] = {
            "status": lambda: table.status_cell("waiting", self._stopped(r)),
            "age": lambda: Text(age(r.raised_at, now), justify="right"),
            "due": lambda: Text(self._due(r, now), justify="right"),
            "interrupt": lambda: self.interrupt_cell(r, widths["interrupt"]),
            "session": lambda: literal(short(r.session_id, widths["session"], red)),
            "asks": lambda: literal(short(self._asks(r), widths["asks"], red)),
            "node": lambda: literal(short_tail(r.path, widths["node"], red)),
            "app": lambda: literal(short(r.app_name, widths["app"], red)),
            "owner": lambda: self._owner_cell(r, now, widths["owner"]),
        }
        return [cells[k]() for k in self.shown]

    def _owner_cell(self, r: InterruptRecord, now: float, width: int) -> Text:
        """The owner; the operator's own in bold, a stale claim in yellow (``ann (stale 5h00m)``)."""
        text = literal(short(self._owner_label(r, now), width, self.hitl.redactor))
        if self.hitl.policy.is_stale(r.owned_at, now):
            text.stylize("yellow")
        elif r.owner and r.owner == self.hitl.default_operator:
            text.stylize("bold")
        return text

    def _show_rows(self) -> None:
        table = self.query_one("#inbox-table", StatusTable)
        now = self.hitl.clock()
        rows = self.sorted_rows(self.rows)
        # DUE and OWNER come and go with their rows (_widths then chooses the columns)
        self.with_due = any(due_at(r.args, r.raised_at) is not None for r in rows)
        self.owner_column = any(r.owner for r in rows)
        widths = self._widths(rows, now)
        current = self._selected_key()
        if self.shown != self.columns_set:
            self._set_columns(self.shown)
        keys = [str(k.value) for k in table.rows]
        wanted = [self._key(r) for r in rows]
        if keys == wanted:
            for r in rows:
                for col, value in zip(self.shown, self._cells(r, now, widths), strict=True):
                    if table.get_cell(self._key(r), col) != value:
                        table.update_cell(self._key(r), col, value)
        else:
            table.clear()
            for r in rows:
                table.add_row(*self._cells(r, now, widths), key=self._key(r))
            if current in wanted:
                table.move_cursor(row=wanted.index(current), animate=False)
        more = " · more below ↓" if self.next_cursor else ""
        scope = f"app={self.app_name}" if self.app_name else "all apps"
        if not self.where.empty:  # the filter box under this line shows the terms
            scope = "filtered (/: change, esc: clear)" + (
                f" · app={self.app_name}" if self.app_name and not self.where.app else "")
        order = f"sorted by {self.sort_label()} (loaded rows)" if self.sort_label() else "oldest first"
        info = Text(f" open interrupts, {order} · ")
        info.append(literal(scope))
        info.append(f" · {len(self.rows):,} shown{more}{self.marks_summary()}")
        self.query_one("#inbox-info", Static).update(info)
        empty = not self.rows
        self.query_one("#inbox-empty", Static).set_class(not empty, "-hidden")
        if empty:
            keep_out_of_text(self, table)
        table.set_class(empty, "-hidden")
        if empty and not self.where.empty:
            self.query_one("#inbox-empty", Static).update(
                literal(f"No open interrupt matches {self.where}.\nPress / to change the filter (empty: every row)."))
        elif empty:
            self.query_one("#inbox-empty", Static).update("No open interrupts: nobody is waiting for an answer.")

    def _selected_key(self) -> str | None:
        table = self.query_one("#inbox-table", StatusTable)
        if not table.row_count:
            return None
        try:
            return str(table.coordinate_to_cell_key(Coordinate(table.cursor_row, 0)).row_key.value)
        except Exception:  # noqa: BLE001
            return None

    def copy_row(self, key: str) -> tuple[str, str]:
        """What ``y`` copies from a row (console.widgets.nav): its interrupt id."""
        return "interrupt id", key.split("\x1f")[-1]

    @property
    def selected(self) -> InterruptRecord | None:
        key = self._selected_key()
        return next((r for r in self.rows if self._key(r) == key), None)

    # ------------------------------------------------------------ actions
    def can_open_selected(self) -> bool:
        return self.selected is not None

    def action_open_selected(self) -> None:
        rec = self.selected
        if rec is not None:
            self.hitl.open_session(rec.session_id, invocation_id=rec.invocation_id, path=rec.path)

    def action_refresh(self) -> None:
        self.reload(limit=min(max(len(self.rows), PAGE), REFRESH_CAP))

    # ------------------------------------------------------------ filtering
    def action_filter(self) -> None:
        box = self.query_one("#inbox-filter", Input)
        if not box.value and not self.where.empty:
            box.value = str(self.where)
        box.remove_class("-hidden")
        box.focus()

    @on(Input.Submitted, "#inbox-filter")
    def _filter_done(self, event: Input.Submitted) -> None:
        event.stop()
        try:
            where = bulk.parse_where(event.value, me=self.hitl.default_operator)
        except HitlError as e:
            self.notify(f"Filter not applied: {one_line(e)}", severity="warning", timeout=8)
            return
        self.apply_filter(where)
        box = self.query_one("#inbox-filter", Input)
        box.set_class(where.empty, "-hidden")
        focus_list(self, self.query_one("#inbox-table", StatusTable))

    def apply_filter(self, where: bulk.Where) -> None:
        """Show only the rows ``where`` matches (empty: the paged inbox); marks stay."""
        self.where = where
        self.next_cursor = None
        self.reload()  # the rows shown stay until the filter's arrive (the table keeps the focus)

    def on_back(self) -> bool:
        box = self.query_one("#inbox-filter", Input)
        if box.has_focus:
            box.set_class(self.where.empty, "-hidden")
            box.value = str(self.where) if not self.where.empty else ""
            focus_list(self, self.query_one("#inbox-table", StatusTable))
            return True
        if not self.where.empty:
            box.value = ""
            box.add_class("-hidden")
            self.apply_filter(bulk.Where())
            return True
        return False

    # ------------------------------------------------------------ marking and answering
    def marks_summary(self) -> str:
        """`` · ● 40 marked: 40 invocations, 30 sessions (b: bulk answer)``; empty without marks."""
        if not self.marks:
            return ""
        invs = {(r.session_id, r.invocation_id) for r in self.marks.values()}
        sessions = {r.session_id for r in self.marks.values()}
        if len(invs) == 1:
            sid, inv = next(iter(invs))
            return f" · ● {len(self.marks)} marked in {sid} / {short_id(inv, 10)} (e: answer, b: bulk, space: unmark)"
        return (f" · ● {len(self.marks)} marked: {len(invs)} invocations, {len(sessions)} sessions "
                "(b: bulk answer, space: unmark)")

    def interrupt_cell(self, rec: InterruptRecord, width: int = 34) -> str:
        picked = self._key(rec) in self.marks
        return ("● " if picked else "") + short(rec.interrupt_id, width - (2 if picked else 0), self.hitl.redactor)

    def _mark(self, rows: list[InterruptRecord], *, toggle: bool) -> None:
        if not rows:
            return
        keys = [self._key(r) for r in rows]
        if toggle and all(k in self.marks for k in keys):
            for k in keys:
                self.marks.pop(k, None)
        else:
            for k, r in zip(keys, rows, strict=True):
                self.marks.setdefault(k, r)
        self._show_rows()

    def can_toggle_interrupt(self) -> bool:
        return self.selected is not None

    can_select_invocation = can_toggle_interrupt

    def action_toggle_interrupt(self) -> None:
        rec = self.selected
        if rec is not None:
            self._mark([rec], toggle=True)

    def action_select_invocation(self) -> None:
        rec = self.selected
        if rec is not None:
            same = (rec.session_id, rec.invocation_id)
            self._mark([r for r in self.rows if (r.session_id, r.invocation_id) == same], toggle=False)

    def can_mark_all(self) -> bool:
        return bool(self.rows)

    def action_mark_all(self) -> None:
        """Mark every row shown (the filter's matches); when all are marked already, unmark them."""
        self._mark(list(self.rows), toggle=True)

    def can_answer(self) -> bool:
        return self.selected is not None or bool(self.marks)

    def action_answer(self) -> None:
        """Open the session at the invocation, then the editor over it; marks across
        invocations go to the bulk dialog (one message answers one invocation)."""
        rec = self.selected
        invs = {(r.session_id, r.invocation_id) for r in self.marks.values()}
        if len(invs) > 1:
            self.notify("The marked rows belong to several invocations: one answer for all of them.", timeout=4)
            self.action_bulk_answer()
            return
        if invs:
            session_id, inv = next(iter(invs))
            ids = [r.interrupt_id for r in self.marks.values()]
            path = next(iter(self.marks.values())).path
        elif rec is not None:
            session_id, inv, ids, path = rec.session_id, rec.invocation_id, [rec.interrupt_id], rec.path
        else:
            return
        records = {r.interrupt_id: r for r in [*self.rows, *self.marks.values()] if r.invocation_id == inv}
        first = records.get(ids[0]) or rec
        if first is None:
            return
        owned = owned_by_others([(i, r.owner, r.owned_at) for i in ids if (r := records.get(i)) is not None],
                                self.hitl.default_operator, self.hitl.policy)

        def go(yes: bool | None = True) -> None:
            if not yes:
                return
            self.marks.clear()
            self._show_rows()
            draft = AnswerDraft(session_id, inv, first.app_name, first.user_id)
            draft.selected, draft.force = list(ids), bool(owned)
            self._open_editor(draft, path)

        if owned:  # someone else's claim: ask first, saying whose
            self.app.push_screen(AnswerOwned(owned, self.hitl.clock()), go)
        else:
            go()

    def _open_editor(self, draft: AnswerDraft, path: str | None) -> None:
        """The session at ``draft``'s invocation, the editor over it; its submit returns here."""
        screen = SessionScreen(draft.session_id, draft.invocation_id, path)
        screen.work_queue = self
        self.app.push_screen(screen)
        screen.drafts[draft.invocation_id] = draft
        screen.answering.open_editor(draft)

    # ------------------------------------------------------------ owners (c, C)
    def can_claim(self) -> bool:
        return self.selected is not None or bool(self.marks)

    can_assign = can_claim

    def _owner_targets(self) -> dict[str, list[tuple[str, str | None]]]:
        rows = list(self.marks.values()) or ([self.selected] if self.selected is not None else [])
        targets: dict[str, list[tuple[str, str | None]]] = {}
        for r in rows:
            if r is not None:
                targets.setdefault(r.session_id, []).append((r.interrupt_id, r.owner))
        return targets

    def action_claim(self) -> None:
        """Claim the marked rows (else the row under the cursor); all mine already: release them."""
        if targets := self._owner_targets():
            change_owners(self.hitl, "claim", targets, then=self.action_refresh)

    def action_assign(self) -> None:
        if targets := self._owner_targets():
            n = sum(len(v) for v in targets.values())
            ask_assignee(self.hitl, f"{n} interrupt{'s' * (n != 1)}",
                         lambda to: change_owners(self.hitl, "assign", targets, to=to, then=self.action_refresh))

    def answers_sent(self, session_id: str, interrupt_ids: list[str]) -> None:
        """A submit from the editor went to its turn: its rows leave the list and the
        cursor goes to the row that followed the first of them (the next open row)."""
        gone = {(session_id, i) for i in interrupt_ids}
        self.sending |= gone
        shown = self.sorted_rows(self.rows)
        after = [i for i, r in enumerate(shown) if (r.session_id, r.interrupt_id) in gone]
        self.rows = [r for r in self.rows if (r.session_id, r.interrupt_id) not in gone]
        self._show_rows()
        if after and self.rows:
            following = [r for r in shown[after[0]:] if (r.session_id, r.interrupt_id) not in gone]
            target = following[0] if following else self.sorted_rows(self.rows)[-1]
            table = self.query_one("#inbox-table", StatusTable)
            table.move_cursor(row=table.get_row_index(self._key(target)), animate=False)

    def on_write_done(self, message: WriteDone) -> None:
        """The outcome of a submit made from here: one line; refused, its editor again with the text."""
        job, o = message.job, message.outcome
        self.sending -= {(job.session_id, i) for i in job.answers}
        self.action_refresh()
        error = outcome_error(o)
        if not o.written:
            self.notify(error or "nothing was written", title="Not submitted (answer)", severity="error", timeout=10)
            if message.draft is not None:
                message.draft.error = error
                message.draft.conflict = o.error_kind == "conflict"
                first = next((r for r in self.rows if r.invocation_id == job.invocation_id), None)
                self._open_editor(message.draft, first.path if first else None)
            return
        self.notify(outcome_line(o), severity="warning" if error else "information", timeout=6)

    def can_bulk_answer(self) -> bool:
        return bool(self.marks) or (not self.where.empty and bool(self.rows))

    def action_bulk_answer(self) -> None:
        """One answer for the marked rows, else for every row the filter shows."""
        if self.marks and not self.where.empty and set(self.marks) == {self._key(r) for r in self.rows}:
            groups, where = bulk.group(self.rows), str(self.where)  # exactly the filter's rows: its command says so
        elif self.marks:
            groups, where = bulk.group(self.marks.values()), ""
        elif not self.where.empty and self.rows:
            groups, where = bulk.group(self.rows), str(self.where)
        else:
            self.notify("Mark rows first (space, A: the invocation's, a: every filtered row), or filter with /.",
                        severity="warning")
            return

        def closed(result: bulk.BulkResult | None) -> None:
            if result is not None:  # the applied rows leave the marks; refused ones stay marked, to look at
                applied = {(r.group.session_id, r.group.invocation_id) for r in result.results if r.ok}
                self.marks = {k: r for k, r in self.marks.items() if (r.session_id, r.invocation_id) not in applied}
            self.action_refresh()

        self.app.push_screen(BulkAnswerScreen(groups, where=where), closed)
