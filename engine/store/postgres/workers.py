"""Turn requests, worker heartbeats and invocation graph versions on PostgreSQL
(:mod:`engine.store.workers` says what they are). A part of :class:`PostgresStore`."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

import asyncpg
from pydantic_core import to_json

# Row converters and column lists: one definition of each, whatever the backend.
from ...errors import CorruptEventError, SessionNotFoundError
from ...models import StoredEvent
from ..base import LoadedInvocation
from ..sql.columns import LEASE_COLS as _LEASE_COLS
from ..sql.columns import REQUEST_COLS as _REQ_COLS
from ..sql.columns import WORKER_COLS as _WORKER_COLS
from ..sql.prepared import prepare as _prepare
from ..sql.rows import lease_from_row as _lease_from_row
from ..sql.rows import parse_event
from ..sql.rows import request_from_row as _req
from ..sql.rows import worker_from_row as _worker
from ..workers import Settle, TurnReads, TurnRequest, WorkerRecord
from . import onetrip
from .core import _Core
from .errors import _raise_append_error
from .listen import Listener
from .schema import NOTIFY_CHANNEL
from .statements import _APPEND_RELEASE_SQL, _append_many_args, _snapshot_from, _stored
from .writes import _acquire_append


class _WorkerTables(_Core):
    """The store calls over turn_requests, workers and invocation_graphs (tables: schema.py)."""

    async def request_turn(self, request: TurnRequest) -> None:
        """Add (or renew) a turn request, and wake the workers (NOTIFY, in its transaction)."""
        self._check_writable()
        r = request

        async def fn(conn: asyncpg.Connection) -> None:
            async with conn.transaction():
                await conn.execute(
                    f"INSERT INTO turn_requests ({_REQ_COLS}) VALUES ($1, $2, $3, $4, $5, $6, NULL, NULL, NULL, NULL)"
                    " ON CONFLICT (session_id, invocation_id) DO UPDATE SET kind = excluded.kind,"
                    " payload = excluded.payload, requested_at = excluded.requested_at, held = NULL, note = NULL",
                    r.app_name, r.session_id, r.invocation_id, r.kind, json.dumps(r.payload), r.requested_at,
                )
                await _notify(conn, r.session_id, runnable=True)

        await self._run(fn)

    async def turn_requests(
        self, apps: list[str] | None = None, *, limit: int = 200, claimed: bool = False
    ) -> list[TurnRequest]:
        only = " AND claimed_by IS NOT NULL" if claimed else ""

        async def fn(conn: asyncpg.Connection) -> list[TurnRequest]:
            if apps is None:
                rows = await conn.fetch(
                    f"SELECT {_REQ_COLS} FROM turn_requests WHERE true{only} ORDER BY requested_at LIMIT $1", limit
                )
            else:
                rows = await conn.fetch(
                    f"SELECT {_REQ_COLS} FROM turn_requests WHERE app_name = ANY($1::text[]){only}"
                    " ORDER BY requested_at LIMIT $2",
                    list(apps), limit,
                )
            return [_req(r) for r in rows]

        return await self._run(fn)

    async def get_turn_request(self, session_id: str, invocation_id: str) -> TurnRequest | None:
        async def fn(conn: asyncpg.Connection) -> TurnRequest | None:
            row = await conn.fetchrow(
                f"SELECT {_REQ_COLS} FROM turn_requests WHERE session_id = $1 AND invocation_id = $2",
                session_id, invocation_id,
            )
            return _req(row) if row else None

        return await self._run(fn)

    async def claim_turn_request(
        self, session_id: str, invocation_id: str, owner: str, ttl: float, *, expected: str | None = None
    ) -> bool:
        self._check_writable()
        now = time.time()

        async def fn(conn: asyncpg.Connection) -> bool:
            status = await conn.execute(
                "UPDATE turn_requests SET claimed_by = $3, claimed_until = $4 WHERE session_id = $1"
                " AND invocation_id = $2 AND held IS NULL"
                " AND (claimed_by IS NOT DISTINCT FROM $5 OR claimed_until <= $6)",
                session_id, invocation_id, owner, now + ttl, expected, now,
            )
            return bool(status == "UPDATE 1")

        return await self._run(fn)

    async def unclaim_turn_request(
        self, session_id: str, invocation_id: str, owner: str, *, held: str | None = None, note: str | None = None
    ) -> None:
        self._check_writable()

        async def fn(conn: asyncpg.Connection) -> None:
            async with conn.transaction():
                await conn.execute(
                    "UPDATE turn_requests SET claimed_by = NULL, claimed_until = NULL, held = $4,"
                    " note = COALESCE($5, note) WHERE session_id = $1 AND invocation_id = $2 AND claimed_by = $3",
                    session_id, invocation_id, owner, held, note,
                )
                if held is not None:  # a follower (handoff.follow) returns the held reason
                    await _notify(conn, session_id)

        await self._run(fn)

    async def drop_turn_request(
        self, session_id: str, invocation_id: str, *, owner: str | None = None, requested_at: float | None = None
    ) -> None:
        self._check_writable()

        async def fn(conn: asyncpg.Connection) -> None:
            async with conn.transaction():
                await conn.execute(
                    "DELETE FROM turn_requests WHERE session_id = $1 AND invocation_id = $2"
                    " AND ($3::text IS NULL OR claimed_by = $3)"
                    " AND ($4::double precision IS NULL OR requested_at = $4)",
                    session_id, invocation_id, owner, requested_at,
                )
                # The turn settled: a follower waiting for the request to go wakes now, not
                # at its next poll (the turn's last append notified before this delete).
                await _notify(conn, session_id)

        await self._run(fn)

    async def invocation_graph(self, session_id: str, invocation_id: str, graph: str) -> str:
        self._check_writable()

        async def fn(conn: asyncpg.Connection) -> str:
            await conn.execute(
                "INSERT INTO invocation_graphs (session_id, invocation_id, graph) VALUES ($1, $2, $3)"
                " ON CONFLICT DO NOTHING",
                session_id, invocation_id, graph,
            )
            return str(await conn.fetchval(
                "SELECT graph FROM invocation_graphs WHERE session_id = $1 AND invocation_id = $2",
                session_id, invocation_id,
            ))

        return await self._run(fn)

    async def put_worker(
        self, worker: WorkerRecord, *, renew: list[tuple[str, str]] | None = None, ttl: float = 30.0
    ) -> None:
        self._check_writable()
        w = worker
        now = time.time()
        keys = [list(c) for c in zip(*(renew or []), strict=True)] or [[], []]

        async def fn(conn: asyncpg.Connection) -> None:
            await conn.execute(
                _BEAT_SQL, w.worker_id, w.host, w.pid, json.dumps(w.apps), json.dumps(w.versions), json.dumps(w.current),
                w.state, w.started_at, w.heartbeat_at, w.stale_after, now + ttl, now, *keys,
            )

        await self._run(fn)

    async def list_workers(self) -> list[WorkerRecord]:
        async def fn(conn: asyncpg.Connection) -> list[WorkerRecord]:
            return [_worker(r) for r in await conn.fetch(f"SELECT {_WORKER_COLS} FROM workers ORDER BY started_at, worker_id")]

        return await self._run(fn)

    async def drop_worker(self, worker_id: str) -> None:
        self._check_writable()

        async def fn(conn: asyncpg.Connection) -> None:
            await conn.execute("DELETE FROM workers WHERE worker_id = $1", worker_id)

        await self._run(fn)

    # -- the turn requests of a page of sessions (what an operator's page shows): one read
    async def turn_requests_of(self, session_ids: list[str]) -> list[TurnRequest]:
        """Every turn request of these sessions, in one statement (see the SQLite store)."""
        ids = list(dict.fromkeys(session_ids))

        async def fn(conn: asyncpg.Connection) -> list[TurnRequest]:
            rows = await conn.fetch(
                f"SELECT {_REQ_COLS} FROM turn_requests WHERE session_id = ANY($1::text[]) ORDER BY requested_at", ids
            )
            return [_req(r) for r in rows]

        return await self._run(fn) if ids else []


_BEAT_SQL = (
    f"WITH w AS (INSERT INTO workers ({_WORKER_COLS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)"
    " ON CONFLICT (worker_id) DO UPDATE SET apps = excluded.apps, versions = excluded.versions,"
    " current = excluded.current, state = excluded.state, heartbeat_at = excluded.heartbeat_at,"
    " stale_after = excluded.stale_after RETURNING 1)"
    " UPDATE turn_requests t SET claimed_by = $1, claimed_until = $11 FROM unnest($13::text[], $14::text[]) AS k(s, i)"
    " WHERE t.session_id = k.s AND t.invocation_id = k.i AND t.held IS NULL"
    " AND (t.claimed_by = $1 OR t.claimed_until <= $12)"
)
"""A heartbeat: the worker's row and the renewal of the claims it runs, one statement."""

