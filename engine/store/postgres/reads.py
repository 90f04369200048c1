"""Reads: sessions, events, derived rows, snapshots; keyset pagination."""

from __future__ import annotations

from typing import Any

import asyncpg

from ...errors import CorruptEventError, SessionNotFoundError
from ...models import Session, StoredEvent
from ..base import InterruptRecord, InvocationSummary, LoadedInvocation, Page, SessionOrder, SessionSummary
from ..sql.columns import INTERRUPT_COLS, INVOCATION_COLS, owner_condition
from ..sql.cursors import decode_cursor, encode_cursor
from ..sql.rows import interrupt_from_row, invocation_from_row, parse_event, session_from_row, summary_from_row
from . import onetrip
from .core import _Core
from .statements import (
    _ANSWER_READS_SQL,
    _LOAD_INVOCATION_SQL,
    _SESSION_COLS_PG,
    _SUMMARY_COLS_PG,
    _cols,
    _Query,
    _snapshot_from,
)

_INTERRUPT_NULLS = ", NULL" * len(INTERRUPT_COLS.split(","))
"""The interrupt columns of :data:`_ANSWER_READS_SQL`'s other rows."""

_ANSWER_READS_TYPES = "iit" + "t" * 9 + "iftti" + "tf"
"""Its columns' types (:func:`.onetrip.fetch`): kind, seq, data, then the interrupt's
(:data:`INTERRUPT_COLS`: ids and call as text, raised seq and time, status,
resolution, owner and when it was owned)."""
assert len(_ANSWER_READS_TYPES) == 3 + len(INTERRUPT_COLS.split(","))

_INTERRUPT_TYPES = _ANSWER_READS_TYPES[3:]

_LOOKUP_INTERRUPTS_SQL = (
    f"SELECT {_cols('i', INTERRUPT_COLS)} FROM sessions s LEFT JOIN interrupts i"
    " ON i.session_id = s.id AND i.interrupt_id = ANY($2::text[])"
    " WHERE s.id = $1 ORDER BY i.raised_seq, i.invocation_id, i.interrupt_id"
)
"""The interrupts of the ids, and a row of NULLs (none) or nothing (no such session)."""

_GET_SESSION_SQL = f"SELECT {_SESSION_COLS_PG} FROM sessions WHERE id = $1"


