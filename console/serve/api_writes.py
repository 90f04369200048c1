"""The API's writes: answer (and its dry run), bulk answer, re-drive, cancel, start.

Each is the matching ``hitl`` command, through the same calls: the engine's
operations layer (:mod:`engine.operations`, :mod:`engine.bulk`) runs the turn
in the server's process when it has the app's code, :mod:`engine.handoff`
leaves it to a worker otherwise (``via``, as ``hitl resume --via``). Nothing
here decides what an answer means: a refusal is the engine's, reported with
its stable code and the CLI's line, and nothing was written.

The operator recorded is the caller's name (a service token's, the signed-in
operator's); a body's ``operator`` (a bot answering for a person) is recorded
as ``PERSON via CALLER``, so the audit log says both. On a loopback server
without sign-in it is recorded as given, as ``hitl --operator`` is.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from aiohttp import web

from engine.errors import require_id
from engine.store.capabilities import WorkerQueue, capability

from . import api_models as m
from .api_core import IDENTITY, ApiContext, ApiError, hitl_error, one_line, parse_body, respond
from .config import valid_name

if TYPE_CHECKING:
    from engine import bulk
    from engine.operations import Outcome, Step
    from engine.redact import Redactor

    from .auth import Identity


def operator_name(who: Identity, given: str | None) -> str:
    """What the audit log records for a write by ``who`` on behalf of ``given``."""
    if given is None or given == who.name:
        return who.name
    if not valid_name(given):
        raise ApiError(400, "bad_request", "operator must be 1-64 printable characters without spaces at the ends")
    return given if who.via == "local" else f"{given} via {who.name}"


class Steps:
    """The events a write persisted, as the API's ``events`` (read at each step:
    the projection moves on)."""

    def __init__(self) -> None:
        self.items: list[m.WrittenEvent] = []

    def __call__(self, step: Step) -> None:
        from console.cli.writes import step_dict

        d = step_dict(step)
        self.items.append(m.WrittenEvent(seq=step.seq, event_id=d["event_id"], kind=d["kind"], path=d["path"],
                                         status=d["status"], markers=d["markers"]))


def _result(done: Outcome, steps: Steps, red: Redactor, **extra: Any) -> m.WriteResult:
    """A write's response, or its refusal raised (nothing was written)."""
    from console.cli.writes import summary_line

    if done.error is not None and not done.written:
        raise hitl_error(done.error, red)
    if done.approval is not None:  # a multi-approver rule: this answer is one approval, nothing ran
        return m.WriteResult(kind="answer", outcome="approval", session_id=done.session_id,
                             invocation_id=done.invocation_id, operator=done.operator, open=list(done.answered),
                             events=steps.items, approval=done.approval,
                             message=f"approval recorded for {', '.join(done.answered)}: {done.approval}")
    proj = done.after or done.before
    inv = done.invocation_id
    error = None
    outcome: Literal["applied", "failed", "interrupted"]
    if done.error is None:
        outcome = "applied"
        message = summary_line(proj, inv, len(done.written)) if proj is not None and inv else "done"
    else:
        outcome = "failed" if done.error_kind == "failed" else "interrupted"
        from .api_core import error_code

        message = one_line(red, str(done.error))
        error = m.ErrorBody(code=error_code(done.error), message=message)
    status = proj.invocation_status(inv) if proj is not None and inv else None
    return m.WriteResult(
        kind=done.kind, outcome=outcome, session_id=done.session_id, invocation_id=inv, operator=done.operator,
        status=status.value if status is not None else None, open=done.still_open, ran=done.ran,
        events=steps.items, message=message, error=error, **extra,
    )


def _queued(result: m.WriteResult, done: Outcome, app: str) -> m.WriteResult:
    """A write whose turn was left to a worker (engine.routing) says so: ``queued``, for
    which app, and the notice when no worker of it is alive."""
    if done.queued is not None:
        result.outcome, result.queued_for, result.notice = "queued", app, done.notice
        result.message = done.queued
    return result


async def _invocation(ctx: ApiContext, session_id: str, text: str | None) -> str | None:
    from console.cli.loads import resolve_invocation

    return None if text is None else await resolve_invocation(ctx.db, session_id, text)


