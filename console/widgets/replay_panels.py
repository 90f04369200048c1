"""Widgets of the Replay screen: the timeline bar, the current-event panel, the
session-state pane, the diff rendering and the replay's (key-less) event log.

Rendering only: the frame (:mod:`engine.views`) says which event is at the
cursor, what it did and what the state is; these widgets spell it. Colours come
from the component classes styled in ``app.tcss``.
"""

from __future__ import annotations

from typing import Any, ClassVar

from rich.console import Group, RenderableType
from rich.style import Style
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.widget import Widget

from engine.redact import Redactor
from engine.replay import DiffRow, Marker
from engine.views import Frame

from .drawn import Drawn
from .event_log import EventLog
from .format import date_time, short, short_id, shown_entry
from .plain import Static, cells

MARKER_ICON: dict[str, str] = {
    "invocation": "▸",
    "interrupt": "◆",
    "answer": "✉",
    "auto-complete": "✓",
    "pending": "○",
    "re-execute": "↻",
    "fresh-run": "⟳",
    "error": "!",
    "failure": "✗",
    "redrive": "⟲",
    "cancel": "⊘",
}
"""One glyph per marker kind (the marker's words are always shown too)."""

MARKER_LABEL: dict[str, str] = {
    "invocation": "invocation",
    "interrupt": "interrupt",
    "answer": "answer",
    "auto-complete": "inferred",
    "pending": "pending",
    "re-execute": "re-exec",
    "fresh-run": "fresh run",
    "error": "error",
    "failure": "failure",
    "redrive": "re-drive",
    "cancel": "cancel",
}
"""Short tag per marker kind, shown before the marker text."""

MARKER_CLASSES: set[str] = {f"marker--{k}" for k in MARKER_ICON}


def marker_table(markers: list[Marker], styles: dict[str, Style]) -> Table:
    """One row per marker: glyph and tag, then the text (wrapped under itself)."""
    table = Table.grid(padding=(0, 1))
    table.add_column(no_wrap=True, width=12)
    table.add_column(overflow="fold")
    for m in markers:
        style = styles.get(f"marker--{m.kind}", Style())
        table.add_row(*cells(Text(f"{MARKER_ICON.get(m.kind, '·')} {MARKER_LABEL.get(m.kind, m.kind)}", style), m.text))
    return table


def _value(v: Any, red: Redactor, width: int = 36) -> str:
    return "—" if v is None else short(v, width, red)


def change_table(rows: list[DiffRow], styles: dict[str, Style], *, red: Redactor, width: int = 36) -> Table:
    """``area  key  before → after`` rows (a diff, or what one event changed), values masked by ``red``."""
    table = Table.grid(padding=(0, 1))
    table.add_column(no_wrap=True, style=styles.get("replay--dim", Style()))
    table.add_column(overflow="fold")
    table.add_column(overflow="fold", style=styles.get("replay--before", Style()))
    table.add_column(no_wrap=True)
    table.add_column(overflow="fold", style=styles.get("replay--after", Style()))
    for r in rows:
        table.add_row(*cells(r.area, r.key, _value(r.before, red, width), "→", _value(r.after, red, width)))
    return table


def event_panel(frame: Frame | None, styles: dict[str, Style], *, red: Redactor) -> RenderableType:
    """The event at the cursor: what it is, its markers, and what it changed."""
    if frame is None:
        return Text("loading the history…", styles.get("replay--dim", Style()))
    if frame.step is None:
        hint = "no event applied yet: ] steps forward, } jumps to the first operator action, G to the end"
        if frame.total == 0:
            hint = "this history has no events"
        return Text(f"start of history · {hint}", styles.get("replay--dim", Style()))
    step, event = frame.step, frame.step.event
    head = Text()
    head.append(f"{event.kind}", styles.get("replay--kind", Style()))
    head.append(f"  {event.path or event.author}", styles.get("replay--path", Style()))
    head.append(
        f"   event {frame.position}/{frame.total} · seq {step.seq} · {date_time(event.timestamp)}"
        f" · invocation {short_id(event.invocation_id, 12)}",
        styles.get("replay--dim", Style()),
    )
    parts: list[RenderableType] = [head]
    markers = frame.markers
    if markers:
        parts.append(marker_table(markers, styles))
    rows = frame.effects
    if rows:
        parts.append(change_table(rows, styles, red=red))
    elif not markers:
        parts.append(Text("no state change", styles.get("replay--dim", Style())))
    return Group(*parts)


