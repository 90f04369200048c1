"""What an operator's action writes, and the checks it must pass first.

The answer's first events (:func:`answer_events`: the FR message with the
completion records of the runs it auto-completes), a cancel
(:func:`cancel_invocation`, DESIGN 3.11), the metadata recorded with each, and
the refusals an answer, a re-drive or a cancel meet. Used by the Runner's
turns and by :mod:`engine.handoff` (an answer or re-drive left to a worker),
so that both write and refuse the same way.
"""

from __future__ import annotations

from typing import Any

from .errors import InvocationCancelledError, InvocationInterruptedError, NotRedrivableError, require_id
from .liveness import (
    DEFAULT_LEASE_TTL,
    DEFAULT_LEASE_WAIT,
    LeaseKeeper,
    acquire_invocation_lease,
    in_doubt_paths,
    is_mid_run,
)
from .models import REDRIVABLE, Event, NodeInfo, NodeStatus
from .projection import Projection
from .resume import ResumeTarget, load_invocation
from .store.base import SessionStore


def operator_metadata(action: str, operator: str | None, reason: str | None, batch: str | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"action": action}
    if operator:
        meta["operator"] = operator
    if reason:
        meta["reason"] = reason
    if batch:
        meta["batch"] = batch  # a bulk answer's id: its audit rows tie the invocations together
    return meta


async def cancel_invocation(
    store: SessionStore,
    session_id: str,
    invocation_id: str,
    *,
    operator: str | None = None,
    reason: str | None = None,
    lease_wait: float = DEFAULT_LEASE_WAIT,
) -> Event:
    """Cancel a waiting, failed or interrupted invocation, for good (DESIGN 3.11):
    every unfinished run becomes CANCELLED, its open interrupts close, and later
    answers and re-drives are refused naming this cancel. Needs no workflow code.

    Checked before anything is written (a refused cancel leaves the file as it
    was): the id, that the invocation exists, is not completed and not cancelled
    already. A RUNNING turn in another process is never cancelled under its feet:
    cancel takes the invocation's lease, so while the turn holds it cancel waits
    up to ``lease_wait`` and then refuses (InvocationBusyError) -- let the turn
    end (waiting or failed), then cancel. An interrupted turn (its lease lapsed)
    can be cancelled. Holding the lease while writing fences a turn that would
    start meanwhile, so cancel and re-drive never interleave."""
    require_id(invocation_id, "the invocation id")
    check_cancellable(await load_invocation(store, session_id, invocation_id), invocation_id)
    lease = await acquire_invocation_lease(store, session_id, invocation_id, wait=lease_wait)
    keeper = LeaseKeeper(store, lease, DEFAULT_LEASE_TTL)
    try:
        check_cancellable(await load_invocation(store, session_id, invocation_id), invocation_id)
        event = Event(
            invocation_id=invocation_id,
            author="user",
            custom_metadata=operator_metadata("cancel", operator, reason),
        )
        stored = await store.append_event(session_id, event, lease_owner=lease.owner)
        return stored.event
    finally:
        await keeper.close(clean=True)


async def fail_waiting(
    store: SessionStore,
    session_id: str,
    invocation_id: str,
    interrupt_id: str,
    raised_seq: int | None,
    *,
    error: str,
    message: str = "",
    operator: str | None = None,
    reason: str | None = None,
    lease_wait: float = DEFAULT_LEASE_WAIT,
) -> Event:
    """Fail the node waiting on ``interrupt_id`` with the error ``error`` (a
    deadline's ``fail``, :mod:`engine.deadlines`): one audited event, folded by
    the projection as if the node had raised it (DESIGN 3.5); the invocation is
    FAILED and a re-drive asks again. Written under the invocation's lease, as a
    cancel is; refused (AlreadyResolvedError, nothing written) when the
    interrupt is no longer open at the raising ``raised_seq`` names."""
    from .errors import AlreadyResolvedError

    def check(proj: Projection) -> str:
        itr = proj.interrupts.get((invocation_id, interrupt_id))
        inv = proj.invocations.get(invocation_id)
        if itr is None or not itr.open or (inv is not None and inv.cancel is not None):
            raise AlreadyResolvedError([interrupt_id])
        if raised_seq is not None and itr.raised_pos is not None and itr.raised_pos != raised_seq:
            raise AlreadyResolvedError([interrupt_id])  # asked again since: its own timers apply
        return itr.path

    require_id(invocation_id, "the invocation id")
    check(await load_invocation(store, session_id, invocation_id))
    lease = await acquire_invocation_lease(store, session_id, invocation_id, wait=lease_wait)
    keeper = LeaseKeeper(store, lease, DEFAULT_LEASE_TTL)
    try:
        path = check(await load_invocation(store, session_id, invocation_id))
        meta = operator_metadata("fail", operator, reason)
        meta.update({"path": path, "interrupt_id": interrupt_id, "error_code": error, "error_message": message})
        event = Event(invocation_id=invocation_id, author="user", custom_metadata=meta)
        stored = await store.append_event(session_id, event, lease_owner=lease.owner)
        return stored.event
    finally:
        await keeper.close(clean=True)


