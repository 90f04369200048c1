"""The notification ledger on PostgreSQL (:mod:`engine.store.notify` says what it is)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import asyncpg

from ..notify import COLUMNS, DELIVERIES_TABLE, Delivery, from_row

if TYPE_CHECKING:
    from .store import PostgresStore

TABLE = DELIVERIES_TABLE.format(double="DOUBLE PRECISION", after="")


async def _exists(conn: asyncpg.Connection) -> bool:
    return bool(await conn.fetchval("SELECT to_regclass('notify_deliveries') IS NOT NULL"))


class PostgresLedger:
    def __init__(self, store: PostgresStore) -> None:
        self.store = store

    async def _ensure(self, conn: asyncpg.Connection) -> None:
        if not await _exists(conn):
            # Two first senders at once: the second CREATE waits for the first's and finds the table.
            await conn.execute("SELECT pg_advisory_xact_lock(7361)")
            await conn.execute(TABLE)

    async def claim(self, d: Delivery, owner: str, ttl: float, now: float) -> Delivery | None:
        self.store._check_writable()

        async def fn(conn: asyncpg.Connection) -> Delivery | None:
            async with conn.transaction():
                await self._ensure(conn)
                await conn.execute(
                    f"INSERT INTO notify_deliveries ({COLUMNS}) VALUES ($1, $2, $3, $4, $5, 'pending', 0, 0, NULL,"
                    " NULL, NULL, $6, $6, NULL) ON CONFLICT (key, channel) DO NOTHING",
                    d.key, d.channel, d.kind, d.session_id, d.subject, now,
                )
                row = await conn.fetchrow(
                    f"UPDATE notify_deliveries SET claimed_by = $3, claimed_until = $4 WHERE key = $1 AND channel = $2"
                    " AND status = 'pending' AND next_at <= $5 AND (claimed_by IS NULL OR claimed_until <= $5)"
                    f" RETURNING {COLUMNS}", d.key, d.channel, owner, now + ttl, now,
                )
            return from_row(row) if row is not None else None

        return await self.store._run(fn)

    async def finish(self, key: str, channel: str, owner: str, *, sent: bool, error: str | None, next_at: float,
                     give_up: bool, now: float) -> bool:
        self.store._check_writable()

        async def fn(conn: asyncpg.Connection) -> bool:
            if not await _exists(conn):
                return False
            if sent:
                status = await conn.execute(
                    "UPDATE notify_deliveries SET status = 'sent', sent_at = $4, attempts = attempts + 1,"
                    " claimed_by = NULL, claimed_until = NULL, updated_at = $4 WHERE key = $1 AND channel = $2"
                    " AND claimed_by = $3", key, channel, owner, now,
                )
            else:
                status = await conn.execute(
                    "UPDATE notify_deliveries SET status = $4, last_error = $5, next_at = $6, attempts = attempts + 1,"
                    " claimed_by = NULL, claimed_until = NULL, updated_at = $7 WHERE key = $1 AND channel = $2"
                    " AND claimed_by = $3", key, channel, owner, "failed" if give_up else "pending", error, next_at, now,
                )
            return bool(status == "UPDATE 1")

        return await self.store._run(fn, reconnect=False)

    async def finished(self, keys: list[str]) -> set[tuple[str, str]]:
        async def fn(conn: asyncpg.Connection) -> set[tuple[str, str]]:
            if not keys or not await _exists(conn):
                return set()
            rows = await conn.fetch("SELECT key, channel FROM notify_deliveries WHERE key = ANY($1::text[])"
                                    " AND status != 'pending'", keys)
            return {(r[0], r[1]) for r in rows}

        return await self.store._run(fn)

    async def deliveries(self, *, status: str | None = None, limit: int = 100) -> list[Delivery]:
        async def fn(conn: asyncpg.Connection) -> list[Delivery]:
            if not await _exists(conn):
                return []
            rows = await conn.fetch(f"SELECT {COLUMNS} FROM notify_deliveries WHERE ($1::text IS NULL OR status = $1)"
                                    " ORDER BY updated_at DESC, key, channel LIMIT $2", status, limit)
            return [from_row(r) for r in rows]

        return await self.store._run(fn)
