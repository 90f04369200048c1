"""The console's text widgets, for which data is always text.

Every console module imports ``Static``, ``Label`` and ``DataTable`` from here,
never from ``textual.widgets`` (``tests/console/test_hostile.py`` checks it):

* :class:`Static` and :class:`Label` never parse markup, and a ``str`` they are
  given is cleaned of terminal control (:func:`console.text.clean`). The
  console's own styling is passed as a ``rich.text.Text``.
* :class:`DataTable` turns ``str`` cells into literal ``Text`` (Textual would
  parse them as markup: ``[/tmp]`` in a cell raises MarkupError).
* :func:`cells` does the same for rows of a ``rich.table.Table``.

So a string from a session can be handed to any of them as it is, and a crash
or a clickable ``[@click=...]`` cannot come from data.
"""

from __future__ import annotations

from typing import Any, ClassVar, TypeVar

from rich.console import RenderableType
from rich.text import Text
from textual.binding import BindingType
from textual.coordinate import Coordinate
from textual.widgets import DataTable as _DataTable
from textual.widgets import Label as _Label
from textual.widgets import Static as _Static
from textual.widgets.data_table import ColumnKey

from ..actions import bindings
from ..text import Cleaned, clean, clean_text, literal
from .nav import Navigable, plain_cells


def _plain(content: Any) -> Any:
    if isinstance(content, str):
        return clean(content)
    if isinstance(content, Text):
        return clean_text(content)
    if hasattr(content, "__rich_console__") or hasattr(content, "__rich__"):
        return Cleaned(content)
    return content


def _shown_key(content: Any) -> Any:
    """What decides how a ``str`` or ``Text`` renders (None for any other renderable,
    which cannot be compared: it is always redrawn)."""
    if isinstance(content, str):
        return content
    if isinstance(content, Text):
        return (content.plain, tuple(content.spans), str(content.style), content.justify, content.overflow,
                content.no_wrap, content.end, content.tab_size)
    return None


class _PlainContent(_Static):
    """Markup never parsed, ``str`` content cleaned; and an ``update`` with what is
    already shown does nothing. Textual's ``update`` asks for a reflow of the whole
    screen, and the answer editor's panes are re-rendered after every key typed,
    about half of them unchanged."""

    def __init__(self, content: Any = "", *, markup: bool = False, **kwargs: Any) -> None:
        plain = _plain(content)
        self._shown = _shown_key(plain)
        super().__init__(plain, markup=False, **kwargs)

    def update(self, content: Any = "", *, layout: bool = True) -> None:
        plain = _plain(content)
        key = _shown_key(plain)
        if key is not None and key == self._shown:
            return
        self._shown = key
        super().update(plain, layout=layout)


class Static(_PlainContent):
    """``textual.widgets.Static`` without markup; ``str`` content is cleaned."""


class Label(_PlainContent, _Label):
    """``textual.widgets.Label`` without markup; ``str`` content is cleaned."""


def cell(value: Any) -> Any:
    """A table cell: ``str`` becomes literal ``Text``; renderables pass."""
    if isinstance(value, str):
        return literal(value, one_line=True)
    return clean_text(value) if isinstance(value, Text) else value


def cells(*values: RenderableType | str) -> list[Any]:
    return [cell(v) for v in values]


CellType = TypeVar("CellType")


class DataTable(Navigable, _DataTable[CellType]):
    """``textual.widgets.DataTable`` whose ``str`` cells are literal text, with the
    console's navigation keys (:class:`~console.widgets.nav.Navigable`: ``j``/``k``,
    ``g``/``G``, ``Home``/``End`` move the cursor, ``/`` finds, ``y`` copies the row's key)."""

    AREA = "table"
    BINDINGS: ClassVar[list[BindingType]] = bindings("table")

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """``enter`` is the screen's when it binds one (``⏎ Open`` in the footer, which
        the table's own hidden "select" binding would otherwise shadow)."""
        if action == "select_cursor" and "enter" in self.screen._bindings.key_to_bindings:
            return False
        return super().check_action(action, parameters)

    def nav_index(self) -> int:
        return self.cursor_row if self.row_count else -1

    def nav_count(self) -> int:
        return self.row_count

    def nav_goto(self, index: int) -> None:
        self.move_cursor(row=index, animate=False)

    def nav_text(self, index: int) -> str | None:
        return plain_cells(list(self.get_row_at(index)))

    async def copy_payload(self) -> tuple[str, str] | None:
        """The row's key; a screen's ``copy_row(key)`` names it and picks the text
        (the sessions list: the session id; the inbox: the interrupt id)."""
        if not self.row_count or self.cursor_row < 0:
            return None
        key = self.coordinate_to_cell_key(Coordinate(self.cursor_row, 0)).row_key.value
        if key is None:
            return None
        pick = getattr(self.screen, "copy_row", None)
        what, text = pick(str(key)) if callable(pick) else ("row id", str(key))
        return what, clean(text, one_line=True)

    def add_row(self, *cells_: Any, **kwargs: Any) -> Any:
        return super().add_row(*cells(*cells_), **kwargs)

    def clear(self, columns: bool = False) -> DataTable[CellType]:
        """Textual's clear keeps each column as wide as its widest cell ever was: here a
        cleared table's columns shrink back to their labels (the new rows size them)."""
        super().clear(columns)
        for column in self.columns.values():
            column.content_width = column.label.cell_len
        return self

    def set_column_label(self, column_key: str, label: str) -> None:
        """Relabel a column (a sort arrow), literal text, widening it if needed."""
        column = self.columns.get(ColumnKey(column_key))
        if column is None or column.label.plain == label:
            return
        column.label = Text(label)
        column.content_width = max(column.content_width, column.label.cell_len)
        self._require_update_dimensions = True
        self.refresh()

    def update_cell(self, row_key: Any, column_key: Any, value: Any, **kwargs: Any) -> None:
        """Also resizes the column by default (a status that grows to ``⚠ INTERRUPTED IN
        DOUBT`` must not be cut to the width its old text had)."""
        kwargs.setdefault("update_width", True)
        super().update_cell(row_key, column_key, cell(value), **kwargs)