def auto_completion_records(proj: Projection, answer: Event) -> list[Event]:
    """The completion records of the runs ``answer`` auto-completes (DESIGN.md
    3.2, 3.4): an end record COMPLETED with the aggregated output, at the run's
    path and run id, for every ``rerun_on_resume=False`` run whose last open id
    it answers. Written with the answer, so the log states that the run finished."""
    after = proj.fork()
    change = after.apply(answer)
    records = []
    for path in change.auto_completed:
        run = after.get(answer.invocation_id, path)
        assert run is not None
        records.append(
            Event(
                invocation_id=answer.invocation_id,
                author=run.name,
                timestamp=answer.timestamp,
                node_info=NodeInfo(path=path, run_id=run.run_id, lifecycle="end", status=NodeStatus.COMPLETED),
                output=run.output,
            )
        )
    return records


def answer_events(
    proj: Projection,
    session_id: str,
    target: ResumeTarget,
    state_delta: dict[str, Any] | None,
    operator: str | None,
    reason: str | None,
    batch: str | None = None,
) -> list[Event]:
    """An answer's first events, checked against ``proj`` (current: read under
    the invocation's lease, or proven unchanged by the write): the FR message
    with the completion records of the runs it auto-completes (DESIGN.md 3.2).
    The Runner's resume writes them before it runs the turn; an answer left to
    a worker (:func:`engine.handoff.queue_answer`) writes them alone."""
    inv = target.invocation_id
    check_not_cancelled(proj, inv, "answer refused")  # cancelled while we waited for the lease
    if is_mid_run(proj, inv):
        # Nobody runs it (we hold the lease, or took it with these events): it stopped mid-run.
        raise InvocationInterruptedError(session_id, inv, in_doubt_paths(proj, inv))
    event = Event(
        invocation_id=inv,
        author="user",
        content=target.content,
        state_delta=state_delta,
        custom_metadata=operator_metadata("resume", operator, reason, batch),
    )
    return [event, *auto_completion_records(proj, event)]


def check_cancellable(proj: Projection, invocation_id: str) -> None:
    from .views import allowed_actions  # here: a turn never needs the views (nor their replay)

    allowed = allowed_actions(proj, invocation_id)
    if allowed.cancelled is not None:
        raise InvocationCancelledError(invocation_id, allowed.cancelled, what="cancel refused")
    if not allowed.cancel and allowed.status is not None:
        raise NotRedrivableError(
            f"invocation {invocation_id} is {allowed.status.value}; there is nothing to cancel; nothing was written"
        )


def check_not_cancelled(proj: Projection, invocation_id: str, what: str) -> None:
    inv = proj.invocations.get(invocation_id)
    if inv is not None and inv.cancel is not None:
        raise InvocationCancelledError(invocation_id, inv.cancel, what=what)


def check_redrivable(proj: Projection, invocation_id: str) -> None:
    check_not_cancelled(proj, invocation_id, "re-drive refused")
    status = proj.invocation_status(invocation_id)
    if status not in REDRIVABLE:  # the rule the console offers R by (engine.views.allowed_actions)
        raise NotRedrivableError(
            f"invocation {invocation_id} is {status.value if status else 'empty'}; "
            "only a failed or interrupted invocation can be re-driven; nothing was written"
        )


async def catch_up(store: SessionStore, session_id: str, invocation_id: str, proj: Projection | None) -> Projection:
    """``proj`` (read before the lease was taken) brought up to date with the
    events appended since, or a fresh load without it: the invocation's events
    are read once per turn, not once per check."""
    if proj is None:
        return await load_invocation(store, session_id, invocation_id)
    for se in await store.invocation_events(session_id, invocation_id, after_seq=proj.position):
        proj.apply(se.event, se.seq)
    return proj
