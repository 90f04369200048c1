"""Workers: processes that run the turns of the apps they have code for.

An operator without an app's code answers through the stored JSON Schemas
(:func:`engine.handoff.queue_answer`): the answer is appended and a *turn
request* is left in the store (:mod:`engine.store.workers`), in one
transaction that also releases the invocation's lease. A :class:`Worker`
serves those requests for its apps:

1. it claims the oldest runnable request -- not held, unclaimed or its claim
   expired -- in one store call (``claim_next_turn``: on PostgreSQL one
   ``UPDATE ... FOR UPDATE SKIP LOCKED ... RETURNING`` statement, so workers
   woken together each take a different request instead of racing a
   compare-and-swap on the same one); on PostgreSQL the same statement reads
   what the turn's Runner would read next -- the session's user, the
   invocation's snapshot and events, its lease (``claim_and_read``,
   :class:`~engine.store.workers.TurnReads`) -- so a continuation is three round
   trips (claim, first write, last write); a request whose claimer died (SIGKILL)
   is taken over at the next heartbeat on the same host (its pid is gone),
   else when the claim expires; with a backlog, a turn's last write also claims
   the worker's next request, in its statement (``Settle.claim_next``: on
   PostgreSQL), so the turn after it costs no claim round trip of its own (two
   round trips, not three) -- an ordinary claim, recovered as any other;
2. it runs the turn with the one :class:`~engine.runner.Runner` (the same
   semantics as the in-process resume): a continuation is a re-drive that
   continues only an invocation left mid-run (``only_mid_run``); a start
   request starts the invocation id it names; the Runner takes and renews the
   invocation's lease (waiting up to ``lease_wait`` for a live holder rather
   than handing the request back), and its appends are fenced by it -- a
   worker that lost the lease cannot write and its turn ends (LeaseLostError);
3. it deletes the request once the invocation is no longer mid-run, or hands
   it back at once when it was requested again while the turn ran
   (``finish_turn_request``) -- in the turn's last write when that write
   settles the invocation (``append_and_settle``: the events, the lease's
   release and the request's finish, one commit), else on its own. A turn killed mid-run leaves the request, so
   another worker continues it -- unless a node is in doubt (started, no end
   record): the Runner refuses that re-drive (InDoubtError) and the request is
   *held* until an operator sends an acknowledged re-drive
   (:func:`engine.handoff.request_redrive`).

Interrupted turns that no request names (decided here): a turn run in some
process's own Runner -- ``hitl resume --via local``, a console with the code --
that was SIGKILLed or stopped mid-run leaves no request. Every heartbeat a
worker sweeps for them (:meth:`Worker._sweep`): the store's index of running
invocations of its apps that no request names (``interrupted_turns``: sessions
by status, then their running invocations -- the cost grows with what runs now,
never with history), keeps those whose lease is not live
(:func:`engine.liveness.lease_is_live`: expired, or its owner provably dead),
and leaves a ``continue`` request for each (``adopt_turn``, which never
replaces an existing request). From there it is an ordinary request: claimed by
exactly one worker, continued when no node is in doubt, otherwise held with
the in-doubt paths for an operator's acknowledged re-drive. The in-process
resume path is untouched (no request is written at turn start: its statement
and commit budgets stay as they are); the price is latency, at most one
heartbeat after the lease lapses -- at once on the dead owner's host, after the
lease's expiry elsewhere.

Version skew: a worker records its code's :func:`graph_version` for each
invocation it runs first (``invocation_graph``); a request for an invocation
recorded under another version is refused with a note saying both versions,
and left for a worker that has that code.

Waking: :class:`Waker` -- PostgreSQL ``LISTEN``, where a worker listens on a
channel of its own that announces only requests that became runnable (it is
neither woken nor sent anything for every append of every turn), a poll of
SQLite's ``PRAGMA data_version`` (changes when another connection commits)
every few milliseconds, never a fixed long sleep.

Warm-up: before its first claim, a worker has the store make the connections
its turns will use ready (``WarmTurns``, PostgreSQL: the turn's statements run
once on a scratch session, rolled back -- a new server backend compiles and
plans the turn's PL/pgSQL functions at their first call, ~20 ms, which the first
turns of every connection of every process paid); again when idle, if the pool
closed connections meanwhile.

Heartbeat: every ``heartbeat`` seconds the worker rewrites its row (host, pid,
apps, versions, current turns), renews its claims and sweeps (above). SIGTERM
(:meth:`Worker.drain`) stops claiming, hands back what has not started, lets
the current turns end within ``drain_timeout`` (then stops them: they are left
interrupted, as after Ctrl-C), deletes its row and returns.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import logging
import os
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from . import metrics
from .errors import (
    HitlError,
    InDoubtError,
    InvocationBusyError,
    InvocationCancelledError,
    InvocationNotFoundError,
    LeaseLostError,
    NotRedrivableError,
    SessionNotFoundError,
    WorkflowFailed,
)
from .liveness import DEFAULT_LEASE_TTL, is_mid_run, lease_is_live
from .models import Content
from .nodes import BaseNode
from .owners import new_owner, owner_live
from .store.base import SessionStore
from .store.capabilities import ClaimAndRead, WarmTurns, WorkerQueue, capability, require
from .store.workers import ClaimNext, Settle, TurnReads, TurnRequest, WorkerRecord
from .waker import Waker, pool_key  # noqa: F401 (pool_key re-exported: engine.worker is where callers find it)

log = logging.getLogger(__name__)

__all__ = ["Waker", "Worker", "graph_version"]

HEARTBEAT = 2.0
"""Seconds between a worker's heartbeats (its row is stale after three missed)."""


