"""The audit view (``:audit``): operator writes, newest first -- the console's
``hitl audit``. The same store read (``SessionStore.audit_log``) with the same
filters (``operator=``, ``session=``, ``action=``, ``since=``, ``until=``; times as
``hitl audit --since`` takes them: ``2h``, ``2026-01-31``, epoch seconds), the
same "what" column (:func:`engine.views.audit_what`). ``enter`` opens the
session at the invocation written to; pages load as the cursor nears the end.
A narrow window shows TIME, ACTION and WHAT (what was answered) and then the
other columns while they fit (:data:`SHOWN_BY_WIDTH`), as the inbox does: the
table never scrolls sideways to show what was written."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar, get_args

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.coordinate import Coordinate

from engine.redact import learn_written
from engine.store.base import AuditAction, AuditRecord

from ..actions import bindings
from ..messages import AuditLoaded, StoreFailed
from ..text import audit_what
from ..times import date_time, zone_name
from ..widgets.event_log import answered_parts
from ..widgets.footer import FittedFooter
from ..widgets.format import choose_columns, fit_widths, id_list, short, shown, to_json
from ..widgets.plain import DataTable, Static
from .base import PagedTableScreen, SortableRows
from .loaders import one_line

PAGE = 100
AUDIT_ACTIONS: tuple[str, ...] = get_args(AuditAction)

COLUMNS = (
    ("time", "TIME"),
    ("action", "ACTION"),
    ("operator", "OPERATOR"),
    ("session", "SESSION"),
    ("invocation", "INVOCATION"),
    ("what", "WHAT"),
    ("reason", "REASON"),
)

SHOWN_BY_WIDTH = ("session", "operator", "reason", "invocation")
"""Beside TIME, ACTION and WHAT (always shown), the columns a narrow audit view
shows, most wanted first, each while it fits at its :data:`READABLE` width."""
READABLE = {"what": 30, "session": 20, "operator": 12, "reason": 20, "invocation": 14}
"""The width a column needs to be worth showing (less when its values are shorter)."""
LONGEST = {"operator": 24, "session": 40, "invocation": 14, "what": 60, "reason": 60}
"""The most of a value a column shows when there is room (the rest is cut with ``…``)."""
MINIMUM = {"what": 16, "session": 9, "operator": 5, "reason": 6, "invocation": 8}


class AuditFilterError(ValueError):
    """A ``:audit`` filter the operator must correct (the message says how)."""


@dataclass(frozen=True)
class AuditQuery:
    """The filters of the audit view (``hitl audit``'s options)."""

    operator: str | None = None
    session_id: str | None = None
    action: str | None = None
    since: float | None = None
    until: float | None = None
    since_text: str | None = None
    until_text: str | None = None

    @classmethod
    def parse(cls, options: dict[str, str], now: float | None = None) -> AuditQuery:
        """From ``:audit`` options; AuditFilterError names what is wrong."""
        import click

        from ..cli.options import parse_when

        known = {"operator", "session", "action", "since", "until"}
        unknown = sorted(set(options) - known)
        if unknown:
            raise AuditFilterError(f"unknown :audit filter {unknown[0]}= (use {', '.join(sorted(known))})")
        action = options.get("action") or None
        if action is not None and action not in AUDIT_ACTIONS:
            raise AuditFilterError(f"unknown action {action!r} (one of: {', '.join(AUDIT_ACTIONS)})")
        times: dict[str, float | None] = {}
        for name in ("since", "until"):
            text = options.get(name) or None
            try:
                times[name] = None if text is None else parse_when(text, now)
            except click.BadParameter as e:
                raise AuditFilterError(f"{name}={e.message}") from None
        return cls(
            operator=options.get("operator") or None,
            session_id=options.get("session") or None,
            action=action,
            since=times["since"],
            until=times["until"],
            since_text=options.get("since") or None,
            until_text=options.get("until") or None,
        )

    def describe(self) -> str:
        parts = [
            f"{k}={v}"
            for k, v in (
                ("operator", self.operator),
                ("session", self.session_id),
                ("action", self.action),
                ("since", self.since_text),
                ("until", self.until_text),
            )
            if v
        ]
        return " ".join(parts) or "-"


def _label(key: str, label: str) -> str:
    """A column's header: TIME names its zone (``TIME (UTC)``), as the event logs
    name theirs -- the info line has no room for it at 80 columns."""
    return f"{label} ({zone_name()})" if key == "time" else label


def _key(r: AuditRecord) -> str:
    return f"{r.at!r}\x1f{r.session_id}\x1f{r.seq}\x1f{r.action}"


class AuditScreen(SortableRows, PagedTableScreen):
    AREA = "audit"
    HELP_AREAS = ("audit",)
    BINDINGS: ClassVar[list[BindingType]] = bindings("audit")
    SORT_KEYS: ClassVar[dict[str, Callable[[Any], Any]]] = {
        "time": lambda r: r.at,  # ▲: oldest first (the view's own order is newest first)
        "action": lambda r: r.action,
        "operator": lambda r: None if r.operator is None else r.operator.lower(),
        "session": lambda r: r.session_id.lower(),
        "invocation": lambda r: r.invocation_id,
        "what": lambda r: audit_what(r.action, r.details).lower(),  # the ids (the answered values are not all loaded)
        "reason": lambda r: None if not r.reason else r.reason.lower(),
    }
    """Column sort (shift+letter, or a header click) of the rows loaded so far."""

    def __init__(self, query: AuditQuery | None = None) -> None:
        super().__init__(id="audit-screen")
        self.query_state = query or AuditQuery()
        self.rows: list[AuditRecord] = []
        self.next_cursor: str | None = None
        self._busy = False
        self._busy_more = False
        self.loaded_once = False
        self._generation = 0
        self.answered: dict[str, str] = {}
        """Per answer record (its key): what was answered, ``id="value"``, masked."""
        self.shown: tuple[str, ...] = tuple(k for k, _ in COLUMNS)
        """The columns shown (chosen by width: :meth:`_widths`)."""
        self.columns_set: tuple[str, ...] = ()

    def compose(self) -> ComposeResult:
        yield self.compose_title("hitl ▸ Audit")
        yield Static("", id="audit-info", classes="infoline")
        yield DataTable(id="audit-table", cursor_type="row", zebra_stripes=True)
        yield Static("", id="audit-empty", classes="empty -hidden")
        yield FittedFooter()

    def on_mount(self) -> None:
        table = self.query_one("#audit-table", DataTable)
        self._set_columns(self.shown)
        table.focus()
        self.watch(table, "scroll_y", self._scrolled, init=False)
        self.reload()

    def set_query(self, query: AuditQuery) -> None:
        self.query_state = query
        self.rows, self.next_cursor = [], None
        self.query_one("#audit-table", DataTable).clear()
        self.reload()

    # ------------------------------------------------------------ loading
    def reload(self) -> None:
        self._generation += 1
        self._busy, self._busy_more = True, False
        self._render_info()
        self._load(self.query_state, None, False, self._generation)

    def _load_more(self) -> None:
        if self._busy or self._busy_more or not self.next_cursor:
            return
        self._busy_more = True
        self._load(self.query_state, self.next_cursor, True, self._generation)

    @work(group="audit-load", exit_on_error=False)
    async def _load(self, query: AuditQuery, cursor: str | None, append: bool, generation: int) -> None:
        try:
            page = await self.hitl.store.audit_log(
                operator=query.operator,
                session_id=query.session_id,
                action=query.action,
                since=query.since,
                until=query.until,
                limit=PAGE,
                cursor=cursor,
            )
            await learn_written(self.hitl.redactor, self.hitl.store, page.items)  # a reason may repeat an answer
            await self._read_answers(page.items)
        except Exception as e:  # noqa: BLE001 -- shown as a one-line notification
            self.post_message(StoreFailed(one_line(e)))
            return
        if generation == self._generation:
            self.post_message(AuditLoaded(query, list(page.items), page.next_cursor, append))

    async def _read_answers(self, records: list[AuditRecord]) -> None:
        """What each answer record answered: its response event, read in this worker
        (one event per record of the page); an unreadable event leaves the ids alone."""
        for r in records:
            key = _key(r)
            if r.action != "answer" or r.seq is None or key in self.answered:
                continue
            try:
                se = await self.hitl.store.event_at(r.session_id, r.seq)
            except Exception:  # noqa: BLE001 -- a corrupt or missing event: the row still says which ids
                continue
            parts = answered_parts(se.event, self.hitl.redactor, 24)
            if parts:
                self.answered[key] = id_list(parts, 4)

    def on_store_failed(self, message: StoreFailed) -> None:
        self._busy = self._busy_more = False
        self.error(message.text)
        self._render_info()

    def on_audit_loaded(self, message: AuditLoaded) -> None:
        if message.query != self.query_state:
            return
        if message.append:
            self._busy_more = False
            self.rows += message.rows
        else:
            self._busy = False
            self.rows = list(message.rows)
        self.next_cursor = message.next_cursor
        self.loaded_once = True
        self._show_rows()

    # ------------------------------------------------------------ drawing
    def _texts(self, r: AuditRecord) -> dict[str, str]:
        """Each column's value of ``r``, masked and whole (cut to its width by :meth:`_cells`)."""
        red = self.hitl.redactor
        return {
            "time": date_time(r.at),
            "action": r.action,
            "operator": red.text(r.operator or "-"),
            "session": red.text(r.session_id),
            "invocation": red.text(r.invocation_id or "-"),
            "what": red.text(self._what(r)),
            "reason": red.text(r.reason or "-"),
        }

    def _cells(self, r: AuditRecord, widths: dict[str, int]) -> list[Text | str]:
        texts = self._texts(r)
        return [texts[k] if k in ("time", "action") else short(texts[k], widths[k]) for k in self.shown]

    def _widths(self, rows: list[AuditRecord]) -> dict[str, int]:
        """The columns shown and their widths, fitted to the table's width: TIME and
        ACTION are never cut, WHAT always shows; the others are chosen by
        :data:`SHOWN_BY_WIDTH` while each fits at a readable width, then
        :func:`fit_widths` sizes the chosen ones (REASON gives way first)."""
        texts = [self._texts(r) for r in rows]
        header = {k: self.header_label(k, _label(k, label)) for k, label in COLUMNS}
        longest = {k: max((len(t[k]) for t in texts), default=0) for k in header}
        natural = {k: max(min(longest[k], most), len(header[k])) for k, most in LONGEST.items()}
        table = self.query_one("#audit-table", DataTable)
        overflow = len(rows) + 1 > (table.size.height or self.size.height)
        scrollbar = table.styles.scrollbar_size_vertical if overflow else 0
        fixed = sum(max(longest[k], len(header[k])) + 2 for k in ("time", "action")) + scrollbar
        width = table.size.width or self.size.width or 80
        chosen = choose_columns(natural, width - fixed, first=("what",), then=SHOWN_BY_WIDTH, readable=READABLE)
        self.shown = tuple(k for k, _ in COLUMNS if k in ("time", "action", *chosen))
        room = width - fixed - 2 * len(chosen)
        return fit_widths({k: natural[k] for k in chosen}, room,
                          order=tuple(k for k in ("reason", "session", "operator", "invocation", "what") if k in chosen),
                          minimum={k: min(MINIMUM[k], natural[k]) for k in chosen})

    def _set_columns(self, keys: tuple[str, ...]) -> None:
        """Show the columns ``keys`` (in :data:`COLUMNS` order); their rows are re-added."""
        table = self.query_one("#audit-table", DataTable)
        table.clear(columns=True)
        for key, label in COLUMNS:
            if key in keys:
                table.add_column(self.header_label(key, _label(key, label)), key=key)
        self.columns_set = keys

    def on_resize(self) -> None:
        if self.rows:
            self._show_rows()

    def _what(self, r: AuditRecord) -> str:
        answered = self.answered.get(_key(r))
        return f"answered {answered}" if answered else audit_what(r.action, r.details)

    def _show_rows(self) -> None:
        table = self.query_one("#audit-table", DataTable)
        current = self.selected
        rows = self.sorted_rows(self.rows)
        widths = self._widths(rows)
        if self.shown != self.columns_set:
            self._set_columns(self.shown)
        table.clear()
        for r in rows:
            table.add_row(*self._cells(r, widths), key=_key(r))
        if current is not None and current in rows:
            table.move_cursor(row=rows.index(current), animate=False)
        empty = self.loaded_once and not self.rows
        box = self.query_one("#audit-empty", Static)
        box.set_class(not empty, "-hidden")
        table.set_class(empty, "-hidden")
        if empty:
            box.update(f"No operator writes match {self.query_state.describe()}.")
        self._render_info()
        self.refresh_bindings()

    def _render_info(self) -> None:
        more = " · more below ↓" if self.next_cursor else ""
        busy = "   loading…" if self._busy else ""
        order = f"sorted by {self.sort_label()} (loaded rows)" if self.sort_label() else "newest first"
        text = Text(f" operator writes, {order} · filter: ")
        text.append(self.query_state.describe(), "b")
        text.append(f" · {len(self.rows):,} shown{more}{busy}")
        self.query_one("#audit-info", Static).update(text)

    def sort_changed(self) -> None:
        table = self.query_one("#audit-table", DataTable)
        for key, label in COLUMNS:
            if key in self.columns_set:
                table.set_column_label(key, self.header_label(key, _label(key, label)))
        self._show_rows()

    # ------------------------------------------------------------ selection
    @property
    def selected(self) -> AuditRecord | None:
        table = self.query_one("#audit-table", DataTable)
        if not table.row_count or table.cursor_row < 0 or table.cursor_row >= len(self.rows):
            return None
        key = str(table.coordinate_to_cell_key(Coordinate(table.cursor_row, 0)).row_key.value)
        return next((r for r in self.rows if _key(r) == key), None)

    def copy_row(self, key: str) -> tuple[str, str]:
        """What ``y`` copies from a row (console.widgets.nav): the record as JSON, like ``hitl audit --json``."""
        rec = next((r for r in self.rows if _key(r) == key), None)
        if rec is None:
            return "row id", key
        return "audit record as JSON", to_json(shown(rec.model_dump(), self.hitl.redactor))

    # ------------------------------------------------------------ actions
    def can_open_selected(self) -> bool:
        return self.selected is not None

    def action_open_selected(self) -> None:
        rec = self.selected
        if rec is not None:
            self.hitl.open_session(rec.session_id, invocation_id=rec.invocation_id)

    def action_refresh(self) -> None:
        self.reload()