TURNS_CHANNEL = "hitl_turns"
"""Where a request that became runnable is announced too: workers listen here
only, so they are not woken (nor sent anything) for every append of every turn."""


async def _notify(conn: asyncpg.Connection, session_id: str, *, runnable: bool = False) -> None:
    """Wake the listeners of ``session_id`` (workers, followers) when the
    surrounding transaction commits; ``q`` 0: no new event, the turn queue changed
    (``runnable``: a request can be claimed, say so on :data:`TURNS_CHANNEL` too)."""
    payload = "json_build_object('s', $2::text, 'q', 0)::text"
    extra = f", pg_notify($3, {payload})" if runnable else ""
    args = (NOTIFY_CHANNEL, session_id, *((TURNS_CHANNEL,) if runnable else ()))
    await conn.execute(f"SELECT pg_notify($1, {payload}){extra}", *args)


# ---------------------------------------------------------------------------
# The worker side's one-transaction steps; SQLite's are in
# ``sqlite/workers.py`` (_WorkerSteps), with the same contracts.

_QUEUE_SQL = (
    "WITH d AS (DELETE FROM leases WHERE session_id = $2::text AND invocation_id = $3::text AND owner = $7::text),"
    " r AS (INSERT INTO turn_requests (app_name, session_id, invocation_id, kind, payload, requested_at)"
    " SELECT $1::text, $2, $3, $4::text, $5::text, $6::double precision WHERE $4 IS NOT NULL"
    " ON CONFLICT (session_id, invocation_id) DO UPDATE SET kind = excluded.kind, payload = excluded.payload,"
    " requested_at = excluded.requested_at, held = NULL, note = NULL RETURNING session_id)"
    " SELECT pg_notify($8::text, json_build_object('s', session_id, 'q', 0)::text),"
    " pg_notify($9::text, json_build_object('s', session_id, 'q', 0)::text) FROM r"
)
"""After the answer's append, in its transaction: release the lease taken for it,
leave the request (none when ``$4``, its kind, is NULL) and wake the workers."""

