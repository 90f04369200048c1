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

from typing import Any, TypeVar

from rich.console import RenderableType
from rich.text import Text
from textual.widgets import DataTable as _DataTable
from textual.widgets import Label as _Label
from textual.widgets import Static as _Static

from ..text import Cleaned, clean, clean_text, literal


def _plain(content: Any) -> Any:
    if isinstance(content, str):
        return clean(content)
    if isinstance(content, Text):
        return clean_text(content)
    if hasattr(content, "__rich_console__") or hasattr(content, "__rich__"):
        return Cleaned(content)
    return content


class Static(_Static):
    """``textual.widgets.Static`` without markup; ``str`` content is cleaned."""

    def __init__(self, content: Any = "", *, markup: bool = False, **kwargs: Any) -> None:
        super().__init__(_plain(content), markup=False, **kwargs)

    def update(self, content: Any = "", *, layout: bool = True) -> None:
        super().update(_plain(content), layout=layout)


class Label(_Label):
    """``textual.widgets.Label`` without markup; ``str`` content is cleaned."""

    def __init__(self, content: Any = "", *, markup: bool = False, **kwargs: Any) -> None:
        super().__init__(_plain(content), markup=False, **kwargs)

    def update(self, content: Any = "", *, layout: bool = True) -> None:
        super().update(_plain(content), layout=layout)


def cell(value: Any) -> Any:
    """A table cell: ``str`` becomes literal ``Text``; renderables pass."""
    if isinstance(value, str):
        return literal(value, one_line=True)
    return clean_text(value) if isinstance(value, Text) else value


def cells(*values: RenderableType | str) -> list[Any]:
    return [cell(v) for v in values]


CellType = TypeVar("CellType")


class DataTable(_DataTable[CellType]):
    """``textual.widgets.DataTable`` whose ``str`` cells are literal text."""

    def add_row(self, *cells_: Any, **kwargs: Any) -> Any:
        return super().add_row(*cells(*cells_), **kwargs)

    def update_cell(self, row_key: Any, column_key: Any, value: Any, **kwargs: Any) -> None:
        super().update_cell(row_key, column_key, cell(value), **kwargs)