# ------------------------------------------------------------------ answer
async def answer(ctx: ApiContext, request: web.Request) -> web.Response:
    from engine import operations
    from engine.routing import routed_to_worker

    sid = request.match_info["session_id"]
    b: m.AnswerRequest = await parse_body(request, m.AnswerRequest)
    who: Identity = request[IDENTITY]
    red = ctx.redactor(request)
    red.learn_from(b.answers)  # validation errors may echo them
    for iid in b.answers:
        require_id(iid, "an interrupt id")
    store = ctx.db
    session = await store.get_session(sid)
    inv = await _invocation(ctx, sid, b.invocation_id)
    if b.dry_run:  # (what the real answer would say: the route is engine.routing's)
        return await _dry_run(ctx, red, session, b.answers, inv,
                              routed_to_worker(b.via, session.app_name, ctx.registry(), store))
    operator = operator_name(who, b.operator)
    steps = Steps()
    done = await operations.answer(store, sid, b.answers, inv, registry=ctx.registry, operator=operator,
                                   reason=b.reason, session=session, on_step=steps, force=b.force,
                                   via=b.via, wait=False)
    return respond(_queued(_result(done, steps, red), done, session.app_name), red)


async def _dry_run(ctx: ApiContext, red: Redactor, session: Any, answers: dict[str, Any], inv: str | None,
                   to_worker: bool) -> web.Response:
    from console.cli.render import render_plan
    from engine import operations

    dry = await operations.dry_run(ctx.db, session.id, answers, inv, app_name=session.app_name, registry=ctx.registry)
    plan = dry.plan.to_dict()
    lines = render_plan(red, dry.plan, session.id, dry.next_runs)
    if dry.refusal is not None and to_worker:
        lines.append(f"the real command would store the answer and leave the turn to a worker of {session.app_name}")
    elif dry.refusal is not None:
        lines.append(f"the real command would refuse (nothing would be written): {dry.refusal}")
    result = m.DryRunResult(**{**plan, "changes": red.value(plan["changes"])}, next=dry.next_runs,
                            would_run=dry.would_run, refusal=dry.refusal, worker=to_worker and dry.refusal is not None,
                            lines=[red.text(line) for line in lines])
    return respond(result, red)


# ------------------------------------------------------------------ owners
async def _owners(action: Literal["claim", "assign", "release"], ctx: ApiContext, request: web.Request) -> web.Response:
    """claim / assign / release (engine.ownership): the caller's name is the operator
    (a body's ``operator`` is recorded as ``NAME via CALLER``, so a token cannot claim
    as someone else); someone else's claim is refused (409) without ``force``."""
    from engine import ownership
    from engine.permissions import current_policy

    sid = request.match_info["session_id"]
    b: m.OwnerRequest = await parse_body(request, m.OwnerRequest)
    who: Identity = request[IDENTITY]
    red = ctx.redactor(request)
    for iid in b.ids:
        require_id(iid, "an interrupt id")
    if action == "assign" and b.to is None:
        raise ApiError(400, "bad_request", "assign needs `to`: an operator, or @group; nothing was written")
    if not b.ids and b.invocation_id is None:
        raise ApiError(400, "bad_request", "name `ids`, or `invocation_id` for every open one; nothing was written")
    await ctx.db.get_session(sid)
    inv = await _invocation(ctx, sid, b.invocation_id)
    kw: dict[str, Any] = {"to": b.to} if action == "assign" else {}
    done = await getattr(ownership, action)(ctx.db, sid, b.ids or None, invocation_id=inv,
                                            operator=operator_name(who, b.operator), reason=b.reason,
                                            force=b.force, policy=current_policy(), **kw)
    if done.error is not None:
        raise hitl_error(done.error, red)
    return respond(m.OwnerResult(action=action, session_id=sid, ids=done.ids, owner=done.owner,
                                 previous=done.previous, event_ids=[e.id for e in done.written],
                                 message=done.summary()), red)


async def claim(ctx: ApiContext, request: web.Request) -> web.Response:
    return await _owners("claim", ctx, request)


async def assign(ctx: ApiContext, request: web.Request) -> web.Response:
    return await _owners("assign", ctx, request)


async def release(ctx: ApiContext, request: web.Request) -> web.Response:
    return await _owners("release", ctx, request)