def state_table(state: dict[str, Any], changed: set[str], styles: dict[str, Style], *, red: Redactor) -> RenderableType:
    """The session state: one key per row, the keys this event set marked ●; values masked by ``red``."""
    if not state:
        return Text("(empty)", styles.get("replay--dim", Style()))
    table = Table.grid(padding=(0, 1))
    table.add_column(no_wrap=True, width=1)
    table.add_column(no_wrap=True, style=styles.get("replay--dim", Style()))
    table.add_column(overflow="fold")
    for key in sorted(state):
        mark = Text("●", styles.get("replay--after", Style())) if key in changed else Text(" ")
        table.add_row(*cells(mark, key, short(shown_entry(key, state[key], red), 200)))
    return table


class ReplayPanel(VerticalScroll):
    """Scrollable pane with one rendering; component classes carry the colours."""

    COMPONENT_CLASSES: ClassVar[set[str]] = MARKER_CLASSES | {
        "replay--dim",
        "replay--kind",
        "replay--path",
        "replay--before",
        "replay--after",
    }

    shown: RenderableType = ""
    """What the pane shows (tests read it as text)."""

    def compose(self) -> ComposeResult:
        yield Static(classes="replay-body")

    @property
    def style_map(self) -> dict[str, Style]:
        get = self.get_component_rich_style
        return {c: get(c, partial=True) for c in self.COMPONENT_CLASSES}

    def show(self, renderable: RenderableType, title: str | None = None) -> None:
        if title is not None:
            self.border_title = title
        self.shown = renderable
        # laid out once per width: Textual draws a changed pane at least twice (its
        # height, then its lines), a Rich table measuring every cell each time
        body = renderable if isinstance(renderable, str | Text) else Drawn(lambda: renderable)
        self.query_one(".replay-body", Static).update(body)


class TimelineBar(Widget):
    """One line: the whole history scaled to the width; ``│`` operator actions,
    ``m`` the mark, ``█`` the cursor."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "timeline--track",
        "timeline--action",
        "timeline--cursor",
        "timeline--mark",
    }

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.total = 0
        self.position = 0
        self.actions: list[int] = []
        self.mark: int | None = None

    def update_bar(self, total: int, position: int, actions: list[int], mark: int | None) -> None:
        self.total, self.position, self.actions, self.mark = total, position, actions, mark
        self.refresh()

    def _cell(self, position: int, width: int) -> int:
        if self.total <= 0:
            return 0
        return min(width - 1, position * (width - 1) // self.total)

    def render(self) -> RenderableType:
        width = max(self.size.width, 1)
        get = self.get_component_rich_style
        cells = ["─"] * width
        kinds = ["track"] * width
        for pos in self.actions:
            c = self._cell(pos, width)
            cells[c], kinds[c] = "│", "action"
        if self.mark is not None:
            c = self._cell(self.mark, width)
            cells[c], kinds[c] = "m", "mark"
        c = self._cell(self.position, width)
        cells[c], kinds[c] = "█", "cursor"
        text = Text(no_wrap=True)
        for ch, kind in zip(cells, kinds, strict=True):
            text.append(ch, get(f"timeline--{kind}", partial=True))
        return text


class ReplayLog(EventLog, inherit_bindings=False):
    """The event log of a replay: the same virtual log, moved by the replay.

    Only its scrolling keys are its own; ``g``/``G`` and the rest reach the
    Replay screen, whose registry actions move the cursor (and this log with it)."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("up,k", "cursor(-1)", "Up", show=False),
        Binding("down,j", "cursor(1)", "Down", show=False),
        Binding("pageup", "page(-1)", "Page up", show=False),
        Binding("pagedown", "page(1)", "Page down", show=False),
    ]
