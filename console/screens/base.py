"""What every console screen shares: registry-driven bindings and checks, the
title bar, and the one way errors reach the operator (a notification)."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar, cast

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.screen import Screen

from engine.status import DisplayStatus

from ..actions import lookup
from ..text import clean
from ..widgets.format import STATUS_CLASSES, STATUS_ICON, status_class
from ..widgets.plain import DataTable, Label

if TYPE_CHECKING:
    from ..app import HitlApp


class StatusTable(DataTable[Text | str]):
    """A DataTable with a status column; colours come from app.tcss component classes."""

    COMPONENT_CLASSES: ClassVar[set[str]] = DataTable.COMPONENT_CLASSES | STATUS_CLASSES

    def status_cell(self, status: str, stopped: tuple[bool, bool] = (False, False)) -> Text:
        """``◆ WAITING``; ``⚠ INTERRUPTED`` when stopped mid-run, `` IN DOUBT`` after it
        when a node may have done its side effect (``stopped``: from engine.liveness)."""
        word = DisplayStatus.INTERRUPTED if stopped[0] else DisplayStatus.of(status)
        t = Text(f"{STATUS_ICON.get(word, '·')} {word}", self.get_component_rich_style(status_class(word), partial=True))
        if stopped[1]:
            doubt = DisplayStatus.IN_DOUBT
            t.append(f" {doubt}", self.get_component_rich_style(doubt.css_class, partial=True))
        return t


class TitleBar(Horizontal):
    """One line: where you are on the left, mode badges on the right."""

    def __init__(self, text: str | Text, badges: str | Text = "") -> None:
        super().__init__(id="titlebar")
        self._text = text
        self._badges = badges

    def compose(self) -> ComposeResult:
        yield Label(self._text, id="title")
        yield Label(self._badges, id="badges")


class HitlScreen(Screen[None]):
    """Base of the console's screens. ``AREA`` names its bindings in the registry."""

    AREA: ClassVar[str] = ""
    """Registry screen name whose actions this screen binds."""
    HELP_AREAS: ClassVar[tuple[str, ...]] = ()
    """Registry screens whose keys the help screen lists here (besides ``app``)."""

    @property
    def hitl(self) -> HitlApp:
        return cast("HitlApp", self.app)

    def compose_title(self, text: str | Text) -> TitleBar:
        badges = Text()
        if self.hitl.read_only:
            badges.append(" READ-ONLY ", "reverse")
        if self.hitl.store_label:
            badges.append(("  " if badges else "") + clean(self.hitl.store_label))
        return TitleBar(text, badges)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        entry = lookup(self.AREA, action, parameters)
        if entry is None:
            return True
        return self.hitl.action_state(entry, self)

    def on_back(self) -> bool:
        """Handle ``esc`` locally (close a filter...); False lets the app go back."""
        return False

    def error(self, text: str) -> None:
        self.notify(text, severity="error", timeout=8)


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
