"""Invocation leases, and the audit log."""

from __future__ import annotations

import time
from typing import Any

import asyncpg
from pydantic_core import to_json

from ...errors import InvocationBusyError, LeaseLostError, SessionNotFoundError
from ..base import AuditRecord, Lease, Page
from ..sql.columns import AUDIT_COLS, LEASE_COLS
from ..sql.cursors import decode_cursor, encode_cursor
from ..sql.rows import audit_from_row, lease_from_row
from .core import _Core
from .statements import _RELEASE_SQL, _cols, _Query


class _Leases(_Core):
    """Invocation leases (compare-and-swap statements) and the audit log."""

    async def acquire_lease(
        self, session_id: str, invocation_id: str, owner: str, ttl: float, *, steal_from: str | None = None
    ) -> Lease:
        self._check_writable()
        now = time.time()

        async def fn(conn: asyncpg.Connection) -> Lease:
            # One compare-and-swap statement: insert, or take over when the row's
            # owner is us / steal_from / expired; else nothing is written.
            try:
                row = await conn.fetchrow(
                    f"INSERT INTO leases ({LEASE_COLS}) VALUES ($1, $2, $3, $4, $4, $5)"
                    " ON CONFLICT (session_id, invocation_id) DO UPDATE SET owner = excluded.owner,"
                    " acquired_at = CASE WHEN leases.owner = excluded.owner THEN leases.acquired_at"
                    " ELSE excluded.acquired_at END, renewed_at = excluded.renewed_at, expires_at = excluded.expires_at"
                    " WHERE leases.owner = excluded.owner OR leases.owner = $6 OR leases.expires_at <= $4"
                    f" RETURNING {LEASE_COLS}",
                    session_id,
                    invocation_id,
                    owner,
                    now,
                    now + ttl,
                    steal_from,
                )
            except asyncpg.ForeignKeyViolationError:
                raise SessionNotFoundError(session_id) from None
            if row is None:
                held = await conn.fetchrow(
                    f"SELECT {LEASE_COLS} FROM leases WHERE session_id = $1 AND invocation_id = $2",
                    session_id,
                    invocation_id,
                )
                if held is None:  # released meanwhile: a busy answer would be wrong, try again
                    raise asyncpg.SerializationError("lease row vanished")
                raise InvocationBusyError(invocation_id, lease_from_row(held))
            return lease_from_row(row)

        return await self._run(fn)

    async def renew_lease(self, session_id: str, invocation_id: str, owner: str, ttl: float) -> Lease:
        self._check_writable()
        now = time.time()

        async def fn(conn: asyncpg.Connection) -> Lease:
            row = await conn.fetchrow(
                "UPDATE leases SET renewed_at = $4, expires_at = $5"
                " WHERE session_id = $1 AND invocation_id = $2 AND owner = $3"
                f" RETURNING {LEASE_COLS}",
                session_id,
                invocation_id,
                owner,
                now,
                now + ttl,
            )
            if row is None:
                await self._require_session(conn, session_id)
                held = await conn.fetchval(
                    "SELECT owner FROM leases WHERE session_id = $1 AND invocation_id = $2", session_id, invocation_id
                )
                holder = None
                if held is not None:
                    holder = Lease(
                        session_id=session_id,
                        invocation_id=invocation_id,
                        owner=held,
                        acquired_at=0,
                        renewed_at=0,
                        expires_at=0,
                    ).holder
                raise LeaseLostError(session_id, invocation_id, owner, holder)
            return lease_from_row(row)

        return await self._run(fn)

    async def release_lease(
        self,
        session_id: str,
        invocation_id: str,
        owner: str,
        *,
        snapshot: tuple[int, dict[str, Any]] | None = None,
    ) -> bool:
        self._check_writable()
        text = to_json(snapshot[1]).decode() if snapshot is not None else None

        async def fn(conn: asyncpg.Connection) -> bool:
            released, exists = await conn.fetchrow(
                _RELEASE_SQL, session_id, invocation_id, owner, None if snapshot is None else snapshot[0], text
            )
            if not exists:
                raise SessionNotFoundError(session_id)
            return bool(released)

        return await self._run(fn)

    async def get_lease(self, session_id: str, invocation_id: str) -> Lease | None:
        async def fn(conn: asyncpg.Connection) -> Lease | None:
            row = await conn.fetchrow(
                f"SELECT {_cols('l', LEASE_COLS)} FROM sessions s LEFT JOIN leases l"
                " ON l.session_id = s.id AND l.invocation_id = $2 WHERE s.id = $1",
                session_id,
                invocation_id,
            )
            if row is None:
                raise SessionNotFoundError(session_id)
            return None if row[0] is None else lease_from_row(row)

        return await self._run(fn)

    async def list_leases(self, session_id: str) -> list[Lease]:
        return await self._session_rows(
            f"SELECT {_cols('l', LEASE_COLS)} FROM sessions s LEFT JOIN leases l ON l.session_id = s.id"
            " WHERE s.id = $1 ORDER BY l.invocation_id",
            session_id,
            lease_from_row,
        )

    async def leases_of(self, session_ids: list[str]) -> list[Lease]:
        async def fn(conn: asyncpg.Connection) -> list[Lease]:
            rows = await conn.fetch(
                f"SELECT {_cols('l', LEASE_COLS)} FROM leases l WHERE l.session_id = ANY($1::text[])"
                " ORDER BY l.session_id, l.invocation_id",
                list(session_ids),
            )
            return [lease_from_row(r) for r in rows]

        return await self._run(fn)

    async def audit_log(
        self,
        *,
        operator: str | None = None,
        session_id: str | None = None,
        action: str | None = None,
        since: float | None = None,
        until: float | None = None,
        limit: int = 50,
        cursor: str | None = None,
    ) -> Page[AuditRecord]:
        if limit < 1:
            raise ValueError(f"limit must be at least 1, not {limit}")
        q = _Query()
        for column, value in (("operator", operator), ("session_id", session_id), ("action", action)):
            if value is not None:
                q.where(f"{column} = {q.arg(value)}")
        if since is not None:
            q.where(f"at >= {q.arg(float(since))}")
        if until is not None:
            q.where(f"at < {q.arg(float(until))}")
        if cursor:
            at, no = decode_cursor(cursor, (float, int))
            a, b = q.arg(at), q.arg(no)
            q.where(f"at <= {a} AND (at < {a} OR id < {b})")
        sql = f"SELECT {AUDIT_COLS} FROM audit{q.where_sql()} ORDER BY at DESC, id DESC LIMIT {q.arg(limit + 1)}"
        rows = await self._run(lambda conn: conn.fetch(sql, *q.args))
        page = rows[:limit]
        nxt = encode_cursor(page[-1][1], page[-1][0]) if len(rows) > limit else None
        return Page(items=[audit_from_row(r) for r in page], next_cursor=nxt)