# ------------------------------------------------------------------ bulk
async def bulk_answer(ctx: ApiContext, request: web.Request) -> web.Response:
    from console.cli.bulk import _plan_json, _result_json
    from engine import bulk

    b: m.BulkAnswerRequest = await parse_body(request, m.BulkAnswerRequest)
    who: Identity = request[IDENTITY]
    red = ctx.redactor(request)
    red.learn_from(b.answer)
    store = ctx.db
    where = bulk.parse_where(b.filter or "", bulk.Where())
    refs = [bulk.ItemRef(i.session_id, i.invocation_id, i.interrupt_id) for i in b.items]
    if where.empty and not refs:
        raise ApiError(400, "bad_request", "give a filter (e.g. node=finance_approval amount<50 age>2h) or items: "
                                           "an empty filter would answer every open interrupt")
    groups = [] if where.empty else bulk.group(await bulk.select(store, where))
    if refs:
        groups = bulk.merge(groups, await bulk.items(store, [await _full_ref(ctx, r) for r in refs]))
    if not groups:
        raise ApiError(422, "nothing_matches", f"no open interrupt matches {str(where) or 'the items'}: "
                                               "nothing was written")
    if b.dry_run:
        plan = await bulk.dry_run(store, groups, b.answer, registry=ctx.registry, via=b.via)
        return respond(m.BulkDryRun(
            summary=plan.summary(), filter=str(where), counts={v: plan.count(v) for v in bulk.VERDICTS},
            answer=red.value(plan.value), items=[m.BulkPlanItem(**_plan_json(i)) for i in plan.items],
        ), red)
    done = await bulk.submit(store, groups, b.answer, registry=ctx.registry, operator=operator_name(who, b.operator),
                             reason=b.reason, via=b.via)
    return respond(m.BulkResult(
        batch=done.batch, summary=done.summary(), counts={s: done.count(s) for s in bulk.RESULT_STATUSES}, ok=done.ok,
        items=[m.BulkResultItem(**_result_json(r)) for r in done.results],
    ), red)


async def _full_ref(ctx: ApiContext, ref: bulk.ItemRef) -> bulk.ItemRef:
    """The ref with its invocation id completed from a unique prefix; one that does
    not resolve stays as given (its answer is refused saying why), as the CLI."""
    from console.cli.loads import resolve_invocation
    from engine import bulk
    from engine.errors import HitlError

    try:
        return bulk.ItemRef(ref.session_id, await resolve_invocation(ctx.db, ref.session_id, ref.invocation_id),
                            ref.interrupt_id)
    except HitlError:
        return ref


# ------------------------------------------------------------------ redrive, cancel
async def redrive(ctx: ApiContext, request: web.Request) -> web.Response:
    from engine import operations

    sid = request.match_info["session_id"]
    b: m.RedriveRequest = await parse_body(request, m.RedriveRequest)
    who: Identity = request[IDENTITY]
    red = ctx.redactor(request)
    store = ctx.db
    session = await store.get_session(sid)
    inv = await _invocation(ctx, sid, request.match_info["invocation_id"])
    assert inv is not None
    operator = operator_name(who, b.operator)
    steps = Steps()
    done = await operations.redrive(store, sid, inv, registry=ctx.registry, operator=operator, reason=b.reason,
                                    acknowledge_in_doubt=b.ack_in_doubt, session=session, on_step=steps,
                                    via=b.via, wait=False)
    return respond(_queued(_result(done, steps, red), done, session.app_name), red)


async def cancel(ctx: ApiContext, request: web.Request) -> web.Response:
    from engine import operations
    from engine.resume import load_invocation

    sid = request.match_info["session_id"]
    b: m.CancelRequest = await parse_body(request, m.CancelRequest)
    who: Identity = request[IDENTITY]
    red = ctx.redactor(request)
    if not b.reason.strip():
        raise ApiError(400, "bad_request", "a cancel needs a reason (it is recorded with the cancel); "
                                           "nothing was written")
    await ctx.db.get_session(sid)
    inv = await _invocation(ctx, sid, request.match_info["invocation_id"])
    assert inv is not None
    before = await load_invocation(ctx.db, sid, inv)
    closed = [i.id for i in before.open_interrupts(inv)]
    steps = Steps()
    done = await operations.cancel(ctx.db, sid, inv, operator=operator_name(who, b.operator), reason=b.reason,
                                   before=before, on_step=steps)
    result = _result(done, steps, red)
    result.message = f"cancelled invocation {inv}" + (f"; closed {', '.join(closed)}" if closed else "")
    return respond(result, red)


# ------------------------------------------------------------------ start
async def start(ctx: ApiContext, request: web.Request) -> web.Response:
    from engine import operations
    from engine.models import new_id

    b: m.StartRequest = await parse_body(request, m.StartRequest)
    who: Identity = request[IDENTITY]
    red = ctx.redactor(request)
    store = ctx.db
    sid = b.session_id or f"{b.app_name}-{new_id()[:8]}"
    user = b.user_id or "api"
    if b.via == "worker" and capability(store, WorkerQueue) is None:
        raise ApiError(422, "no_workers", "this store keeps no turn requests: no worker can start it (via=local)")
    steps = Steps()
    done = await operations.start(store, b.app_name, sid, b.text, user_id=user, registry=ctx.registry, on_step=steps,
                                  via=b.via, wait=False, operator=who.name)
    return respond(_queued(_result(done, steps, red), done, b.app_name), red)
