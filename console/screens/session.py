"""One session: the node tree of an invocation, its details, and the event log.

Data flow (all store reads in workers, results as messages):

1. :func:`~console.screens.loaders.load_view` draws the invocation from the
   store's cached snapshot plus the events after it (fast, however long the
   session). If the snapshot left out earlier loop iterations,
   :func:`~console.screens.loaders.load_history` folds the invocation from its
   first event in the background and the tree is redrawn once with every run.
2. Every ``poll_interval`` seconds -- and at once on every append notification
   of its session, when the store sends them (PostgreSQL's LISTEN/NOTIFY; the
   timer is then the fallback), and on a :class:`~console.messages.WriteEvent`
   it cannot apply as it is (below) -- the screen reads the events appended since
   the last poll -- by this process or another -- applies them to the
   projection one by one, and relabels or adds only the tree nodes the
   projection's ``Change`` names. The log grows by the same events.
3. The log fetches pages of lines on demand (it is virtual); the details pane
   fetches the selected event when the log has focus.

A write started here posts each event it persisted, with its seq, as a
:class:`~console.messages.WriteEvent`: one that directly follows what the screen
shows is applied like a polled one (no read); after a gap -- another writer's
events in between, a message replaced by a newer one, a read running -- the
screen reads what is new instead. The write's outcome opens once a read that
started after its last event has been applied (:meth:`SessionScreen.poll_then`).

Sequence bookkeeping: ``tree_seq`` -- every event of the shown invocation with a
seq up to it is in the projection; ``log_seq`` -- the number of events the log
knows. A poll reads from the smaller of the two.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import ClassVar

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.containers import Horizontal
from textual.widgets import Tree

from engine.errors import SessionNotFoundError
from engine.liveness import invocation_health, is_mid_run
from engine.models import Session, StoredEvent
from engine.projection import Projection
from engine.store.base import InvocationSummary, has_capability
from engine.views import change_paths, focus_path, latest_run

from ..actions import bindings
from ..answering.jobs import WriteJob
from ..answering.selection import AnswerDraft, InterruptSelection
from ..answering.session_side import SessionAnswering, WorkQueue
from ..messages import (
    EventLoaded,
    HealthChecked,
    HistoryLoaded,
    InvocationLoaded,
    InvocationsChanged,
    InvocationView,
    LiveEvents,
    LivenessChecked,
    LogPage,
    StoreFailed,
    WriteDone,
    WriteEvent,
)
from ..times import zone_label
from ..widgets.details import Details, event_details, invocation_details, node_details
from ..widgets.event_log import EventLog, corrupt_line, log_line
from ..widgets.fit_line import FitLine
from ..widgets.footer import FittedFooter
from ..widgets.format import short, short_id
from ..widgets.node_tree import FOLD, NodeTree, liveness_word
from ..widgets.plain import Static
from ..widgets.preview import show_all
from .base import HitlScreen
from .graph import GraphKeys
from .loaders import CHUNK, listen, load_history, load_view, one_line, read_events

HISTORY_DELAY = 0.2
"""Seconds after the first drawing before earlier loop runs are folded in."""


class SessionScreen(GraphKeys, HitlScreen):
    """Answering (select ids, editor, re-drive, cancel) is its :class:`SessionAnswering`."""

    AREA = "session"
    HELP_AREAS = ("session", "log")
    BINDINGS: ClassVar[list[BindingType]] = bindings("session")

    def __init__(self, session_id: str, invocation_id: str | None = None, path: str | None = None) -> None:
        super().__init__(classes="session-screen")
        self.session_id = session_id
        self.wanted_invocation = invocation_id
        self.wanted_path = path
        self.view: InvocationView | None = None
        self.interrupted = False
        """engine.liveness says the shown invocation stopped mid-run (no live lease)."""
        self.in_doubt: frozenset[str] = frozenset()
        """Its leaf runs that started, recorded no end, and no process runs any more."""
        self.work_queue: WorkQueue | None = None  # the inbox that opened this screen to answer (its submit returns there)
        self.queued_for: str | None = None
        """engine.liveness says a worker of this app will run the shown invocation's turn (queued)."""
        self.held: str | None = None
        """Why the workers hold this invocation's stranded turn (engine.liveness), or None."""
        self.proj: Projection = Projection()
        self.invocation_id: str | None = None
        self.invocations: list[InvocationSummary] = []
        self.tree_seq = 0
        self.log_seq = 0
        self.complete = True
        self.history_loading = False
        self.follow = False
        self.corrupt: set[int] = set()
        self.detail_mode = "node"
        """``node``: the details pane follows the tree cursor; ``event``: the log cursor."""
        self.event_shown: StoredEvent | None = None
        self._token = 0
        self._polling = False
        self._poll_again = False
        """A notification came while a poll was running: poll again when it ends."""
        self._after_poll: list[Callable[[], None]] = []
        """Called when the next poll that starts from now has been applied (:meth:`poll_then`)."""
        self._listener: object | None = None
        self._last_error: str | None = None
        self.writing: str | None = None
        """The kind of the console-started write now running (``answer``, ...), shown in the info line."""
        self.selection = InterruptSelection()
        """Selected open ids of the shown invocation (``space``, ``a``, ``A``; ``esc`` clears)."""
        self.drafts: dict[str, AnswerDraft] = {}
        """What the operator typed, by invocation id (survives closing the editor)."""
        self.answering = SessionAnswering(self)
        """Selection on the tree, the editor, re-drive / cancel, write outcomes."""

    # ------------------------------------------------------------ layout
    def compose(self) -> ComposeResult:
        yield self.compose_title(f"hitl ▸ Session {short(self.session_id, 80, self.hitl.redactor)}")
        yield FitLine("loading…", id="session-info", classes="infoline")
        yield Static("", id="banner", classes="banner -hidden")
        yield Static("", id="answer-bar", classes="answer-bar -hidden")
        with Horizontal(id="session-top"):
            yield NodeTree(id="tree", redactor=self.hitl.redactor)
            yield Details(id="details")
        yield EventLog(id="log")
        yield FittedFooter()

    def on_mount(self) -> None:
        self.query_one(NodeTree).border_title = "Nodes"
        self.query_one(EventLog).border_title = f"Events · times: {zone_label()}"  # the zone, said once
        self.query_one(Details).border_title = "Details"
        self.query_one(NodeTree).focus()
        self.reload_view(self.wanted_invocation)
        if self.hitl.poll_interval:
            self.set_interval(self.hitl.poll_interval, self._poll)
            # Notifications start once the first view is shown: LISTEN beside the first read slowed it (PG, 100k events).
            self._listen_after_load = has_capability(self.hitl.store, "notify")

    @work(group="session-listen", exit_on_error=False)
    async def _listen(self) -> None:
        """Poll at once when the store notifies an append to this session."""

        def on_append(session_id: str | None, _seq: int | None) -> None:
            if session_id is None or session_id == self.session_id:
                self.request_poll()

        try:
            self._listener = await listen(self.hitl.store, on_append)
        except Exception:  # noqa: BLE001 -- no notifications: the timer still polls
            self._listener = None
            return
        self.request_poll()  # what was appended between the first read and LISTEN

    _listen_after_load = False
    """Start :meth:`_listen` when the first view arrives (the store notifies appends)."""

    async def on_unmount(self) -> None:
        listener, self._listener = self._listener, None
        close = getattr(listener, "close", None)
        if close is not None:
            await close()

    @property
    def run_tree(self) -> NodeTree:
        return self.query_one(NodeTree)

    @property
    def log_widget(self) -> EventLog:
        return self.query_one(EventLog)

    # ------------------------------------------------------------ loading
    def reload_view(self, invocation_id: str | None) -> None:
        self._token += 1
        self._load(invocation_id, self._token)

    @work(exclusive=True, group="session-load", exit_on_error=False)
    async def _load(self, invocation_id: str | None, token: int) -> None:
        try:
            view = await load_view(self.hitl.store, self.session_id, invocation_id)
        except SessionNotFoundError as e:
            self.post_message(StoreFailed(one_line(e), fatal=True))
            return
        except Exception as e:  # noqa: BLE001 -- a one-line notification, never a traceback
            self.post_message(StoreFailed(one_line(e)))
            return
        self.post_message(InvocationLoaded(view, token=token))

    def on_store_failed(self, message: StoreFailed) -> None:
        self._polling = False
        self._settled()
        if message.text != self._last_error:
            self.error(message.text)
        self._last_error = message.text
        if message.fatal:
            self.dismiss_screen()

    def dismiss_screen(self) -> None:
        if self.app.screen is self and len(self.app.screen_stack) > 1:
            self.app.pop_screen()

    def on_invocation_loaded(self, message: InvocationLoaded) -> None:
        if message.token != self._token:
            return
        view = message.view
        first = self.view is None
        self.view = view
        if first and self._listen_after_load:
            self._listen_after_load = False
            self._listen()
        self.invocations = view.invocations
        self.invocation_id = view.invocation_id
        self.proj = view.projection
        self.tree_seq, self.complete = view.tree_seq, view.complete
        self._add_corrupt(view.corrupt)
        tree, log = self.run_tree, self.log_widget
        cursor = self.wanted_path if first else None
        if cursor is None and first and view.invocation_id:
            cursor = focus_path(view.projection, view.invocation_id)
        if view.invocation_id is not None:
            tree.load(view.projection, view.invocation_id, cursor_path=cursor)
            self.hold_heap()  # a long loop's runs: out of the collector's full passes
        log.invocation_id = view.invocation_id
        if first or view.session.last_seq != self.log_seq:
            self.log_seq = view.session.last_seq
            log.reset(self.log_seq)
            if first:
                log.action_last()
        self.wanted_path = None
        self.interrupted, self.in_doubt, self.queued_for, self.held = False, frozenset(), None, None
        if view.invocation_id is not None and is_mid_run(view.projection, view.invocation_id):
            self._check_liveness(view.invocation_id, self._token)
        if not view.complete and view.invocation_id:
            # Let the first paint and the log's first page go first: the fold
            # shares the store connection with them.
            self.history_loading = True
            inv, token = view.invocation_id, self._token
            self.set_timer(HISTORY_DELAY, lambda: self._history(inv, token) if token == self._token else None)
        self._show_details()
        self.render_info()
        self.refresh_bindings()

    @work(exclusive=True, group="session-history", exit_on_error=False)
    async def _history(self, invocation_id: str, token: int) -> None:
        try:
            view = await load_history(self.hitl.store, self.session_id, invocation_id)
        except Exception as e:  # noqa: BLE001
            self.post_message(StoreFailed(one_line(e)))
            return
        self.post_message(HistoryLoaded(invocation_id, view.projection, view.tree_seq, view.corrupt, token=token))

    def on_history_loaded(self, message: HistoryLoaded) -> None:
        if message.token != self._token or message.invocation_id != self.invocation_id:
            return
        self.complete, self.proj = True, message.projection
        # Events after message.tree_seq that a poll already applied to the old
        # projection are re-read by the next poll (it starts at min(tree_seq, log_seq)).
        self.tree_seq = message.tree_seq
        self._add_corrupt(message.corrupt)
        self.run_tree.load(self.proj, message.invocation_id)
        self.run_tree.prepare_find(then=lambda: self.render_info(history_loaded=True))
        self.hold_heap()  # now every run of the loop
        self._show_details()
        self.redraw_graph()  # earlier loop runs tell which edges go back

    # ------------------------------------------------------------ live
    def request_poll(self) -> None:
        """Read what is new now; while a read runs, once more when it ends."""
        if self._polling:
            self._poll_again = True
        else:
            self._poll()

    def poll_then(self, then: Callable[[], None]) -> None:
        """Read what is new now (if a read is running: once more after it), then call ``then``."""
        self._after_poll.append(then)
        self.request_poll()
        if not self._polling:  # nothing to read yet (not loaded): nothing to wait for
            self._settled()

    def _settled(self) -> None:
        """A poll ended with no other one due: run what waited for it."""
        if self._poll_again or self._polling:
            return
        waiting, self._after_poll = self._after_poll, []
        for then in waiting:
            then()

    def _poll(self) -> None:
        if self._polling or self.view is None:
            return
        self._polling = True
        self._poll_worker(min(self.tree_seq, self.log_seq), self._token)
        inv = self.invocation_id
        if inv is not None and (is_mid_run(self.proj, inv) or self.interrupted):
            self._check_liveness(inv, self._token)

    @work(exclusive=True, group="session-liveness", exit_on_error=False)
    async def _check_liveness(self, invocation_id: str, token: int) -> None:
        """A crashed run writes nothing: only the store's lease tells a running
        node from one in doubt, so ask it while the invocation looks mid-run."""
        if not is_mid_run(self.proj, invocation_id):
            self.post_message(LivenessChecked(invocation_id, False, (), token=token))
            return
        try:
            h = await invocation_health(self.hitl.store, self.session_id, invocation_id, self.proj.fork())
        except Exception:  # noqa: BLE001 -- a failed check shows nothing new; the next poll retries
            return
        self.post_message(LivenessChecked(invocation_id, h.interrupted, tuple(h.in_doubt), token=token, queued_for=h.queued_for, held=h.held))

    def on_liveness_checked(self, message: LivenessChecked) -> None:
        if message.token != self._token or message.invocation_id != self.invocation_id:
            return
        state = (message.interrupted, frozenset(message.in_doubt))
        self.run_tree.set_liveness(*state, queued=message.queued_for is not None)
        if (*state, message.queued_for, message.held) == (self.interrupted, self.in_doubt, self.queued_for, self.held):
            return
        (self.interrupted, self.in_doubt), self.queued_for, self.held = state, message.queued_for, message.held
        self._show_details()
        self.render_info()

    @work(group="session-poll", exit_on_error=False)
    async def _poll_worker(self, after: int, token: int) -> None:
        try:
            events, corrupt = await read_events(self.hitl.store, self.session_id, after_seq=after, limit=CHUNK)
        except Exception as e:  # noqa: BLE001
            self.post_message(StoreFailed(one_line(e)))
            return
        last = max([after, *(e.seq for e in events), *corrupt])
        self.post_message(LiveEvents(after, events, corrupt, last, token=token))

    def on_live_events(self, message: LiveEvents) -> None:
        self._polling = False
        again, self._poll_again = self._poll_again, False
        try:
            self._apply_live(message)
        finally:
            if again:
                self._poll()  # a notification or a write event came during the read
            self._settled()

    def _apply_live(self, message: LiveEvents) -> None:
        if message.token != self._token or not (message.events or message.corrupt):
            return
        self._last_error = None
        inv = self.invocation_id
        proj = self.proj
        touched: set[str] = set()
        refresh_invocations = False
        known = {i.invocation_id for i in self.invocations}
        for se in message.events:
            e = se.event
            if e.invocation_id not in known or (e.node_info and "/" not in e.node_info.path and e.node_info.lifecycle):
                refresh_invocations = True
            if e.author == "user" and e.node_info is None:
                refresh_invocations = True
            if e.invocation_id == inv and se.seq > self.tree_seq and se.seq > proj.position:
                touched |= change_paths(proj, proj.apply(e, se.seq))
        if inv is None and message.events:
            # The session had no invocation when opened: draw the first one now.
            self.reload_view(None)
            return
        self.tree_seq = max(self.tree_seq, message.last_seq)
        if touched:
            self.run_tree.update_paths(touched)
        self._add_corrupt(message.corrupt)
        self._extend_log(message)
        if self.follow and touched and inv is not None:
            latest = latest_run(proj, inv, touched)
            if latest is not None:
                self.run_tree.select_path(latest)
        if self.detail_mode == "node" and (self.run_tree.cursor_path in touched or self.run_tree.cursor_path is None):
            self._show_details()
        if refresh_invocations:
            self._refresh_invocations(self._token)
        self.render_info()
        self.refresh_bindings()

    def _extend_log(self, message: LiveEvents) -> None:
        log = self.log_widget
        fresh = [log_line(se, self.hitl.redactor) for se in message.events if se.seq > self.log_seq]
        fresh += [corrupt_line(s) for s in message.corrupt if s > self.log_seq]
        if not fresh:
            return
        at_end = log.cursor >= log.total - 1
        log.put_lines(fresh)
        self.log_seq = max(self.log_seq, message.last_seq)
        log.set_total(self.log_seq)
        if at_end and not self.follow and self.detail_mode != "event":
            log.action_last()

    @work(exclusive=True, group="session-invocations", exit_on_error=False)
    async def _refresh_invocations(self, token: int) -> None:
        try:
            invocations = await self.hitl.store.list_invocations(self.session_id)
        except Exception as e:  # noqa: BLE001
            self.post_message(StoreFailed(one_line(e)))
            return
        self.post_message(InvocationsChanged(invocations, token=token))

    def on_invocations_changed(self, message: InvocationsChanged) -> None:
        if message.token == self._token:
            self.invocations = message.invocations
            self.render_info()
            self.refresh_bindings()

    # ------------------------------------------------------------ log pages
    @on(EventLog.Wanted)
    def _wanted(self, message: EventLog.Wanted) -> None:
        self._fetch_page(message.start_seq, message.count, self.log_seq, self._token)

    @work(group="session-log", exit_on_error=False)
    async def _fetch_page(self, start: int, count: int, last_seq: int, token: int) -> None:
        try:
            events, corrupt = await read_events(
                self.hitl.store, self.session_id, after_seq=start - 1, limit=count, last_seq=last_seq
            )
        except Exception as e:  # noqa: BLE001
            self.log_widget.request_failed(start)
            self.post_message(StoreFailed(one_line(e)))
            return
        lines = [log_line(se, self.hitl.redactor) for se in events] + [corrupt_line(s) for s in corrupt]
        end = max([start + count - 1 if len(events) >= count else last_seq, *(line.seq for line in lines)])
        self.post_message(LogPage(start, end, lines, corrupt, token=token))

    def on_log_page(self, message: LogPage) -> None:
        if message.token != self._token:
            self.log_widget.request_failed(message.start_seq)
            return
        self.log_widget.put_lines(message.lines, complete_from=message.start_seq, complete_to=message.end_seq)
        self._add_corrupt(message.corrupt)

    # ------------------------------------------------------------ details
    def on_descendant_focus(self, event: object) -> None:
        focused = self.focused
        mode = "event" if isinstance(focused, EventLog) else "node" if isinstance(focused, NodeTree) else None
        if mode and mode != self.detail_mode:
            self.detail_mode = mode
            self._show_details()

    @on(Tree.NodeHighlighted, "#tree")
    def _node_highlighted(self) -> None:
        if self.detail_mode == "node":
            self._show_details()

    @on(EventLog.Selected)
    def _event_selected(self, message: EventLog.Selected) -> None:
        if self.detail_mode == "event":
            self._fetch_event(message.seq)

    def _show_details(self) -> None:
        details = self.query_one(Details)
        st = details.style_map
        if self.detail_mode == "event":
            seq = self.log_widget.cursor_seq
            if seq is not None:
                self._fetch_event(seq)
            else:
                details.show("no event selected", "Event")
            return
        inv = self.invocation_id
        if self.view is None:  # not loaded yet: say so, never "no invocation"
            details.show(f"loading session {self.session_id}…", "Details")
            return
        if inv is None:
            details.show("This session has no invocation yet.", "Details")
            return
        path = self.run_tree.cursor_path
        node = self.run_tree.cursor_node
        if path is not None:
            details.show(
                node_details(self.proj, inv, path, st, self.in_doubt, red=self.hitl.redactor, interrupted=self.interrupted,
                             now=self.hitl.clock(), app_name=self.view.session.app_name if self.view else None),
                f"Node {path}",
            )
        elif node is not None and node.data and node.data.startswith(FOLD):
            details.show("Earlier runs of a loop. Expand the node (enter) to list them.", "Earlier runs")
        else:
            details.show(invocation_details(self.proj, inv, st, red=self.hitl.redactor), "Invocation")

    @work(exclusive=True, group="session-event", exit_on_error=False)
    async def _fetch_event(self, seq: int) -> None:
        try:
            se = await self.hitl.store.event_at(self.session_id, seq)
        except Exception as e:  # noqa: BLE001 -- e.g. a corrupted row: say so in the pane
            self.post_message(EventLoaded(None, seq, one_line(e)))
            return
        self.post_message(EventLoaded(se, seq))

    def on_event_loaded(self, message: EventLoaded) -> None:
        if self.detail_mode != "event" or self.log_widget.cursor_seq != message.seq:
            return
        details = self.query_one(Details)
        self.event_shown = message.event
        if message.event is None:
            details.show(f"⚠ {message.error}", f"Event {message.seq}")
        else:
            details.show(event_details(message.event, details.style_map, red=self.hitl.redactor), f"Event {message.seq}")

    # ------------------------------------------------------------ info
    def _add_corrupt(self, seqs: list[int]) -> None:
        new = set(seqs) - self.corrupt
        if not new:
            return
        self.corrupt |= new
        banner = self.query_one("#banner", Static)
        listed = ", ".join(str(s) for s in sorted(self.corrupt)[:12])
        more = f" and {len(self.corrupt) - 12} more" if len(self.corrupt) > 12 else ""
        noun = "event" if len(self.corrupt) == 1 else "events"
        banner.update(
            f"⚠ Corrupted {noun} {listed}{more} of session {self.session_id} could not be read and "
            "were skipped; the tree and the log show everything else."
        )
        banner.remove_class("-hidden")

    @property
    def current_summary(self) -> InvocationSummary | None:
        return next((i for i in self.invocations if i.invocation_id == self.invocation_id), None)

    def render_info(self, *, history_loaded: bool = False) -> None:
        self.history_loading = self.history_loading and not history_loaded  # the whole loop is in the tree
        view = self.view
        if view is None:
            return
        s = view.session
        red = self.hitl.redactor
        parts: list[str | Text] = [short(s.app_name, 40, red), short(s.user_id, 30, red), short(s.id, 60, red)]
        if self.invocation_id is None:
            parts.append("no invocation yet")
        else:
            n = next((k for k, i in enumerate(self.invocations, 1) if i.invocation_id == self.invocation_id), 0)
            head = Text(f"invocation {n}/{len(self.invocations)} {short_id(self.invocation_id, 10)} ")
            parts.append(head.append_text(liveness_word(self.proj, self.invocation_id, self, red)))
            opened = len(self.proj.open_interrupts(self.invocation_id))
            if opened:
                parts.append(f"{opened} open")
        parts.append(f"{self.log_seq:,} events")
        if self.writing:
            parts.append(f"{self.writing}: running…")
        if self.history_loading:
            parts.append("loading earlier runs…")
        if self.follow:
            parts.append(Text(" FOLLOW ", "reverse"))
        self.query_one("#session-info", FitLine).show(parts, drop=(1, 0))  # at 80 columns: the user, then the app
        self.show_worker_badge()  # the title bar counts the workers of this session's app (known once loaded)
        self.answering.render()

    @property
    def session(self) -> Session | None:
        return self.view.session if self.view is not None else None

    def show_selection_bar(self, text: Text | None) -> None:
        """The bar under the info line: what is selected (None: hidden)."""
        bar = self.query_one("#answer-bar", Static)
        if text is None:
            bar.add_class("-hidden")
        else:
            bar.update(text)
            bar.remove_class("-hidden")

    def on_back(self) -> bool:
        return self.answering.clear()  # esc clears a selection of ids before it leaves

    # ------------------------------------------------------------ answering (registry: interrupts.*, invocation.*)
    def can_toggle_interrupt(self) -> bool:
        return bool(self.answering.open_ids())

    can_select_node = can_select_invocation = can_answer = can_claim = can_assign = can_toggle_interrupt

    def action_toggle_interrupt(self) -> None:
        self.answering.toggle_node()

    def action_select_node(self) -> None:
        self.answering.select_node()

    def action_select_invocation(self) -> None:
        self.answering.select_invocation()

    def action_answer(self, ids: list[str] | None = None) -> None:
        self.answering.answer(ids)

    def action_claim(self) -> None:  # c: claim the selected ids (again: release them)
        self.answering.owners("claim")

    def action_assign(self) -> None:  # C: assign them to an operator or @group
        self.answering.owners("assign")

    def can_redrive(self) -> bool:
        return self.answering.can_redrive()

    def can_cancel(self) -> bool:
        return self.answering.can_cancel()

    def action_redrive(self) -> None:
        self.answering.check_health("redrive")

    def action_cancel(self) -> None:
        self.answering.check_health("cancel")

    def on_health_checked(self, message: HealthChecked) -> None:
        self.answering.confirm(message)

    def start_write(self, job: WriteJob, draft: AnswerDraft | None) -> None:
        """Run ``job`` (the editor's submit, a confirmed re-drive or cancel)."""
        self.answering.start_write(job, draft)

    def on_write_event(self, message: WriteEvent) -> None:
        """The tree moves (PENDING -> RUNNING -> ...) while the write runs: an event
        that directly follows what the screen shows is applied as it is; after a gap
        (another writer, a replaced message) or during a read, what is new is read."""
        seq = message.seq
        if seq is None or self._polling or self.view is None or not seq - 1 == self.log_seq == self.tree_seq:
            self.request_poll()
            return
        stored = StoredEvent(seq=seq, session_id=self.session_id, event=message.event)
        self._apply_live(LiveEvents(seq - 1, [stored], [], seq, token=self._token))

    def on_write_done(self, message: WriteDone) -> None:
        self.answering.write_done(message)

    # ------------------------------------------------------------ actions
    def can_next_waiting(self) -> bool:
        # Cheap (footers ask on every refresh): an open interrupt means a waiting run.
        return bool(self.invocation_id and self.proj.open_interrupts(self.invocation_id))

    def action_next_waiting(self) -> None:
        target = self.run_tree.next_waiting(self.run_tree.cursor_path)
        if target is None:
            self.notify("No WAITING node in this invocation.")
            return
        self.run_tree.select_path(target)
        self.run_tree.focus()

    def action_toggle_follow(self) -> None:
        self.follow = not self.follow
        self.log_widget.follow = self.follow
        if self.follow:
            self.log_widget.action_last()
            inv = self.invocation_id
            if inv is not None:
                latest = latest_run(self.proj, inv, [r.path for r in self.proj.runs(inv)])
                if latest is not None:
                    self.run_tree.select_path(latest)
        self.render_info()

    def action_expand_all(self) -> None:
        self.run_tree.set_all_expanded(True)

    def action_collapse_all(self) -> None:
        self.run_tree.set_all_expanded(False)

    def can_pick_invocation(self) -> bool:
        return len(self.invocations) > 1

    def action_pick_invocation(self) -> None:
        from .invocations import InvocationPicker

        def picked(invocation_id: str | None) -> None:
            if invocation_id and invocation_id != self.invocation_id:
                self.switch_invocation(invocation_id)

        picker = InvocationPicker(self.invocations, self.invocation_id, self.hitl.clock(), self.hitl.redactor)
        self.app.push_screen(picker, picked)

    def switch_invocation(self, invocation_id: str) -> None:
        self.reload_view(invocation_id)

    def action_reload(self) -> None:
        self.reload_view(self.invocation_id)

    def action_show_all(self) -> None:
        show_all(self)  # the details pane's values in full (console.widgets.preview)

    def action_open_replay(self) -> None:
        """Replay this session's history, from the event the log selects (else its end)."""
        from .replay import ReplayScreen, ReplaySource

        seq = self.log_widget.cursor_seq if self.detail_mode == "event" else None
        self.app.push_screen(ReplayScreen(ReplaySource(session_id=self.session_id, at_seq=seq)))
