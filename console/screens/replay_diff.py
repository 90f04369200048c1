"""The replay's diff between two positions, computed in a worker.

A diff across a long history folds every event up to the later position: the
:class:`DiffScreen` opens at once, folds the events in a thread worker on its
own :class:`~engine.replay.Replay` cursor (the screen's cursor is never
touched), says how far it got, and ``esc`` cancels it. The changes are shown a
page at a time (``→``/``←``): a page is as many rows as the pane has lines, so
what a key lays out is bounded by the window, however many changes there are.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from rich.console import Group
from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.worker import get_current_worker

from engine.models import Event
from engine.redact import Redactor
from engine.replay import DiffRow, Replay, diff

from ..widgets.plain import Label
from ..widgets.replay_panels import ReplayPanel, change_table

MIN_PAGE = 5
"""Rows of a page in the smallest pane."""
STEP = 1000
"""Events folded between two progress reports (and cancel checks)."""


class DiffScreen(ModalScreen[None]):
    """What changed between two positions: node statuses, outputs, new runs (run
    ids), interrupts and session state keys."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,q,d", "close", "Close", show=False),
        Binding("right,pagedown", "page(1)", "Next page", show=False),
        Binding("left,pageup", "page(-1)", "Previous page", show=False),
    ]

    def __init__(
        self, first: int, second: int, seqs: Sequence[int], events: Sequence[Event], redactor: Redactor
    ) -> None:
        super().__init__(classes="modal")
        self.first, self.second = first, second
        self._seqs, self._events = seqs, events
        self.rows: list[DiffRow] | None = None
        """The changes (None while they are computed)."""
        self.done_events = 0
        """Events folded so far (the progress shown)."""
        self.start = 0
        """The first change the page shows."""
        self.counts = ""
        """How many changes of each kind (counted once, when the diff is done)."""
        self.redactor = redactor
        """Masks the values shown (the app's Redactor)."""

    def compose(self) -> ComposeResult:
        with Vertical(classes="modal-box", id="diff-box"):
            yield Label(self._title(), classes="modal-title", id="diff-title")
            yield ReplayPanel(id="diff-body")

    def _title(self) -> str:
        head = f"Diff · after event {self.first} → after event {self.second}"
        if self.rows is None:
            return f"{head} · computing: {self.done_events:,} of {self.second:,} events folded   (esc: cancel)"
        n = len(self.rows)
        size = self.page_size()
        pages = (n + size - 1) // size
        paging = f" · page {self.start // size + 1} of {pages} (→/←)" if pages > 1 else ""
        return f"{head} · {n:,} change{'s' if n != 1 else ''}{paging}   (esc: close)"

    def on_mount(self) -> None:
        self.query_one(ReplayPanel).show(Text("computing the diff…"))
        self._compute()

    @work(thread=True, exclusive=True, group="replay-diff", exit_on_error=False)
    def _compute(self) -> None:
        worker = get_current_worker()
        cursor = Replay(list(zip(self._seqs[: self.second], self._events[: self.second], strict=True)))
        before = None
        for target in (self.first, self.second):
            while cursor.position < target:
                if worker.is_cancelled:
                    return
                cursor.seek(min(cursor.position + STEP, target))
                self.app.call_from_thread(self._progress, cursor.position)
            if before is None:
                before = cursor.projection.fork()
        assert before is not None
        rows = diff(before, cursor.projection)
        if not worker.is_cancelled:
            self.app.call_from_thread(self._done, rows)

    def _progress(self, done: int) -> None:
        self.done_events = done
        if self.is_attached:
            self.query_one("#diff-title", Label).update(self._title())

    def page_size(self) -> int:
        """Rows of a page: the lines the pane can grow to (its and its box's
        max-height on this screen) but the counts line. A long value folds onto
        more lines and the pane scrolls; a page never outgrows the window."""
        if not self.is_attached or not self.size.height:
            return MIN_PAGE
        box, body = self.query_one("#diff-box"), self.query_one(ReplayPanel)

        def capped(widget: Any, room: int) -> int:
            most = widget.styles.max_height
            return room if most is None else min(room, int(most.resolve(self.size, self.app.size)))

        room = capped(box, self.size.height) - box.styles.gutter.height
        room -= self.query_one("#diff-title").outer_size.height
        room = capped(body, room) - body.styles.gutter.height
        return max(room - 1, MIN_PAGE)

    def _done(self, rows: list[DiffRow]) -> None:
        order = {"node": 0, "interrupt": 1, "state": 2}
        self.rows = sorted(rows, key=lambda r: order.get(r.area, 3))  # stable: keeps each area's order
        self.counts = " · ".join(
            f"{n:,} {title}{'s' if n > 1 else ''}"
            for area, title in (("node", "node run"), ("interrupt", "interrupt"), ("state", "state key"))
            if (n := sum(r.area == area for r in self.rows))
        )
        if self.is_attached:
            self._draw()

    def _draw(self) -> None:
        assert self.rows is not None
        body = self.query_one(ReplayPanel)
        self.query_one("#diff-title", Label).update(self._title())
        if not self.rows:
            body.show(Text("nothing changed between these two positions"))
            return
        size = self.page_size()
        self.start -= self.start % size  # a resize changes the page size: start at a page boundary
        page = self.rows[self.start : self.start + size]
        body.show(Group(Text(self.counts, style="bold"),
                        change_table(page, body.style_map, red=self.redactor, width=60)))
        body.scroll_home(animate=False)
        body.focus()

    def action_page(self, delta: int) -> None:
        if not self.rows:
            return
        size = self.page_size()
        last = (len(self.rows) - 1) // size * size
        start = max(0, min(last, self.start - self.start % size + delta * size))
        if start != self.start:
            self.start = start
            self._draw()

    def on_resize(self) -> None:
        if self.rows:
            self.call_after_refresh(self._draw)  # once the pane has its new height

    def action_close(self) -> None:
        self.workers.cancel_group(self, "replay-diff")
        self.dismiss(None)
