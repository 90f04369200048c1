"""``EventLog``: a session's event log, virtualised.

One line per event (seq, time, kind, author, node path, a short summary). The
widget is a Line-API ``ScrollView``: it keeps no widget per event and not even
every line -- it holds pages of :class:`LogLine` (small records, not events) in a
bounded LRU cache and, when a line it must draw is missing, posts
:class:`EventLog.Wanted` so its screen fetches that page in a worker. A session
with 100,000 events scrolls like one with ten.
"""

from __future__ import annotations

import sys
import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, ClassVar

from rich.style import Style
from rich.text import Text
from textual import events
from textual.binding import Binding, BindingType
from textual.geometry import Size
from textual.message import Message
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip
from textual.timer import Timer

from engine.models import Event, StoredEvent
from engine.redact import Redactor

from ..actions import bindings
from ..text import clean
from .format import id_list, short, stamp
from .nav import Navigable

KINDS = (
    "message",
    "response",
    "redrive",
    "cancel",
    "start",
    "end",
    "interrupt",
    "error",
    "output",
    "state",
    "event",
    "corrupt",
)


@dataclass(slots=True)
class LogLine:
    """What the log draws for one event (the event itself is fetched on selection)."""

    seq: int
    timestamp: float | None
    kind: str
    author: str
    path: str
    summary: str
    invocation_id: str


SUMMARY = 200
"""Characters a line's summary keeps when it is built; the drawing cuts it at the
log's width, with an ellipsis (a 200-column log shows more than an 80-column one)."""


def operator_of(e: Event) -> str | None:
    """Who wrote an operator event (answer, re-drive, cancel); None for others."""
    op = (e.custom_metadata or {}).get("operator")
    return str(op) if op else None


def operator_said(e: Event, red: Redactor) -> str:
    """`` · reason "card expired"`` -- the reason of an operator event (the
    operator is in the author column)."""
    reason = (e.custom_metadata or {}).get("reason")
    return f' · reason "{short(str(reason), SUMMARY // 2, red)}"' if reason else ""


def answered_parts(e: Any, red: Redactor, width: int = 16) -> list[str]:
    """``id="value"`` per answer of a response event, masked by ``red``, strings
    quoted (a bare ``none`` read like no answer): the log's and the audit view's."""
    return [f"{short(fr.id, 24, red)}={short(fr.response, width, red, quoted=True)}" for fr in e.function_responses]


def log_line(se: StoredEvent, red: Redactor) -> LogLine:
    """The one-line summary of a stored event, its data masked by ``red``."""
    e = se.event
    kind = e.kind
    info = e.node_info
    summary = ""
    if kind == "message":
        summary = f'"{short(e.content.text if e.content else "", SUMMARY, red)}"'
    elif kind == "response":
        parts = answered_parts(e, red)
        # the reason first: the answers can be long, and the drawing cuts at the log's edge
        said = operator_said(e, red)
        summary = (said[3:] + " · " if said else "") + "answers " + id_list(parts, 3)
    elif kind in ("redrive", "cancel"):
        summary = kind + operator_said(e, red)
    elif kind == "start":
        summary = "re-executes" if info and info.input is None and info.rerun_on_resume else ""
        if info and info.input is not None:
            summary = "input " + short(info.input, SUMMARY, red)
    elif kind == "end":
        status = info.status.value if info and info.status else ""
        summary = status
        if e.error_code:
            summary += f" {e.error_code}"
        elif e.output is not None:
            summary += " → " + short(e.output, SUMMARY, red)
    elif kind == "interrupt":
        calls = e.interrupt_calls
        summary = id_list([c.id for c in calls], 2)
        if len(calls) == 1 and calls[0].args.get("message"):
            summary += f' "{short(str(calls[0].args["message"]), SUMMARY, red)}"'
    elif kind == "error":
        summary = short(f"{e.error_code}: {e.error_message}", SUMMARY, red)
    elif kind == "output":
        summary = short(e.output, SUMMARY, red)
    elif kind == "state":
        summary = "state " + ", ".join(sorted(e.state_delta or {}))
    intern = sys.intern
    return LogLine(
        seq=se.seq,
        timestamp=e.timestamp,
        kind=intern(kind),
        author=intern(clean(operator_of(e) or e.author, one_line=True)),
        path=intern(clean(info.path, one_line=True)) if info else "",
        summary=clean(summary, one_line=True),
        invocation_id=intern(e.invocation_id),
    )