def _claim_ctes(p: int, *, besides: tuple[int, int] | None = None) -> str:
    """The claim's CTEs -- ``c``, the request claimed, and ``g``, its graph version
    recorded -- with their nine parameters numbered from ``$p`` (apps, owner,
    until, now, the skip list's three arrays, the versions' two); ``besides``: the
    parameters of a request never to claim (the one the same statement finishes)."""
    q = [f"${p + i}" for i in range(9)]
    other = "" if besides is None else (
        f" AND (q.session_id, q.invocation_id) IS DISTINCT FROM (${besides[0]}::text, ${besides[1]}::text)"
    )
    return (
        f"c AS (UPDATE turn_requests t SET claimed_by = {q[1]}, claimed_until = {q[2]}"
        " WHERE (t.session_id, t.invocation_id) = (SELECT session_id, invocation_id FROM turn_requests q"
        f" WHERE app_name = ANY({q[0]}::text[]) AND held IS NULL"
        f" AND (claimed_by IS NULL OR claimed_until <= {q[3]}){other} AND NOT EXISTS (SELECT 1 FROM"
        f" unnest({q[4]}::text[], {q[5]}::text[], {q[6]}::text[]::double precision[]) AS x(s, i, r)"
        " WHERE x.s = q.session_id AND x.i = q.invocation_id AND x.r = q.requested_at)"
        " ORDER BY requested_at LIMIT 1 FOR UPDATE SKIP LOCKED)"
        f" RETURNING {', '.join('t.' + c for c in _REQ_COLS.split(', '))}),"
        " g AS (INSERT INTO invocation_graphs (session_id, invocation_id, graph)"
        f" SELECT c.session_id, c.invocation_id, v.graph FROM c JOIN unnest({q[7]}::text[], {q[8]}::text[]) AS v(app, graph)"
        " ON v.app = c.app_name ON CONFLICT DO NOTHING RETURNING graph)"
    )