# ------------------------------------------------------------------ versions
def _shape(node: BaseNode) -> Any:
    from .workflow import Workflow

    kind = type(node).__name__
    fn = getattr(node, "fn", None) or getattr(node, "func", None)
    shape: dict[str, Any] = {"name": node.name, "kind": kind, "rerun": bool(node.rerun_on_resume)}
    if fn is not None:
        shape["fn"] = f"{getattr(fn, '__module__', '')}.{getattr(fn, '__qualname__', '')}"
    if isinstance(node, Workflow):
        shape["nodes"] = [_shape(n) for _, n in sorted(node.nodes.items())]
        shape["edges"] = sorted(
            [src, dst, repr(route)] for src, outs in node.succ.items() for dst, route in outs
        )
    for attr in ("node", "child"):  # a parallel worker's child
        inner = getattr(node, attr, None)
        if isinstance(inner, BaseNode):
            shape[attr] = _shape(inner)
    return shape


def graph_version(node: BaseNode) -> str:
    """A short hash of a workflow's graph: node names, kinds, functions, edges,
    ``rerun_on_resume``, nested workflows. Code edits inside a node body that
    keep the graph do not change it; a renamed, added or rewired node does."""
    text = json.dumps(_shape(node), sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:12]


# ------------------------------------------------------------------ the worker
@dataclass
class TurnResult:
    """What a worker did with one request (for tests and the log)."""

    request: TurnRequest
    outcome: str
    """``ran`` (the turn ran to a settled state), ``failed`` (a node failed: recorded),
    ``settled`` (nothing to run: already settled), ``held`` (nodes in doubt),
    ``refused`` (another graph version), ``busy``, ``lost`` (fenced), ``stopped``."""
    detail: str = ""
    events: int = 0


@dataclass
class _Running:
    request: TurnRequest
    task: asyncio.Task[TurnResult] = field(init=False)
    """Set right after: the turn's coroutine takes this record."""
    started: bool = False
    """The turn wrote its first event (before that, a drain hands it back)."""
    since: float = field(default_factory=time.monotonic)
    """When it was claimed (the turn-duration histogram)."""
    settle: Settle | None = None
    """The turn's request finish, which may claim the worker's next request with it."""
    news: int = 0
    """The waker's news count when the turn began (:attr:`Worker._quiet`)."""


