"""A selection list whose marks read without colour: ``[x]`` selected, ``[ ]`` not.

Textual's :class:`~textual.widgets.SelectionList` draws both as ``▐X▌`` and
tells them apart by colour only; the answer screen's id list is where an
operator decides what a submit sends, so the state is in the characters.
The mark is drawn on an option's first line only (a two-line prompt's second
line is indented under it).
"""

from __future__ import annotations

from typing import TypeVar

from rich.segment import Segment
from rich.style import Style
from textual.strip import Strip
from textual.widgets import SelectionList
from textual.widgets.option_list import OptionDoesNotExist

T = TypeVar("T")

SELECTED = "[x]"
UNSELECTED = "[ ]"


class MarkedSelectionList(SelectionList[T]):
    """:class:`SelectionList` with ``[x]`` / ``[ ]`` marks."""

    def _get_left_gutter_width(self) -> int:
        return len(SELECTED) + 1

    def render_line(self, y: int) -> Strip:
        line = super(SelectionList, self).render_line(y)  # the prompt, as OptionList draws it
        _, scroll_y = self.scroll_offset
        lines = self._lines
        if not 0 <= scroll_y + y < len(lines):
            return line
        index, offset = lines[scroll_y + y]
        try:
            selection = self.get_option_at_index(index)
        except OptionDoesNotExist:
            return line
        base = next(iter(line)).style or self.rich_style
        component = "selection-list--button"
        chosen = selection.value in self._selected
        if chosen:
            component += "-selected"
        if self.highlighted == index:
            component += "-highlighted"
        style = base + Style(bold=chosen, meta={"option": index})
        if self.highlighted == index:
            style += self.get_component_rich_style(component)
        mark = (SELECTED if chosen else UNSELECTED) if offset == 0 else " " * len(SELECTED)
        return Strip([Segment(mark, style=style), Segment(" ", style=base), *line])