class _Reads(_Core):
    """Reads of the store; each is one statement."""

    async def get_session(self, session_id: str) -> Session:
        async def fn(conn: asyncpg.Connection) -> Session:
            # One round trip on a new connection too: a fresh run's first read.
            row = await onetrip.fetchrow(conn, _GET_SESSION_SQL, (session_id,), "ttttffi")
            if row is None:
                raise SessionNotFoundError(session_id)
            return session_from_row(row)

        return await self._run(fn, carries_check=True)

    async def list_sessions(
        self,
        *,
        app_name: str | None = None,
        user_id: str | None = None,
        status: str | None = None,
        text: str | None = None,
        updated_before: float | None = None,
        updated_after: float | None = None,
        limit: int = 50,
        cursor: str | None = None,
        order: SessionOrder = "updated",
        owner: str | None = None,
    ) -> Page[SessionSummary]:
        if limit < 1:
            raise ValueError(f"limit must be at least 1, not {limit}")
        q = _Query()
        for column, value in (("app_name", app_name), ("user_id", user_id), ("status", status)):
            if value is not None:
                q.where(f"{column} = {q.arg(value)}")
        if text is not None:
            t = q.arg(text.lower())  # the id, the user, the app, or one of its interrupt ids
            q.where(
                f"(strpos(lower(id), {t}) > 0 OR strpos(lower(user_id), {t}) > 0 OR strpos(lower(app_name), {t}) > 0"
                f" OR EXISTS (SELECT 1 FROM interrupts AS r WHERE r.session_id = sessions.id"
                f" AND strpos(lower(r.interrupt_id), {t}) > 0))"
            )
        if owner is not None:
            q.where(owner_condition(owner, q.arg))
        if updated_before is not None:
            q.where(f"updated_at < {q.arg(float(updated_before))}")
        if updated_after is not None:
            q.where(f"updated_at > {q.arg(float(updated_after))}")
        oldest = order == "oldest_open"
        if oldest:
            q.where("oldest_open_at IS NOT NULL")
        if cursor:
            ts, sid = decode_cursor(cursor, (float, str))
            a, b = q.arg(ts), q.arg(sid)
            if oldest:
                q.where(f"oldest_open_at >= {a} AND (oldest_open_at > {a} OR id > {b})")
            else:
                q.where(f"updated_at <= {a} AND (updated_at < {a} OR id > {b})")
        sql = f"SELECT {_SUMMARY_COLS_PG} FROM sessions{q.where_sql()}"
        order_by = " ORDER BY oldest_open_at, id" if oldest else " ORDER BY updated_at DESC, id"
        sql += f"{order_by} LIMIT {q.arg(limit + 1)}"
        rows = await self._run(lambda conn: conn.fetch(sql, *q.args))
        page = [summary_from_row(r) for r in rows[:limit]]
        nxt = None
        if len(rows) > limit:
            last = page[-1]
            nxt = encode_cursor(last.oldest_open_at if oldest else last.updated_at, last.id)
        return Page(items=page, next_cursor=nxt)

    async def invocation_count(self, session_id: str) -> int:
        async def fn(conn: asyncpg.Connection) -> int:
            n = await conn.fetchval("SELECT invocation_count FROM sessions WHERE id = $1", session_id)
            if n is None:
                raise SessionNotFoundError(session_id)
            return int(n)

        return await self._run(fn)

    async def events(
        self, session_id: str, *, after_seq: int = 0, limit: int | None = None, skip_corrupt: bool = False
    ) -> list[StoredEvent]:
        """Events with ``seq > after_seq`` in order. A corrupt row raises
        CorruptEventError; with ``skip_corrupt=True`` it is left out instead."""
        return await self._read_events(session_id, None, after_seq, limit, skip_corrupt)

    async def event_rows(self, session_id: str, *, after_seq: int = 0, limit: int = 1000) -> list[tuple[int, str]]:
        """``(seq, JSON)`` of the events after ``after_seq`` as stored, unparsed
        (what an export copies); SessionNotFoundError for no such session."""
        sql = (
            "(SELECT seq, json FROM events WHERE session_id = $1 AND seq > $2 ORDER BY seq LIMIT $3) UNION ALL"
            " SELECT NULL, NULL FROM sessions WHERE id = $1"
            " AND NOT EXISTS (SELECT 1 FROM events WHERE session_id = $1 AND seq > $2)"
        )

        async def fn(conn: asyncpg.Connection) -> list[tuple[int, str]]:
            rows = await conn.fetch(sql, session_id, after_seq, max(limit, 0))
            if not rows:
                raise SessionNotFoundError(session_id)
            return [(int(seq), str(text)) for seq, text in rows if seq is not None]

        return await self._run(fn)

    async def event_at(self, session_id: str, seq: int) -> StoredEvent:
        async def fn(conn: asyncpg.Connection) -> StoredEvent:
            text = await conn.fetchval("SELECT json FROM events WHERE session_id = $1 AND seq = $2", session_id, seq)
            if text is None:
                last = await conn.fetchval("SELECT last_seq FROM sessions WHERE id = $1", session_id)
                if last is None:
                    raise SessionNotFoundError(session_id)
                raise IndexError(f"session {session_id} has no event {seq} (it has {last})")
            return StoredEvent(seq=seq, session_id=session_id, event=parse_event(session_id, seq, text))

        return await self._run(fn)

    async def invocation_events(
        self, session_id: str, invocation_id: str, *, after_seq: int = 0, skip_corrupt: bool = False
    ) -> list[StoredEvent]:
        return await self._read_events(session_id, invocation_id, after_seq, None, skip_corrupt)

    async def _read_events(
        self, session_id: str, invocation_id: str | None, after_seq: int, limit: int | None, skip_corrupt: bool
    ) -> list[StoredEvent]:
        if limit is not None and limit <= 0:
            await self.get_session(session_id)
            return []
        # One statement either way: the events in index order, or -- only when there
        # are none -- one row of NULLs if the session exists (no row: no session).
        # Just one branch can yield rows, so the first one's order is the result's;
        # a join from the session row would sort every event after after_seq per page.
        cond = "session_id = $1 AND seq > $2"
        params: list[Any] = [session_id, after_seq]
        if invocation_id is not None:
            cond += " AND invocation_id = $3"
            params.append(invocation_id)
        page = ""
        if limit is not None and not skip_corrupt:
            page = f" LIMIT ${len(params) + 1}"
            params.append(limit)
        sql = (
            f"(SELECT seq, json FROM events WHERE {cond} ORDER BY seq{page}) UNION ALL"
            f" SELECT NULL, NULL FROM sessions WHERE id = $1 AND NOT EXISTS (SELECT 1 FROM events WHERE {cond})"
        )

        async def fn(conn: asyncpg.Connection) -> list[StoredEvent]:
            rows = await conn.fetch(sql, *params)
            if not rows:
                raise SessionNotFoundError(session_id)
            out: list[StoredEvent] = []
            for seq, text in rows:
                if seq is None:
                    break
                try:
                    event = parse_event(session_id, seq, text)
                except CorruptEventError:
                    if skip_corrupt:
                        continue
                    raise
                out.append(StoredEvent(seq=seq, session_id=session_id, event=event))
                if limit is not None and len(out) >= limit:
                    break
            return out

        return await self._run(fn)

    async def corrupt_events(self, session_id: str) -> list[int]:
        """Seqs of this session's events that cannot be read (empty when all are fine)."""

        async def fn(conn: asyncpg.Connection) -> list[int]:
            await self._require_session(conn, session_id)
            bad: list[int] = []
            async with conn.transaction(readonly=True):
                async for seq, text in conn.cursor(
                    "SELECT seq, json FROM events WHERE session_id = $1 ORDER BY seq", session_id
                ):
                    try:
                        parse_event(session_id, seq, text)
                    except CorruptEventError:
                        bad.append(seq)
            return bad

        return await self._run(fn)

    async def list_invocations(self, session_id: str) -> list[InvocationSummary]:
        return await self._session_rows(
            f"SELECT {_cols('v', INVOCATION_COLS)} FROM sessions s LEFT JOIN invocations v"
            " ON v.session_id = s.id WHERE s.id = $1 ORDER BY v.started_seq",
            session_id,
            invocation_from_row,
        )

    async def lookup_interrupts(self, session_id: str, interrupt_ids: list[str]) -> list[InterruptRecord]:
        return await self._session_rows(
            _LOOKUP_INTERRUPTS_SQL, session_id, interrupt_from_row, list(interrupt_ids), types=_INTERRUPT_TYPES
        )

    async def open_interrupts(
        self,
        *,
        session_id: str | None = None,
        app_name: str | None = None,
        limit: int = 50,
        cursor: str | None = None,
        node: str | None = None,
        text: str | None = None,
        raised_before: float | None = None,
    ) -> Page[InterruptRecord]:
        if limit < 1:
            raise ValueError(f"limit must be at least 1, not {limit}")
        q = _Query()
        q.where("status = 'open'")  # the literal lets the planner use the partial inbox indexes
        if session_id is not None:
            q.where(f"session_id = {q.arg(session_id)}")
        if app_name is not None:
            q.where(f"app_name = {q.arg(app_name)}")
        if node:  # a path segment NAME@run, case-sensitive (as SQLite's instr)
            q.where(f"strpos('/' || path, '/' || {q.arg(node)} || '@') > 0")
        if text:
            q.where(f"strpos(lower(args::jsonb ->> 'message'), {q.arg(text.lower())}) > 0")
        if raised_before is not None:
            q.where(f"raised_at < {q.arg(float(raised_before))}")
        if cursor:
            ts, sid, seq, iid = decode_cursor(cursor, (float, str, int, str))
            q.where(
                f"(raised_at, session_id, raised_seq, interrupt_id) > ({q.arg(ts)}, {q.arg(sid)}, "
                f"{q.arg(seq)}, {q.arg(iid)})"
            )
        sql = (
            f"SELECT {INTERRUPT_COLS} FROM interrupts{q.where_sql()}"
            f" ORDER BY raised_at, session_id, raised_seq, interrupt_id LIMIT {q.arg(limit + 1)}"
        )
        rows = await self._run(lambda conn: conn.fetch(sql, *q.args))
        page = [interrupt_from_row(r) for r in rows[:limit]]
        nxt = None
        if len(rows) > limit:
            last = page[-1]
            nxt = encode_cursor(last.raised_at, last.session_id, last.raised_seq, last.interrupt_id)
        return Page(items=page, next_cursor=nxt)

    async def get_snapshot(self, session_id: str, invocation_id: str) -> tuple[int, dict[str, Any]] | None:
        async def fn(conn: asyncpg.Connection) -> tuple[int, dict[str, Any]] | None:
            row = await conn.fetchrow(
                "SELECT p.seq, p.data FROM sessions s LEFT JOIN snapshots p"
                " ON p.session_id = s.id AND p.invocation_id = $2 WHERE s.id = $1",
                session_id,
                invocation_id,
            )
            if row is None:
                raise SessionNotFoundError(session_id)
            return None if row[0] is None else _snapshot_from(row[0], row[1])

        return await self._run(fn)

    async def answer_reads(
        self, session_id: str, interrupt_ids: list[str], invocation_id: str | None = None
    ) -> tuple[list[InterruptRecord], LoadedInvocation | None]:
        """``lookup_interrupts`` and, for the invocation the answer resumes
        (``invocation_id``, else the first open id's), ``snapshot_and_events``,
        in one statement (capability ``answer_reads``): what an answer reads
        before its first write -- one round trip instead of two."""
        sql = _ANSWER_READS_SQL.format(cols=INTERRUPT_COLS, nulls=_INTERRUPT_NULLS)

        async def fn(conn: asyncpg.Connection) -> tuple[list[InterruptRecord], LoadedInvocation | None]:
            # One round trip on a new connection too: a resume's first read.
            rows = await onetrip.fetch(conn, sql, (session_id, list(interrupt_ids), invocation_id), _ANSWER_READS_TYPES)
            marker = [r for r in rows if r[0] == 2]
            if not marker:
                raise SessionNotFoundError(session_id)
            records = sorted(
                (interrupt_from_row(tuple(r)[3:]) for r in rows if r[0] == 3),
                key=lambda i: (i.raised_seq, i.invocation_id, i.interrupt_id),
            )
            inv = marker[0][2]
            if inv is None:
                return records, None
            snap = None
            events: list[StoredEvent] = []
            for r in rows:
                if r[0] == 0:
                    snap = _snapshot_from(r[1], r[2])
                    if snap is None:  # unreadable: read the invocation the usual way (rare)
                        return records, LoadedInvocation(inv, *await self.snapshot_and_events(session_id, inv))
                elif r[0] == 1:
                    events.append(StoredEvent(seq=r[1], session_id=session_id, event=parse_event(session_id, r[1], r[2])))
            return records, LoadedInvocation(inv, snap, events)

        return await self._run(fn, carries_check=True)

    async def snapshot_and_events(
        self, session_id: str, invocation_id: str
    ) -> tuple[tuple[int, dict[str, Any]] | None, list[StoredEvent]]:
        """``get_snapshot`` and ``invocation_events(after_seq=<the snapshot's seq>)``
        in one statement (capability ``snapshot_and_events``): what a resume reads."""

        async def fn(conn: asyncpg.Connection) -> tuple[tuple[int, dict[str, Any]] | None, list[StoredEvent]]:
            rows = await conn.fetch(_LOAD_INVOCATION_SQL, session_id, invocation_id)
            if not rows or rows[-1][0] != 2:
                raise SessionNotFoundError(session_id)
            snap = None
            events: list[StoredEvent] = []
            for kind, seq, text in rows[:-1]:
                if kind == 0:
                    snap = _snapshot_from(seq, text)
                    if snap is None:  # unreadable: no cache, so every event of the invocation (rare)
                        rows = await conn.fetch(
                            "SELECT 1, seq, json FROM events WHERE session_id = $1 AND invocation_id = $2 ORDER BY seq",
                            session_id,
                            invocation_id,
                        )
                        return None, [
                            StoredEvent(seq=q, session_id=session_id, event=parse_event(session_id, q, t))
                            for _, q, t in rows
                        ]
                else:
                    events.append(
                        StoredEvent(seq=seq, session_id=session_id, event=parse_event(session_id, seq, text))
                    )
            return snap, events

        return await self._run(fn)