@dataclass
class Worker:
    """Serves the turn requests of ``apps`` (app name -> root workflow)."""

    store: SessionStore
    apps: dict[str, BaseNode]
    concurrency: int = 4
    lease_ttl: float = DEFAULT_LEASE_TTL
    heartbeat: float = HEARTBEAT
    drain_timeout: float = 30.0
    lease_wait: float = 10.0
    """Seconds a turn waits for the invocation's lease held by another live process
    (rare: an answer is queued with its lease released) before handing the request back."""
    name: str | None = None
    on_result: Callable[[TurnResult], None] | None = None
    deadline_rules: tuple[Any, ...] = ()
    """hitl.toml ``[[deadlines]]``, stored with the interrupts this worker's turns raise."""
    deadlines: Any = True
    """Fire due deadline timers of every app at start and every heartbeat
    (:class:`engine.deadline_sweep.DeadlineSweep`; True: one with defaults, False: none)."""
    worker_id: str = field(default_factory=new_owner)
    versions: dict[str, str] = field(init=False)
    _running: dict[tuple[str, str], _Running] = field(default_factory=dict, init=False)
    _refused: dict[tuple[str, str], float] = field(default_factory=dict, init=False)
    """(session, invocation) -> the ``requested_at`` of the request this worker refused
    (another graph version): not claimed again until it is requested again."""
    _runners: dict[str, Any] = field(default_factory=dict, init=False)
    """app -> its Runner, built at its first turn and kept (stateless between turns)."""
    _stopping: asyncio.Event | None = field(default=None, init=False)
    _waker: Waker | None = field(default=None, init=False)
    _queue: WorkerQueue | None = field(default=None, init=False)
    _claims: ClaimAndRead | None = field(default=None, init=False)
    """The store's claim that also reads the turn (None: it has none), looked up once."""
    _quiet: int | None = field(default=None, init=False)
    """A turn's last write claimed and found nothing runnable: the waker's news count
    when that turn began. Until news since, the next fill claims nothing (it would
    find nothing: what became runnable since was announced, to the pool's leader)."""
    _handbacks: set[asyncio.Task[None]] = field(default_factory=set, init=False)
    """Requests claimed with a turn's last write while draining, being handed back."""
    started_at: float = field(default_factory=time.time, init=False)
    state: str = field(default="running", init=False)

    def __post_init__(self) -> None:
        self.versions = {app: graph_version(node) for app, node in self.apps.items()}
        self.name = self.name or f"worker {socket.gethostname()}:{os.getpid()}"
        self._claims = capability(self.store, ClaimAndRead)

    @property
    def queue(self) -> WorkerQueue:
        """The store's worker queue (StoreError: a store without one cannot serve workers),
        looked up once: every claim, beat and sweep goes through it."""
        if self._queue is None:
            self._queue = require(self.store, WorkerQueue, "a worker")
        return self._queue

    # ------------------------------------------------------------ lifecycle
    def stop(self) -> None:
        """Ask :meth:`run` to drain and return (SIGTERM, Ctrl-C)."""
        self.state = "draining"
        if self._stopping is not None:
            self._stopping.set()
        for running in self._running.values():  # their last writes claim nothing more
            if running.settle is not None:
                running.settle.claim_next = None
        if self._waker is not None:
            self._waker.poke()

    async def run(self) -> None:
        """Serve requests until :meth:`stop`; then drain and return."""
        self._stopping = asyncio.Event()
        if self.state == "draining":
            self._stopping.set()
        self._waker = Waker(self.store, queue_only=True, pool=sorted(self.apps))
        await self._waker.start()
        await self._warm()
        await self._beat()
        await self._sweep()
        beat = asyncio.ensure_future(self._beat_loop())
        try:
            while not self._stopping.is_set():
                next_check = await self._fill()
                if self._stopping.is_set():
                    break
                self._waker.set_room(len(self._running) < self.concurrency)
                await self._waker.wait(next_check)
            self._waker.set_room(False)  # draining: hand the lead on
            await self._drain()
        finally:
            beat.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await beat
            await self._waker.close()
            with contextlib.suppress(Exception):
                await self.queue.drop_worker(self.worker_id)

    def record(self) -> WorkerRecord:
        now = time.time()
        return WorkerRecord(
            worker_id=self.worker_id,
            host=socket.gethostname(),
            pid=os.getpid(),
            apps=sorted(self.apps),
            versions=self.versions,
            current=[f"{s}/{i}" for s, i in self._running],
            state=self.state,
            started_at=self.started_at,
            heartbeat_at=now,
            stale_after=self.heartbeat * 3,
        )

    async def _beat(self) -> None:
        await self.queue.put_worker(self.record())

    async def _beat_loop(self) -> None:
        # Deadlines that passed while no process ran fire now -- beside the turns, not before them.
        await self._deadline_pass()
        while True:
            await asyncio.sleep(self.heartbeat)
            try:  # the worker's row and the claims of the turns it runs: one write
                await self.queue.put_worker(self.record(), renew=list(self._running), ttl=self.lease_ttl)
                if not self._draining:
                    await self._sweep()
                    await self._deadline_pass()
                    if not self._running:  # idle: connections the pool closed meanwhile are made ready again
                        await self._warm()
            except HitlError as exc:  # a locked or unreachable store: try at the next beat
                log.warning("worker heartbeat failed: %s", exc)
            except Exception as exc:  # noqa: BLE001 -- a driver's own error: a stopped heartbeat would read as a dead worker
                log.error("worker heartbeat failed (%s: %s); beating on", type(exc).__name__, exc)

    # ------------------------------------------------------------ claiming
    async def _fill(self) -> float:
        """Claim runnable requests up to the concurrency, oldest first, one store
        call each (``claim_next_turn``: on PostgreSQL one ``FOR UPDATE SKIP
        LOCKED`` statement, so racing workers never claim, or wait for, the same
        row); returns how long to wait at most before looking again."""
        quiet, self._quiet = self._quiet, None
        if quiet is not None and self._waker is not None and self._waker.news == quiet:
            return self.heartbeat  # the last write's claim found nothing, and nothing was announced since
        while len(self._running) < self.concurrency and not self._draining:
            skip = self._skip()
            reads: TurnReads | None = None
            try:
                if (both := self._claims) is not None:
                    claimed = await both.claim_and_read(
                        list(self.apps), self.worker_id, self.lease_ttl, skip=skip, versions=self.versions
                    )
                    req, reads = claimed if claimed is not None else (None, None)
                else:
                    req = await self.queue.claim_next_turn(
                        list(self.apps), self.worker_id, self.lease_ttl, skip=skip, versions=self.versions
                    )
            except HitlError as exc:
                log.warning("claiming a turn request failed: %s", exc)
                return 0.5
            if req is None:
                break
            if self._refuses(req):
                # claimed with a skip list read before this worker refused it (a refusal
                # landing while this claim was in flight): hand it back, run nothing
                await self._unclaim(req)
                continue
            self._start(req, reads)
        return self.heartbeat

    @property
    def _draining(self) -> bool:
        """The worker was told to stop: it claims nothing more."""
        return self._stopping is not None and self._stopping.is_set()

    def _refuses(self, req: TurnRequest) -> bool:
        """This worker refused ``req`` as requested then (a claim read its skip list
        before the refusal landed): it is handed back, never run here."""
        return self._refused.get((req.session_id, req.invocation_id)) == req.requested_at

    def _skip(self) -> set[tuple[str, str, float]]:
        """What a claim must pass over: the requests this worker refused, as requested then."""
        return {(sid, inv, at) for (sid, inv), at in self._refused.items()}

    def _claim_next(self) -> ClaimNext | None:
        """The claim a turn's last write makes for this worker's next turn (a backlog:
        no claim round trip of its own); None while draining or on a store without
        a claim that reads the turn (the turn then claims as :meth:`_fill` does)."""
        if self._claims is None or self._draining:
            return None
        return ClaimNext(list(self.apps), self.worker_id, self.lease_ttl, self._skip(), self.versions)

    async def _warm(self) -> None:
        """Before claiming (and when idle), the connections the turns will use run the
        turn's statements once, writing nothing (``WarmTurns``: PostgreSQL compiles
        and plans them on a new connection's first use, ~20 ms; not inside a turn)."""
        if (warms := capability(self.store, WarmTurns)) is None:
            return
        try:  # a connection for each turn, and one for the heartbeat
            await warms.warm_turns(self.concurrency + 1, sorted(self.apps), self.worker_id)
        except HitlError as exc:  # the turns then pay the first use themselves
            log.warning("warming the store's connections failed: %s", exc)

    def _start(self, req: TurnRequest, reads: TurnReads | None = None) -> None:
        key = (req.session_id, req.invocation_id)
        metrics.CLAIMS.inc(app=req.app_name)
        running = _Running(req)
        running.task = asyncio.ensure_future(self._serve(req, running, reads))
        running.task.add_done_callback(lambda _t: self._done(key))
        self._running[key] = running

    async def _sweep(self) -> None:
        """At heartbeat cadence, what no notification announces:

        * an invocation of our apps interrupted mid-run with no request for it --
          a turn run in some process's own Runner (``hitl resume --via local``,
          the console with the code) that was killed, or stopped by an error:
          the index's running invocations of our apps that no request names
          (``interrupted_turns``: sessions by status, then their running
          invocations -- the cost grows with what runs now, not with history),
          whose lease is not live (:func:`engine.liveness.lease_is_live`: expired,
          or its owner provably dead). Each gets a ``continue`` request
          (``adopt_turn``: never replacing one), claimed like any other, so one
          worker runs it; the Runner continues it only when no node is in doubt,
          else the request is *held* (``hitl workers`` and ``follow`` say why)
          until an operator's acknowledged re-drive;
        * a request claimed by a worker that is provably dead (its host, its pid
          gone) before its claim expires: taken over (compare-and-swap);
        * a held request whose invocation is no longer mid-run (an operator
          re-drove it in their own process): deleted."""
        apps = list(self.apps)
        now = time.time()
        for app, sid, inv, lease in await self.queue.interrupted_turns(apps):
            if lease_is_live(lease, now):
                continue  # a turn runs it right now
            request = TurnRequest(
                app_name=app, session_id=sid, invocation_id=inv, kind="continue", requested_at=now,
                payload={"reason": f"continued by {self.name}: its turn was interrupted mid-run"},
            )
            if await self.queue.adopt_turn(request):
                log.info("adopted %s/%s: interrupted mid-run, no request for it", sid, inv)
                if self._waker is not None:
                    self._waker.poke()
        for req in await self.queue.turn_requests(apps, claimed=True):  # (not the backlog: it is claim_next_turn's)
            if len(self._running) >= self.concurrency:
                break
            key = (req.session_id, req.invocation_id)
            if req.held is not None or req.claimed_by in (None, self.worker_id) or key in self._running:
                continue
            if req.claimed_until is None or req.claimed_until <= now or owner_live(req.claimed_by, req.claimed_until, now):
                continue  # expired claims are claim_next_turn's; live ones are left alone
            won = await self.queue.claim_turn_request(
                req.session_id, req.invocation_id, self.worker_id, self.lease_ttl, expected=req.claimed_by
            )
            if won:
                self._start(req.model_copy(update={"claimed_by": self.worker_id}))
        for req in await self.queue.settled_held_requests(apps):
            await self.queue.drop_held_request(req)

    async def _deadline_pass(self) -> None:
        """One pass of the deadline sweep (its failures are logged; the next beat tries again)."""
        if self.deadlines is False:
            return
        if self.deadlines is True:
            from .deadline_sweep import DeadlineSweep

            self.deadlines = DeadlineSweep(self.store, owner=self.worker_id)
        try:
            done = await self.deadlines.run_once()
        except HitlError as exc:
            log.warning("deadline sweep failed: %s", exc)
            return
        for name, outcome in done.fired:
            log.info("deadline %s: %s", name, outcome)
        if done.fired and self._waker is not None:
            self._waker.poke()  # a default answer may have left a turn here: this process's own write wakes no one

    def _done(self, key: tuple[str, str]) -> None:
        running = self._running.pop(key, None)
        if running is not None and not running.task.cancelled():
            if running.task.exception() is not None:
                log.error("a turn of %s/%s failed in the worker", *key, exc_info=running.task.exception())
            elif self.on_result is not None:
                self.on_result(running.task.result())
        settle = running.settle if running is not None else None
        if settle is not None and settle.claimed is not None:
            if self._next(*settle.claimed):
                # The slot is taken again at once: the loop has nothing to claim or to say
                # about room (full before, full now), so it is not woken -- with a backlog
                # that is one wake-up, wait and timer fewer per turn.
                return
        elif running is not None and settle is not None and settle.claim_ran and settle.deleted:
            # nothing was runnable when the last write claimed (its request deleted, not handed back)
            self._quiet = running.news if self._quiet is None else min(self._quiet, running.news)
        if self._waker is not None:
            self._waker.poke(news=False)  # a slot is free (the loop then says whether there is room)

    def _next(self, req: TurnRequest, reads: TurnReads | None) -> bool:
        """Run the request a turn's last write claimed for this worker, in the slot
        that turn left (True); draining, or refused meanwhile, it is handed back at once."""
        if self._draining or self._refuses(req):
            task = asyncio.ensure_future(self._unclaim(req))
            self._handbacks.add(task)
            task.add_done_callback(self._handbacks.discard)
            return False
        self._start(req, reads)
        return True

    # ------------------------------------------------------------ serving
    async def _serve(self, req: TurnRequest, running: _Running, reads: TurnReads | None = None) -> TurnResult:
        from .resume import load_invocation
        from .runner import Runner

        sid, inv = req.session_id, req.invocation_id
        version = self.versions[req.app_name]
        runner = self._runners.get(req.app_name)
        if runner is None:  # one per app for the worker's life: a turn builds nothing of its own
            runner = self._runners[req.app_name] = Runner(
                req.app_name, self.apps[req.app_name], self.store, lease_ttl=self.lease_ttl,
                lease_wait=self.lease_wait, deadline_rules=self.deadline_rules,
            )
        pay = req.payload
        count = 0
        # the turn's last write finishes the request when the turn settles the invocation
        settle = running.settle = Settle(self.worker_id, req.requested_at, claim_next=self._claim_next())
        running.news = self._waker.news if self._waker is not None else 0

        def stored(_s: Any) -> None:
            running.started = True

        try:
            proj = None
            if req.kind == "start":  # started already (a worker died after the start)? then continue it
                with contextlib.suppress(InvocationNotFoundError, SessionNotFoundError):
                    proj = await load_invocation(self.store, sid, inv)
            # recorded by the claim (claim_next_turn); a request taken over from a dead
            # worker (claim_turn_request) records and reads it here
            recorded = req.graph or await self.queue.invocation_graph(sid, inv, version)
            if recorded != version:
                note = (
                    f"refused by {self.name}: invocation {inv} was started under graph version {recorded} "
                    f"of {req.app_name}, this worker runs version {version}; run a worker with that code"
                )
                self._refused[(sid, inv)] = req.requested_at
                await self._unclaim(req, note=note)
                return self._result(TurnResult(req, "refused", note))
            if proj is None and req.kind == "start":
                content = Content.from_text(str(pay.get("text", "")))
                turn = runner.run(
                    str(pay.get("user_id", "user")), sid, content, state_delta=pay.get("state_delta"),
                    new_invocation_id=inv, on_stored=stored, trace_parent=pay.get("traceparent"), settle=settle,
                )
            else:
                if proj is not None and not is_mid_run(proj, inv):
                    await self._drop(req)  # the start's turn ran (its worker died before the delete)
                    return self._result(TurnResult(req, "settled", "nothing to run"))
                # A continuation: the Runner reads the invocation once and refuses what
                # is not mid-run any more (a turn ran since: NotRedrivableError, below).
                turn = runner.run(
                    "", sid, None, inv,
                    operator=pay.get("operator") or self.name,
                    reason=pay.get("reason") or f"continued by {self.name}",
                    # the runs the operator acknowledged, each at the start they saw
                    # (an older request's bare True covers nothing: held, asked again)
                    acknowledge_in_doubt=ack if isinstance(ack := pay.get("ack"), dict) else False,
                    only_mid_run=req.kind != "redrive",
                    on_stored=stored,
                    trace_parent=pay.get("traceparent"),
                    settle=settle,
                    reads=reads if req.kind != "start" else None,  # as the claim read them (one round trip)
                )
            outcome = "ran"
            try:
                async for _ in turn:
                    count += 1
            except WorkflowFailed as exc:
                outcome, detail = "failed", str(exc)
            else:
                detail = ""
        except (NotRedrivableError, InvocationCancelledError, InvocationNotFoundError, SessionNotFoundError) as exc:
            await self._drop(req)
            return self._result(TurnResult(req, "settled", str(exc)))
        except InDoubtError as exc:
            held = (
                f"nodes in doubt ({', '.join(exc.paths) if hasattr(exc, 'paths') else exc}): "
                "waiting for an acknowledged re-drive"
            )
            await self._unclaim(req, held=held, note=str(exc))
            return self._result(TurnResult(req, "held", str(exc)))
        except InvocationBusyError as exc:
            await self._unclaim(req)
            return self._result(TurnResult(req, "busy", str(exc)))
        except LeaseLostError as exc:
            await self._unclaim(req)
            return self._result(TurnResult(req, "lost", str(exc), count))
        except asyncio.CancelledError:
            with contextlib.suppress(Exception):
                await asyncio.shield(self._unclaim(req))
            raise
        except HitlError as exc:  # a store failure mid-turn: left mid-run for the next worker
            await self._unclaim(req, note=f"{self.name}: {exc}")
            return self._result(TurnResult(req, "stopped", str(exc), count))
        if settle.deleted is None:  # not finished by the turn's last write: finish it now
            await self._drop(req)
        return self._result(TurnResult(req, outcome, detail, count))

    async def _drop(self, req: TurnRequest) -> None:
        """Delete the request we hold, or hand it back at once when it was requested
        again meanwhile (an answer that came while the turn ran: its own turn is due)."""
        await self.queue.finish_turn_request(
            req.session_id, req.invocation_id, self.worker_id, req.requested_at
        )

    def _result(self, result: TurnResult) -> TurnResult:
        req = result.request
        running = self._running.get((req.session_id, req.invocation_id))
        metrics.TURNS.inc(app=req.app_name, kind=req.kind, outcome=result.outcome)
        if running is not None:
            metrics.TURN_SECONDS.observe(time.monotonic() - running.since, app=req.app_name, outcome=result.outcome)
        if result.outcome == "lost":
            metrics.LEASE_LOSSES.inc(app=req.app_name)
        log.info("%s %s/%s: %s %s", result.outcome, result.request.session_id, result.request.invocation_id,
                 result.request.kind, result.detail)
        return result

    async def _unclaim(self, req: TurnRequest, *, held: str | None = None, note: str | None = None) -> None:
        with contextlib.suppress(HitlError):
            await self.queue.unclaim_turn_request(
                req.session_id, req.invocation_id, self.worker_id, held=held, note=note
            )

    # ------------------------------------------------------------ draining
    async def _drain(self) -> None:
        """Hand back what has not written its first event; let the rest end
        within ``drain_timeout``; stop what is still running then."""
        await self._beat()
        for running in list(self._running.values()):
            if not running.started:
                running.task.cancel()
        tasks = [r.task for r in self._running.values()]
        if tasks:
            _, pending = await asyncio.wait(tasks, timeout=self.drain_timeout)
            for task in pending:
                task.cancel()
            if pending:
                await asyncio.wait(pending, timeout=5)
        if self._handbacks:  # requests claimed with the last writes that ended the turns
            await asyncio.wait(list(self._handbacks), timeout=5)