_CLAIM_COLS = (
    f"{', '.join('c.' + c for c in _REQ_COLS.split(', '))}, coalesce((SELECT graph FROM g),"
    " (SELECT x.graph FROM invocation_graphs x WHERE x.session_id = c.session_id AND x.invocation_id = c.invocation_id))"
)
_CLAIM_HEAD = f"WITH {_claim_ctes(1)} SELECT {_CLAIM_COLS}"
_CLAIM_NEXT_SQL = f"{_CLAIM_HEAD} FROM c"
"""Claim the oldest runnable request in one statement: rows another worker is
claiming right now are skipped (``SKIP LOCKED``), not waited for or raced. The
request is picked by an uncorrelated subquery (run once), not joined in ``FROM``:
a plan that rescans a joined ``LIMIT 1 ... SKIP LOCKED`` per row of the table
re-picks past the rows it just updated and claims them all (seen: then the
claim fails on its one-row reads, every half second, for a minute); and
record the claimer's graph version for its invocation unless one was (the claim
returns the recorded one last)."""

_READ_COLS = ", s.user_id, sn.seq, sn.data, ev.seqs, ev.texts, l.owner, l.acquired_at, l.renewed_at, l.expires_at"
_READ_JOINS = (
    " LEFT JOIN sessions s ON s.id = c.session_id"
    " LEFT JOIN snapshots sn ON sn.session_id = c.session_id AND sn.invocation_id = c.invocation_id"
    " LEFT JOIN leases l ON l.session_id = c.session_id AND l.invocation_id = c.invocation_id"
    " LEFT JOIN LATERAL (SELECT array_agg(e.seq::text ORDER BY e.seq) AS seqs, array_agg(e.json ORDER BY e.seq) AS texts"
    " FROM events e WHERE e.session_id = c.session_id AND e.invocation_id = c.invocation_id"
    " AND e.seq > coalesce(sn.seq, 0)) ev ON true"
)
_CLAIM_READ_SQL = f"{_CLAIM_HEAD}{_READ_COLS} FROM c{_READ_JOINS}"
""":data:`_CLAIM_NEXT_SQL`, and what the claimed turn's Runner reads before its
first write (:class:`~engine.store.workers.TurnReads`), in the same statement and
snapshot: the session's user, the invocation's snapshot and its events after it,
and its lease row. The seqs come as text: asyncpg has no built-in codec for
``bigint[]`` and would look the type up on every new connection."""

