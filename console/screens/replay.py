"""Replay: step through a session's history, read-only.

A cursor over the event log (:class:`engine.replay.Replay`); at every position
the node tree, the node details and the session state show the projection after
that event -- the same widgets as the session screen, fed with the replay's
projection -- and a panel says what the event is, its markers (interrupt raised,
answer with operator and reason, inferred auto-completion, re-execution with
the same run id, fresh loop run, failure, re-drive...) and what it changed.

Keys (all from the registry, ``replay.*``): ``]``/``[`` step, ``}``/``{`` next or
previous operator action, ``g``/``G`` start/end, ``:at N``, ``p`` play/pause,
``+``/``-`` speed, ``m`` mark, ``d`` diff between the mark and the cursor.

Read-only by construction: the screen binds only ``replay.*`` and app-wide
actions, none of which writes, and it reads the history once (from the store in
a worker, or from an exported ``.jsonl`` file without any store). The log is the
virtual :class:`~console.widgets.event_log.EventLog`; its pages are cut from the
history held in memory, so a 100,000-event session scrolls like a short one.
"""

from __future__ import annotations

import asyncio
import bisect
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.containers import Horizontal, Vertical
from textual.timer import Timer
from textual.widgets import Input, Tree

from engine.errors import SessionNotFoundError
from engine.models import Session, StoredEvent
from engine.replay import Replay
from engine.store.base import SessionStore
from engine.views import Frame, change_paths, goto

from ..actions import bindings
from ..messages import HistoryFailed, HistoryProgress, HistoryRead
from ..times import zone_label
from ..widgets.details import Details, invocation_details, node_details
from ..widgets.event_log import EventLog, corrupt_line, log_line
from ..widgets.fit_line import FitLine
from ..widgets.footer import FittedFooter
from ..widgets.format import short
from ..widgets.node_tree import NodeTree
from ..widgets.replay_panels import ReplayLog, ReplayPanel, TimelineBar, event_panel, state_table
from .base import HitlScreen
from .loaders import CHUNK, one_line, read_events
from .replay_diff import DiffScreen

SPEEDS: tuple[int, ...] = (1, 2, 4, 8, 16, 32, 64, 128)
"""Play speeds, events per second (``+``/``-`` move along it)."""
DEFAULT_SPEED = 4
"""Index into SPEEDS: 16 events per second (4 made a 500-event history a two-minute wait)."""
MAX_TICKS = 16.0
"""Redraws per second while playing; faster speeds advance several events a tick."""


@dataclass(frozen=True)
class ReplaySource:
    """What to replay: a session of the store, or an exported ``.jsonl`` file."""

    session_id: str | None = None
    file: Path | None = None
    at: int | None = None
    """Start at this position, i.e. after this many events (None: at the end, the session as it is now)."""
    at_seq: int | None = None
    """Start at the event with this store seq (the session screen's log cursor)."""

    def __post_init__(self) -> None:
        if (self.session_id is None) == (self.file is None):
            raise ValueError("replay a session id or a file, one of them")

    @property
    def label(self) -> str:
        return self.session_id or str(self.file)


async def read_history(
    store: SessionStore, session_id: str, progress: Callable[[int, int], object] | None = None
) -> tuple[Session, list[StoredEvent], list[int]]:
    """Every readable event of a session, in chunks; corrupt rows are reported, not fatal."""
    session = await store.get_session(session_id)
    events: list[StoredEvent] = []
    corrupt: list[int] = []
    after = 0
    while True:
        chunk, bad = await read_events(store, session_id, after_seq=after, limit=CHUNK, last_seq=session.last_seq)
        corrupt += bad
        if not chunk:
            break
        events += chunk
        after = chunk[-1].seq
        if progress is not None:
            progress(after, session.last_seq)
        await asyncio.sleep(0)
    return session, events, sorted(set(corrupt))


