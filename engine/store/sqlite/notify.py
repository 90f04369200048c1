"""The notification ledger on SQLite (:mod:`engine.store.notify` says what it is)."""

from __future__ import annotations

import sqlite3
from typing import TYPE_CHECKING

from ..notify import COLUMNS, DELIVERIES_TABLE, Delivery, from_row

if TYPE_CHECKING:
    from .store import SQLiteStore

TABLE = DELIVERIES_TABLE.format(double="REAL", after=" WITHOUT ROWID")


def _exists(conn: sqlite3.Connection) -> bool:
    return conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'notify_deliveries'").fetchone() \
        is not None


def _claim_tx(conn: sqlite3.Connection, d: Delivery, owner: str, ttl: float, now: float) -> Delivery | None:
    conn.execute(TABLE)
    conn.execute(
        f"INSERT OR IGNORE INTO notify_deliveries ({COLUMNS}) VALUES (?, ?, ?, ?, ?, 'pending', 0, 0, NULL, NULL,"
        " NULL, ?, ?, NULL)", (d.key, d.channel, d.kind, d.session_id, d.subject, now, now),
    )
    cur = conn.execute(
        "UPDATE notify_deliveries SET claimed_by = ?, claimed_until = ? WHERE key = ? AND channel = ?"
        " AND status = 'pending' AND next_at <= ? AND (claimed_by IS NULL OR claimed_until <= ?)",
        (owner, now + ttl, d.key, d.channel, now, now),
    )
    if cur.rowcount != 1:
        return None
    row = conn.execute(f"SELECT {COLUMNS} FROM notify_deliveries WHERE key = ? AND channel = ?",
                       (d.key, d.channel)).fetchone()
    return from_row(row)


def _finish_tx(conn: sqlite3.Connection, key: str, channel: str, owner: str, sent: bool, error: str | None,
               next_at: float, give_up: bool, now: float) -> bool:
    if not _exists(conn):
        return False
    if sent:
        cur = conn.execute(
            "UPDATE notify_deliveries SET status = 'sent', sent_at = ?, attempts = attempts + 1, claimed_by = NULL,"
            " claimed_until = NULL, updated_at = ? WHERE key = ? AND channel = ? AND claimed_by = ?",
            (now, now, key, channel, owner),
        )
    else:
        cur = conn.execute(
            "UPDATE notify_deliveries SET status = ?, last_error = ?, next_at = ?, attempts = attempts + 1,"
            " claimed_by = NULL, claimed_until = NULL, updated_at = ? WHERE key = ? AND channel = ? AND claimed_by = ?",
            ("failed" if give_up else "pending", error, next_at, now, key, channel, owner),
        )
    return cur.rowcount == 1


def _finished_tx(conn: sqlite3.Connection, keys: list[str]) -> set[tuple[str, str]]:
    if not keys or not _exists(conn):
        return set()
    out: set[tuple[str, str]] = set()
    for i in range(0, len(keys), 500):
        part = keys[i:i + 500]
        marks = ", ".join("?" for _ in part)
        rows = conn.execute(f"SELECT key, channel FROM notify_deliveries WHERE key IN ({marks})"
                            " AND status != 'pending'", part).fetchall()
        out.update((r[0], r[1]) for r in rows)
    return out


def _list_tx(conn: sqlite3.Connection, status: str | None, limit: int) -> list[Delivery]:
    if not _exists(conn):
        return []
    where, args = ("WHERE status = ?", [status]) if status else ("", [])
    rows = conn.execute(f"SELECT {COLUMNS} FROM notify_deliveries {where} ORDER BY updated_at DESC, key, channel"
                        " LIMIT ?", [*args, limit]).fetchall()
    return [from_row(r) for r in rows]


class SQLiteLedger:
    def __init__(self, store: SQLiteStore) -> None:
        self.store = store

    async def claim(self, d: Delivery, owner: str, ttl: float, now: float) -> Delivery | None:
        return await self.store._write(_claim_tx, d, owner, ttl, now)

    async def finish(self, key: str, channel: str, owner: str, *, sent: bool, error: str | None, next_at: float,
                     give_up: bool, now: float) -> bool:
        return await self.store._write(_finish_tx, key, channel, owner, sent, error, next_at, give_up, now)

    async def finished(self, keys: list[str]) -> set[tuple[str, str]]:
        return await self.store._call(_finished_tx, keys)

    async def deliveries(self, *, status: str | None = None, limit: int = 100) -> list[Delivery]:
        return await self.store._call(_list_tx, status, limit)