_FINISH_SQL = (
    "WITH d AS (DELETE FROM turn_requests WHERE session_id = $1 AND invocation_id = $2 AND claimed_by = $3"
    " AND requested_at = $4 RETURNING 1),"
    " u AS (UPDATE turn_requests SET claimed_by = NULL, claimed_until = NULL WHERE session_id = $1"
    " AND invocation_id = $2 AND claimed_by = $3 AND requested_at <> $4 RETURNING 1)"
    " SELECT EXISTS (SELECT 1 FROM d), pg_notify($5, json_build_object('s', $1::text,"
    " 'q', CASE WHEN EXISTS (SELECT 1 FROM u) THEN 0 ELSE -1 END)::text),"
    " (SELECT pg_notify($6, json_build_object('s', $1::text, 'q', 0)::text) FROM u)"
)
"""Delete the finished request, or hand it back when it was requested again; ``q``
0 (runnable: workers wake) or -1 (gone: only followers care)."""

_SETTLE_WITH = (
    f"WITH a (last) AS MATERIALIZED ({_APPEND_RELEASE_SQL}),"
    " d AS (DELETE FROM turn_requests WHERE session_id = $9 AND invocation_id = $10 AND claimed_by = $11"
    " AND requested_at = $12 RETURNING 1),"
    " u AS (UPDATE turn_requests SET claimed_by = NULL, claimed_until = NULL WHERE session_id = $9"
    " AND invocation_id = $10 AND claimed_by = $11 AND requested_at <> $12 RETURNING 1)"
)
_SETTLE_COLS = (
    " SELECT (SELECT last FROM a), EXISTS (SELECT 1 FROM d), pg_notify($13, json_build_object('s', $9::text,"
    " 'q', CASE WHEN EXISTS (SELECT 1 FROM u) THEN 0 ELSE -1 END)::text)::text,"
    " (SELECT pg_notify($14, json_build_object('s', $9::text, 'q', 0)::text) FROM u)::text"
)
_SETTLE_SQL = _SETTLE_WITH + _SETTLE_COLS
"""A worker's turn's last write (``hitl_append_release``: its events, snapshot and
lease's release) and :data:`_FINISH_SQL`'s finish of the request it ran, in one
statement: all or nothing (an append refused fails the whole statement)."""

_SETTLE_CLAIM_SQL = (
    f"{_SETTLE_WITH}, {_claim_ctes(15, besides=(9, 10))}{_SETTLE_COLS}, {_CLAIM_COLS}{_READ_COLS}"
    f" FROM (VALUES (1)) AS one (x) LEFT JOIN c ON true{_READ_JOINS}"
)
""":data:`_SETTLE_SQL` and :data:`_CLAIM_READ_SQL` in one statement: a turn's last
write also claims the worker's next request (never the one it finishes) and reads
it. With a backlog a turn is then two round trips, not three (its claim rode on
the turn before). All or nothing: an append refused claims nothing. The claim is
an ordinary one (claimed_by, an expiry): a worker that dies with it holding it
leaves it to the heartbeat's takeover or its expiry, as any claim."""

_LEASE_AND_NEWS_SQL = (
    f"SELECT {', '.join('l.' + c.strip() for c in _LEASE_COLS.split(','))}, EXISTS (SELECT 1 FROM events e"
    " WHERE e.session_id = $1 AND e.invocation_id = $2 AND e.seq > $3) FROM sessions s LEFT JOIN leases l"
    " ON l.session_id = s.id AND l.invocation_id = $2 WHERE s.id = $1"
)
"""An invocation's lease and whether it moved on since a read (one snapshot)."""

_INTERRUPTED_PG_SQL = (
    "SELECT s.app_name, i.session_id, i.invocation_id, l.owner, l.acquired_at, l.renewed_at, l.expires_at"
    " FROM sessions s JOIN invocations i ON i.session_id = s.id AND i.status = 'running'"
    " LEFT JOIN leases l ON l.session_id = i.session_id AND l.invocation_id = i.invocation_id"
    " WHERE s.status = 'running' AND s.app_name = ANY($1::text[]) AND NOT EXISTS (SELECT 1 FROM turn_requests r"
    " WHERE r.session_id = i.session_id AND r.invocation_id = i.invocation_id) LIMIT $2"
)
"""As SQLite's ``_INTERRUPTED_SQL``: sessions by status (an index), then their running invocations."""

