"""Deadline timers on SQLite (:mod:`engine.store.deadlines` says what they are)."""

from __future__ import annotations

import json
import sqlite3
from typing import TYPE_CHECKING, Any

from ..base import AuditRecord
from ..deadlines import COLUMNS, Timer, TimerStatus, from_row, soonest

if TYPE_CHECKING:
    from .store import SQLiteStore

MIGRATION = [
    """CREATE TABLE IF NOT EXISTS deadline_timers (
        session_id TEXT NOT NULL,
        invocation_id TEXT NOT NULL,
        interrupt_id TEXT NOT NULL,
        raised_seq INTEGER NOT NULL,
        step INTEGER NOT NULL,
        due_at REAL NOT NULL,
        app_name TEXT NOT NULL,
        path TEXT NOT NULL,
        timer TEXT NOT NULL,
        status TEXT NOT NULL DEFAULT 'pending',
        claimed_by TEXT,
        claimed_until REAL,
        fired_at REAL,
        outcome TEXT,
        PRIMARY KEY (session_id, invocation_id, interrupt_id, raised_seq, step)
    ) WITHOUT ROWID""",
    # The sweep's one query: pending timers by due time (a partial index stays small).
    "CREATE INDEX IF NOT EXISTS deadline_timers_due ON deadline_timers(due_at) WHERE status = 'pending'",
    "CREATE INDEX IF NOT EXISTS deadline_timers_fired ON deadline_timers(fired_at) WHERE status = 'fired'",
    # Written in the transaction that writes the interrupt's index row, by every path that does
    # (REPLACE deletes and inserts, so an interrupt asked again gets its raising's timers too).
    """CREATE TRIGGER IF NOT EXISTS interrupts_deadline_timers AFTER INSERT ON interrupts
        WHEN NEW.status = 'open' AND json_type(NEW.args, '$.deadline.timers') = 'array'
        BEGIN
            INSERT OR IGNORE INTO deadline_timers (session_id, invocation_id, interrupt_id, raised_seq, step, due_at,
                                                   app_name, path, timer, status)
            SELECT NEW.session_id, NEW.invocation_id, NEW.interrupt_id, NEW.raised_seq, CAST(j.key AS INTEGER),
                   NEW.raised_at + coalesce(CAST(json_extract(j.value, '$.after') AS REAL), 0), NEW.app_name,
                   NEW.path, j.value, 'pending'
              FROM json_each(NEW.args, '$.deadline.timers') AS j WHERE j.type = 'object';
        END""",
]
"""The schema migration (appended to :data:`engine.store.sqlite.schema._MIGRATIONS`)."""

_JOINED = ", ".join(f"t.{c.strip()}" for c in COLUMNS.split(",")) + ", i.status, i.raised_seq, i.args"
_FROM = ("FROM deadline_timers t LEFT JOIN interrupts i ON i.session_id = t.session_id"
         " AND i.invocation_id = t.invocation_id AND i.interrupt_id = t.interrupt_id")


def _due_tx(conn: sqlite3.Connection, now: float, limit: int) -> list[Timer]:
    rows = conn.execute(
        f"SELECT {_JOINED} {_FROM} WHERE t.status = 'pending' AND t.due_at <= ?"
        " AND (t.claimed_by IS NULL OR t.claimed_until <= ?) ORDER BY t.due_at LIMIT ?", (now, now, limit)
    ).fetchall()
    return [from_row(r, with_interrupt=True) for r in rows]


_KEY = "session_id = ? AND invocation_id = ? AND interrupt_id = ? AND raised_seq = ? AND step = ?"


def _claim_tx(conn: sqlite3.Connection, t: Timer, owner: str, ttl: float, now: float) -> bool:
    cur = conn.execute(
        f"UPDATE deadline_timers SET claimed_by = ?, claimed_until = ? WHERE {_KEY} AND status = 'pending'"
        " AND (claimed_by IS NULL OR claimed_until <= ?)", (owner, now + ttl, *t.key, now),
    )
    return cur.rowcount == 1


def _finish_tx(conn: sqlite3.Connection, t: Timer, owner: str, status: TimerStatus, outcome: str, now: float,
               audit: AuditRecord | None) -> bool:
    cur = conn.execute(
        f"UPDATE deadline_timers SET status = ?, outcome = ?, fired_at = ?, claimed_by = NULL, claimed_until = NULL"
        f" WHERE {_KEY} AND status = 'pending' AND claimed_by = ?", (status, outcome, now, *t.key, owner),
    )
    if cur.rowcount != 1:
        return False
    if audit is not None:
        conn.execute(
            "INSERT INTO audit (at, action, operator, reason, session_id, invocation_id, seq, event_id, details)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (audit.at, audit.action, audit.operator, audit.reason, audit.session_id, audit.invocation_id, audit.seq,
             audit.event_id, json.dumps(audit.details)),
        )
    return True


def _list_tx(conn: sqlite3.Connection, session_id: str | None, status: str | None, since: float | None,
             limit: int) -> list[Timer]:
    if conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'deadline_timers'").fetchone() is None:
        return []  # a store read-only and older than the table
    rows = conn.execute(
        f"SELECT {COLUMNS} FROM deadline_timers WHERE (?1 IS NULL OR session_id = ?1) AND (?2 IS NULL OR status = ?2)"
        " AND (?3 IS NULL OR fired_at >= ?3) ORDER BY due_at, session_id, interrupt_id, step LIMIT ?4",
        (session_id, status, since, limit),
    ).fetchall()
    return [from_row(r) for r in rows]


def _due_of_tx(conn: sqlite3.Connection, session_ids: list[str]) -> dict[str, float]:
    if not session_ids or conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'deadline_timers'").fetchone() is None:
        return {}
    rows: list[tuple[str, float, Any]] = []
    for i in range(0, len(session_ids), 500):
        part = session_ids[i:i + 500]
        rows += conn.execute(  # step 0: one row per raising that has a rule
            f"SELECT t.session_id, i.raised_at, i.args {_FROM} WHERE t.session_id IN ({', '.join('?' * len(part))})"
            " AND t.step = 0 AND i.status = 'open' AND i.raised_seq = t.raised_seq", part,
        ).fetchall()
    return soonest(rows)


class SQLiteTimers:
    def __init__(self, store: SQLiteStore) -> None:
        self.store = store

    async def due(self, now: float, limit: int = 200) -> list[Timer]:
        return await self.store._call(_due_tx, now, limit)

    async def claim(self, t: Timer, owner: str, ttl: float, now: float) -> bool:
        return await self.store._write(_claim_tx, t, owner, ttl, now)

    async def finish(self, t: Timer, owner: str, status: TimerStatus, outcome: str, now: float,
                     audit: AuditRecord | None = None) -> bool:
        return await self.store._write(_finish_tx, t, owner, status, outcome, now, audit)

    async def due_of(self, session_ids: list[str]) -> dict[str, float]:
        return await self.store._call(_due_of_tx, session_ids)

    async def listing(self, *, session_id: str | None = None, status: str | None = None, since: float | None = None,
                      limit: int = 1000) -> list[Timer]:
        return await self.store._call(_list_tx, session_id, status, since, limit)
