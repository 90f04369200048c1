"""The operator's writes, one implementation for every surface.

``hitl resume`` / ``redrive`` / ``cancel``, the console's write worker and
(next) the browser and workers call these four functions instead of each
orchestrating the engine's public API (:class:`~engine.runner.Runner`,
:func:`~engine.operator_actions.cancel_invocation`, :func:`~engine.resume.load_invocation`,
:func:`~engine.resume_plan.plan_resume`) on their own:

* :func:`answer` -- answer interrupt ids and run what they unblock;
* :func:`dry_run` -- what an answer would resolve and run, writing nothing;
* :func:`redrive` -- continue a failed or interrupted invocation;
* :func:`cancel` -- cancel an invocation for good;
* :func:`start` -- start a new invocation with a text message (``hitl start``).

Each write returns an :class:`Outcome`: the events written (in order), the
node paths that ran, the invocation before and after (projections) and, when
asked, the session state before and after with the diff rows between them --
or the refusal, with why nothing was written. A write never raises for an
operator error: the exception is kept in :attr:`Outcome.error` (the CLI
re-raises it with :meth:`Outcome.raise_error`, the console shows it). Ctrl-C
and task cancellation are not caught.

Whether something was written is never guessed: the Runner yields an event
only after the store committed it, so ``written == []`` means the engine
refused before its first append (its rejections say "nothing was written").

The invocation is loaded once per write: the Runner hands its own copy to
``on_loaded`` just before its first write, and that copy is
:attr:`Outcome.before`. ``preload=True`` loads it before the write instead
(one more read), so that a refusal still reports the status the invocation
had; :func:`cancel` takes the projection the caller already loaded (the CLI
loads it to ask for confirmation).

An answer reads its interrupts once (with the invocation, on a store that reads
both in one statement): the rows name the session's app for routing, and the
owner/permission gate and the Runner's validation take them; a start hands the
session it read for its checks to the Runner. The first write proves these reads
current (an interrupt answered since is refused there, nothing written), so a
cold ``hitl resume`` against PostgreSQL is the turn's three round trips.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from . import telemetry
from .errors import HitlError, WorkflowFailed
from .outcome import (  # noqa: F401 (re-exported: engine.operations is where callers find them)
    CONFLICTS,
    ErrorKind,
    Kind,
    Outcome,
    Step,
    nothing_written,
    one_line,
)
from .outcome import refused as _refused
from .routing import (
    Via,
    answer_via_worker,
    redrive_via_worker,
    routed_to_worker,
    start_routed_to_worker,
    start_via_worker,
)

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from .apps import AppRegistry
    from .models import Event, Session, StoredEvent
    from .permissions import Policy
    from .projection import Projection
    from .resume_plan import ResumePlan
    from .store.base import AnswerRead, SessionStore


@dataclass
class DryRun:
    """What an answer would do (:func:`dry_run`); nothing was written."""

    plan: ResumePlan
    next_runs: list[str] | None
    """What the auto-completions make runnable (None: the app's code is not importable)."""
    refusal: str | None
    """Why the real answer would be refused here (its app's code is not registered), or None."""

    @property
    def would_run(self) -> bool:
        return self.refusal is None


def _registry(registry: AppRegistry | Callable[[], AppRegistry] | None) -> AppRegistry:
    from .apps import AppRegistry

    if registry is None:
        return AppRegistry()
    return registry if isinstance(registry, AppRegistry) else registry()


# ----------------------------------------------------------------- the writes
@telemetry.action("answer")
async def answer(
    store: SessionStore,
    session_id: str,
    answers: dict[str, Any],
    invocation_id: str | None = None,
    *,
    registry: AppRegistry | Callable[[], AppRegistry] | None = None,
    operator: str | None = None,
    reason: str | None = None,
    session: Session | None = None,
    preload: bool = False,
    session_state: bool = False,
    on_step: Callable[[Step], None] | None = None,
    batch: str | None = None,
    force: bool = False,
    policy: Policy | None = None,
    via: Via = "local",
    wait: bool = True,
    timeout: float | None = None,
    on_queued: Callable[[Outcome], None] | None = None,
) -> Outcome:
    """Answer ``answers`` (``{interrupt_id: value}``) and run what they unblock.

    ``registry``: the app code (or how to build it; a HitlError building it is
    the refusal); ``session``: the session row when the caller has read it;
    ``on_step`` is called after each persisted event; ``batch``: the bulk answer
    (:mod:`engine.bulk`) this one is part of, recorded on the answer. First the
    checks of :mod:`engine.answer_gate` (``force``: answer an interrupt someone
    else owns; ``policy``: who may answer, default the process's hitl.toml).
    ``via``: here or in a worker (:mod:`engine.routing`; ``wait``, ``timeout`` and
    ``on_queued`` apply to a turn left to a worker)."""
    from .answer_gate import gated
    from .models import Content

    outcome = Outcome("answer", session_id, invocation_id, operator, reason, answered=list(answers))
    read: AnswerRead | None = None
    # The answer's reads, once: their rows name the session's app (routing), and the
    # gate and the turn's validation use them: one round trip where there were three.
    if session is None:
        if isinstance(got := await _answer_read(outcome, store, answers), Outcome):
            return got
        read = got
    app = session.app_name if session is not None else _app_of(read)
    if via != "local":
        if isinstance(routed := await _route(outcome, store, app, registry, via), Outcome):
            return routed  # refused: reading the session or building the registry failed
        if routed is not None:
            return await answer_via_worker(
                store, session_id, answers, invocation_id, app_name=routed, operator=operator, reason=reason,
                on_step=on_step, force=force, policy=policy, batch=batch, wait=wait, timeout=timeout,
                on_queued=on_queued,
            )
    if read is None:
        if isinstance(got := await _answer_read(outcome, store, answers), Outcome):
            return got
        read = got
    if (stop := await gated(outcome, store, answers, force=force, policy=policy, batch=batch, found=read[0])) is not None:
        return stop
    content = Content.from_responses(answers)
    return await _turn(outcome, store, registry, session, preload, session_state, on_step, content=content, batch=batch,
                       app=app, answered=read)


async def _answer_read(outcome: Outcome, store: SessionStore, answers: dict[str, Any]) -> AnswerRead | Outcome:
    """:func:`~engine.store.base.answer_reads` of the answer's ids, as the turn makes
    it; ``outcome`` refused with the HitlError it met (no such session)."""
    from .store.base import answer_reads

    try:
        return await answer_reads(store, outcome.session_id, list(answers), outcome.invocation_id)
    except HitlError as exc:
        return _refused(outcome, exc)


def _app_of(read: AnswerRead | None) -> str | None:
    """The session's app as the interrupt rows name it (None: no row was found)."""
    return read[0][0].app_name if read is not None and read[0] else None


@telemetry.action("redrive")
async def redrive(
    store: SessionStore,
    session_id: str,
    invocation_id: str,
    *,
    registry: AppRegistry | Callable[[], AppRegistry] | None = None,
    operator: str | None = None,
    reason: str | None = None,
    acknowledge_in_doubt: bool | Mapping[str, int] = False,
    session: Session | None = None,
    preload: bool = False,
    session_state: bool = False,
    on_step: Callable[[Step], None] | None = None,
    via: Via = "local",
    wait: bool = True,
    timeout: float | None = None,
    on_queued: Callable[[Outcome], None] | None = None,
) -> Outcome:
    """Continue a failed or interrupted invocation (completed nodes are kept;
    nodes in doubt run again only with ``acknowledge_in_doubt``). ``via``: here or
    in a worker, as for :func:`answer`."""
    outcome = Outcome("redrive", session_id, invocation_id, operator, reason)
    if via != "local":
        name = session.app_name if session is not None else None
        if isinstance(app := await _route(outcome, store, name, registry, via), Outcome):
            return app  # refused: reading the session or building the registry failed
        if app is not None:
            return await redrive_via_worker(
                store, session_id, invocation_id, app_name=app, acknowledge_in_doubt=acknowledge_in_doubt,
                operator=operator, reason=reason, on_step=on_step, wait=wait, timeout=timeout, on_queued=on_queued,
            )
    return await _turn(
        outcome, store, registry, session, preload, session_state, on_step, acknowledge_in_doubt=acknowledge_in_doubt
    )


@telemetry.action("cancel")
async def cancel(
    store: SessionStore,
    session_id: str,
    invocation_id: str,
    *,
    operator: str | None = None,
    reason: str | None = None,
    before: Projection | None = None,
    session_state: bool = False,
    on_step: Callable[[Step], None] | None = None,
) -> Outcome:
    """Cancel an invocation for good (:func:`engine.operator_actions.cancel_invocation`).
    ``before``: the invocation as the caller loaded it (else it is loaded here)."""
    from .operator_actions import cancel_invocation
    from .resume import load_invocation

    outcome = Outcome("cancel", session_id, invocation_id, operator, reason)
    try:
        outcome.before = before if before is not None else await load_invocation(store, session_id, invocation_id)
        if session_state:
            outcome.state_before = dict((await store.get_session(session_id)).state)
    except HitlError as exc:
        return _refused(outcome, exc)

    async def events() -> AsyncIterator[Event]:
        yield await cancel_invocation(store, session_id, invocation_id, operator=operator, reason=reason)

    return await _fold(outcome, store, events(), session_state, on_step)


class SessionBusyError(HitlError):
    """``start`` on a session one of whose invocations a live process is running."""

    def __init__(self, session_id: str, invocation_id: str) -> None:
        super().__init__(
            f"session {session_id} is busy: invocation {invocation_id} is running right now; "
            "wait for it to settle, or start the run in another session (--session)"
        )


class SessionAppMismatchError(HitlError):
    """``start`` names an app other than the one the existing session belongs to."""

    def __init__(self, session_id: str, has: str, given: str) -> None:
        super().__init__(
            f"session {session_id} belongs to app {has!r}, not {given!r}; "
            "start it with that app, or give another --session"
        )


@telemetry.action("start")
async def start(
    store: SessionStore,
    app_name: str,
    session_id: str,
    message: str,
    *,
    user_id: str,
    registry: AppRegistry | Callable[[], AppRegistry] | None = None,
    on_step: Callable[[Step], None] | None = None,
    via: Via = "local",
    wait: bool = True,
    timeout: float | None = None,
    on_queued: Callable[[Outcome], None] | None = None,
    operator: str | None = None,
) -> Outcome:
    """Start a new invocation of ``app_name`` in ``session_id`` (created by the
    first write when it does not exist) with the text ``message``, in this
    process, and run it until it waits, completes or fails. Refused before
    anything is written: an unknown or unimportable app, an empty message, a
    session of another app, a session with an invocation running right now.
    ``via``: here or in a worker, as for :func:`answer` (``operator``: who asked, recorded
    on a start left to a worker)."""
    from .errors import EmptyMessageError, SessionNotFoundError, require_id
    from .liveness import lease_is_live
    from .models import Content

    outcome = Outcome("start", session_id, None)
    if via != "local":
        try:
            built = None if registry is None else _registry(registry)
            to_worker = await start_routed_to_worker(via, app_name, built, store)
        except HitlError as exc:
            return _refused(outcome, exc)
        if to_worker:
            return await start_via_worker(store, app_name, session_id, message, user_id=user_id, operator=operator,
                                          on_step=on_step, wait=wait, timeout=timeout, on_queued=on_queued)
    try:
        require_id(session_id, "the session id")
        require_id(user_id, "the user id")
        if not message.strip():
            raise EmptyMessageError()
        runner = _registry(registry).runner(app_name, store)
        try:
            session = await store.get_session(session_id)
        except SessionNotFoundError:
            session = None
        if session is not None:
            if session.app_name != app_name:
                raise SessionAppMismatchError(session_id, session.app_name, app_name)
            for inv in await store.list_invocations(session_id):
                if inv.status == "running" and lease_is_live(await store.get_lease(session_id, inv.invocation_id)):
                    raise SessionBusyError(session_id, inv.invocation_id)
    except HitlError as exc:
        return _refused(outcome, exc)

    loaded, told, latest = _runner_hooks(outcome)

    async def events() -> AsyncIterator[Event]:
        content = Content.from_text(message)
        # The session as read for the checks above: the turn's first write proves it unchanged.
        async for event in runner.run(user_id, session_id, content, on_loaded=loaded, on_stored=told,
                                      session_read=session if session is not None else False):
            yield event

    return await _fold(outcome, store, events(), False, on_step, latest)


async def _route(
    outcome: Outcome, store: SessionStore, app_name: str | None,
    registry: AppRegistry | Callable[[], AppRegistry] | None, via: Via,
) -> str | Outcome | None:
    """The app whose worker runs this session's turn (:func:`engine.routing.routed_to_worker`),
    None (it runs here), or ``outcome`` refused with the HitlError reading the session or
    building the registry met (a registered app whose code fails to import is an error to
    fix, not a hand-off). ``app_name``: the session's app when the caller knows it."""
    try:
        app = app_name or (await store.get_session(outcome.session_id)).app_name
        built = None if registry is None else _registry(registry)  # none given: ``auto`` runs here
    except HitlError as exc:
        return _refused(outcome, exc)
    return app if routed_to_worker(via, app, built, store) else None


async def dry_run(
    store: SessionStore,
    session_id: str,
    answers: dict[str, Any],
    invocation_id: str | None = None,
    *,
    app_name: str,
    registry: AppRegistry | Callable[[], AppRegistry] | None = None,
) -> DryRun:
    """What :func:`answer` would resolve and run (:func:`engine.resume_plan.plan_resume`,
    which raises what the real answer would raise), and whether it would be
    refused for want of the app's code. Writes nothing."""
    from .models import Content
    from .resume_plan import next_runs, plan_resume

    plan = await plan_resume(store, session_id, Content.from_responses(answers), invocation_id)
    try:
        root = _registry(registry).get(app_name)
    except HitlError as exc:
        return DryRun(plan, None, one_line(exc))
    following = next_runs(plan, plan.after, root) if plan.after is not None else None
    return DryRun(plan, following, None)


# ----------------------------------------------------------------- internals
async def _turn(
    outcome: Outcome,
    store: SessionStore,
    registry: AppRegistry | Callable[[], AppRegistry] | None,
    session: Session | None,
    preload: bool,
    session_state: bool,
    on_step: Callable[[Step], None] | None,
    *,
    content: Any = None,
    acknowledge_in_doubt: bool | Mapping[str, int] = False,
    batch: str | None = None,
    app: str | None = None,
    answered: AnswerRead | None = None,
) -> Outcome:
    """An answer or a re-drive: one Runner turn, folded event by event. ``app``:
    the session's app as the answer's interrupt rows name it, and ``answered``
    those reads, which the Runner takes instead of reading again (a resume's
    user is its interrupts')."""
    from .resume import load_invocation

    sid, inv = outcome.session_id, outcome.invocation_id
    try:
        if preload and inv is not None:
            outcome.before = await load_invocation(store, sid, inv)
        if (session is None and app is None) or session_state:
            session = await store.get_session(sid)
        if session_state:
            assert session is not None
            outcome.state_before = dict(session.state)
    except HitlError as exc:
        return _refused(outcome, exc)
    if session is not None:
        app, user = session.app_name, session.user_id
    else:
        assert app is not None and answered is not None and answered[0]
        user = answered[0][0].user_id

    loaded, told, latest = _runner_hooks(outcome)

    async def events() -> AsyncIterator[Event]:
        runner = _registry(registry).runner(app, store)
        kw: dict[str, Any] = {
            "operator": outcome.operator, "reason": outcome.reason, "on_loaded": loaded, "on_stored": told,
        }
        if content is None:
            kw["acknowledge_in_doubt"] = acknowledge_in_doubt
        if batch is not None:
            kw["batch"] = batch
        if answered is not None:
            kw["answered"] = answered
        async for event in runner.run(user, sid, content, inv, **kw):
            yield event

    return await _fold(outcome, store, events(), session_state, on_step, latest)


def _runner_hooks(
    outcome: Outcome,
) -> tuple[Callable[[str, Projection], None], Callable[[StoredEvent], None], list[StoredEvent]]:
    """The Runner's ``on_loaded`` (its copy of the invocation becomes
    :attr:`Outcome.before`) and ``on_stored`` (each event's stored form, kept in
    the returned one-slot list just before the event is yielded: only the event
    being yielded is needed, for its seq)."""
    latest: list[StoredEvent] = []

    def loaded(inv_id: str, proj: Projection) -> None:
        outcome.invocation_id = inv_id
        if outcome.before is None:
            outcome.before = proj

    def told(stored: StoredEvent) -> None:
        latest[:] = [stored]

    return loaded, told, latest


async def _fold(
    outcome: Outcome,
    store: SessionStore,
    events: AsyncIterator[Event],
    session_state: bool,
    on_step: Callable[[Step], None] | None,
    latest: list[StoredEvent] | None = None,
) -> Outcome:
    """Fold the write's events into ``outcome``; ``latest`` holds the stored form
    of the event being yielded, when the write tells it (its seq for each Step)."""
    try:
        async for event in events:
            if outcome.after is None:
                assert outcome.before is not None, "the Runner calls on_loaded before its first write"
                outcome.after = outcome.before.fork()
            outcome.written.append(event)
            seq = latest[0].seq if latest and latest[0].event is event else None
            change = outcome.after.apply(event)
            if on_step is not None:
                on_step(Step(event, change, outcome.after, seq))
    except WorkflowFailed as exc:
        outcome.error, outcome.error_kind = exc, "failed"
    except Exception as exc:  # noqa: BLE001 -- every failure is the outcome's, told to the operator in one line
        if not outcome.written:
            return _refused(outcome, exc)
        outcome.error, outcome.error_kind = exc, "interrupted"
    if outcome.written and session_state:
        await _session_rows(outcome, store)
    return outcome


async def _session_rows(outcome: Outcome, store: SessionStore) -> None:
    """The session state after the write and the before/after diff rows."""
    from .replay import diff

    before, after = outcome.before, outcome.after
    assert before is not None and after is not None
    try:
        outcome.state_after = dict((await store.get_session(outcome.session_id)).state)
    except HitlError:
        outcome.state_after = dict(after.state)
    if outcome.state_before is not None:
        before.state = outcome.state_before
    after.state = outcome.state_after
    outcome.rows = diff(before, after)


async def request_start(store: SessionStore, app_name: str, session_id: str, text: str, **options: Any) -> str:
    """Leave a new invocation of ``app_name`` to a worker; returns its invocation
    id. No workflow code needed here: :func:`engine.handoff.request_start` (its
    options: ``user_id``, ``state_delta``, ``operator``, ``reason``)."""
    from .handoff import request_start as _request_start

    return await _request_start(store, app_name, session_id, text, **options)
