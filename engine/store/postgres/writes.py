"""Writes: sessions, appends (one ``hitl_append_many`` statement each), a turn's first and last writes, snapshots.

The appends and the turn's writes go through :mod:`.onetrip`: one round trip
each, on a new connection too."""

from __future__ import annotations

import json
import time
from collections.abc import Awaitable, Callable
from functools import partial
from typing import Any

import asyncpg
from pydantic_core import to_json

from ...errors import ConflictError, LeaseLostError, SessionNotFoundError
from ...models import Event, Session, StoredEvent, new_id
from ..base import Lease
from ..owner_index import check_owner_change
from ..sql.prepared import Prepared, prepare
from ..sql.rows import session_from_row
from . import onetrip
from .core import _Core
from .errors import _raise_append_error
from .statements import (
    _ACQUIRE_APPEND_SQL,
    _APPEND_MANY_SQL,
    _APPEND_RELEASE_SQL,
    _CREATE_ACQUIRE_APPEND_SQL,
    _PUT_SNAPSHOT_SQL,
    _SESSION_COLS_PG,
    _append_many_args,
    _stored,
)


class _Writes(_Core):
    """Session creation, appends, a turn's first and last writes, snapshots."""

    async def create_session(
        self, app_name: str, user_id: str, session_id: str | None = None, state: dict[str, Any] | None = None
    ) -> Session:
        self._check_writable()
        sid = session_id or new_id()
        now = time.time()
        state_json = to_json(dict(state or {})).decode()

        async def fn(conn: asyncpg.Connection) -> Session:
            row = await conn.fetchrow(
                "INSERT INTO sessions (id, app_name, user_id, state, created_at, updated_at, last_seq, status)"
                " VALUES ($1, $2, $3, $4::jsonb, $5, $5, 0, 'new') ON CONFLICT (id) DO NOTHING"
                f" RETURNING {_SESSION_COLS_PG}",
                sid,
                app_name,
                user_id,
                state_json,
                now,
            )
            if row is None:
                raise ConflictError(f"session {sid!r} already exists")
            return session_from_row(row)

        return await self._run(fn, reconnect=False)  # a retry after a commit would say 'already exists'

    async def append_event(
        self, session_id: str, event: Event, *, expected_seq: int | None = None, lease_owner: str | None = None
    ) -> StoredEvent:
        [stored] = await self.append_events(session_id, [event], expected_seq=expected_seq, lease_owner=lease_owner)
        return stored

    async def append_events(
        self, session_id: str, events: list[Event], *, expected_seq: int | None = None, lease_owner: str | None = None
    ) -> list[StoredEvent]:
        """Several appends in one statement (an answer and the completion records of
        the runs it auto-completes; a node's end and the next node's start):
        ``hitl_append_many``, one round trip, all committed together or none."""
        self._check_writable()
        if not events:
            return []
        prepared = [prepare(e) for e in events]

        args = _append_many_args(session_id, prepared, expected_seq, lease_owner)

        async def fn(conn: asyncpg.Connection) -> int:
            # One statement: the whole batch commits or none of it, in one round trip.
            try:
                [(last,)] = await onetrip.fetch(conn, _APPEND_MANY_SQL, args, "i")
                return int(last)
            except asyncpg.PostgresError as e:
                _raise_append_error(e, session_id, prepared[0].invocation_id, lease_owner, expected_seq)
                raise

        if any(p.owners is not None for p in prepared):
            fn = partial(_with_owners, fn, session_id, prepared)

        last, found = await self._write_batch(fn, session_id, prepared)
        return _stored(session_id, prepared, found if last is None else last)

    async def put_snapshot(self, session_id: str, invocation_id: str, seq: int, data: dict[str, Any]) -> None:
        self._check_writable()
        text = to_json(data).decode()

        async def fn(conn: asyncpg.Connection) -> None:
            try:
                await conn.execute(_PUT_SNAPSHOT_SQL, session_id, invocation_id, seq, text)
            except asyncpg.ForeignKeyViolationError:
                raise SessionNotFoundError(session_id) from None

        await self._run(fn)

    async def acquire_and_append(
        self,
        session_id: str,
        invocation_id: str,
        events: list[Event],
        *,
        owner: str,
        ttl: float,
        expected_seq: int | None = None,
        invocation_after: int | None = None,
        create: tuple[str, str] | None = None,
    ) -> tuple[Lease, list[StoredEvent], dict[str, Any]]:
        """A turn's first write (see :data:`engine.store.base.Capability`): the
        lease, the checks and the events in one statement, ``hitl_acquire_append``
        (one transaction, one round trip). Returns the lease, the stored events
        and the session's state after them. ``create=(app_name, user_id)``
        creates the session first, in the same statement
        (``hitl_create_acquire_append``; ConflictError when it exists)."""
        self._check_writable()
        prepared = [prepare(e) for e in events]
        args = _append_many_args(session_id, prepared, expected_seq, owner)
        now = args[3]

        async def fn(conn: asyncpg.Connection) -> tuple[float, int | None, str]:
            row = await _acquire_append(
                conn, session_id, invocation_id, owner, now + ttl, invocation_after, args, expected_seq, create
            )
            return row[0], row[1], row[2]

        row: tuple[float, int | None, str] | None
        if not prepared:
            row = await self._run(fn)  # nothing to find again after a lost connection: the lease alone
        else:
            row, found = await self._write_batch(fn, session_id, prepared)
            if row is None:  # committed, and the connection broke: so was the lease; read it and the state back
                held = await self.get_lease(session_id, invocation_id)
                if held is None or held.owner != owner:  # lapsed and taken over meanwhile
                    raise LeaseLostError(session_id, invocation_id, owner, held.holder if held else None)
                session = await self.get_session(session_id)
                return held, _stored(session_id, prepared, found), dict(session.state)
        acquired, last, state_text = row
        lease = Lease(
            session_id=session_id,
            invocation_id=invocation_id,
            owner=owner,
            acquired_at=acquired,
            renewed_at=now,
            expires_at=now + ttl,
        )
        return lease, _stored(session_id, prepared, last), json.loads(state_text)

    async def append_and_release(
        self,
        session_id: str,
        invocation_id: str,
        events: list[Event],
        *,
        owner: str,
        expected_seq: int | None = None,
        snapshot: tuple[int, dict[str, Any]] | None = None,
    ) -> list[StoredEvent]:
        """A turn's last events (fenced by ``owner``'s lease), its snapshot and its
        lease's release in one statement, ``hitl_append_release`` (see
        :func:`engine.store.base.append_and_release`)."""
        self._check_writable()
        prepared = [prepare(e) for e in events]
        args = _append_many_args(session_id, prepared, expected_seq, owner)
        snap_seq, snap_text = (None, None) if snapshot is None else (snapshot[0], to_json(snapshot[1]).decode())

        async def fn(conn: asyncpg.Connection) -> int | None:
            try:
                [(last,)] = await onetrip.fetch(conn, _APPEND_RELEASE_SQL, (invocation_id, snap_seq, snap_text, *args), "i")
                return None if last is None else int(last)
            except asyncpg.PostgresError as e:
                _raise_append_error(e, session_id, invocation_id, owner, expected_seq)
                raise

        if not prepared:
            last = await self._run(fn)  # the snapshot and the release: safe to redo
        else:
            # All or none committed (the release with the events).
            last, found = await self._write_batch(fn, session_id, prepared)
            last = found if last is None else last
        return _stored(session_id, prepared, last)


