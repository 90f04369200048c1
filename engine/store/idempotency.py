"""Idempotency keys of the HTTP API's writes, kept in the store.

One row per (caller, key): the request's fingerprint and, once the write is
done, its response (status and body). :meth:`begin` claims a new key (an
``INSERT`` that only one writer wins), or says the key is ``done`` (replay the
response), ``running`` (another server or process has it: or died with it,
mid-write) or ``mismatch`` (used for another request). Kept in the store so
that a retry reaching another ``hitl serve``, or the same one after a restart,
still gets the first response. Like the notification ledger, the table is
made by the first write that needs it (:mod:`engine.store.notify`).
"""

from __future__ import annotations

import sqlite3
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from .postgres import PostgresStore
    from .sqlite import SQLiteStore

Begun = Literal["new", "done", "running", "mismatch"]

SQLITE_TABLE = """CREATE TABLE IF NOT EXISTS api_idempotency (
    who TEXT NOT NULL, key TEXT NOT NULL, fingerprint BLOB NOT NULL, status INTEGER, body BLOB,
    created_at REAL NOT NULL, PRIMARY KEY (who, key)) WITHOUT ROWID"""
PG_TABLE = """CREATE TABLE IF NOT EXISTS api_idempotency (
    who TEXT NOT NULL, key TEXT NOT NULL, fingerprint BYTEA NOT NULL, status INTEGER, body BYTEA,
    created_at DOUBLE PRECISION NOT NULL, PRIMARY KEY (who, key))"""


def _verdict(row: Any, fingerprint: bytes) -> tuple[Begun, tuple[int, bytes] | None]:
    if bytes(row[0]) != fingerprint:
        return "mismatch", None
    if row[1] is None:
        return "running", None
    return "done", (int(row[1]), bytes(row[2]))


# ------------------------------------------------------------------ SQLite
def _begin_tx(conn: sqlite3.Connection, who: str, key: str, fp: bytes, now: float) -> tuple[Begun, Any]:
    conn.execute(SQLITE_TABLE)
    cur = conn.execute("INSERT OR IGNORE INTO api_idempotency (who, key, fingerprint, status, body, created_at)"
                       " VALUES (?, ?, ?, NULL, NULL, ?)", (who, key, fp, now))
    if cur.rowcount == 1:
        return "new", None
    row = conn.execute("SELECT fingerprint, status, body FROM api_idempotency WHERE who = ? AND key = ?",
                       (who, key)).fetchone()
    return _verdict(row, fp)


def _finish_tx(conn: sqlite3.Connection, who: str, key: str, status: int | None, body: bytes | None) -> None:
    conn.execute(SQLITE_TABLE)
    if status is None:
        conn.execute("DELETE FROM api_idempotency WHERE who = ? AND key = ? AND status IS NULL", (who, key))
    else:
        conn.execute("UPDATE api_idempotency SET status = ?, body = ? WHERE who = ? AND key = ?",
                     (status, body, who, key))


class _SQLite:
    def __init__(self, store: SQLiteStore) -> None:
        self.store = store

    async def begin(self, who: str, key: str, fp: bytes, now: float) -> tuple[Begun, Any]:
        return await self.store._write(_begin_tx, who, key, fp, now)

    async def finish(self, who: str, key: str, status: int | None, body: bytes | None) -> None:
        await self.store._write(_finish_tx, who, key, status, body)


# ------------------------------------------------------------------ PostgreSQL
class _Postgres:
    def __init__(self, store: PostgresStore) -> None:
        self.store = store

    async def _ensure(self, conn: Any) -> None:
        if not await conn.fetchval("SELECT to_regclass('api_idempotency') IS NOT NULL"):
            await conn.execute("SELECT pg_advisory_xact_lock(7362)")
            await conn.execute(PG_TABLE)

    async def begin(self, who: str, key: str, fp: bytes, now: float) -> tuple[Begun, Any]:
        self.store._check_writable()

        async def fn(conn: Any) -> tuple[Begun, Any]:
            async with conn.transaction():
                await self._ensure(conn)
                won = await conn.fetchval(
                    "INSERT INTO api_idempotency (who, key, fingerprint, status, body, created_at)"
                    " VALUES ($1, $2, $3, NULL, NULL, $4) ON CONFLICT (who, key) DO NOTHING RETURNING 1",
                    who, key, fp, now)
                if won:
                    return "new", None
                row = await conn.fetchrow("SELECT fingerprint, status, body FROM api_idempotency"
                                          " WHERE who = $1 AND key = $2", who, key)
            return _verdict(row, fp)

        return await self.store._run(fn, reconnect=False)

    async def finish(self, who: str, key: str, status: int | None, body: bytes | None) -> None:
        async def fn(conn: Any) -> None:
            async with conn.transaction():
                await self._ensure(conn)
                if status is None:
                    await conn.execute("DELETE FROM api_idempotency WHERE who = $1 AND key = $2 AND status IS NULL",
                                       who, key)
                else:
                    await conn.execute("UPDATE api_idempotency SET status = $3, body = $4 WHERE who = $1 AND key = $2",
                                       who, key, status, body)

        await self.store._run(fn)


def keys_of(store: Any) -> Any | None:
    """The store's idempotency keys (None: a store that keeps none, the in-memory one)."""
    from .sqlite import SQLiteStore

    if isinstance(store, SQLiteStore):
        return _SQLite(store)
    if type(store).__name__ == "PostgresStore":
        return _Postgres(store)
    return None