def start_position(source: ReplaySource, replay: Replay) -> int:
    """Where a replay opens: ``at``, the event with seq ``at_seq``, else the end."""
    if source.at_seq is not None:
        return bisect.bisect_right(replay.seqs, source.at_seq)
    return len(replay) if source.at is None else max(0, min(source.at, len(replay)))


def prepare(replay: Replay, position: int) -> None:
    """Fold the whole history once (in a thread), leaving a checkpoint every
    ``checkpoint_every`` events, then stand at ``position``: a jump (``G``,
    ``:at``, ``}``) then applies at most that many events on the UI's thread,
    never the distance to the end of a long history."""
    replay.seek(len(replay))
    replay.seek(position)


def read_file(path: Path) -> tuple[Session, list[StoredEvent]]:
    """An exported session (``hitl export``), validated (blocking: run it in a thread)."""
    from engine.store.jsonl import parse_export

    with path.open("rb") as fh:
        parsed = parse_export(fh)
    sid = parsed.session.id
    return parsed.session, [StoredEvent(seq=n, session_id=sid, event=e) for n, e in enumerate(parsed.events, 1)]


class ReplayScreen(HitlScreen):
    AREA = "replay"
    HELP_AREAS = ("replay",)
    BINDINGS: ClassVar[list[BindingType]] = bindings("replay")

    def __init__(self, source: ReplaySource) -> None:
        super().__init__(classes="replay-screen")
        self.source = source
        self.session: Session | None = None
        self.stored: list[StoredEvent] = []
        """The history, in log order (the log's pages are cut from it)."""
        self.replay: Replay | None = None
        self.frame: Frame | None = None
        """What is shown: the position, its event and the state around it."""
        self.corrupt: list[int] = []
        self.mark: int | None = None
        """Position marked with ``m`` (one end of ``d``)."""
        self.speed = DEFAULT_SPEED
        """Index into SPEEDS."""
        self.playing = False
        self._timer: Timer | None = None
        self._log_echo: set[int] = set()
        """Log cursor moves this screen made itself (their Selected messages are echoes)."""
        self._binding_state: tuple[bool, ...] = ()

    # ------------------------------------------------------------ layout
    def compose(self) -> ComposeResult:
        yield self.compose_title(f"hitl ▸ Replay {short(self.source.label, 80, self.hitl.redactor)}")
        yield FitLine("loading…", id="replay-info", classes="infoline")
        yield TimelineBar(id="timeline")
        yield ReplayPanel(id="replay-event")
        with Horizontal(id="replay-top"):
            yield NodeTree(id="tree", redactor=self.hitl.redactor)
            with Vertical(id="replay-side"):
                yield Details(id="details")
                yield ReplayPanel(id="replay-state")
        yield ReplayLog(id="log")
        yield FittedFooter()

    def on_mount(self) -> None:
        self.run_tree.border_title = "Nodes"
        self.query_one("#details", Details).border_title = "Details"
        self.query_one("#replay-state", ReplayPanel).border_title = "Session state"
        self.query_one("#replay-event", ReplayPanel).border_title = "Event"
        self.log_widget.border_title = f"Events · times: {zone_label()}"  # the zone, said once
        self.run_tree.focus()
        self._load()

    @property
    def run_tree(self) -> NodeTree:
        return self.query_one(NodeTree)

    @property
    def log_widget(self) -> EventLog:
        return self.query_one(ReplayLog)

    # ------------------------------------------------------------ loading
    @work(exclusive=True, group="replay-load", exit_on_error=False)
    async def _load(self) -> None:
        src = self.source
        try:
            if src.file is not None:
                session, events = await asyncio.to_thread(read_file, src.file)
                corrupt: list[int] = []
            else:
                assert src.session_id is not None
                session, events, corrupt = await read_history(
                    self.hitl.store, src.session_id, lambda done, total: self.post_message(HistoryProgress(done, total))
                )
            replay = Replay(events)
            position = start_position(src, replay)
            await asyncio.to_thread(prepare, replay, position)
        except SessionNotFoundError as e:
            self.post_message(HistoryFailed(one_line(e)))
            return
        except Exception as e:  # noqa: BLE001 -- one line to the operator, never a traceback
            self.post_message(HistoryFailed(one_line(e)))
            return
        self.post_message(HistoryRead(session, events, corrupt, replay, position))

    def on_history_progress(self, message: HistoryProgress) -> None:
        if self.replay is None:
            self.query_one("#replay-info", FitLine).show(
                [f"reading {self.source.label}: {message.done:,} of {message.total:,} events…"]
            )

    def on_history_failed(self, message: HistoryFailed) -> None:
        self.error(f"Cannot replay {self.source.label}: {message.text}")
        self.query_one("#replay-info", FitLine).show([f"cannot replay {self.source.label}: {message.text}"])
        self.query_one("#replay-event", ReplayPanel).show(Text(message.text), "Error")

    def on_history_read(self, message: HistoryRead) -> None:
        self.session = message.session
        self.stored = message.events
        self.corrupt = message.corrupt
        self.replay = message.replay
        self.hold_heap()  # the history and its checkpoints: out of the collector's full passes
        log = self.log_widget
        log.reset(max([0, *(s.seq for s in message.events[-1:]), *message.corrupt]))
        self.seek(message.position)

    # ------------------------------------------------------------ log pages
    @on(EventLog.Wanted)
    def _wanted(self, message: EventLog.Wanted) -> None:
        """Cut the wanted page from the history in memory (no store read)."""
        message.stop()
        start, end = message.start_seq, message.start_seq + message.count - 1
        seqs = self.replay.seqs if self.replay else []
        lo, hi = bisect.bisect_left(seqs, start), bisect.bisect_right(seqs, end)
        lines = [log_line(se, self.hitl.redactor) for se in self.stored[lo:hi]]
        lines += [corrupt_line(s) for s in self.corrupt if start <= s <= end]
        self.log_widget.put_lines(lines, complete_from=start, complete_to=end)

    @on(EventLog.Selected)
    def _log_selected(self, message: EventLog.Selected) -> None:
        """The operator moved the log cursor: move the replay there."""
        message.stop()
        if message.seq in self._log_echo:
            self._log_echo.discard(message.seq)
            return
        if self.replay is None:
            return
        pos = bisect.bisect_right(self.replay.seqs, message.seq)
        if pos != self.position:
            self.seek(pos, from_log=True)

    # ------------------------------------------------------------ moving
    @property
    def position(self) -> int:
        return self.frame.position if self.frame else 0

    @property
    def total(self) -> int:
        return len(self.replay) if self.replay else 0

    def seek(self, position: int, *, from_log: bool = False) -> None:
        """Move the cursor to ``position`` and redraw what changed."""
        if self.replay is None:
            return
        old = self.frame
        frame = goto(self.replay, position)
        self.frame = frame
        single_step = (
            old is not None
            and frame.position == old.position + 1
            and self.run_tree.proj is frame.projection
            and self.run_tree.invocation_id == frame.invocation_id
        )
        self._draw_tree(frame, single_step)
        self._draw_event(frame)
        self._draw_state(frame)
        self._show_details()
        if not from_log:
            self._move_log(frame)
        self._draw_info()
        self._refresh_bindings_if_changed()

    def _move_log(self, frame: Frame) -> None:
        log = self.log_widget
        if log.invocation_id != frame.invocation_id and frame.invocation_id is not None:
            log.invocation_id = frame.invocation_id  # other invocations' lines are drawn dim
            log.refresh()
        if frame.step is None:
            if log.cursor != -1:
                log.cursor = -1
            log.scroll_to(y=0, animate=False)
            return
        seq = frame.step.seq
        if log.cursor != seq - 1:
            self._log_echo.add(seq)
            log.cursor = seq - 1

    def _focus_path(self, frame: Frame) -> str | None:
        """Where the tree cursor goes: the event's node, else the first node a
        marker names (an auto-completed or pending run), else where it was."""
        step, inv = frame.step, frame.invocation_id
        if step is None or inv is None:
            return None
        candidates = [step.event.path] + [m.path for m in step.markers]
        for path in candidates:
            if path and frame.projection.get(inv, path) is not None:
                return path
        return None

    def _draw_tree(self, frame: Frame, single_step: bool) -> None:
        tree = self.run_tree
        inv = frame.invocation_id
        if inv is None:
            tree.proj, tree.invocation_id = None, None
            tree.clear()
            tree.root.set_label(Text("no event applied yet", "dim"))
            return
        target = self._focus_path(frame)
        if single_step and frame.step is not None:
            tree.update_paths(change_paths(frame.projection, frame.step.change))
            if target is not None and target != tree.cursor_path:
                tree.select_path(target)
        else:
            tree.load(frame.projection, inv, cursor_path=target)

    def _draw_event(self, frame: Frame) -> None:
        panel = self.query_one("#replay-event", ReplayPanel)
        title = f"Event {frame.position}" if frame.step else "Start"
        panel.show(event_panel(frame, panel.style_map, red=self.hitl.redactor), title)
        panel.scroll_home(animate=False)

    def _draw_state(self, frame: Frame) -> None:
        pane = self.query_one("#replay-state", ReplayPanel)
        changed = set(frame.step.change.state_keys) if frame.step else set()
        pane.show(state_table(frame.projection.state, changed, pane.style_map, red=self.hitl.redactor))

    def _show_details(self) -> None:
        details = self.query_one("#details", Details)
        frame, inv = self.frame, self.frame.invocation_id if self.frame else None
        if frame is None or inv is None:
            details.show(Text("No event applied yet.", "dim"), "Details")
            return
        path = self.run_tree.cursor_path
        st = details.style_map
        if path is not None and frame.projection.get(inv, path) is not None:
            details.show(node_details(frame.projection, inv, path, st, red=self.hitl.redactor), f"Node {path}")
        else:
            details.show(invocation_details(frame.projection, inv, st, red=self.hitl.redactor), "Invocation")

    @on(Tree.NodeHighlighted, "#tree")
    def _node_highlighted(self) -> None:
        self._show_details()

    def _draw_info(self) -> None:
        s = self.session
        parts = []
        if s is not None:
            parts += [s.app_name, s.user_id, s.id]
        parts.append(f"event {self.position:,}/{self.total:,}")
        actions = self.replay.actions if self.replay else []
        parts.append(f"operator action {bisect.bisect_right(actions, self.position)}/{len(actions)}")
        parts.append(f"{'▶ playing' if self.playing else '❚❚ paused'} {SPEEDS[self.speed]}/s")
        if self.mark is not None:
            parts.append(f"mark {self.mark}")
        if self.corrupt:
            parts.append(f"⚠ {len(self.corrupt)} unreadable events skipped")
        parts.append("read-only")
        # at 80 columns: the user, the app, then the count of operator actions (the timeline marks them)
        drop = (1, 0, 4) if s is not None else (1,)
        self.query_one("#replay-info", FitLine).show(parts, drop=drop)
        self.query_one(TimelineBar).update_bar(self.total, self.position, actions, self.mark)

    def _refresh_bindings_if_changed(self) -> None:
        state = (
            self.can_step(1),
            self.can_step(-1),
            self.can_next_action(),
            self.can_prev_action(),
            self.can_diff(),
            self.playing,
        )
        if state != self._binding_state:
            self._binding_state = state
            self.refresh_bindings()

    # ------------------------------------------------------------ actions
    def can_step(self, delta: int) -> bool:
        return self.replay is not None and 0 <= self.position + delta <= self.total

    def action_step(self, delta: int) -> None:
        self.seek(self.position + delta)

    def can_next_action(self) -> bool:
        return self.replay is not None and bisect.bisect_right(self.replay.actions, self.position) < len(
            self.replay.actions
        )

    def action_next_action(self) -> None:
        if self.replay is None:
            return
        i = bisect.bisect_right(self.replay.actions, self.position)
        if i < len(self.replay.actions):
            self.seek(self.replay.actions[i])
        else:
            self.notify("No operator action after this event.")

    def can_prev_action(self) -> bool:
        return self.replay is not None and bisect.bisect_left(self.replay.actions, self.position) > 0

    def action_prev_action(self) -> None:
        if self.replay is None:
            return
        i = bisect.bisect_left(self.replay.actions, self.position) - 1
        if i >= 0:
            self.seek(self.replay.actions[i])
        else:
            self.notify("No operator action before this event.")

    def action_start(self) -> None:
        self.seek(0)

    def action_end(self) -> None:
        self.seek(self.total)

    def action_at(self, position: int | None = None) -> None:
        """``:at N`` jumps to event N; from the palette, asks for N."""
        if position is None:
            from .command import CommandLine

            line = CommandLine()

            def done(text: str | None) -> None:
                if text:
                    self.hitl.run_command(text)

            self.app.push_screen(line, done)

            def prefill() -> None:
                box = line.query_one(Input)
                box.value = "at "
                box.cursor_position = len(box.value)

            self.call_after_refresh(prefill)
            return
        self.seek(position)

    def command_at(self, args: list[str], options: dict[str, str]) -> None:
        """``:at N`` (the argument of the command)."""
        try:
            (n,) = args
            position = int(n)
        except ValueError:
            self.error(f":at takes one event number, 0 to {self.total:,} (got {' '.join(args) or 'nothing'})")
            return
        if not 0 <= position <= self.total:
            self.error(f"event {position} is out of range: this history has events 0 to {self.total:,}")
            return
        self.seek(position)

    def action_toggle_play(self) -> None:
        if self.playing:
            self._pause()
        else:
            if self.position >= self.total:
                self.seek(0)
            self.playing = True
            self._arm_timer()
        self._draw_info()
        self._refresh_bindings_if_changed()

    def _arm_timer(self) -> None:
        if self._timer is not None:
            self._timer.stop()
        interval = 1.0 / min(SPEEDS[self.speed], MAX_TICKS)
        self._timer = self.set_interval(interval, self._tick)

    def _pause(self) -> None:
        self.playing = False
        if self._timer is not None:
            self._timer.stop()
            self._timer = None

    def _tick(self) -> None:
        if not self.playing or self.replay is None:
            return
        per_tick = max(1, round(SPEEDS[self.speed] / MAX_TICKS))
        self.seek(self.position + per_tick)
        if self.position >= self.total:
            self._pause()
            self._draw_info()
            self._refresh_bindings_if_changed()

    def action_speed(self, delta: int) -> None:
        self.speed = max(0, min(len(SPEEDS) - 1, self.speed + delta))
        if self.playing:
            self._arm_timer()
        self._draw_info()

    def action_mark(self) -> None:
        self.mark = self.position  # shown in the info line and on the timeline
        self._draw_info()
        self._refresh_bindings_if_changed()

    def can_diff(self) -> bool:
        return self.replay is not None and self.mark is not None

    def action_diff(self) -> None:
        if self.replay is None:
            return
        if self.mark is None:
            self.notify("Mark a position first (m), then move and press d.", severity="warning")
            return
        first, second = sorted((self.mark, self.position))
        # computed in the diff screen's worker, on its own cursor: the keys stay live, esc cancels
        self.app.push_screen(DiffScreen(first, second, self.replay.seqs, self.replay.events, self.hitl.redactor))

    def on_unmount(self) -> None:
        self._pause()
