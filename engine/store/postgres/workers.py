"""Turn requests, worker heartbeats and invocation graph versions on PostgreSQL
(:mod:`engine.store.workers` says what they are). A part of :class:`PostgresStore`."""

from __future__ import annotations

import json
import time

import asyncpg

# Row converters and column lists are the SQLite store's: one definition of each, whatever the backend.
from ..sqlite.workers import _REQ_COLS, _WORKER_COLS, _req, _worker
from ..workers import TurnRequest, WorkerRecord
from .core import _Core
from .schema import NOTIFY_CHANNEL


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
                await _notify(conn, r.session_id)

        await self._run(fn)

    async def turn_requests(self, apps: list[str] | None = None, *, limit: int = 200) -> list[TurnRequest]:
        async def fn(conn: asyncpg.Connection) -> list[TurnRequest]:
            if apps is None:
                rows = await conn.fetch(f"SELECT {_REQ_COLS} FROM turn_requests ORDER BY requested_at LIMIT $1", limit)
            else:
                rows = await conn.fetch(
                    f"SELECT {_REQ_COLS} FROM turn_requests WHERE app_name = ANY($1::text[])"
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
            return status == "UPDATE 1"

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

    async def put_worker(self, worker: WorkerRecord) -> None:
        self._check_writable()
        w = worker

        async def fn(conn: asyncpg.Connection) -> None:
            await conn.execute(
                f"INSERT INTO workers ({_WORKER_COLS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)"
                " ON CONFLICT (worker_id) DO UPDATE SET apps = excluded.apps, versions = excluded.versions,"
                " current = excluded.current, state = excluded.state, heartbeat_at = excluded.heartbeat_at,"
                " stale_after = excluded.stale_after",
                w.worker_id, w.host, w.pid, json.dumps(w.apps), json.dumps(w.versions), json.dumps(w.current),
                w.state, w.started_at, w.heartbeat_at, w.stale_after,
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

    # -- the turn requests of a page of sessions (issue 18, operator side): one read
    async def turn_requests_of(self, session_ids: list[str]) -> list[TurnRequest]:
        """Every turn request of these sessions, in one statement (see the SQLite store)."""
        ids = list(dict.fromkeys(session_ids))

        async def fn(conn: asyncpg.Connection) -> list[TurnRequest]:
            rows = await conn.fetch(
                f"SELECT {_REQ_COLS} FROM turn_requests WHERE session_id = ANY($1::text[]) ORDER BY requested_at", ids
            )
            return [_req(r) for r in rows]

        return await self._run(fn) if ids else []


async def _notify(conn: asyncpg.Connection, session_id: str) -> None:
    """Wake the listeners of ``session_id`` (workers, followers) when the
    surrounding transaction commits; ``q`` 0: no new event, the turn queue changed."""
    await conn.execute("SELECT pg_notify($1, json_build_object('s', $2::text, 'q', 0)::text)", NOTIFY_CHANNEL, session_id)
