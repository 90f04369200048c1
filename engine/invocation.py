"""``InvocationContext``: what every node of one turn of one invocation shares.

It persists events (store append, then the projection, then the runner's event
stream, in that order) and holds the projection the turn was reconstructed
from.

Persistence is buffered to save commits (each one a disk sync under
``synchronous=FULL``): an end record is *held* and written in one transaction
with the next record -- typically the next node's start -- when no node body
that runs user code is running (so no user code runs between the end and that
write, and the window in which a crash loses a held end is engine code only).
The start record of a run whose body is user code is never held: it is
durable before its body runs, so a run killed mid-body is still *in doubt*
(a nested Workflow's start is held: its body is engine code, and its first
child's start carries it). An event a user body yields (output, an
interrupt) is held too, for at most :data:`BODY_EVENT_DELAY` seconds: a body
that yields and ends at once (the common ``yield RequestInput(...)``) has its
events written with its end record, in one commit; one that goes on working
has them written when the delay is up, so a console in another process sees
them that soon. A crash in that window loses only events of a run that is in
doubt anyway (its start is durable, its end is not). The turn's first write
(the lease, the message or answer, the root's start) is deferred the same way
(:attr:`InvocationContext.opener`, set by the Runner): it is made with the
first record written, typically the start of the first node that runs user
code. What is held when the turn ends is written by the runner with the
lease's release (:meth:`InvocationContext.take_held`), or by
:meth:`InvocationContext.flush`. Only a context with ``buffered`` set (the
Runner's) holds anything.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from .models import Event, StoredEvent
from .projection import Projection
from .store.base import SessionStore

if TYPE_CHECKING:
    from .context import Context, NodeRunner

log = logging.getLogger(__name__)

BODY_EVENT_DELAY = 0.01
"""Seconds an event a user body yielded may wait for the run's next record
before it is written on its own (see the module docstring)."""


class InvocationContext:
    """Everything the nodes of one turn share."""

    def __init__(
        self,
        *,
        store: SessionStore,
        app_name: str,
        user_id: str,
        session_id: str,
        invocation_id: str,
        projection: Projection,
        state: dict[str, Any],
    ) -> None:
        self.store = store
        self.app_name = app_name
        self.user_id = user_id
        self.session_id = session_id
        self.invocation_id = invocation_id
        self.projection = projection
        self.state = state
        """Session state as this turn sees it (``temp:`` keys live only here)."""
        self.deadline_rules: tuple[Any, ...] = ()
        """hitl.toml deadline rules stamped on the interrupts this turn raises (engine.deadlines)."""
        self.queue: asyncio.Queue[StoredEvent | None] = asyncio.Queue()
        """The turn's events as they are stored, for the stream; None: the turn's task ended."""
        self._reserved: dict[tuple[str | None, str], int] = {}
        self._held: list[Event] = []
        """End records not written yet (see the module docstring)."""
        self._writing = asyncio.Lock()
        """Writes of this turn go to the store one after the other, in the order
        they were made. A write that carries held end records must commit before
        any later one: parallel branches started by the same completion would
        otherwise race on a store with a connection pool (PostgreSQL), and a
        start could get a seq before the end that triggered it."""
        self.user_bodies = 0
        """Node bodies running user code now (a Workflow's or parallel worker's body is engine code)."""
        self.last_seq: int | None = None
        """The seq of the last event this turn wrote."""
        self.opener: Callable[[list[Event]], Awaitable[list[StoredEvent]]] | None = None
        """The turn's first write, not made yet (the Runner defers it): the next
        write makes it, in one transaction with the events written then, and
        returns those events stored. Until then only engine code runs."""
        self.failed_open: BaseException | None = None
        """What the deferred first write raised: every later write raises it too."""
        self._due: asyncio.TimerHandle | None = None
        """Writes held body events when :data:`BODY_EVENT_DELAY` is up."""
        self._due_writes: set[asyncio.Task[None]] = set()
        self.running: dict[str, tuple[NodeRunner, Context]] = {}
        """Runs started and not ended in this turn, by path."""
        self.abandoned: set[asyncio.Future[Any]] = set()
        """Tasks of children that ignored their cancellation: nobody waits for them."""
        self._order = itertools.count(1)
        """Tickets in the order events take their place in the log (see :meth:`persist`)."""
        self.buffered = False
        """Hold end records (the Runner sets it: it writes what is held when the
        turn ends). Off, every record is written when it is made, so a
        ``NodeRunner`` used on its own has persisted its run when it returns."""

    async def persist(self, event: Event, *, hold: bool = False, body: bool = False) -> int:
        """Write ``event`` with whatever is held, in one transaction; or, with
        ``hold`` and while no user code runs, hold it for the next write; or,
        with ``body`` (an event a node body yielded), hold it for the next write
        or :data:`BODY_EVENT_DELAY`, whichever comes first. Returns the event's
        ticket: tickets increase in the order events get their seqs (what is held
        is written before what comes after it), before the seq is known."""
        if self.buffered and ((hold and self.user_bodies == 0) or body):
            self._held.append(event)
            if body and self._due is None:
                self._due = asyncio.get_running_loop().call_later(BODY_EVENT_DELAY, self._write_due)
            return next(self._order)
        async with self._writing:
            self._disarm()
            ticket = next(self._order)
            events, self._held = [*self._held, event], []
            try:
                await self._write(events)
            except BaseException:
                self._held[:0] = events[:-1]  # not written: still held (the event itself fails its node)
                raise
        return ticket

    async def flush(self, events: list[Event] | None = None) -> None:
        """Write what is held (or ``events``, taken with :meth:`take_held`), if anything."""
        async with self._writing:
            if events is None:
                self._disarm()
                events, self._held = self._held, []
            if events or self.opener is not None:
                try:
                    await self._write(events)
                except BaseException:
                    self._held[:0] = events
                    raise

    async def take_held(self) -> list[Event]:
        """Hand what is held to the caller, which writes it (and :meth:`applied` it),
        once a write of held body events already under way has committed."""
        async with self._writing:
            self._disarm()
            events, self._held = self._held, []
        return events

    def held_raise(self, interrupt_id: str) -> str | None:
        """The path of the run whose held (not yet written) event raises ``interrupt_id``.
        The projection sees such an id only once it is written; until then this
        says it is open (raised, or raised again after an answer)."""
        for event in self._held:
            if event.long_running_tool_ids and interrupt_id in event.long_running_tool_ids:
                return event.node_info.path if event.node_info else None
        return None

    def stop(self) -> None:
        """The turn is over: no held body event is written by the delay any more."""
        self._disarm()

    def _disarm(self) -> None:
        if self._due is not None:
            self._due.cancel()
            self._due = None

    def _write_due(self) -> None:
        self._due = None
        if self._held:
            task = asyncio.ensure_future(self._flush_due())
            self._due_writes.add(task)
            task.add_done_callback(self._due_writes.discard)

    async def _flush_due(self) -> None:
        try:
            await self.flush()
        except Exception as exc:  # still held: the run's next write carries them
            log.warning("writing the events of invocation %s failed, retried with its next record: %s", self.invocation_id, exc)

    async def _write(self, events: list[Event]) -> None:
        if self.failed_open is not None:
            raise self.failed_open
        if self.opener is not None:
            opener, self.opener = self.opener, None
            try:
                written = await opener(events)
            except BaseException as exc:
                self.failed_open = exc
                raise
            self.applied(written)
            return
        if len(events) == 1:
            written = [await self.store.append_event(self.session_id, events[0])]
        else:
            written = await self.store.append_events(self.session_id, events)
        self.applied(written)

    def applied(self, written: list[StoredEvent], *, folded: bool = False) -> None:
        """Events of this turn that are now stored: into the projection (unless
        ``folded`` there already, at these seqs), then the stream."""
        for stored in written:
            if not folded:
                self.projection.apply(stored.event, stored.seq)
            self.queue.put_nowait(stored)
        if written:
            self.last_seq = written[-1].seq

    def reserve_run_id(self, parent: str | None, name: str) -> str:
        """Next run id for (parent, name), from persisted runs plus those dispatched
        in this turn whose start record is not written yet."""
        key = (parent, name)
        n = max(int(self.projection.next_run_id(self.invocation_id, parent, name)), self._reserved.get(key, 0) + 1)
        self._reserved[key] = n
        return str(n)
