"""What every console screen shares: registry-driven bindings and checks, the
title bar, and the one way errors reach the operator (a notification)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar, cast

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.screen import Screen
from textual.widget import Widget

from engine.status import DisplayStatus

from .. import heap
from ..actions import lookup
from ..text import clean
from ..widgets.format import STATUS_CLASSES, STATUS_ICON, status_class
from ..widgets.plain import DataTable, Label

if TYPE_CHECKING:  # console.app imports the screens; they name HitlApp in type hints only (never at run time)
    from ..app import HitlApp


class StatusTable(DataTable[Text | str]):
    """A DataTable with a status column; colours come from app.tcss component classes."""

    COMPONENT_CLASSES: ClassVar[set[str]] = DataTable.COMPONENT_CLASSES | STATUS_CLASSES

    def status_cell(self, status: str, stopped: tuple[bool, bool] = (False, False), queued: bool = False) -> Text:
        """``◆ WAITING``; ``⚠ INTERRUPTED`` when stopped mid-run, `` IN DOUBT`` after it
        when a node may have done its side effect; ``◷ QUEUED`` when a turn waits for
        a worker (``stopped``, ``queued``: from engine.liveness)."""
        word = (DisplayStatus.INTERRUPTED if stopped[0] else DisplayStatus.QUEUED if queued
                else DisplayStatus.of(status))
        t = Text(f"{STATUS_ICON.get(word, '·')} {word}", self.get_component_rich_style(status_class(word), partial=True))
        if stopped[1]:
            doubt = DisplayStatus.IN_DOUBT
            t.append(f" {doubt}", self.get_component_rich_style(doubt.css_class, partial=True))
        return t


def fit_title(title: Text, badge: Text, store: str, width: int) -> tuple[Text, Text]:
    """The title bar's two halves for ``width`` columns: what identifies the screen
    (the title: the session id...) and the READ-ONLY badge are kept whole; the
    store's path is shortened first (``…/tail/of/it.sqlite``), then dropped."""
    room = width - title.cell_len - badge.cell_len - 4  # paddings and a gap
    right = badge.copy()
    if store and room > 0:
        if len(store) > room - (2 if badge else 0):
            keep = room - (2 if badge else 0) - 1
            store = "…" + store[-keep:] if keep >= 8 else ""
        if store:
            right.append(("  " if badge else "") + store)
    if title.cell_len > width - badge.cell_len - 2:
        title = title.copy()
        title.truncate(max(width - badge.cell_len - 2, 1), overflow="ellipsis")
    return title, right


class TitleBar(Horizontal):
    """One line: where you are on the left, mode badges and the store on the right,
    fitted to the width (:func:`fit_title`)."""

    def __init__(self, text: str | Text, badge: Text, store: str, workers: Text | None = None) -> None:
        super().__init__(id="titlebar")
        self._text = text if isinstance(text, Text) else Text(clean(text, one_line=True))
        self._badge = badge
        self._store = clean(store, one_line=True)
        self._workers = workers or Text()
        """The live workers' count (:func:`console.screens.workers.worker_badge`), kept whole beside the badge."""

    def set_workers(self, text: Text) -> None:
        if text != self._workers:
            self._workers = text
            if self.is_mounted:
                self.fit()

    def compose(self) -> ComposeResult:
        yield Label(self._text, id="title")
        yield Label(self._badge, id="badges")

    def on_resize(self) -> None:
        self.fit()

    def on_mount(self) -> None:
        self.fit()

    def fit(self) -> None:
        badge = self._badge
        if self._workers:
            badge = Text().join([badge, Text("  " if badge else ""), self._workers])
        title, right = fit_title(self._text, badge, self._store, self.size.width or 80)
        self.query_one("#title", Label).update(title)
        self.query_one("#badges", Label).update(right)


def keep_out_of_text(screen: Screen[None], table: Widget) -> None:
    """The list ``table`` is about to hide (an empty result): take the focus off it
    first, or Textual hands it to the next focusable widget -- the filter box --
    and the keys the empty screen names (``0``, ``o``, ``i``) would be typed there.
    Focus sits in a text field only when the operator opened it (``/``)."""
    if table.has_focus:
        screen.set_focus(None)


def focus_list(screen: Screen[None], table: Widget) -> None:
    """Out of the filter box, back to the list; the list hidden (nothing matches):
    to no widget, so the screen's keys (``0``, ``h``, ``/``) reach the screen."""
    # set_focus, not table.focus(): that waits for a refresh, and a list hidden
    # meanwhile would hand the focus on to the filter box
    screen.set_focus(None if table.has_class("-hidden") else table)


