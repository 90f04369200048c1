"""The workers screen: who runs which app's turns, and what waits for them.

A typed modal over rows read before it opens (:meth:`HitlApp.action_show_workers`):
each worker's liveness (live / stale), state, host:pid, apps with their graph
versions, heartbeat age and current turns; then the turns queued per app, with
how many live workers serve it and how many wait for an acknowledged re-drive.
Every value from the store is text, never markup. ``hitl workers`` prints the same.
"""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Static

from engine.store.workers import TurnRequest, WorkerRecord

from ..text import clean_text
from ..widgets.format import age
from ..widgets.plain import Label


def worker_badge(
    workers: list[WorkerRecord], queued: list[TurnRequest], now: float, app_name: str | None = None
) -> Text:
    """The title bar's worker count (refreshed with the live refresh): ``workers N``
    (live ones; on a session's screen those serving its app), ``no worker for APP``
    when runnable turns of an app wait and no live worker serves it. Empty while
    the store has neither a live worker nor a queued turn (a store without workers)."""
    live = [w for w in workers if w.live(now)]
    starving = sorted({r.app_name for r in queued if r.held is None and (app_name is None or r.app_name == app_name)}
                      - {a for w in live for a in w.apps})
    if starving:
        return clean_text(Text(f"no worker for {', '.join(starving)}", "bold red"))
    if app_name is not None:
        serving = sum(1 for w in live if app_name in w.apps)
        return clean_text(Text(f"workers {serving} for {app_name}", "" if serving else "dim")) if live else Text()
    return Text(f"workers {len(live)}") if live else Text()


def worker_lines(workers: list[WorkerRecord], queued: list[TurnRequest], now: float) -> Text:
    """The screen's body: one line per worker, then one per app with queued turns."""
    t = Text()
    if not workers:
        t.append("no workers recorded: answers for apps without code here wait in the queue\n", "italic")
    for w in workers:
        live = w.live(now)
        t.append(f"{'● live ' if live else '○ stale'} ", "green" if live else "dim")
        t.append(f"{w.state:<9} {w.host}:{w.pid:<8} ")
        t.append(", ".join(f"{a} ({w.versions.get(a, '?')})" for a in w.apps))
        t.append(f"  heartbeat {age(w.heartbeat_at, now)} ago  turns {len(w.current)}\n")
    per_app: dict[str, list[int]] = {}
    for r in queued:
        per_app.setdefault(r.app_name, [0, 0])[1 if r.held else 0] += 1
    if per_app:
        t.append("\nqueued turns\n", "bold")
    for app, (runnable, held) in sorted(per_app.items()):
        serving = sum(1 for w in workers if w.live(now) and app in w.apps)
        t.append(f"  {app}: {runnable} runnable, {held} waiting for an acknowledged re-drive; ")
        t.append(f"{serving} live worker(s)\n", "red" if not serving else "")
    return clean_text(t)


class WorkersScreen(ModalScreen[None]):
    """The workers and the queued turns (esc: close)."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "dismiss", "Close", show=False)]

    def __init__(self, workers: list[WorkerRecord], queued: list[TurnRequest], now: float) -> None:
        super().__init__(classes="modal")
        self.records = workers
        """The workers' rows (not ``workers``: a screen's worker manager has that name)."""
        self.queued = queued
        self.now = now

    def compose(self) -> ComposeResult:
        with Vertical(classes="modal-box"):
            yield Label("Workers (esc: close) -- hitl workers", classes="modal-title")
            yield Static(worker_lines(self.records, self.queued, self.now), id="workers")
