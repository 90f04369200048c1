"""``Drawn``: a Rich renderable laid out once per width.

Textual lays a pane's content out at least twice when it changes (its height,
then its lines), and a Rich table measures and wraps every cell each time. A
``Drawn`` keeps the lines of each width it was drawn at, so the help's tables
(the same on every ``?``) and a details pane (a bounded preview, drawn again
for every layout pass) cost one layout per width.

``DrawnLines`` shows a ``Drawn`` a line at a time: a ``Static`` turns every
line of its content into a strip whenever it is painted, where the screen
shows 30 of the help's 300; this widget's height is the number of lines and
only the lines on screen are made into strips.
"""

from __future__ import annotations

from collections.abc import Callable

from rich.console import Console, ConsoleOptions, RenderableType, RenderResult
from rich.measure import Measurement
from rich.segment import Segment
from textual.geometry import Size
from textual.strip import Strip
from textual.widget import Widget

from ..text import clean


class Drawn:
    """A renderable laid out once per width: later renders yield the same lines.
    A Rich table measures and wraps every cell each time it is drawn, and a
    screen is drawn several times when it is pushed (layout, then paint)."""

    def __init__(self, build: Callable[[], RenderableType]) -> None:
        self._build = build
        self._renderable: RenderableType | None = None
        self.lines: dict[tuple[int, int], list[list[Segment]]] = {}
        """(max width, min width) -> the rendered lines."""
        self._measures: dict[tuple[int, int], Measurement] = {}

    @property
    def renderable(self) -> RenderableType:
        if self._renderable is None:
            self._renderable = self._build()
        return self._renderable

    def draw(self, console: Console, options: ConsoleOptions) -> list[list[Segment]]:
        """The lines at ``options``' width, laid out now unless they were before
        (safe in a thread worker: a Console renders under its own lock)."""
        key = (options.max_width, options.min_width)
        lines = self.lines.get(key)
        if lines is None:
            lines = self.lines[key] = console.render_lines(self.renderable, options.update(height=None), pad=False)
        return lines

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        lines = self.draw(console, options)
        newline = Segment.line()
        for line in lines:
            yield from line
            yield newline

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        key = (options.max_width, options.min_width)
        if key not in self._measures:
            self._measures[key] = Measurement.get(console, options, self.renderable)
        return self._measures[key]


class DrawnLines(Widget):
    """A :class:`Drawn` as a widget that makes strips of the visible lines only
    (what a ``Static`` of it shows, painted the same: the widget's style under
    each segment's own, terminal control cleaned from the text)."""

    DEFAULT_CSS = """
    DrawnLines { height: auto; }
    """

    def __init__(self, drawn: Drawn, *, id: str | None = None, classes: str | None = None) -> None:  # noqa: A002
        super().__init__(id=id, classes=classes)
        self.drawn = drawn

    def show(self, drawn: Drawn) -> None:
        """Show ``drawn`` instead (its height may differ: the layout is redone)."""
        if drawn is not self.drawn:
            self.drawn = drawn
            self.refresh(layout=True)

    def lines_at(self, width: int) -> list[list[Segment]]:
        """The lines at ``width`` (laid out now unless they were, e.g. in a worker)."""
        return self.drawn.draw(self.app.console, self.app.console_options.update(width=width, highlight=False))

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        return len(self.lines_at(width))

    def render_line(self, y: int) -> Strip:
        width = self.content_size.width
        lines = self.lines_at(width)
        base = self.visual_style.rich_style
        if y >= len(lines):
            return Strip.blank(width, base)
        add = base.__add__ if base else None
        segments = [
            Segment(text if control else clean(text), add(style) if add else style)
            for text, style, control in lines[y]
        ]
        strip = Strip(segments)
        return strip.crop(0, width) if strip.cell_length > width else strip