_SETTLED_HELD_PG_SQL = (
    f"SELECT {', '.join('r.' + c for c in _REQ_COLS.split(', '))} FROM turn_requests r"
    " JOIN invocations i ON i.session_id = r.session_id AND i.invocation_id = r.invocation_id"
    " WHERE r.app_name = ANY($1::text[]) AND r.held IS NOT NULL AND i.status <> 'running' LIMIT $2"
)


def _skip_columns(skip: set[tuple[str, str, float]] | None) -> list[list[Any]]:
    """The claim's ``skip`` as its three array parameters; the times as text (``repr``:
    the same double back), since asyncpg has no built-in codec for ``double
    precision[]`` and would look the type up on every new connection."""
    if not skip:
        return [[], [], []]
    sids, invs, ats = zip(*skip, strict=True)
    return [list(sids), list(invs), [repr(float(a)) for a in ats]]


def _claim_args(
    apps: list[str], owner: str, ttl: float, skip: set[tuple[str, str, float]] | None, versions: dict[str, str] | None
) -> tuple[Any, ...]:
    """:func:`_claim_ctes`'s nine parameters, in order."""
    now = time.time()
    known = versions or {}
    return (list(apps), owner, now + ttl, now, *_skip_columns(skip), list(known), list(known.values()))


_REQ_N = len(_REQ_COLS.split(", "))
"""How many of a claim row's columns are the request's (its graph version follows)."""


def _claimed(row: Any) -> tuple[TurnRequest, TurnReads | None] | None:
    """The request a claim-and-read row names, with its reads (None: nothing claimed)."""
    if row[0] is None:
        return None
    req = _req(row, row[_REQ_N])
    return req, _turn_reads(req, row[_REQ_N + 1:])


def _turn_reads(req: TurnRequest, r: Any) -> TurnReads | None:
    """The reads of :data:`_CLAIM_READ_SQL`'s row (``r``: from the session's user
    on); None when the session is gone, or its snapshot or an event is unreadable
    -- the Runner then reads the usual way, and handles each as it always does."""
    user_id, snap_seq, snap_text, seqs, texts, owner = r[0], r[1], r[2], r[3] or [], r[4] or [], r[5]
    if user_id is None:
        return None
    snap = None
    if snap_seq is not None and (snap := _snapshot_from(snap_seq, snap_text)) is None:
        return None
    sid = req.session_id
    try:
        events = [
            StoredEvent(seq=int(q), session_id=sid, event=parse_event(sid, int(q), t)) for q, t in zip(seqs, texts, strict=True)
        ]
    except CorruptEventError:
        return None
    lease = None if owner is None else _lease_from_row((sid, req.invocation_id, *r[5:9]))
    return TurnReads(user_id, LoadedInvocation(req.invocation_id, snap, events), lease)


