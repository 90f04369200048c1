"""The API's reads: sessions, the inbox, a session, its events, the audit log.

Each is the matching ``hitl`` command's ``--json`` output as a model of
:mod:`console.serve.api_models`, read the same way (the store's listings,
:mod:`engine.liveness` for what the index cannot tell, the node rows of
:func:`engine.views.tree_rows`), with every value masked by the server's
secret patterns (``--show-secrets`` shows them, as in the console).
"""

from __future__ import annotations

import dataclasses
import time
from typing import TYPE_CHECKING, Any

from aiohttp import web

from engine.errors import HitlError

from . import api_models as m
from .api_core import VERSION, ApiContext, ApiError, _json, parse_query, respond

if TYPE_CHECKING:
    from engine.redact import Redactor


async def _page(call: Any) -> Any:
    try:
        return await call
    except ValueError as exc:  # the store's "invalid page cursor"
        raise ApiError(400, "bad_cursor", " ".join(str(exc).split())) from None


def _age(text: str | None) -> float | None:
    from engine.bulk_filter import parse_age

    if text is None:
        return None
    try:
        return parse_age(text)
    except HitlError as exc:
        raise ApiError(400, "bad_request", f"older_than: {exc}") from None


async def list_sessions(ctx: ApiContext, request: web.Request) -> web.Response:
    from engine.liveness import page_health
    from engine.status import INTERRUPTED_FILTER, QUEUED_FILTER, stored_filter

    q: m.SessionsQuery = parse_query(request, m.SessionsQuery)
    older = _age(q.older_than)
    page = await _page(ctx.db.list_sessions(
        app_name=q.app, user_id=q.user, status=stored_filter(q.status), text=q.text,
        updated_before=time.time() - older if older is not None else None, limit=q.limit, cursor=q.cursor,
    ))
    health = await page_health(ctx.db, [(s.id, s.status) for s in page.items])
    items = []
    for s in page.items:
        found = health.get(s.id, [])
        interrupted = [h.invocation_id for h in found if h.interrupted]
        queued = [h.invocation_id for h in found if h.queued]
        if q.status == INTERRUPTED_FILTER and not interrupted:
            continue
        if q.status == QUEUED_FILTER and (not queued or interrupted):
            continue
        items.append(m.SessionItem(**s.model_dump(), interrupted=interrupted, queued=queued))
    return respond(m.SessionsPage(sessions=items, next_cursor=page.next_cursor), ctx.redactor(request))


def masked_record(red: Redactor, r: Any) -> dict[str, Any]:
    """An inbox row with its arguments masked (the schema is not data: kept)."""
    from engine.deadlines import due_at

    return {**r.model_dump(), "args": {k: v if k == "response_schema" else red.value(v) for k, v in r.args.items()},
            "due_at": due_at(r.args, r.raised_at)}


async def inbox(ctx: ApiContext, request: web.Request) -> web.Response:
    from engine import bulk

    q: m.InboxQuery = parse_query(request, m.InboxQuery)
    red = ctx.redactor(request)
    if q.filter:
        where = bulk.parse_where(q.filter, bulk.Where(app=q.app, session=q.session))
        rows, cursor = await bulk.select(ctx.db, where), None
    else:
        page = await _page(ctx.db.open_interrupts(app_name=q.app, session_id=q.session, limit=q.limit, cursor=q.cursor))
        rows, cursor = page.items, page.next_cursor
    for r in rows:
        red.learn_from(r.args)
    body = {"interrupts": [masked_record(red, r) for r in rows], "next_cursor": cursor}
    return respond(m.InboxPage.model_validate(body), red)


def open_interrupt(red: Redactor, i: Any) -> m.OpenInterrupt:
    """An open interrupt as an external UI renders it: message, payload, schema,
    and the console's form for the schema (:func:`engine.schema_view.form_spec`)."""
    from engine.schema_view import NotAForm, form_spec, schema_lines

    schema = i.args.get("response_schema")
    form: dict[str, Any] | None = None
    reason: str | None = None
    try:
        form = dataclasses.asdict(form_spec(schema))
    except NotAForm as exc:
        reason = str(exc)
    from engine.deadlines import due_at, rule_of

    rule = rule_of(i.args)
    return m.OpenInterrupt(
        id=i.id, path=i.path, message=red.text(str(i.args.get("message", ""))), payload=red.value(i.args.get("payload")),
        response_schema=schema, form=red.value(form), form_reason=reason, schema_lines=schema_lines(schema),
        due_at=due_at(i.args, i.timestamp), on_deadline=rule.get("on_deadline") if rule else None,
    )


async def show_session(ctx: ApiContext, request: web.Request) -> web.Response:
    from console.cli.loads import latest_projection
    from console.cli.render import tree_rows
    from engine import views
    from engine.handoff import worker_notice
    from engine.liveness import session_health

    sid = request.match_info["session_id"]
    red = ctx.redactor(request)
    store = ctx.db
    session = await store.get_session(sid)
    invocations = await store.list_invocations(sid)
    proj = await latest_projection(store, sid, [i.invocation_id for i in invocations], red)
    health = await session_health(store, sid, proj)
    apps = sorted({h.queued_for for h in health.values() if h.queued_for is not None})
    notices = {app: await worker_notice(store, app) for app in apps}
    out = []
    for i in invocations:
        h = health[i.invocation_id]
        allowed = views.allowed_actions(proj, i.invocation_id)
        out.append(m.InvocationDetail(
            **{k: v for k, v in i.model_dump().items() if k in m.InvocationDetail.model_fields},
            health={**h.to_dict(), "worker_notice": notices.get(h.queued_for or "")},
            nodes=red.value(tree_rows(proj, i.invocation_id, False, h)),
            open=[open_interrupt(red, x) for x in proj.open_interrupts(i.invocation_id)],
            allowed={"answer": allowed.answer, "redrive": allowed.redrive and not h.live, "cancel": allowed.cancel,
                     "cancelled": red.value(allowed.cancelled)},
        ))
    detail = m.SessionDetail(session={**session.model_dump(), "state": red.value(session.state)}, invocations=out)
    return respond(detail, red)


def event_json(red: Redactor, stored: Any) -> dict[str, Any]:
    """An event as ``hitl events --json`` prints it (masked), with its ``kind``
    (message, response, interrupt, start, end, ...)."""
    return {"seq": stored.seq, "kind": stored.event.kind,
            **red.event(stored.event).model_dump(mode="json", exclude_none=True)}


async def session_events(ctx: ApiContext, request: web.Request) -> web.Response:
    sid = request.match_info["session_id"]
    q: m.EventsQuery = parse_query(request, m.EventsQuery)
    red = ctx.redactor(request)
    await ctx.db.get_session(sid)
    page = await ctx.db.events(sid, after_seq=q.after, limit=q.limit)
    events = [event_json(red, s) for s in page]
    after = page[-1].seq if len(page) == q.limit else None
    return respond(m.EventsPage(events=events, next_after=after), red)


async def audit(ctx: ApiContext, request: web.Request) -> web.Response:
    q: m.AuditQuery = parse_query(request, m.AuditQuery)
    page = await _page(ctx.db.audit_log(
        operator=q.operator, session_id=q.session, action=q.action, since=q.since, until=q.until, limit=q.limit,
        cursor=q.cursor,
    ))
    return respond(m.AuditPage(audit=page.items, next_cursor=page.next_cursor), ctx.redactor(request))


async def openapi_doc(ctx: ApiContext, request: web.Request) -> web.Response:
    return _json(200, m.openapi(VERSION))
