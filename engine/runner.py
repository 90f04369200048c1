"""``Runner``: start invocations, resume them from FunctionResponses, re-drive them.

``Runner.run`` is an async iterator over the events it persists, in order. A
turn that ends WAITING is a normal return; a failed node raises
:class:`~engine.errors.WorkflowFailed` after every event is persisted.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Any, Literal

from . import checkpoints, telemetry
from .context import Context, InvocationContext, NodeFailed, NodeRunner
from .errors import (
    ConflictError,
    EmptyMessageError,
    InDoubtError,
    InvocationBusyError,
    InvocationInterruptedError,
    NotRedrivableError,
    ResumeRejected,
    SessionNotFoundError,
    TextToWaitingInvocationError,
    WorkflowFailed,
    require_id,
)
from .liveness import (
    DEFAULT_LEASE_TTL,
    DEFAULT_LEASE_WAIT,
    Acknowledgement,
    LeaseKeeper,
    acquire_invocation_lease,
    in_doubt_paths,
    in_doubt_runs,
    is_mid_run,
    new_owner,
    stopped_mid_run,
    unacknowledged,
)
from .models import Content, Event, NodeStatus, Session, StoredEvent, build_models, new_id
from .nodes import BaseNode
from .operator_actions import answer_events, catch_up, check_not_cancelled, check_redrivable, operator_metadata
from .projection import Projection
from .resume import ResumeTarget, load_invocation, validate_responses
from .store.base import Lease, LoadedInvocation, SessionStore, append_and_release, build_records, has_capability
from .store.capabilities import AcquireAndAppend, AppendAndSettle, capability, require
from .turn_failures import failed_leaf, store_error_in, workflow_failed

if TYPE_CHECKING:
    from .store.base import AnswerRead
    from .store.workers import Settle, TurnReads

log = logging.getLogger(__name__)

build_models()  # a turn validates events: build their deferred validators at import, not in its first write
build_records((Lease,))  # and its lease rows (its other rows are made without validation)


class _FencedStore:
    """The store as one turn sees it: every append is fenced by the turn's lease
    (a process that lost the lease cannot write another event)."""

    def __init__(self, store: SessionStore, owner: str) -> None:
        self._store = store
        self._owner = owner

    async def append_event(
        self, session_id: str, event: Event, *, expected_seq: int | None = None, lease_owner: str | None = None
    ) -> StoredEvent:
        return await self._store.append_event(session_id, event, expected_seq=expected_seq, lease_owner=self._owner)

    async def append_events(
        self, session_id: str, events: list[Event], *, expected_seq: int | None = None, lease_owner: str | None = None
    ) -> list[StoredEvent]:
        return await self._store.append_events(session_id, events, expected_seq=expected_seq, lease_owner=self._owner)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)


@dataclass
class _Turn:
    """What one call of ``Runner.run`` asked for."""

    kind: str
    """``start`` (a text message), ``resume`` (an answer) or ``redrive``."""
    session_id: str
    user_id: str
    invocation_id: str
    target: ResumeTarget | None
    message: Content | None
    state_delta: dict[str, Any] | None
    operator: str | None
    reason: str | None
    ack: Acknowledgement
    """The runs in doubt the operator acknowledged (run path -> the start they
    saw it in doubt since); empty: none."""
    on_loaded: Callable[[str, Projection], None] | None = None
    create: bool = False
    """The session does not exist yet: the first write creates it (``create_in_first_write``)."""
    only_mid_run: bool = False
    """A re-drive that continues only an invocation left mid-run (a worker's)."""
    batch: str | None = None
    """The bulk answer this answer is part of (:mod:`engine.bulk`), recorded with it."""


@dataclass
class _Root:
    """The root run a turn starts or re-executes, and its start record."""

    runner: NodeRunner
    start: Event
    node_input: Any
    resume_inputs: dict[str, Any] | None


@dataclass
class _Lease:
    """A turn's lease: its keeper once the turn's first write took it, and that write's events."""

    keeper: LeaseKeeper | None = None
    first: list[StoredEvent] = field(default_factory=list)
    on_lost: Callable[[], object] | None = None
    """Called when another process takes the invocation over (the Runner cancels the turn)."""
    settle: Settle | None = None  # a worker's request, finished by the last write when that settles the turn

    def attach(self, keeper: LeaseKeeper) -> None:
        keeper._on_lost = self.on_lost
        self.keeper = keeper
        keeper.start()

    def watch(self, on_lost: Callable[[], object]) -> None:
        self.on_lost = on_lost
        if self.keeper is not None:
            self.keeper._on_lost = on_lost


class _FirstWriteFailed(BaseException):
    """A turn's deferred first write failed: nothing was written and only engine
    code ran. A BaseException, so that no node records it as its own failure.
    ``retry``: the invocation is held by another process, or moved on since it
    was read -- the turn starts again the long way (wait for the lease, read
    what changed)."""

    def __init__(self, error: BaseException, *, retry: bool) -> None:
        super().__init__(str(error))
        self.error = error
        self.retry = retry


class Runner:
    """Runs one app's root workflow against a session store.

    Every turn (start, resume, re-drive) holds the invocation's lease from
    before its first event until its end (see :mod:`engine.liveness`):
    ``lease_ttl`` is how long the lease lasts without renewal, ``lease_wait``
    how long a turn waits for another process's turn of the same invocation.
    """

    def __init__(
        self,
        app_name: str,
        workflow: BaseNode,
        store: SessionStore,
        *,
        lease_ttl: float = DEFAULT_LEASE_TTL,
        lease_wait: float = DEFAULT_LEASE_WAIT,
        deadline_rules: tuple[Any, ...] = (),
    ) -> None:
        self.app_name = app_name
        self.workflow = workflow
        self.store = store
        self.lease_ttl = lease_ttl
        self.lease_wait = lease_wait
        self.deadline_rules = deadline_rules
        """hitl.toml ``[[deadlines]]`` (:func:`engine.deadlines.load_rules`), stored with the
        interrupts this runner raises that carry no deadline of their own."""

    async def _session(self, user_id: str, session_id: str, create: bool) -> Session:
        try:
            return await self.store.get_session(session_id)
        except SessionNotFoundError:
            if not create:
                raise
            return await self.store.create_session(self.app_name, user_id, session_id)

    def run(
        self,
        user_id: str,
        session_id: str,
        new_message: Content | None = None,
        invocation_id: str | None = None,
        *,
        trace_parent: str | None = None,
        **options: Any,
    ) -> AsyncIterator[Event]:
        """Start (text message), resume (FunctionResponse message) or re-drive
        (``invocation_id`` without a message) an invocation; yield its events.

        ``on_loaded(invocation_id, projection)`` is called just before the
        turn's first write with a copy of the invocation's projection as the
        turn found it (what a caller folding the yielded events starts from:
        ``hitl resume`` prints with it instead of loading the invocation again).
        ``on_stored(stored)`` is called with each event's stored form (its seq)
        just before the event is yielded (the console applies a write's events
        as they come instead of reading them back).

        Raises, before writing anything: the ResumeRejected family for a bad
        answer; InvocationBusyError while another process runs the invocation;
        InvocationInterruptedError for an answer to an invocation that stopped
        mid-run (continue it first: re-drive it); InDoubtError for a re-drive
        that would re-execute nodes in doubt unless ``acknowledge_in_doubt``:
        ``True`` acknowledges the runs in doubt as this call reads them, a
        mapping (run path -> start position, :func:`engine.liveness.in_doubt_runs`)
        exactly the runs it names -- a worker passes the one its request
        recorded, so that a run in doubt since a later start is not covered.

        For workers (:mod:`engine.worker`): ``new_invocation_id`` is the id a
        start gives its new invocation (a start request names it, so that it
        is never started twice); ``only_mid_run`` makes a re-drive continue
        only an invocation left mid-run (an answer queued for a worker, a
        killed turn), refusing a FAILED one (NotRedrivableError), which only an
        operator re-drives -- checked under the lease, where it is authoritative;
        ``reads``: the session's user, the invocation and its lease as the
        worker's claim read them (:class:`~engine.store.workers.TurnReads`), not read again;
        ``answered``: an answer's interrupt rows and invocation as the caller read them
        for its checks (:func:`~engine.store.base.answer_reads` of this message's ids and
        ``invocation_id``), not read again; ``session_read``: a new invocation's session
        as the caller read it just before (False: it found none), not read again. The
        first write stays the authority over what these reads saw."""
        tr = telemetry.tracer()
        turn = self._run(user_id, session_id, new_message, invocation_id, **options)
        if tr is None:
            return turn
        if new_message is None:
            kind = "continue" if options.get("only_mid_run") else "redrive"
        elif new_message.function_responses:
            kind = "resume"
        else:
            kind = "start"
        return telemetry.traced_turn(
            turn, tr, kind=kind, app=self.app_name, session_id=session_id,
            invocation_id=invocation_id or options.get("new_invocation_id"), trace_parent=trace_parent,
        )

    async def _run(
        self,
        user_id: str,
        session_id: str,
        new_message: Content | None = None,
        invocation_id: str | None = None,
        *,
        state_delta: dict[str, Any] | None = None,
        operator: str | None = None,
        reason: str | None = None,
        acknowledge_in_doubt: bool | Acknowledgement = False,
        on_loaded: Callable[[str, Projection], None] | None = None,
        on_stored: Callable[[StoredEvent], None] | None = None,
        new_invocation_id: str | None = None,
        only_mid_run: bool = False,
        batch: str | None = None,
        settle: Settle | None = None,
        reads: TurnReads | None = None,
        answered: AnswerRead | None = None,
        session_read: Session | Literal[False] | None = None,
    ) -> AsyncIterator[Event]:
        """The turn itself (see :meth:`run`)."""
        target: ResumeTarget | None = None
        if new_message is not None and new_message.is_empty:
            raise EmptyMessageError()
        if invocation_id is not None:
            require_id(invocation_id, "the invocation id")
        last_seq: int | None = None  # a new invocation's first event expects the session unchanged
        create = False
        if new_message is None:
            if invocation_id is None:
                raise ValueError("pass new_message, or invocation_id to re-drive a failed invocation")
            user_id = reads.user_id if reads is not None else (await self.store.get_session(session_id)).user_id
            inv_id, kind = invocation_id, "redrive"
        elif new_message.function_responses:
            # The interrupt index names the session's user (and fails for a missing session).
            target = await validate_responses(self.store, session_id, new_message, invocation_id, read=answered)
            inv_id, kind = target.invocation_id, "resume"
            user_id = next(iter(target.records.values())).user_id
        elif invocation_id is None and has_capability(self.store, "create_in_first_write"):
            # A new session is created by the turn's first write, in its transaction.
            try:
                if session_read is False:
                    raise SessionNotFoundError(session_id)
                session = session_read if session_read is not None else await self.store.get_session(session_id)
                create, last_seq, user_id = False, session.last_seq, session.user_id
            except SessionNotFoundError:
                create, last_seq = True, 0
            inv_id, kind = new_invocation_id or new_id(), "start"
        else:
            session = await self._session(user_id, session_id, create=True)
            if invocation_id is not None:
                proj = await load_invocation(self.store, session_id, invocation_id)
                if proj.invocation_status(invocation_id) is NodeStatus.WAITING:
                    raise TextToWaitingInvocationError(invocation_id)
                raise ResumeRejected("a text message starts a new invocation; do not pass invocation_id")
            inv_id, kind, user_id, last_seq = new_invocation_id or new_id(), "start", session.user_id, session.last_seq
        early: Projection | None = None
        stopped = False
        ack: dict[str, int] = {}
        if kind != "start":
            early, stopped, ack = await self._refuse_early(
                session_id, inv_id, redrive=kind == "redrive", ack=acknowledge_in_doubt,
                loaded=target.loaded if target is not None else reads.loaded if reads is not None else None,
                reads=reads,
            )
        turn = _Turn(
            kind,
            session_id,
            user_id,
            inv_id,
            target,
            new_message,
            state_delta,
            operator,
            reason,
            ack,
            on_loaded,
            create,
            only_mid_run,
            batch,
        )
        box = _Lease(settle=settle)
        inv_ctx: InvocationContext | None = None
        try:
            owner = new_owner()
            seen = on_stored or (lambda _: None)
            # The common case: lease, first events, the root's start record and the
            # next start of a node that runs user code in one transaction (the first
            # write is deferred until then: only engine code runs before it). Also a
            # worker's continuation of an invocation that no live process holds
            # (only_mid_run and stopped: an answer is queued with its lease released,
            # so there is usually no lease row to take over; and what is in doubt in
            # ``early`` is so for real, the write proving ``early`` current).
            fast = early is None or not is_mid_run(early, inv_id) or (only_mid_run and stopped)
            done = False
            if has_capability(self.store, "acquire_and_append") and fast:
                inv_ctx, root = await self._open_fast(turn, early or Projection(), owner, last_seq, box)
                try:
                    async for event in self._drive(inv_ctx, box, root, seen):
                        yield event
                    done = True
                except _FirstWriteFailed as failed:
                    if not failed.retry:
                        raise failed.error from None
                    inv_ctx = None  # nothing was written: start again the long way
            if not done:
                if turn.create:  # not written by a fast first write: create the session the long way
                    await self.store.create_session(self.app_name, turn.user_id, session_id)
                    turn.create = False
                lease = await acquire_invocation_lease(
                    self.store, session_id, inv_id, ttl=self.lease_ttl, wait=self.lease_wait, owner=owner
                )
                box.attach(LeaseKeeper(self.store, lease, self.lease_ttl))
                proj = await catch_up(self.store, session_id, inv_id, early) if early is not None else Projection()
                inv_ctx, root = await self._open(turn, proj, box, last_seq)
                async for event in self._drive(inv_ctx, box, root, seen):
                    yield event
        finally:
            # Clean end (nothing written, or the root recorded how the turn ended):
            # delete the lease. Otherwise let it lapse now but keep the row, so the
            # invocation shows as interrupted mid-run at once.
            if box.keeper is not None:
                clean = inv_ctx is None or not is_mid_run(inv_ctx.projection, inv_id)
                await box.keeper.close(clean=clean)
        if inv_ctx is not None and box.first and inv_ctx.last_seq is not None:
            turn_from = box.first[0].seq - 1  # off the lease: the seek checkpoints
            await checkpoints.after_turn(self.store, session_id, turn_from, inv_ctx.last_seq)

    async def _refuse_early(
        self,
        session_id: str,
        invocation_id: str,
        *,
        redrive: bool,
        ack: bool | Acknowledgement,
        loaded: LoadedInvocation | None = None,
        reads: TurnReads | None = None,
    ) -> tuple[Projection, bool, dict[str, int]]:
        """Refuse an answer to an interrupted invocation, or an unacknowledged
        re-drive over nodes in doubt, before touching the lease: a refused
        action leaves the store exactly as it was (the checks are repeated
        under the lease, where they are authoritative). Returns the projection
        read, which the turn brings up to date under the lease (:func:`~engine.operator_actions.catch_up`),
        whether it showed the invocation stopped mid-run (no live lease), and
        the acknowledgement as runs (``True``: the runs in doubt in that read).
        ``loaded``: the invocation as read with the answer's interrupts (or by
        a worker's claim, with its lease: ``reads``)."""
        proj = await load_invocation(self.store, session_id, invocation_id, loaded)
        if redrive:
            check_redrivable(proj, invocation_id)  # before the lease: a refusal writes nothing
        else:
            check_not_cancelled(proj, invocation_id, "answer refused")
        mine = reads if reads is not None and reads.loaded.invocation_id == invocation_id else None
        stopped, _ = await stopped_mid_run(self.store, session_id, invocation_id, proj, read=mine)
        if ack is True:  # what this read shows in doubt (nothing is, while a process runs it)
            ack = in_doubt_runs(proj, invocation_id) if stopped else {}
        acked = dict(ack) if ack else {}
        if not stopped:
            return proj, False, acked  # not mid-run, or running right now: the lease decides (wait, then busy)
        if not redrive:
            raise InvocationInterruptedError(session_id, invocation_id, in_doubt_paths(proj, invocation_id))
        uncovered = unacknowledged(proj, invocation_id, acked)
        if uncovered:
            raise InDoubtError(session_id, invocation_id, uncovered, acknowledged=acked)
        return proj, True, acked

    # ------------------------------------------------------------ first write
    def _first_events(self, turn: _Turn, proj: Projection) -> list[Event]:
        """The turn's first events, checked against ``proj`` (current: read under
        the lease, or proven unchanged by the transaction that writes them)."""
        inv = turn.invocation_id
        if turn.on_loaded is not None:
            turn.on_loaded(inv, proj.fork())
        if turn.kind == "resume":
            assert turn.target is not None
            return answer_events(
                proj, turn.session_id, turn.target, turn.state_delta, turn.operator, turn.reason, turn.batch
            )
        if turn.kind == "redrive":
            check_redrivable(proj, inv)  # again, where it is authoritative
            if turn.only_mid_run and not is_mid_run(proj, inv):
                status = proj.invocation_status(inv)
                raise NotRedrivableError(
                    f"invocation {inv} is {status.value if status else 'empty'}, not mid-run: "
                    "a worker continues only an invocation left mid-run; nothing was written"
                )
            doubt = in_doubt_paths(proj, inv) if is_mid_run(proj, inv) else []
            uncovered = unacknowledged(proj, inv, turn.ack) if doubt else []
            if uncovered:  # in doubt since after the acknowledgement (or never acknowledged)
                raise InDoubtError(turn.session_id, inv, uncovered, acknowledged=turn.ack)
            meta = operator_metadata("redrive", turn.operator, turn.reason)
            if doubt:
                meta["in_doubt"] = doubt  # what the operator acknowledged (every one covered) may run twice
            return [Event(invocation_id=inv, author="user", state_delta=turn.state_delta, custom_metadata=meta)]
        return [Event(invocation_id=inv, author="user", content=turn.message, state_delta=turn.state_delta)]

    async def _plan_root(
        self, turn: _Turn, inv_ctx: InvocationContext, events: list[Event], *, folded: bool = False
    ) -> _Root | None:
        """What the turn runs at the root once ``events`` are applied (None: nothing,
        e.g. a partial answer to a leaf), and that run's start record -- written
        with ``events``, so the root's start costs no commit of its own.
        ``folded``: the turn's projection has ``events`` folded in already (read as it is)."""
        after = inv_ctx.projection
        if not folded:
            after = after.fork()
            for event in events:
                after.apply(event)
        inv = inv_ctx.invocation_id
        root = after.root(inv)
        root_ctx = Context.root(inv_ctx)
        if root is None:
            # The other invocations of the session, plus one: from the stored count,
            # which costs the same however many invocations the session has (it
            # already includes this one unless its first event is still to be written).
            count = 0 if turn.create else await self.store.invocation_count(inv_ctx.session_id)
            run_id = str(count + (turn.kind == "start"))
            runner = NodeRunner(self.workflow, root_ctx, run_id)
            return _Root(runner, runner.start_record(after.invocations[inv].message, resumed=False), after.invocations[inv].message, None)
        if root.status is NodeStatus.PENDING:
            runner = NodeRunner(self.workflow, root_ctx, root.run_id, prior_output=root.output)
            return _Root(runner, runner.start_record(root.input, resumed=True), root.input, root.resolved)
        return None

    def _context(self, turn: _Turn, proj: Projection, store: SessionStore) -> InvocationContext:
        inv_ctx = InvocationContext(
            store=store,
            app_name=self.app_name,
            user_id=turn.user_id,
            session_id=turn.session_id,
            invocation_id=turn.invocation_id,
            projection=proj,
            state={},
        )
        inv_ctx.buffered = True  # end records ride on the next write (_finish writes the last ones)
        inv_ctx.deadline_rules = self.deadline_rules
        return inv_ctx

    def _opened(
        self, inv_ctx: InvocationContext, box: _Lease, written: list[StoredEvent], state: dict[str, Any]
    ) -> None:
        """The turn's first events are stored: into the stream (their fold is in the projection already)."""
        # The state as of our first events (they carry their delta already); other
        # invocations of the session may have changed it since it was last read.
        inv_ctx.state.update(state)
        inv_ctx.last_seq = written[-1].seq
        box.first = written
        for stored in written:
            inv_ctx.queue.put_nowait(stored)

    async def _open_fast(
        self, turn: _Turn, proj: Projection, owner: str, last_seq: int | None, box: _Lease
    ) -> tuple[InvocationContext, _Root | None]:
        """Prepare the turn's first write -- the lease, the first events and the
        root's start record, in one transaction which also proves ``proj``
        current (no event of the invocation since it was read) -- and defer it
        to the turn's next write: the start of the first node that runs user
        code (or the turn's end), so that both cost one commit. Until then only
        engine code runs, on ``proj`` with the first events folded in at the seqs
        they are expected to get; refolded at their real seqs if other
        invocations of the session appended meanwhile. The write raises
        :class:`_FirstWriteFailed` into the turn when the lease is held or the
        invocation moved on: the caller then starts again the long way."""
        work = proj.fork()  # ``proj`` stays as read: a retry the long way catches it up
        inv_ctx = self._context(turn, work, _FencedStore(self.store, owner))
        events = self._first_events(turn, work)
        guess = (last_seq if last_seq is not None else proj.position) + 1
        for seq, event in enumerate(events, start=guess):
            work.apply(event, seq)
        root = await self._plan_root(turn, inv_ctx, events, folded=True)  # planned on ``work``: one fold, no copy
        first = [*events, *([root.start] if root else [])]
        if root is not None:
            work.apply(root.start, guess + len(events))

        async def first_write(more: list[Event]) -> list[StoredEvent]:
            try:
                lease, written, state = await require(self.store, AcquireAndAppend, "a turn's first write").acquire_and_append(
                    turn.session_id,
                    turn.invocation_id,
                    [*first, *more],
                    owner=owner,
                    ttl=self.lease_ttl,
                    expected_seq=last_seq,
                    invocation_after=None if turn.kind == "start" else proj.position,
                    **({"create": (self.app_name, turn.user_id)} if turn.create else {}),
                )
            except asyncio.CancelledError:
                raise
            except InvocationBusyError as exc:
                raise _FirstWriteFailed(exc, retry=True) from None
            except ConflictError as exc:
                # a new invocation: the session changed since it was read, as for any start
                raise _FirstWriteFailed(exc, retry=turn.kind != "start") from None
            except BaseException as exc:
                raise _FirstWriteFailed(exc, retry=False) from None
            turn.create = False
            box.attach(LeaseKeeper(self.store, lease, self.lease_ttl))
            head = written[: len(first)]
            if head[0].seq != guess:  # other invocations appended since: fold ours at their seqs
                refold = proj.fork()
                for stored in head:
                    refold.apply(stored.event, stored.seq)
                inv_ctx.projection = refold
            self._opened(inv_ctx, box, head, state)
            return written[len(first) :]

        inv_ctx.opener = first_write
        return inv_ctx, root

    async def _open(
        self, turn: _Turn, proj: Projection, box: _Lease, last_seq: int | None
    ) -> tuple[InvocationContext, _Root | None]:
        """Under the held lease: check, and write the first events with the root's start record."""
        assert box.keeper is not None
        store = _FencedStore(self.store, box.keeper.owner)
        inv_ctx = self._context(turn, proj, store)
        events = self._first_events(turn, proj)
        root = await self._plan_root(turn, inv_ctx, events)
        written = await store.append_events(turn.session_id, [*events, *([root.start] if root else [])], expected_seq=last_seq)
        for stored in written:
            proj.apply(stored.event, stored.seq)
        state = dict((await self.store.get_session(turn.session_id)).state)
        self._opened(inv_ctx, box, written, state)
        return inv_ctx, root

    # ---------------------------------------------------------------- drive
    async def _drive(
        self,
        inv_ctx: InvocationContext,
        box: _Lease,
        root: _Root | None,
        seen: Callable[[StoredEvent], None] = lambda _: None,
    ) -> AsyncIterator[Event]:
        inv = inv_ctx.invocation_id
        if root is None:  # e.g. a partial answer to a leaf: nothing runs
            await inv_ctx.flush()  # the first write, if it is still deferred
            for event in _stored_so_far(inv_ctx, seen):
                yield event
            return
        coro = root.runner.run(root.node_input, resume_inputs=root.resume_inputs, start_written=True)
        task = asyncio.ensure_future(coro)
        task.add_done_callback(lambda _: inv_ctx.queue.put_nowait(None))
        box.watch(task.cancel)  # another process took the invocation over: stop
        try:
            while (item := await inv_ctx.queue.get()) is not None:
                seen(item)
                yield item.event
            exc = task.exception() if not task.cancelled() else asyncio.CancelledError()
        finally:
            if not task.done():
                # Stopped from outside (Ctrl-C, a cancelled task, an abandoned stream):
                # not an operator's cancel. Write the end records held so far (runs
                # that did finish), then give up the lease, so the nodes' CANCELLED
                # records are refused and the invocation is left as it was,
                # interrupted mid-run, to be continued with a re-drive. (Before the
                # turn's first write, nothing is written: only engine code ran.)
                if inv_ctx.opener is None:
                    with contextlib.suppress(Exception):
                        await inv_ctx.flush()
                if box.keeper is not None:
                    await box.keeper.revoke()
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)
            inv_ctx.stop()  # what the stopped runs still hold is not written by the delay
        if isinstance(inv_ctx.failed_open, _FirstWriteFailed):
            raise inv_ctx.failed_open  # nothing was written, nothing was yielded
        if box.keeper is not None and box.keeper.lost is not None:
            raise box.keeper.lost
        try:
            await self._finish(inv_ctx, box)
        except Exception as err:
            if exc is None:
                raise
            raise err from exc
        for event in _stored_so_far(inv_ctx, seen):
            yield event
        if exc is not None:
            proj = inv_ctx.projection
            if isinstance(exc, NodeFailed) and not is_mid_run(proj, inv):
                own = proj.get(inv, exc.path)
                if own is not None and own.status is NodeStatus.FAILED and exc.original is not None:
                    # The failure that reached the root names its node (for a parallel
                    # worker: the lowest failed item, DESIGN.md 3.10), not the last to fail.
                    raise workflow_failed(exc) from exc
                leaf = failed_leaf(proj, inv) or (exc.path, exc.error_code, exc.error_message)
                raise WorkflowFailed(*leaf, exception=exc.original if exc.path == leaf[0] else None) from exc
            if isinstance(exc, NodeFailed):
                # The failure could not even be recorded (e.g. the store failed): say that.
                cause = store_error_in(exc)
                if cause is not None:
                    raise cause from exc
                raise workflow_failed(exc) from exc
            raise exc

    async def _finish(self, inv_ctx: InvocationContext, box: _Lease) -> None:
        """The turn's last write: the end records still held, the projection's
        snapshot and the lease's release, in one transaction when nothing else
        was appended to the session meanwhile (the events' seqs, which the
        snapshot states, are then known in advance); else the held records,
        then the release with the snapshot (written by ``keeper.close``).
        A first write still deferred (no user code ran) is made first, with
        what is held. Raises when the held records cannot be written (the
        lease is then still held, and the turn is left mid-run)."""
        if inv_ctx.opener is not None:
            await inv_ctx.flush()
        keeper = box.keeper
        assert keeper is not None
        inv = inv_ctx.invocation_id
        held = await inv_ctx.take_held()
        if held and inv_ctx.last_seq is not None:
            after = inv_ctx.projection.fork()
            for i, event in enumerate(held, start=inv_ctx.last_seq + 1):
                after.apply(event, i)
            snapshot = (after.position, after.snapshot_dict(inv))  # serialised by the write, before ``after`` changes
            await keeper.stop()
            write = partial(append_and_release, self.store)  # a worker's turn that settles: with its request's finish
            if box.settle and not is_mid_run(after, inv) and (both := capability(self.store, AppendAndSettle)):
                write = partial(both.append_and_settle, settle=box.settle)  # (settle.deleted says it did)
            try:
                written = await write(
                    inv_ctx.session_id, inv, held, owner=keeper.owner, expected_seq=inv_ctx.last_seq, snapshot=snapshot
                )
            except ConflictError:
                pass  # another invocation of the session appended meanwhile: two writes
            else:
                keeper.released()
                # ``after`` is the projection with these very events folded at the seqs they
                # got (the write expected ``last_seq``): it is the turn's, with no second fold.
                inv_ctx.projection = after
                inv_ctx.applied(written, folded=True)
                return
        await inv_ctx.flush(held)
        # Written by keeper.close, in the transaction that releases the lease.
        keeper.snapshot = (inv_ctx.projection.position, inv_ctx.projection.compact(inv).to_dict())


def _stored_so_far(inv_ctx: InvocationContext, seen: Callable[[StoredEvent], None]) -> Iterator[Event]:
    """The turn's stored events not streamed yet (each told to ``seen`` first)."""
    while not inv_ctx.queue.empty():
        item = inv_ctx.queue.get_nowait()
        if item is not None:  # None: the turn's task ended
            seen(item)
            yield item.event
