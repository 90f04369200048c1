"""The home screen: every session of the store, newest activity first.

Rows are loaded a page at a time (keyset pagination) as the cursor nears the
end, so a store with 100,000 sessions opens as fast as one with ten. The list
refreshes itself every few seconds; rows are updated in place (the cursor stays
on its session).

Liveness (engine.liveness, once per page; the page's turn requests in one
read) marks ⚠ INTERRUPTED rows and ◷ QUEUED ones (an answer stored
for a worker of the app). Triage puts what stopped mid-run first, then what is
queued; a session answered in full and queued has nothing for an operator to
answer, so only the list by activity (``o``) and ``status=queued`` show it
(the summary line counts it, the title bar says when no worker serves its app).
A turn a worker *held* (nodes in doubt) is listed with what stopped mid-run.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, ClassVar

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.coordinate import Coordinate
from textual.timer import Timer
from textual.widgets import Input

from engine.home import HomeSummary, home_summary
from engine.liveness import page_health, page_verdicts, queued_turns, turn_requests_by_invocation
from engine.status import (
    INTERRUPTED_FILTER,
    QUEUED_FILTER,
    STATUS_CYCLE,
    SessionStatus,
    stored_filter,
)
from engine.store.base import SessionSummary, leases_of
from engine.store.deadlines import timers

from ..actions import bindings
from ..messages import LivenessJudged, SessionQuery, SessionsLoaded, StoreFailed, SummaryLoaded
from ..text import clean, literal
from ..widgets.footer import FittedFooter
from ..widgets.format import age, fit_widths, short
from ..widgets.keys import TextInput
from ..widgets.plain import Static
from ..widgets.summary import summary_text
from .base import PagedTableScreen, SortableRows, StatusTable, focus_list, keep_out_of_text
from .loaders import one_line

PAGE = 100
SUMMARY_EVERY = 10.0
"""Seconds between two reads of the summary line while the list refreshes itself."""
TRIAGE_STATUSES = (None, SessionStatus.WAITING, SessionStatus.RUNNING, INTERRUPTED_FILTER)
"""Status filters the triage order applies to (the others list by last activity)."""
REFRESH_CAP = 1000
"""A periodic refresh re-reads at most this many rows (the ones near the top)."""
HELD_READ = 1000
"""Turn requests read to find the held ones (oldest first: a held one waits for an operator)."""

COLUMNS = (
    ("status", "STATUS"),
    ("open", "OPEN"),
    ("oldest", "OLDEST"),
    ("app", "APP"),
    ("user", "USER"),
    ("session", "SESSION"),
    ("active", "ACTIVE"),
)
OWNER_COLUMN = ("owner", "OWNER")
"""Shown (before ACTIVE) while a listed session has an owned open interrupt."""


def owner_filter(text: str | None, me: str | None) -> tuple[str | None, str | None]:
    """The ``/`` filter line split into (text, owner): ``owner=NAME``, ``owner=@group``,
    ``owner=me`` and ``unowned`` (read by :func:`engine.bulk.parse_where`, as the inbox
    reads them) filter by owner (``""``: an open interrupt nobody owns); the rest is text.
    HitlError for ``owner=me`` without an operator name."""
    from engine.bulk import parse_where

    words = (text or "").split()
    terms = [w for w in words if w == "unowned" or w.startswith("owner=")]
    rest = " ".join(w for w in words if w not in terms) or None
    return rest, parse_where(terms, me=me).owner if terms else None


class SessionTable(StatusTable):
    """The sessions DataTable."""


class SessionsScreen(SortableRows, PagedTableScreen):
    AREA = "sessions"
    HELP_AREAS = ("sessions",)
    BINDINGS: ClassVar[list[BindingType]] = bindings("sessions")
    SORT_KEYS: ClassVar[dict[str, Callable[[Any], Any]]] = {
        "status": lambda r: str(r.status),
        "open": lambda r: r.open_interrupts,
        "oldest": lambda r: None if r.oldest_open_at is None else -r.oldest_open_at,  # ▲: youngest first
        "app": lambda r: r.app_name.lower(),
        "user": lambda r: r.user_id.lower(),
        "session": lambda r: r.id.lower(),
        "active": lambda r: -(r.last_event_at or r.updated_at),
        "owner": lambda r: ", ".join(r.owners).lower(),
    }
    """Column sort (shift+letter, or a header click) of the rows loaded so far."""

    def __init__(self) -> None:
        super().__init__(id="sessions-screen")
        self.query_state = SessionQuery()
        self.sort_oldest = True
        """Triage order (the default): the store pages by oldest open interrupt; what stopped
        mid-run goes first. ``o`` switches to last activity (every session)."""
        self.summary: HomeSummary | None = None
        """The summary line's counts (engine.home), read after a page load (at most
        every SUMMARY_EVERY seconds while the list refreshes itself)."""
        self._summary_read_at: float | None = None
        self._summary_due = False
        self._could_open = False
        self._drawn_widths: dict[str, int] = {}
        """The column widths the rows were last drawn with (a resize redraws them)."""
        """What the footer last showed for ``⏎ Open`` (it is redrawn only when that changes)."""
        """Read the summary with the next load whatever its age (``r``, a new filter)."""
        self.rows: list[SessionSummary] = []
        self.stopped: dict[str, tuple[bool, bool]] = {}
        """Session id -> (interrupted mid-run, a node in doubt), from engine.liveness: a first
        verdict at load time (the page's lease rows and turn requests, one read each), then the
        full one after the paint."""
        self.queued: set[str] = set()
        """Sessions whose turn waits for a worker (none of theirs interrupted), from engine.liveness."""
        self.dues: dict[str, float] = {}
        """Session id -> its soonest deadline: the triage order puts those due first."""
        self.verdicts: dict[str, tuple[tuple[bool, bool] | None, bool]] = {}
        """The last full verdict per session ((interrupted, in doubt) or None; queued): a reload's
        first verdict keeps it until the session is judged again (no IN DOUBT flicker every refresh)."""
        self.next_cursor: str | None = None
        self._busy = False
        self._busy_more = False
        self.loaded_once = False
        self._generation = 0
        self._debounce: Timer | None = None

    def compose(self) -> ComposeResult:
        yield self.compose_title("hitl ▸ Sessions")
        yield TextInput(placeholder="/ search ids, users, apps, interrupt ids…  (enter: keep · esc: close)", id="filter", classes="-hidden")
        yield Static("", id="sessions-summary", classes="infoline")
        yield Static("", id="sessions-info", classes="infoline")
        yield SessionTable(id="sessions-table", cursor_type="row", zebra_stripes=True)
        yield Static("", id="sessions-empty", classes="empty -hidden")
        yield FittedFooter()

    def on_mount(self) -> None:
        table = self.query_one(SessionTable)
        for key, label in COLUMNS:
            table.add_column(label, key=key)
        self.query_one("#filter", Input).cursor_blink = self.hitl.cursor_blink
        table.focus()
        self.watch(table, "scroll_y", self._scrolled, init=False)
        self.reload()
        if self.hitl.refresh_interval:
            self.set_interval(self.hitl.refresh_interval, self._periodic_refresh)

    # ------------------------------------------------------------ loading
    def reload(self, *, limit: int = PAGE) -> None:
        self._generation += 1
        self._busy = True
        self._busy_more = False
        self._load(self.query_state, limit, None, False, self._generation)

    @work(group="sessions-summary", exclusive=True, exit_on_error=False)
    async def _load_summary(self) -> None:
        """The summary line, read after the first page is drawn (it never delays it)."""
        try:
            summary = await home_summary(self.hitl.store, self.hitl.clock())
        except Exception as e:  # noqa: BLE001 -- shown as a one-line notification
            self.post_message(StoreFailed(one_line(e)))
            return
        self.post_message(SummaryLoaded(summary))

    def on_summary_loaded(self, message: SummaryLoaded) -> None:
        self.summary = message.summary
        self._render_summary()
        self._render_info()

    def _render_summary(self) -> None:
        box = self.query_one("#sessions-summary", Static)
        if self.summary is None:
            box.update(Text(" summary: loading…", "dim"))
            return
        box.update(summary_text(self.summary, self.hitl.clock(), max(self.size.width, 20), self.hitl.redactor,
                                self.hitl.default_operator))

    def on_resize(self) -> None:
        self._render_summary()
        if self.rows:
            self._show_rows()

    def _periodic_refresh(self) -> None:
        if self._busy or self._busy_more or not self.is_current:
            return
        self.reload(limit=min(max(len(self.rows), PAGE), REFRESH_CAP))

    def _load_more(self) -> None:
        if self._busy or self._busy_more or not self.next_cursor:
            return
        self._busy_more = True
        self._load(self.query_state, PAGE, self.next_cursor, True, self._generation)

    def triage(self, query: SessionQuery | None = None) -> bool:
        """The triage order applies: chosen (the default), and the status filter is one
        that can need attention (a failed or completed session has no open interrupt,
        so those filters list by last activity)."""
        status = (query or self.query_state).status
        return self.sort_oldest and status in TRIAGE_STATUSES

    @work(group="sessions-load", exit_on_error=False)
    async def _load(self, query: SessionQuery, limit: int, cursor: str | None, append: bool, generation: int) -> None:
        triage = self.triage(query)
        with_prefix = triage and not append and query.status in (None, INTERRUPTED_FILTER, SessionStatus.RUNNING)
        # What stopped mid-run goes first: a screenful of running sessions is read for the first paint.
        prefix_size = min(PAGE // 2, max(self.size.height, 10)) if with_prefix else 0
        try:
            text, owner = owner_filter(query.text, self.hitl.default_operator)
            store = self.hitl.store
            page = await store.list_sessions(
                status=stored_filter(query.status),
                text=text,
                owner=owner,
                app_name=query.app_name,
                user_id=query.user_id,
                limit=max(limit - prefix_size, 1) if limit == PAGE else limit,
                cursor=cursor,
                order="oldest_open" if triage else "updated",
            )
            items = list(page.items)
            if with_prefix:
                # triage: the store orders waiting sessions; what stopped mid-run goes first
                # (a screenful of the running sessions, judged before the paint).
                # Failed sessions are work too (a re-drive): counted by the summary, so listed.
                prefix = []
                for status in (SessionStatus.RUNNING, *([SessionStatus.FAILED] if query.status is None else [])):
                    prefix += (await store.list_sessions(
                        status=status, text=text, owner=owner, app_name=query.app_name,
                        user_id=query.user_id, limit=prefix_size,
                    )).items
                if query.status != SessionStatus.RUNNING:
                    prefix += await self._held(query, text, owner, {s.id for s in (*prefix, *items)}, prefix_size)
                known = {s.id for s in items}
                items = [s for s in dict((s.id, s) for s in prefix).values() if s.id not in known] + items
            # Liveness for the first paint: one read of the page's lease rows (engine.liveness);
            # the full verdict -- nodes in doubt -- is read after the paint (_judge).
            ids = [s.id for s in items]
            dues = await timers(store).due_of(ids) if triage else {}
            leases = await leases_of(store, ids)
            requests = await turn_requests_by_invocation(store, ids)
            looks_stopped, looks_queued, judge = page_verdicts(((s.id, s.status) for s in items), leases, requests)
            stopped: dict[str, tuple[bool, bool]] = {}
            queued: set[str] = set()
            held = {sid for (sid, _inv), r in requests.items() if r.held is not None}
            for sid in judge:  # a held turn: stopped, whatever the index says (nodes in doubt: after the paint)
                first = ((True, False) if sid in looks_stopped or sid in held else None, sid in looks_queued)
                verdict, is_queued = self.verdicts.get(sid, first)
                if verdict is not None:
                    stopped[sid] = verdict
                elif is_queued:
                    queued.add(sid)
        except Exception as e:  # noqa: BLE001 -- shown as a one-line notification
            self.post_message(StoreFailed(one_line(e)))
            if generation == self._generation:
                self._busy = self._busy_more = False
            return
        if generation != self._generation:
            return  # the query changed meanwhile
        to_judge: dict[str, str] = {s.id: s.status for s in items if s.id in judge}  # listed or not: a live turn may sit beside a stopped one
        items = [s for s in items if self._listed(s, stopped, queued, query)]
        self.post_message(SessionsLoaded(query, items, page.next_cursor, append=append, stopped=stopped,
                                         queued=queued, judge=to_judge, generation=generation, dues=dues))

    async def _held(
        self, query: SessionQuery, text: str | None, owner: str | None, known: set[str], limit: int
    ) -> list[SessionSummary]:
        """Sessions whose turn a worker held (a node in doubt waits for an acknowledged
        re-drive): work, and counted as interrupted by the summary line, whatever the
        index says -- an answer left to a worker leaves its session waiting with no open
        interrupt, which the triage read (oldest open interrupt first) never lists.
        Found from the turn requests (one read), each looked up by its id (at most
        ``limit``; under a text filter, among the sessions that match it)."""
        out: list[SessionSummary] = []
        for (sid, _inv), req in (await queued_turns(self.hitl.store, limit=HELD_READ)).items():
            if req.held is None or sid in known or (query.app_name and req.app_name != query.app_name):
                continue
            page = await self.hitl.store.list_sessions(text=text or sid, owner=owner, app_name=req.app_name,
                                                       user_id=query.user_id, limit=PAGE)
            out += [s for s in page.items if s.id == sid]
            known.add(sid)
            if len(out) >= limit:
                break
        return out

    def _listed(
        self, s: SessionSummary, stopped: dict[str, tuple[bool, bool]], queued: set[str], query: SessionQuery
    ) -> bool:
        """Whether ``s`` is a row of ``query``: the triage order lists what stopped mid-run, what
        is queued for a worker and what waits (any status filter lists its status); ``interrupted``
        only what stopped, ``queued`` only what is queued."""
        if query.status == INTERRUPTED_FILTER:
            return s.id in stopped
        if query.status == QUEUED_FILTER:
            return s.id in queued
        return (not self.triage(query) or s.id in stopped or s.id in queued or bool(query.status)
                or s.status in (SessionStatus.WAITING, SessionStatus.FAILED))

    @work(group="sessions-judge", exit_on_error=False)
    async def _judge(self, query: SessionQuery, rows: dict[str, str], generation: int) -> None:
        """The full liveness verdict (engine.liveness) on the rows the first one could not
        settle, read after the paint: which stopped mid-run (and with nodes in doubt), which
        are queued for a worker. The rows' turn requests are one read."""
        stopped: dict[str, tuple[bool, bool]] = {}
        queued: set[str] = set()
        try:
            for sid, found in (await page_health(self.hitl.store, rows.items())).items():
                cut = [h for h in found if h.interrupted]
                if cut:
                    stopped[sid] = (True, any(h.in_doubt for h in cut))
                else:  # page_health lists only sessions with one stopped or queued
                    queued.add(sid)
        except Exception as e:  # noqa: BLE001 -- shown as a one-line notification
            self.post_message(StoreFailed(one_line(e)))
            return
        self.post_message(LivenessJudged(query, generation, tuple(rows), stopped, queued))

    def on_liveness_judged(self, message: LivenessJudged) -> None:
        if message.query != self.query_state or message.generation != self._generation:
            return  # a newer load judges its own rows
        for sid in message.judged:
            verdict, is_queued = message.stopped.get(sid), sid in message.queued
            self.verdicts[sid] = (verdict, is_queued)
            if verdict is None:
                self.stopped.pop(sid, None)
            else:
                self.stopped[sid] = verdict
            if is_queued and verdict is None:
                self.queued.add(sid)
            else:
                self.queued.discard(sid)
        listed = {r.id for r in self.rows}
        self.rows = [r for r in self.rows
                     if r.id not in message.judged or self._listed(r, self.stopped, self.queued, self.query_state)]
        status = self.query_state.status
        unlisted = [sid for sid in message.judged if sid not in listed]
        if any((sid in message.stopped and status != QUEUED_FILTER)
               or (sid in message.queued and sid not in message.stopped and status != INTERRUPTED_FILTER)
               for sid in unlisted):
            self.reload(limit=min(max(len(self.rows), PAGE), REFRESH_CAP))  # judged beside a live turn: list it
        self._show_rows()

    def on_store_failed(self, message: StoreFailed) -> None:
        self.error(message.text)
        self._busy = self._busy_more = False
        self._render_info()

    def on_sessions_loaded(self, message: SessionsLoaded) -> None:
        if message.query != self.query_state:
            return
        if message.append:
            self._busy_more = False
            known = {r.id for r in self.rows}
            self.rows += [r for r in message.rows if r.id not in known]
        else:
            self._busy = False
            self.rows = list(message.rows)
        if not message.append:
            self.stopped, self.queued, self.dues = {}, set(), {}
        self.dues.update(message.dues)
        self.stopped.update(message.stopped)
        self.queued |= message.queued
        self.next_cursor = message.next_cursor
        self.loaded_once = True
        self._show_rows()
        if message.judge:  # after this paint: the first one never waits for the full verdict
            self.call_after_refresh(self._judge, message.query, message.judge, message.generation)
        if not message.append:
            now = time.monotonic()
            if self._summary_read_at is None or now - self._summary_read_at >= SUMMARY_EVERY or self._summary_due:
                self._summary_read_at, self._summary_due = now, False
                self._load_summary()

    # ------------------------------------------------------------ drawing
    def _ordered(self) -> list[SessionSummary]:
        rows = self.rows  # the store pages in the chosen order
        if self.triage():  # triage: what stopped mid-run, what failed (a re-drive), what a worker will
            # run, then due first, then oldest open
            rows = sorted(rows, key=lambda r: (r.id not in self.stopped, r.status != SessionStatus.FAILED,
                                               r.id not in self.queued, r.id not in self.dues,
                                               self.dues.get(r.id, 0.0)))
        return self.sorted_rows(rows)

    def _columns(self) -> tuple[tuple[str, str], ...]:
        """The table's columns: OWNER only while a listed session has an owner."""
        if any(r.owners for r in self.rows):
            return (*COLUMNS[:-1], OWNER_COLUMN, COLUMNS[-1])
        return COLUMNS

    def sort_changed(self) -> None:
        table = self.query_one(SessionTable)
        for key, label in self._columns():
            if key in table.columns:
                table.set_column_label(key, self.header_label(key, label))
        self._show_rows()

    def _widths(self, rows: list[SessionSummary]) -> dict[str, int]:
        """How wide the app, user and session columns may be so that every column fits
        the table's width (:func:`fit_widths`): statuses, counts and ages are never
        cut; the user gives way first, then the app, then the session id."""
        natural = {  # plain lengths: a masked or cleaned value is never longer than this
            "app": max((len(r.app_name) for r in rows), default=3),
            "user": max((len(r.user_id) for r in rows), default=4),
            "session": max((len(r.id) for r in rows), default=7),
        }
        columns = self._columns()
        if OWNER_COLUMN in columns:
            natural["owner"] = max((len(", ".join(r.owners)) for r in rows), default=5)
        status = max((len(self._status_word(r)) for r in rows), default=6)
        table = self.query_one(SessionTable)
        overflow = len(rows) + 1 > (table.size.height or self.size.height)
        scrollbar = table.styles.scrollbar_size_vertical if overflow else 0  # 2 columns in the console's theme
        fixed = max(status, 6) + 4 + 6 + 6 + 2 * len(columns) + scrollbar  # cell paddings
        width = table.size.width or self.size.width or 80
        order = tuple(k for k in ("user", "owner", "app", "session") if k in natural)
        return fit_widths(natural, width - fixed, order=order,
                          minimum={"user": 5, "owner": 5, "app": 6, "session": 10})

    def _status_word(self, r: SessionSummary) -> str:
        stopped = self.stopped.get(r.id, (False, False))
        if r.id in self.queued and not stopped[0]:
            return "◷ QUEUED"
        return "⚠ INTERRUPTED IN DOUBT" if stopped[1] else "⚠ INTERRUPTED" if stopped[0] else f"· {r.status}"

    def _cells(self, table: SessionTable, r: SessionSummary, now: float, widths: dict[str, int]) -> list[Text | str]:
        red = self.hitl.redactor
        cells: list[Text | str] = [
            table.status_cell(r.status, self.stopped.get(r.id, (False, False)), r.id in self.queued),
            Text(str(r.open_interrupts) if r.open_interrupts else "", justify="right"),
            Text(age(r.oldest_open_at, now) if r.oldest_open_at is not None else "", justify="right"),
            literal(short(r.app_name, widths["app"], red)),
            literal(short(r.user_id, widths["user"], red)),
            literal(short(r.id, widths["session"], red)),
            Text(age(r.last_event_at or r.updated_at, now), justify="right"),
        ]
        if "owner" in widths:  # yours in bold, as the inbox shows them
            owners = literal(short(", ".join(r.owners), widths["owner"], red))
            if self.hitl.default_operator in r.owners:
                owners.stylize("b")
            cells.insert(-1, owners)
        return cells

    def _show_rows(self) -> None:
        table = self.query_one(SessionTable)
        rows = self._ordered()
        now = self.hitl.clock()
        keys = [str(k.value) for k in table.rows]
        wanted = [r.id for r in rows]
        widths = self._widths(rows)
        columns = self._columns()
        current = self.selected_id
        if tuple(str(k.value) for k in table.columns) != tuple(key for key, _ in columns):
            table.clear(columns=True)  # OWNER comes or goes: the rows are drawn again under the new header
            for key, label in columns:
                table.add_column(self.header_label(key, label), key=key)
            keys = []
        if keys == wanted or (keys == wanted[: len(keys)] and keys and widths != self._drawn_widths):
            for r in rows[: len(keys)]:
                for (col, _), value in zip(columns, self._cells(table, r, now, widths), strict=True):
                    if table.get_cell(r.id, col) != value:
                        table.update_cell(r.id, col, value)
            for r in rows[len(keys) :]:
                table.add_row(*self._cells(table, r, now, widths), key=r.id)
        elif keys == wanted[: len(keys)] and keys:
            for r in rows[len(keys) :]:
                table.add_row(*self._cells(table, r, now, widths), key=r.id)
        else:
            table.clear()
            for r in rows:
                table.add_row(*self._cells(table, r, now, widths), key=r.id)
            if current in wanted:
                table.move_cursor(row=wanted.index(current), animate=False)
        self._drawn_widths = widths
        self._render_info()
        if self._could_open != (self.selected_id is not None):
            self._could_open = not self._could_open
            self.refresh_bindings()  # "⏎ Open" applies once a row is there (and not in an empty list)

    def _render_info(self) -> None:
        q = self.query_state
        sort = "triage: due first (o: all by activity)" if self.triage() and self.dues else \
            "triage (o: all by activity)" if self.triage() else "last activity"
        if self.sort_label():
            sort = f"{self.sort_label()} (loaded rows)"
        more = " · more below ↓" if self.next_cursor else ""
        text = Text(" status: ")
        text.append(q.status or "all", "b" if q.status else "")
        filters = [f"{k}={v}" for k, v in (("app", q.app_name), ("user", q.user_id)) if v]
        if q.text:
            filters.append(f'text="{q.text}"')
        text.append("   filter: ")
        text.append(clean(" ".join(filters), one_line=True) or "-", "b" if filters else "")
        if filters or q.status:
            text.append(" (0: clear)")
        text.append(f"   sort: {sort}   {len(self.rows):,} shown{more}")
        if self._busy:
            text.append("   loading…")
        self.query_one("#sessions-info", Static).update(text)
        empty = self.query_one("#sessions-empty", Static)
        show_empty = self.loaded_once and not self.rows and not self._busy
        empty.set_class(not show_empty, "-hidden")
        table = self.query_one(SessionTable)
        if show_empty:
            keep_out_of_text(self, table)
        table.set_class(show_empty, "-hidden")
        if not show_empty and self.is_current and not self.query_one("#filter", Input).has_focus and not table.has_focus:
            self.set_focus(table)  # it lost focus while hidden (an empty result): j/k and 1-5 must reach it again
        if show_empty:
            if q.status or q.text or q.app_name or q.user_id:
                empty.update(f"No session matches {q.describe()}.\nPress 0 to clear every filter, / to change the text filter.")
            elif self.triage() and (self.summary is None or self.summary.total):
                empty.update(
                    "No session needs attention: nothing waits for an answer, nothing stopped mid-run.\n"
                    "Press o to list every session by last activity."
                )
            else:
                empty.update("This store has no sessions yet.\nRun a workflow, or create demo data with `hitl demo`.")

    # ------------------------------------------------------------ selection
    @property
    def selected_id(self) -> str | None:
        table = self.query_one(SessionTable)
        if not table.row_count or table.cursor_row < 0:
            return None
        try:
            return str(table.coordinate_to_cell_key(Coordinate(table.cursor_row, 0)).row_key.value)
        except Exception:  # noqa: BLE001 -- no row under the cursor
            return None

    def copy_row(self, key: str) -> tuple[str, str]:
        """What ``y`` copies from a row (console.widgets.nav): its session id."""
        return "session id", key

    # ------------------------------------------------------------ actions
    def can_open_selected(self) -> bool:
        return self.selected_id is not None

    def action_open_selected(self) -> None:
        sid = self.selected_id
        if sid is not None:
            self.hitl.open_session(sid)

    def action_filter(self) -> None:
        box = self.query_one("#filter", Input)
        box.remove_class("-hidden")
        box.focus()

    def action_cycle_status(self) -> None:
        i = STATUS_CYCLE.index(self.query_state.status) if self.query_state.status in STATUS_CYCLE else 0
        self.action_set_status(STATUS_CYCLE[(i + 1) % len(STATUS_CYCLE)])

    def action_set_status(self, status: str | None) -> None:
        if status is None:  # 0: every session -- no filter of any kind stays active unseen
            self.apply_query(SessionQuery())
            return
        self.apply_query(SessionQuery(status, self.query_state.text, self.query_state.app_name, self.query_state.user_id))

    def apply_query(self, query: SessionQuery) -> None:
        self.query_state = query
        box = self.query_one("#filter", Input)
        if (query.text or "") != box.value:
            with box.prevent(Input.Changed):
                box.value = query.text or ""
        box.set_class(not query.text and not box.has_focus, "-hidden")
        self.rows = []
        self.next_cursor = None
        self.query_one(SessionTable).clear()
        self.reload()
        self._render_info()
        self.refresh_bindings()

    def action_toggle_sort(self) -> None:
        """Triage order: the store pages sessions by their oldest open interrupt."""
        self.sort_oldest = not self.sort_oldest
        self.rows = []
        self.next_cursor = None
        self.query_one(SessionTable).clear()
        self.reload()
        self._render_info()

    def action_refresh(self) -> None:
        self._summary_due = True
        self.reload(limit=min(max(len(self.rows), PAGE), REFRESH_CAP))

    # ------------------------------------------------------------ filter box
    @on(Input.Changed, "#filter")
    def _filter_changed(self, event: Input.Changed) -> None:
        if self._debounce is not None:
            self._debounce.stop()
        value = event.value.strip()
        self._debounce = self.set_timer(0.25, lambda: self._set_text(value))

    def _set_text(self, value: str) -> None:
        if value != (self.query_state.text or ""):
            q = self.query_state
            self.apply_query(SessionQuery(q.status, value or None, q.app_name, q.user_id))

    @on(Input.Submitted, "#filter")
    def _filter_done(self, event: Input.Submitted) -> None:
        self._set_text(event.value.strip())
        box = self.query_one("#filter", Input)
        box.set_class(not box.value, "-hidden")
        focus_list(self, self.query_one(SessionTable))

    def on_back(self) -> bool:
        box = self.query_one("#filter", Input)
        if box.has_focus:
            if not box.value:
                box.add_class("-hidden")
            focus_list(self, self.query_one(SessionTable))
            return True
        if self.query_state.text:
            box.value = ""
            self._set_text("")
            box.add_class("-hidden")
            return True
        return False