class _WorkerSteps(_Core):
    """See :class:`engine.store.sqlite.workers._WorkerSteps` for what each call promises."""

    async def append_and_queue(
        self,
        session_id: str,
        invocation_id: str,
        events: list[Any],
        *,
        owner: str,
        invocation_after: int | None,
        request: TurnRequest | None,
        ttl: float = 30.0,
    ) -> list[Any]:
        """One transaction: ``hitl_acquire_append`` (the lease, the check, the
        events), then the lease's release, the request and its NOTIFY."""
        self._check_writable()
        prepared = [_prepare(e) for e in events]
        args = _append_many_args(session_id, prepared, None, owner)
        now = args[3]
        r = request

        async def fn(conn: asyncpg.Connection) -> int:
            async with conn.transaction():
                row = await _acquire_append(conn, session_id, invocation_id, owner, now + ttl, invocation_after, args, None)
                await conn.execute(
                    _QUEUE_SQL, r.app_name if r else None, session_id, invocation_id, r.kind if r else None,
                    json.dumps(r.payload) if r else None, r.requested_at if r else None, owner, NOTIFY_CHANNEL,
                    TURNS_CHANNEL,
                )
            return int(row[1])

        last, found = await self._write_batch(fn, session_id, prepared)
        return _stored(session_id, prepared, found if last is None else last)

    async def append_and_settle(
        self,
        session_id: str,
        invocation_id: str,
        events: list[Any],
        *,
        owner: str,
        settle: Settle,
        expected_seq: int | None = None,
        snapshot: tuple[int, dict[str, Any]] | None = None,
    ) -> list[Any]:
        """``append_and_release`` and ``finish_turn_request`` in one statement
        (:data:`_SETTLE_SQL`): one round trip and one commit for both."""
        self._check_writable()
        prepared = [_prepare(e) for e in events]
        args = _append_many_args(session_id, prepared, expected_seq, owner)
        snap_seq, snap_text = (None, None) if snapshot is None else (snapshot[0], to_json(snapshot[1]).decode())
        extra = (session_id, invocation_id, settle.owner, settle.requested_at, NOTIFY_CHANNEL, TURNS_CHANNEL)
        nxt = settle.claim_next
        claim = () if nxt is None or not nxt.apps else _claim_args(nxt.apps, nxt.owner, nxt.ttl, nxt.skip, nxt.versions)

        async def fn(conn: asyncpg.Connection) -> int:
            try:
                if claim:  # and the worker's next claim (prepared: a worker's connections were warmed with it)
                    row = await conn.fetchrow(_SETTLE_CLAIM_SQL, invocation_id, snap_seq, snap_text, *args, *extra, *claim)
                    last, deleted = row[0], row[1]
                    settle.claimed, settle.claim_ran = _claimed(row[4:]), True
                else:
                    [(last, deleted, _, _)] = await onetrip.fetch(
                        conn, _SETTLE_SQL, (invocation_id, snap_seq, snap_text, *args, *extra), "ibtt"
                    )
            except asyncpg.PostgresError as e:
                _raise_append_error(e, session_id, invocation_id, owner, expected_seq)
                raise
            settle.deleted = bool(deleted)
            return int(last)

        # All or none committed; a connection lost after the commit: found by the first
        # event's id, and the request is finished again by the worker (deleted stays None).
        last, found = await self._write_batch(fn, session_id, prepared)
        return _stored(session_id, prepared, found if last is None else last)

    async def lease_and_news(self, session_id: str, invocation_id: str, after_seq: int) -> tuple[Any, bool]:
        """The invocation's lease row and whether it has an event after ``after_seq``: one statement."""

        async def fn(conn: asyncpg.Connection) -> tuple[Any, bool]:
            row = await conn.fetchrow(_LEASE_AND_NEWS_SQL, session_id, invocation_id, after_seq)
            if row is None:
                raise SessionNotFoundError(session_id)
            return (None if row[0] is None else _lease_from_row(row)), bool(row[-1])

        return await self._run(fn)

    async def claim_next_turn(
        self,
        apps: list[str],
        owner: str,
        ttl: float,
        *,
        skip: set[tuple[str, str, float]] | None = None,
        versions: dict[str, str] | None = None,
    ) -> TurnRequest | None:
        row = await self._claim(_CLAIM_NEXT_SQL, apps, owner, ttl, skip, versions)
        return _req(row, row[-1]) if row else None

    async def claim_and_read(
        self, apps: list[str], owner: str, ttl: float, *,
        skip: set[tuple[str, str, float]] | None = None, versions: dict[str, str] | None = None,
    ) -> tuple[TurnRequest, TurnReads | None] | None:
        """``claim_next_turn`` and the claimed turn's reads in one statement
        (:data:`_CLAIM_READ_SQL`): a continuation's four round trips in one."""
        row = await self._claim(_CLAIM_READ_SQL, apps, owner, ttl, skip, versions)
        return None if row is None else _claimed(row)

    async def _claim(
        self, sql: str, apps: list[str], owner: str, ttl: float,
        skip: set[tuple[str, str, float]] | None, versions: dict[str, str] | None,
    ) -> Any:
        """Run a claim statement (:data:`_CLAIM_HEAD`'s parameters): its row, or None."""
        self._check_writable()
        if not apps:
            return None
        args = _claim_args(apps, owner, ttl, skip, versions)

        async def fn(conn: asyncpg.Connection) -> Any:
            return await conn.fetchrow(sql, *args)

        return await self._run(fn)

    async def finish_turn_request(self, session_id: str, invocation_id: str, owner: str, requested_at: float) -> bool:
        self._check_writable()

        async def fn(conn: asyncpg.Connection) -> bool:
            row = await conn.fetchrow(_FINISH_SQL, session_id, invocation_id, owner, requested_at, NOTIFY_CHANNEL, TURNS_CHANNEL
            )
            return bool(row[0])

        return await self._run(fn)

    async def interrupted_turns(self, apps: list[str], *, limit: int = 200) -> list[tuple[str, str, str, Any]]:
        if not apps:
            return []

        async def fn(conn: asyncpg.Connection) -> list[tuple[str, str, str, Any]]:
            rows = await conn.fetch(_INTERRUPTED_PG_SQL, list(apps), limit)
            return [(r[0], r[1], r[2], None if r[3] is None else _lease_from_row((r[1], r[2], *list(r)[3:]))) for r in rows]

        return await self._run(fn)

    async def adopt_turn(self, request: TurnRequest) -> bool:
        self._check_writable()
        r = request

        async def fn(conn: asyncpg.Connection) -> bool:
            status = await conn.execute(
                f"INSERT INTO turn_requests ({_REQ_COLS}) VALUES ($1, $2, $3, $4, $5, $6, NULL, NULL, NULL, NULL)"
                " ON CONFLICT (session_id, invocation_id) DO NOTHING",
                r.app_name, r.session_id, r.invocation_id, r.kind, json.dumps(r.payload), r.requested_at,
            )
            if status != "INSERT 0 1":
                return False
            await _notify(conn, r.session_id, runnable=True)  # rare (an interrupted turn): its own statement
            return True

        return await self._run(fn)

    async def settled_held_requests(self, apps: list[str], *, limit: int = 50) -> list[TurnRequest]:
        if not apps:
            return []

        async def fn(conn: asyncpg.Connection) -> list[TurnRequest]:
            return [_req(r) for r in await conn.fetch(_SETTLED_HELD_PG_SQL, list(apps), limit)]

        return await self._run(fn)

    async def turn_notifications(
        self, callback: Callable[[str | None, int | None], None], *, lead: int | None = None
    ) -> Listener:
        """As ``notifications``, on :data:`TURNS_CHANNEL`: only requests that became
        runnable (``q`` 0), and ``(None, None)`` after the connection was re-made.
        ``lead``: a worker pool's lock key -- listen only while leading the pool
        (:meth:`Listener.lead`: one idle worker of the pool hears each request)."""
        listener = Listener(self._connect_args, callback, self.url, channel=TURNS_CHANNEL)
        if lead is not None:
            listener.lead(lead)
        await listener.start()
        return listener

    async def drop_held_request(self, request: TurnRequest) -> None:
        self._check_writable()
        r = request

        async def fn(conn: asyncpg.Connection) -> None:
            await conn.execute(
                "DELETE FROM turn_requests WHERE session_id = $1 AND invocation_id = $2 AND held IS NOT NULL"
                " AND requested_at = $3",
                r.session_id, r.invocation_id, r.requested_at,
            )

        await self._run(fn)