class HitlScreen(Screen[None]):
    """Base of the console's screens. ``AREA`` names its bindings in the registry."""

    AREA: ClassVar[str] = ""
    """Registry screen name whose actions this screen binds."""
    HELP_AREAS: ClassVar[tuple[str, ...]] = ()
    """Registry screens whose keys the help screen lists here (besides ``app``)."""

    @property
    def hitl(self) -> HitlApp:
        return cast("HitlApp", self.app)

    def hold_heap(self) -> None:
        """This screen has just loaded a long history: keep it out of the garbage
        collector's full passes while the screen lives (:mod:`console.heap`)."""
        heap.hold(self)

    def _on_unmount(self) -> None:
        heap.release(self)  # Textual calls each class's handler: a screen's own on_unmount too

    def compose_title(self, text: str | Text) -> TitleBar:
        badge = Text()
        if self.hitl.read_only:
            badge.append(" READ-ONLY ", "reverse")
        return TitleBar(text, badge, self.hitl.store_label or "", self.worker_badge())

    def worker_app(self) -> str | None:
        """The app this screen is about (a session screen's, once loaded), for the title
        bar's worker count; None: every app."""
        session = getattr(self, "session", None)
        return getattr(session, "app_name", None)

    def worker_badge(self) -> Text:
        """The title bar's worker count from the app's last read of the workers (empty before one)."""
        from .workers import worker_badge

        view = self.hitl.worker_view
        badge = worker_badge(*view, app_name=self.worker_app()) if view is not None else Text()
        failing = getattr(self.hitl, "failing_channels", [])
        if failing:  # a notification channel that gave up: nobody is told that a human is needed
            from ..text import clean_text

            note = clean_text(Text(f"notify failing: {', '.join(failing)}", "bold red"))
            badge = Text().join([badge, Text("  "), note]) if badge else note
        return badge

    def show_worker_badge(self) -> None:
        """Redraw the title bar's worker count (the app read the workers again)."""
        for bar in self.query(TitleBar):
            bar.set_workers(self.worker_badge())

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        entry = lookup(self.AREA, action, parameters)
        if entry is None:
            return True
        return self.hitl.action_state(entry, self)

    def on_screen_resume(self) -> None:
        """This screen's help is laid out in the background: ``?`` is answered at once."""
        self.hitl.warm_help(self)

    def on_back(self) -> bool:
        """Handle ``esc`` locally (close a filter...); False lets the app go back."""
        return False

    def error(self, text: str) -> None:
        self.notify(text, severity="error", timeout=8)


class SortableRows:
    """Mixin for a screen around one table: a column sort from the keyboard (the
    registry's ``<area>.sort.<column>`` actions, shift+letter as in k9s) or by
    clicking a header. The screen lists its rows through :meth:`sorted_rows`;
    the same column again reverses, a third time goes back to the screen's order.
    A paged screen sorts the rows loaded so far (its info line says so)."""

    SORT_KEYS: ClassVar[dict[str, Callable[[Any], Any]]] = {}
    """Column key -> the sort value of a row (not its drawn text: ages sort by time)."""
    sort_column: str | None = None
    sort_reverse: bool = False

    def sort_key(self, column: str) -> Callable[[Any], Any] | None:
        """The sort value of a row by ``column`` (a screen whose value needs more than
        the row -- the inbox's liveness -- overrides this)."""
        return self.SORT_KEYS.get(column)

    def sorted_rows(self, rows: list[Any]) -> list[Any]:
        key = self.sort_key(self.sort_column or "")
        if key is None:
            return rows
        present = [r for r in rows if key(r) is not None]
        absent = [r for r in rows if key(r) is None]  # blanks last, whichever the direction
        return sorted(present, key=key, reverse=self.sort_reverse) + absent

    def action_sort_column(self, column: str) -> None:
        if column not in self.SORT_KEYS:
            return
        if self.sort_column != column:
            self.sort_column, self.sort_reverse = column, False
        elif not self.sort_reverse:
            self.sort_reverse = True
        else:
            self.sort_column, self.sort_reverse = None, False
        self.sort_changed()

    def sort_changed(self) -> None:
        """Redraw the rows in the new order (the screen's)."""

    def sort_label(self) -> str | None:
        """``app ▲`` for the info line; None: the screen's own order."""
        if self.sort_column is None:
            return None
        return f"{self.sort_column} {'▼' if self.sort_reverse else '▲'}"

    def header_label(self, key: str, label: str) -> str:
        """A column header with the sort arrow when it is the sorted column."""
        if key != self.sort_column:
            return label
        return f"{label} {'▼' if self.sort_reverse else '▲'}"

    def on_data_table_header_selected(self, event: DataTable.HeaderSelected) -> None:
        """A click on a column header (a named handler: ``@on`` is not seen in a mixin)."""
        event.stop()
        self.action_sort_column(str(event.column_key.value))


class PagedTableScreen(HitlScreen):
    """A screen around one keyset-paged DataTable: the next page loads when the
    cursor or the scroll nears the end, and ``enter`` opens the selected row."""

    def _load_more(self) -> None:
        raise NotImplementedError

    def action_open_selected(self) -> None:
        raise NotImplementedError

    @on(DataTable.RowHighlighted)
    def _near_end(self, event: DataTable.RowHighlighted) -> None:
        if event.cursor_row >= event.data_table.row_count - 10:
            self._load_more()

    def _scrolled(self, y: float) -> None:
        if y >= self.query_one(DataTable).max_scroll_y - 5:
            self._load_more()

    @on(DataTable.RowSelected)
    def _selected(self, event: DataTable.RowSelected) -> None:
        self.action_open_selected()