def column_widths(width: int) -> tuple[int, int]:
    """(node path, author) column widths of a log ``width`` columns wide: both grow
    with the width (``fetch_order`` is not cut to ``fetch_orde`` at 200 columns)."""
    return min(max(width // 4, 14), 48), min(max(width // 10, 10), 24)


def corrupt_line(seq: int) -> LogLine:
    return LogLine(seq, None, "corrupt", "?", "", "corrupted row: cannot be read (skipped)", "")


class EventLog(Navigable, ScrollView, can_focus=True):
    """Virtualised event log; the screen feeds it pages of :class:`LogLine`."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("up,k", "cursor(-1)", "Up", show=False),
        Binding("down,j", "cursor(1)", "Down", show=False),
        Binding("pageup", "page(-1)", "Page up", show=False),
        Binding("pagedown", "page(1)", "Page down", show=False),
        *bindings("log"),
    ]

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "eventlog--cursor",
        "eventlog--seq",
        "eventlog--time",
        "eventlog--author",
        "eventlog--path",
        "eventlog--other",
        "eventlog--placeholder",
        *(f"kind--{k}" for k in KINDS),
    }

    FETCH_DELAY: ClassVar[float] = 0.03
    """Seconds a missing page must stay on screen before it is fetched."""
    PAGE: ClassVar[int] = 200
    MAX_PAGES: ClassVar[int] = 100
    """At most PAGE * MAX_PAGES lines are cached; the rest are re-fetched on demand."""

    cursor: reactive[int] = reactive(-1, init=False)
    """Index (seq - 1) of the selected line, -1 for none."""

    class Selected(Message):
        """The cursor moved to the event at ``seq``."""

        def __init__(self, log: EventLog, seq: int) -> None:
            super().__init__()
            self.log = log
            self.seq = seq

        @property
        def control(self) -> EventLog:
            return self.log

    class Wanted(Message):
        """Lines ``start_seq .. start_seq + count - 1`` are needed and not cached."""

        def __init__(self, log: EventLog, start_seq: int, count: int) -> None:
            super().__init__()
            self.log = log
            self.start_seq = start_seq
            self.count = count

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self.total = 0
        """Number of events in the session (the last seq)."""
        self.invocation_id: str | None = None
        """Lines of other invocations are drawn dim."""
        self.follow = False
        """Keep the cursor on the newest line as lines arrive."""
        self._pages: OrderedDict[int, dict[int, LogLine]] = OrderedDict()
        self._complete: set[int] = set()
        self._requested: set[int] = set()
        self._wanted: set[int] = set()
        self._flush_timer: Timer | None = None
        self._styles: dict[str, Style] | None = None
        self._time_width = 8
        """Width of the time column: ``HH:MM:SS``, wider once a line shows its date."""

    def _now(self) -> float:
        """The app's clock (tests pin it), for "is this line from today"."""
        clock = getattr(self.app, "clock", None)
        return clock() if callable(clock) else time.time()

    # ------------------------------------------------------------ data
    def reset(self, total: int) -> None:
        self._pages.clear()
        self._complete.clear()
        self._requested.clear()
        self._wanted.clear()
        self.set_total(total)

    def set_total(self, total: int) -> None:
        self.total = total
        self.virtual_size = Size(self.size.width, total)
        if self.follow and total:
            self.action_last()
        self.refresh()

    def _page_of(self, seq: int) -> int:
        return (seq - 1) // self.PAGE

    def put_lines(self, lines: list[LogLine], *, complete_from: int | None = None, complete_to: int | None = None) -> None:
        """Cache lines; ``complete_from..complete_to`` marks the fetched seq range as known."""
        now = self._now()
        for line in lines:
            # The time column widens (for good) once a line not from today arrives:
            # decided with the data, before any drawing, so every line of a picture aligns.
            self._time_width = max(self._time_width, len(stamp(line.timestamp, now)))
            p = self._page_of(line.seq)
            page = self._pages.get(p)
            if page is None:
                page = self._pages[p] = {}
            page[line.seq] = line
            self._pages.move_to_end(p)
        if complete_from is not None and complete_to is not None:
            for p in range(self._page_of(complete_from), self._page_of(max(complete_to, complete_from)) + 1):
                self._requested.discard(p)
                first, last = p * self.PAGE + 1, (p + 1) * self.PAGE
                if complete_from <= first and complete_to >= min(last, self.total):
                    self._complete.add(p)
        while len(self._pages) > self.MAX_PAGES:
            old, _ = self._pages.popitem(last=False)
            self._complete.discard(old)
        self.refresh()

    def line(self, seq: int) -> LogLine | None:
        page = self._pages.get(self._page_of(seq))
        return page.get(seq) if page else None

    @property
    def cursor_seq(self) -> int | None:
        return self.cursor + 1 if 0 <= self.cursor < self.total else None

    def _want(self, seq: int) -> None:
        """Note a missing line; pages still on screen a moment later are fetched
        (so jumping or fast scrolling through 100,000 lines fetches only where it stops)."""
        p = self._page_of(seq)
        if p in self._requested or p in self._complete or p in self._wanted:
            return
        self._wanted.add(p)
        if self._flush_timer is None:
            self._flush_timer = self.set_timer(self.FETCH_DELAY, self._flush_wants)

    def _flush_wants(self) -> None:
        self._flush_timer = None
        top = self.scroll_offset.y
        visible = range(self._page_of(top + 1), self._page_of(top + self.size.height) + 1)
        for p in sorted(self._wanted):
            if p in visible and p not in self._requested and p not in self._complete:
                self._requested.add(p)
                self.post_message(self.Wanted(self, p * self.PAGE + 1, self.PAGE))
        self._wanted.clear()

    def request_failed(self, start_seq: int) -> None:
        self._requested.discard(self._page_of(start_seq))

    # ------------------------------------------------------------ drawing
    @property
    def style_map(self) -> dict[str, Style]:
        if self._styles is None:
            get = self.get_component_rich_style
            self._styles = {c: get(c, partial=True) for c in self.COMPONENT_CLASSES}
        return self._styles

    def notify_style_update(self) -> None:
        self._styles = None
        super().notify_style_update()

    def _text(self, line: LogLine, seq_width: int, path_width: int, author_width: int = 10) -> Text:
        s = self.style_map
        t = Text(no_wrap=True, overflow="ellipsis")
        t.append(f"{line.seq:>{seq_width}} ", s["eventlog--seq"])
        t.append(f"{stamp(line.timestamp, self._now()):>{self._time_width}} ", s["eventlog--time"])
        t.append(f"{line.kind:<9.9} ", s.get(f"kind--{line.kind}", Style()))
        author = line.author if len(line.author) <= author_width else line.author[: author_width - 1] + "…"
        t.append(f"{author:<{author_width}} ", s["eventlog--author"])
        path = line.path if len(line.path) <= path_width else "…" + line.path[-(path_width - 1) :]
        t.append(f"{path:<{path_width}} ", s["eventlog--path"])
        t.append(line.summary)
        if self.invocation_id and line.invocation_id and line.invocation_id != self.invocation_id:
            t.stylize(s["eventlog--other"])
        return t

    def render_line(self, y: int) -> Strip:
        width = self.size.width
        index = self.scroll_offset.y + y
        base = self.rich_style
        if index >= self.total or index < 0:
            return Strip.blank(width, base)
        seq = index + 1
        line = self.line(seq)
        seq_width = max(len(str(self.total)), 4)
        path_width, author_width = column_widths(width)
        if line is None:
            self._want(seq)
            text = Text(f"{seq:>{seq_width}} …", self.style_map["eventlog--placeholder"])
        else:
            text = self._text(line, seq_width, path_width, author_width)
            text.truncate(width, overflow="ellipsis")  # a summary cut at the edge says so
        pad = base
        if index == self.cursor:
            cursor = self.style_map["eventlog--cursor"]
            text.stylize(cursor)
            pad = base + cursor
        strip = Strip(list(text.render(self.app.console)))
        return strip.crop_extend(0, width, pad).apply_style(base)

    # ------------------------------------------------------------ cursor
    def watch_cursor(self, old: int, new: int) -> None:
        self.refresh()
        if new < 0:
            return
        self._keep_cursor_in_view()
        self.post_message(self.Selected(self, new + 1))

    def on_resize(self, event: events.Resize) -> None:
        # The log's height changes when the lines around it re-wrap (the info
        # line after a write, say): the cursor stays on screen whatever the
        # order of those layouts, so what is shown depends on state, not timing.
        self.virtual_size = Size(event.size.width, self.total)
        self._keep_cursor_in_view()

    def watch_show_vertical_scrollbar(self, shown: bool) -> None:
        # Textual moves the thumb only while the scrollbar is shown: lines that
        # arrive in one burst scroll the log before its scrollbar appears, which
        # would leave the thumb at the top until the next scroll.
        if shown:
            self.vertical_scrollbar.position = self.scroll_y

    def _keep_cursor_in_view(self) -> None:
        if self.cursor < 0:
            return
        top = self.scroll_offset.y
        height = self.scrollable_content_region.height
        if self.cursor < top:
            self.scroll_to(y=self.cursor, animate=False, immediate=True, force=True)
        elif height and self.cursor >= top + height:
            self.scroll_to(y=self.cursor - height + 1, animate=False, immediate=True, force=True)

    def action_cursor(self, delta: int) -> None:
        if not self.total:
            return
        self.cursor = min(max(self.cursor + delta if self.cursor >= 0 else 0, 0), self.total - 1)

    def action_page(self, direction: int) -> None:
        self.action_cursor(direction * max(self.scrollable_content_region.height - 1, 1))

    AREA = "log"

    def nav_index(self) -> int:
        return self.cursor

    def nav_count(self) -> int:
        return self.total

    def nav_goto(self, index: int) -> None:
        self.cursor = index

    def nav_text(self, index: int) -> str | None:
        """A loaded line's text (``/`` searches the lines read so far: a long log is read on demand)."""
        line = self.line(index + 1)
        if line is None:
            return None
        return f"{line.seq} {line.kind} {line.author} {line.path} {line.summary}"

    async def copy_payload(self) -> tuple[str, str] | None:
        """The event under the cursor as JSON, masked like everything on screen."""
        seq = self.cursor_seq
        session_id = getattr(self.screen, "session_id", None)
        store = getattr(self.app, "store", None)
        if seq is None or session_id is None or store is None:
            return None
        import json

        from .format import shown, to_json

        se = await store.event_at(session_id, seq)
        data = shown(json.loads(se.event.to_json()), getattr(self.app, "redactor", None))
        return (f"event {seq} as JSON", to_json(data))

    def action_first(self) -> None:
        if self.total:
            self.cursor = 0

    def action_last(self) -> None:
        if self.total:
            self.cursor = self.total - 1

    def on_click(self, event: events.Click) -> None:
        index = self.scroll_offset.y + event.y
        if 0 <= index < self.total:
            self.cursor = index
