"""Leaving turns to workers: the operator's side (the workers' is engine.worker).

A process without an app's code (an operator's console, ``hitl resume`` on a
laptop) still answers, re-drives and starts, through the stored JSON Schemas
and the store alone; a :class:`~engine.worker.Worker` that has the code runs
the turn:

* :func:`queue_answer` -- validate an answer (the one validation,
  :func:`engine.resume.validate_responses`), append it under the invocation's
  lease with the completion records it implies (:func:`engine.operator_actions.answer_events`,
  the very events the in-process resume writes first), and leave a ``continue``
  request when it unblocks anything -- in ONE transaction
  (``store.append_and_queue``): the lease is taken, the events appended, the
  request added and the lease released together. So an answer is never stored
  without its request (nothing is stranded), a request never visible before
  its answer, and a worker woken by the request finds the lease free (it does
  not see a held lease, hand the request back and wait). Only when another
  turn holds the lease, or wrote since the read, does it take the lease the
  long way (waiting up to ``lease_wait``) and write the same transaction.
* :func:`request_redrive` -- an operator's re-drive (maybe acknowledging nodes
  in doubt) through a worker, refused up front like the real one.
* :func:`request_start` -- a new invocation a worker starts; the request names
  its invocation id.
* :func:`live_workers` / :func:`worker_notice` -- who serves an app now, and
  the line an operator sees when nobody does ("stored; no worker for refunds
  is alive").
* :func:`follow` -- wait for the turn a worker runs, event by event, until
  the invocation settles (not mid-run and no request left).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from . import telemetry
from .errors import ConflictError, HitlError, InDoubtError, InvocationBusyError, ResumeRejected
from .liveness import DEFAULT_LEASE_TTL, DEFAULT_LEASE_WAIT, LeaseKeeper, acquire_invocation_lease, is_mid_run
from .models import Content, new_id
from .outcome import Outcome, Step
from .outcome import refused as _refused
from .owners import new_owner
from .store.capabilities import WorkerQueue, capability, require
from .store.workers import TurnRequest, WorkerRecord

if TYPE_CHECKING:
    from .models import StoredEvent
    from .permissions import Policy
    from .projection import Projection
    from .store.base import SessionStore

__all__ = ["follow", "live_workers", "queue_answer", "request_redrive", "request_start", "worker_notice"]


async def live_workers(store: SessionStore, app_name: str | None = None) -> list[WorkerRecord]:
    """The live workers (serving ``app_name``, when given)."""
    if (q := capability(store, WorkerQueue)) is None:
        return []
    now = time.time()
    return [w for w in await q.list_workers() if w.live(now) and (app_name is None or app_name in w.apps)]


async def worker_notice(store: SessionStore, app_name: str) -> str | None:
    """None while a worker serves ``app_name``; else the line saying the turn waits."""
    if await live_workers(store, app_name):
        return None
    return f"stored; no worker for {app_name} is alive: the turn runs when one starts (hitl worker --app {app_name}=...)"


@telemetry.action("answer", via="worker")
async def queue_answer(
    store: SessionStore,
    session_id: str,
    answers: dict[str, Any],
    invocation_id: str | None = None,
    *,
    operator: str | None = None,
    reason: str | None = None,
    state_delta: dict[str, Any] | None = None,
    lease_wait: float = DEFAULT_LEASE_WAIT,
    on_step: Callable[[Step], None] | None = None,
    batch: str | None = None,
    force: bool = False,
    policy: Policy | None = None,
) -> Outcome:
    """Answer ``answers`` without the app's code and leave the turn to a worker.

    Refusals are those of the in-process answer (nothing written), kept in
    :attr:`Outcome.error`. ``Outcome.after`` is the invocation with the answer
    applied; it is mid-run (root PENDING) when a worker has a turn to run.
    ``batch``: the bulk answer (:mod:`engine.bulk`) this one is part of, recorded on the answer."""
    from .operator_actions import answer_events, catch_up
    from .resume import load_invocation, validate_responses

    outcome = Outcome("answer", session_id, invocation_id, operator, reason, answered=list(answers))
    from .answer_gate import gated  # owner, who may answer, approvals (as the in-process answer)

    if (stop := await gated(outcome, store, answers, force=force, policy=policy, batch=batch)) is not None:
        return stop
    try:
        session = await store.get_session(session_id)
        target = await validate_responses(store, session_id, Content.from_responses(answers), invocation_id)
        inv = outcome.invocation_id = target.invocation_id
        proj = await load_invocation(store, session_id, inv)
        answer_events(proj, session_id, target, state_delta, operator, reason, batch)  # refuse before writing
    except HitlError as exc:
        return _refused(outcome, exc)
    owner = new_owner()

    async def write(proj: Projection) -> list[StoredEvent]:
        """The answer, its request and the lease's release: one transaction."""
        outcome.before = proj.fork()
        events = answer_events(proj, session_id, target, state_delta, operator, reason, batch)
        after = proj.fork()
        for event in events:
            after.apply(event)
        request = None
        if is_mid_run(after, inv):  # the answer unblocks a turn: leave it to a worker
            request = TurnRequest(
                app_name=session.app_name, session_id=session_id, invocation_id=inv, kind="continue",
                payload=telemetry.trace_fields(), requested_at=time.time(),
            )
        return await require(store, WorkerQueue, "an answer left to a worker").append_and_queue(
            session_id, inv, events, owner=owner, invocation_after=proj.position, request=request
        )

    try:
        try:  # the common case: nobody holds the lease and nothing moved since the read
            written = await write(proj)
        except (InvocationBusyError, ConflictError):
            # Another turn holds the lease (wait for it, as the in-process answer does;
            # a dead holder's is taken over) or wrote since the read (read what is new).
            lease = await acquire_invocation_lease(store, session_id, inv, wait=lease_wait, owner=owner)
            keeper = LeaseKeeper(store, lease, DEFAULT_LEASE_TTL)
            try:
                written = await write(await catch_up(store, session_id, inv, proj))
                keeper.released()  # by the write's own transaction
            finally:
                await keeper.close(clean=True)
    except HitlError as exc:
        return _refused(outcome, exc)
    assert outcome.before is not None  # write() set it before it wrote
    outcome.after = outcome.before.fork()
    for stored in written:
        outcome.fold(stored, on_step)
    return outcome