async def _with_owners(
    append: Callable[[asyncpg.Connection], Awaitable[int]],
    session_id: str,
    prepared: list[Prepared],
    conn: asyncpg.Connection,
) -> int:
    """An append with ownership events (rare: claims, assignments, releases): in one
    transaction, the session row locked first (as ``hitl_append`` does, so appends to
    the session queue behind it and of two racing claims the second sees the first's
    owner), each change checked against the index and applied after the append."""
    async with conn.transaction():
        if await conn.fetchval("SELECT 1 FROM sessions WHERE id = $1 FOR UPDATE", session_id) is None:
            raise SessionNotFoundError(session_id)
        changes: list[tuple[str, str, str | None]] = []
        for p in prepared:
            if p.owners is None:
                continue
            rows = await conn.fetch(
                "SELECT interrupt_id, status, owner FROM interrupts"
                " WHERE session_id = $1 AND invocation_id = $2 AND interrupt_id = ANY($3::text[])",
                session_id,
                p.invocation_id,
                p.owners.ids,
            )
            current = {r[0]: (r[1], r[2]) for r in rows}
            for inv, iid, who in changes:  # an earlier event of this batch
                if inv == p.invocation_id and iid in current:
                    current[iid] = (current[iid][0], who)
            check_owner_change(p.owners, current)
            changes += [(p.invocation_id, i, p.owners.owner) for i in p.owners.ids]
        last = await append(conn)
        for p in prepared:
            if p.owners is not None:
                await conn.execute(
                    "UPDATE interrupts SET owner = $4, owned_at = $5"
                    " WHERE session_id = $1 AND invocation_id = $2 AND interrupt_id = ANY($3::text[])"
                    " AND status = 'open'",
                    session_id,
                    p.invocation_id,
                    p.owners.ids,
                    p.owners.owner,
                    p.timestamp if p.owners.owner else None,
                )
        return last


async def _acquire_append(
    conn: asyncpg.Connection,
    session_id: str,
    invocation_id: str,
    owner: str,
    expires: float,
    invocation_after: int | None,
    args: tuple[Any, ...],
    expected_seq: int | None,
    create: tuple[str, str] | None = None,
) -> Any:
    """``hitl_acquire_append`` on ``conn`` (``args``: :func:`_append_many_args`'s), its
    errors translated: the row (acquired_at, last seq, state). A turn's first write,
    and the first statement of an answer queued for a worker. ``create``:
    ``hitl_create_acquire_append``, which creates the session first."""
    call = (invocation_id, owner, expires, invocation_after, *args[:2], *args[3:])
    try:
        if create is not None:
            return await onetrip.fetchrow(conn, _CREATE_ACQUIRE_APPEND_SQL, (*create, *call), "fit")
        return await onetrip.fetchrow(conn, _ACQUIRE_APPEND_SQL, call, "fit")
    except asyncpg.PostgresError as e:
        _raise_append_error(e, session_id, invocation_id, owner, expected_seq, invocation_after)
        raise
