"""``Drawn``: a Rich renderable laid out once per width.

Textual lays a pane's content out at least twice when it changes (its height,
then its lines), and a Rich table measures and wraps every cell each time. A
``Drawn`` keeps the lines of each width it was drawn at, so the help's tables
(the same on every ``?``) and a details pane (a bounded preview, drawn again
for every layout pass) cost one layout per width.
"""

from __future__ import annotations

from collections.abc import Callable

from rich.console import Console, ConsoleOptions, RenderableType, RenderResult
from rich.measure import Measurement
from rich.segment import Segment


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