@telemetry.action("redrive", via="worker")
async def request_redrive(
    store: SessionStore,
    session_id: str,
    invocation_id: str,
    *,
    acknowledge_in_doubt: bool | Iterable[str] = False,
    operator: str | None = None,
    reason: str | None = None,
) -> TurnRequest:
    """Leave an operator's re-drive to a worker. Refused up front as the real
    re-drive would be (not re-drivable, cancelled, nodes in doubt without the
    acknowledgement); a request held for nodes in doubt is replaced by this one.

    ``acknowledge_in_doubt``: ``True`` acknowledges the runs in doubt as read
    here, a list of paths the ones the operator saw (refused when another is in
    doubt). The request records them with the start each is in doubt since
    (:func:`engine.liveness.in_doubt_runs`): the worker that runs it -- or the
    one that continues it after that one died -- re-runs those runs once, never
    a run that went in doubt later."""
    from .liveness import in_doubt_runs, stopped_mid_run
    from .operator_actions import check_redrivable
    from .resume import load_invocation

    session = await store.get_session(session_id)
    proj = await load_invocation(store, session_id, invocation_id)
    check_redrivable(proj, invocation_id)
    stopped, _ = await stopped_mid_run(store, session_id, invocation_id, proj)
    doubt = in_doubt_runs(proj, invocation_id) if stopped else {}
    if acknowledge_in_doubt is True:
        ack = doubt
    else:
        named = set(acknowledge_in_doubt or ())
        ack = {path: pos for path, pos in doubt.items() if path in named}
    missing = sorted(set(doubt) - set(ack))
    if missing:
        raise InDoubtError(session_id, invocation_id, missing, acknowledged=ack)
    request = TurnRequest(
        app_name=session.app_name, session_id=session_id, invocation_id=invocation_id, kind="redrive",
        payload={"ack": ack, "operator": operator, "reason": reason, **telemetry.trace_fields()},
        requested_at=time.time(),
    )
    await require(store, WorkerQueue, "a re-drive left to a worker").request_turn(request)
    return request


@telemetry.action("start", via="worker")
async def request_start(
    store: SessionStore,
    app_name: str,
    session_id: str,
    text: str,
    *,
    user_id: str = "user",
    state_delta: dict[str, Any] | None = None,
    operator: str | None = None,
    reason: str | None = None,
) -> str:
    """Leave a new invocation to a worker of ``app_name``: returns the
    invocation id the start will have. The session is created by the start
    when it does not exist; one of another app is refused."""
    from .errors import SessionNotFoundError

    if not text or not text.strip():
        raise ResumeRejected("a start needs a message text; nothing was written")
    try:
        session = await store.get_session(session_id)
    except SessionNotFoundError:
        pass
    else:
        if session.app_name != app_name:
            raise ResumeRejected(
                f"session {session_id} belongs to app {session.app_name!r}, not {app_name!r}; nothing was written"
            )
        user_id = session.user_id
    inv = new_id()
    await require(store, WorkerQueue, "a start left to a worker").request_turn(
        TurnRequest(
            app_name=app_name, session_id=session_id, invocation_id=inv, kind="start",
            payload={"user_id": user_id, "text": text, "state_delta": state_delta, "operator": operator,
                     "reason": reason, **telemetry.trace_fields()},
            requested_at=time.time(),
        )
    )
    return inv


async def follow(
    store: SessionStore,
    session_id: str,
    invocation_id: str,
    *,
    after_seq: int = 0,
    timeout: float | None = None,
    on_event: Callable[[StoredEvent], None] | None = None,
) -> str:
    """Follow the invocation's events after ``after_seq`` until it settles:
    not mid-run and no turn request left for it. Returns ``settled``,
    ``timeout`` (the turn is still queued or running: nothing failed) or the
    request's ``held`` reason (nodes in doubt wait for an acknowledged re-drive)."""
    from .errors import InvocationNotFoundError, SessionNotFoundError
    from .resume import load_invocation
    from .waker import Waker

    waker = Waker(store)
    await waker.start()
    loop = asyncio.get_running_loop()
    deadline = None if timeout is None else loop.time() + timeout
    seq = after_seq
    try:
        while True:
            try:
                news = await store.invocation_events(session_id, invocation_id, after_seq=seq)
            except SessionNotFoundError:
                news = []  # a start request whose start has not created the session yet
            for stored in news:
                seq = stored.seq
                if on_event is not None:
                    on_event(stored)
            pending = await require(store, WorkerQueue, "following a worker's turn").get_turn_request(
                session_id, invocation_id
            )
            if pending is None:
                try:
                    proj = await load_invocation(store, session_id, invocation_id)
                except (InvocationNotFoundError, SessionNotFoundError):
                    proj = None
                if proj is not None and not is_mid_run(proj, invocation_id) and proj.position <= seq:
                    return "settled"
            elif pending.held is not None:
                return pending.held
            if deadline is not None and loop.time() >= deadline:
                return "timeout"
            await waker.wait(1.0 if deadline is None else min(1.0, max(deadline - loop.time(), 0.0)))
    finally:
        await waker.close()
