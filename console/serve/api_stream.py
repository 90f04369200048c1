"""The API's live streams: server-sent events (``text/event-stream``).

- ``GET /api/v1/sessions/{id}/stream`` -- the session's events as they are
  appended (``event: event``, ``id:`` the seq, ``data:`` the event as
  ``hitl events --json`` prints it). ``after=SEQ`` (or a reconnecting
  browser's ``Last-Event-ID``) starts after that seq, so a client that
  reconnects misses nothing and sees nothing twice.
- ``GET /api/v1/inbox/stream`` -- the open interrupts (``filter=`` the inbox
  filter language): first every match as ``event: opened``, then ``opened``
  and ``closed`` as they change.

What wakes a stream is :class:`engine.worker.Waker`: PostgreSQL's
LISTEN/NOTIFY, SQLite's ``data_version`` poll (which does not see this
process's own writes: the API's writes poke the streams themselves), and at
most :data:`IDLE` seconds of quiet in any case -- then a comment line keeps
proxies from closing the connection. Reads decide what is sent, never the
wake-ups, so nothing is sent twice or out of order.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from typing import Any

from aiohttp import web

from . import api_models as m
from .api_core import ApiContext, parse_query

IDLE = 15.0
"""Seconds between keep-alive comments on a quiet stream."""
POLL = 0.2
"""Seconds between SQLite change-counter reads."""
PAGE = 500
INBOX_CAP = 2000
"""Open interrupts an inbox stream tracks at most (narrow it with ``filter=``)."""


@contextlib.asynccontextmanager
async def _stream(ctx: ApiContext, request: web.Request) -> AsyncIterator[tuple[web.StreamResponse, Any]]:
    from engine.waker import Waker

    response = web.StreamResponse(headers={"Content-Type": "text/event-stream", "Cache-Control": "no-store",
                                           "X-Accel-Buffering": "no"})
    await response.prepare(request)
    waker = Waker(ctx.db, poll=POLL)
    await waker.start()
    ctx.wakers.add(waker)
    try:
        await response.write(b": connected\n\n")
        yield response, waker
    except (ConnectionResetError, ConnectionError):
        pass  # the client went away
    finally:
        ctx.wakers.discard(waker)
        await waker.close()


def frame(kind: str, data: Any, red: Any, ident: int | None = None) -> bytes:
    text = red.text(json.dumps(data, default=str, ensure_ascii=False))
    head = f"id: {ident}\n" if ident is not None else ""
    return f"{head}event: {kind}\ndata: {text}\n\n".encode()


def _last_event_id(request: web.Request, after: int) -> int:
    raw = request.headers.get("Last-Event-ID", "")
    return max(after, int(raw)) if raw.isdigit() and len(raw) < 20 else after


async def session_stream(ctx: ApiContext, request: web.Request) -> web.StreamResponse:
    from .api_reads import event_json

    sid = request.match_info["session_id"]
    q: m.StreamQuery = parse_query(request, m.StreamQuery)
    red = ctx.redactor(request)
    await ctx.db.get_session(sid)  # a 404 before the stream starts
    last = _last_event_id(request, q.after)
    async with _stream(ctx, request) as (response, waker):
        while not ctx.closing:
            page = await ctx.db.events(sid, after_seq=last, limit=PAGE)
            for stored in page:
                last = stored.seq
                data = event_json(red, stored)
                await response.write(frame("event", data, red, stored.seq))
            if len(page) == PAGE and not ctx.closing:
                continue
            if await _quiet(waker):
                await response.write(b": idle\n\n")
    return response


async def _quiet(waker: Any) -> bool:
    """Wait for a change; True when :data:`IDLE` seconds passed without one (as far as the loop can tell)."""
    loop = asyncio.get_running_loop()
    began = loop.time()
    await waker.wait(IDLE)
    return loop.time() - began >= IDLE


async def inbox_stream(ctx: ApiContext, request: web.Request) -> web.StreamResponse:
    from engine import bulk

    from .api_reads import masked_record

    q: m.InboxStreamQuery = parse_query(request, m.InboxStreamQuery)
    red = ctx.redactor(request)
    where = bulk.parse_where(q.filter or "", bulk.Where(app=q.app, session=q.session))  # a 400 before the stream
    seen: dict[tuple[str, str, str], Any] = {}
    async with _stream(ctx, request) as (response, waker):
        while not ctx.closing:
            rows = await _open_rows(ctx, where)
            now = {(r.session_id, r.invocation_id, r.interrupt_id): r for r in rows}
            for key, r in now.items():
                if key not in seen:
                    red.learn_from(r.args)
                    await response.write(frame("opened", masked_record(red, r), red))
            for key in [k for k in seen if k not in now]:
                await response.write(frame("closed", {"session_id": key[0], "invocation_id": key[1],
                                                      "interrupt_id": key[2]}, red))
            seen = now
            if await _quiet(waker):
                await response.write(b": idle\n\n")
    return response


async def _open_rows(ctx: ApiContext, where: Any) -> list[Any]:
    from engine import bulk

    if not where.empty:
        return list(await bulk.select(ctx.db, where))[:INBOX_CAP]
    rows: list[Any] = []
    cursor = None
    while len(rows) < INBOX_CAP:
        page = await ctx.db.open_interrupts(limit=min(PAGE, INBOX_CAP - len(rows)), cursor=cursor)
        rows += page.items
        cursor = page.next_cursor
        if cursor is None:
            break
    return rows
