"""Here or in a worker: the one rule, and the worker's side of a write as an :class:`Outcome`.

:func:`engine.operations.answer`, :func:`~engine.operations.redrive` and
:func:`~engine.operations.start` take ``via`` (:data:`Via`) and ask
:func:`routed_to_worker` whether the turn runs in this process or is left to a
worker (:mod:`engine.handoff`); either way they return the same
:class:`~engine.outcome.Outcome`. A write left to a worker is followed (unless
``wait=False``): the worker's events are folded into ``Outcome.after`` and
``Outcome.written`` as it commits them, each handed to ``on_step`` like the
events of a turn run here, until the invocation settles, the ``timeout``
passes, or the turn is held (:attr:`Outcome.followed` says which).
``Outcome.queued`` is the line an operator reads when the turn was left to a
worker (or that no worker of the app is alive); ``on_queued(outcome)`` hears it
before the follow starts. The console, the CLI, the API
and the signed answer links call the operations with their ``via``; none of
them decides the route or follows a worker itself.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal

from .outcome import Outcome, Step
from .outcome import refused as _refused
from .store.capabilities import WorkerQueue, capability

if TYPE_CHECKING:
    from .permissions import Policy
    from .store.base import SessionStore

Via = Literal["auto", "local", "worker"]
"""Where a write's turn runs: here (``local``), in a worker, or ``auto`` (a worker
when no code is registered here for the app), as ``hitl resume --via``."""


def routed_to_worker(via: str, app_name: str | None, registry: Any, store: Any) -> bool:
    """Whether a turn of ``app_name`` is left to a worker: ``via="worker"``, or
    ``auto`` with a built registry that has no code for the app, on a store that
    keeps turn requests (elsewhere ``auto`` runs here, and says why not)."""
    from .apps import AppRegistry

    if via == "worker":
        return True
    return (
        via == "auto" and isinstance(registry, AppRegistry) and app_name not in registry
        and capability(store, WorkerQueue) is not None
    )


async def start_routed_to_worker(via: str, app_name: str, registry: Any, store: Any) -> bool:
    """A start's route: :func:`routed_to_worker`, except that ``auto`` leaves a start to a
    worker only while one serves the app -- a mistyped app name is refused here rather
    than queued for a worker that never comes."""
    if not routed_to_worker(via, app_name, registry, store):
        return False
    if via == "worker":
        return True
    from .handoff import live_workers

    return bool(await live_workers(store, app_name))


async def answer_via_worker(
    store: SessionStore,
    session_id: str,
    answers: dict[str, Any],
    invocation_id: str | None,
    *,
    app_name: str,
    operator: str | None,
    reason: str | None,
    on_step: Callable[[Step], None] | None,
    force: bool = False,
    policy: Policy | None = None,
    batch: str | None = None,
    wait: bool = True,
    timeout: float | None = None,
    on_queued: Callable[[Outcome], None] | None = None,
) -> Outcome:
    """The answer stored and its turn left to a worker (:func:`engine.handoff.queue_answer`),
    then followed. A partial answer (nothing to run) or an approval short of its
    rule is not queued: ``Outcome.queued`` stays None."""
    from .handoff import queue_answer
    from .liveness import is_mid_run

    done = await queue_answer(
        store, session_id, answers, invocation_id, operator=operator, reason=reason, on_step=on_step,
        force=force, policy=policy, batch=batch,
    )
    if done.error is not None or done.after is None or done.invocation_id is None:
        return done
    if not is_mid_run(done.after, done.invocation_id):
        return done
    # the worker's events come after the answer's (the projection's position: its last seq)
    return await _queued(store, done, app_name, f"answered, queued for a worker of {app_name}", done.after.position,
                         wait=wait, timeout=timeout, on_step=on_step, on_queued=on_queued)


async def redrive_via_worker(
    store: SessionStore,
    session_id: str,
    invocation_id: str,
    *,
    app_name: str,
    acknowledge_in_doubt: Any,
    operator: str | None,
    reason: str | None,
    on_step: Callable[[Step], None] | None,
    wait: bool = True,
    timeout: float | None = None,
    on_queued: Callable[[Outcome], None] | None = None,
) -> Outcome:
    """The re-drive requested of a worker (:func:`engine.handoff.request_redrive`,
    refused up front as the real one would be), then followed."""
    from .errors import HitlError
    from .handoff import request_redrive
    from .resume import load_invocation

    outcome = Outcome("redrive", session_id, invocation_id, operator, reason)
    try:
        outcome.before = await load_invocation(store, session_id, invocation_id)
        await request_redrive(store, session_id, invocation_id, acknowledge_in_doubt=acknowledge_in_doubt,
                              operator=operator, reason=reason)
    except HitlError as exc:
        return _refused(outcome, exc)
    outcome.after = outcome.before.fork()
    return await _queued(store, outcome, app_name, f"re-drive queued for a worker of {app_name}",
                         outcome.before.position, wait=wait, timeout=timeout, on_step=on_step, on_queued=on_queued)


async def start_via_worker(
    store: SessionStore,
    app_name: str,
    session_id: str,
    message: str,
    *,
    user_id: str,
    operator: str | None = None,
    on_step: Callable[[Step], None] | None,
    wait: bool = True,
    timeout: float | None = None,
    on_queued: Callable[[Outcome], None] | None = None,
) -> Outcome:
    """A start a worker of ``app_name`` picks up (:func:`engine.handoff.request_start`), then followed."""
    from .errors import HitlError
    from .handoff import request_start
    from .projection import Projection

    outcome = Outcome("start", session_id, None, operator)
    try:
        outcome.invocation_id = await request_start(store, app_name, session_id, message, user_id=user_id,
                                                    operator=operator)
    except HitlError as exc:
        return _refused(outcome, exc)
    outcome.before, outcome.after = Projection(), Projection()
    line = f"start of session {session_id} queued for a worker of {app_name} (invocation {outcome.invocation_id})"
    return await _queued(store, outcome, app_name, line, 0, wait=wait, timeout=timeout, on_step=on_step,
                         on_queued=on_queued)


async def _queued(
    store: SessionStore, outcome: Outcome, app_name: str, line: str, after_seq: int, *, wait: bool,
    timeout: float | None, on_step: Callable[[Step], None] | None, on_queued: Callable[[Outcome], None] | None,
) -> Outcome:
    """Say the turn is queued (or that no worker of the app is alive), then follow it."""
    from .handoff import worker_notice

    outcome.notice = await worker_notice(store, app_name)
    outcome.queued = outcome.notice or line
    if on_queued is not None:
        on_queued(outcome)
    if wait:
        await follow_outcome(store, outcome, after_seq=after_seq, timeout=timeout, on_step=on_step)
    return outcome


async def follow_outcome(
    store: SessionStore, outcome: Outcome, *, after_seq: int, timeout: float | None = None,
    on_step: Callable[[Step], None] | None = None,
) -> str:
    """Fold the worker's events of ``outcome``'s invocation into ``outcome.after`` and
    ``outcome.written`` (each handed to ``on_step``) until it settles
    (:func:`engine.handoff.follow`); :attr:`Outcome.followed` and the result say how it ended."""
    from .handoff import follow

    assert outcome.invocation_id is not None and outcome.after is not None
    outcome.followed = await follow(store, outcome.session_id, outcome.invocation_id, after_seq=after_seq,
                                    timeout=timeout, on_event=lambda stored: outcome.fold(stored, on_step))
    return outcome.followed
