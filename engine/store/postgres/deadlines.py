"""Deadline timers on PostgreSQL (:mod:`engine.store.deadlines` says what they are)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import asyncpg

from ..base import AuditRecord
from ..deadlines import COLUMNS, Timer, TimerStatus, from_row, soonest

if TYPE_CHECKING:
    from .store import PostgresStore

MIGRATION = [
    """CREATE TABLE IF NOT EXISTS deadline_timers (
        session_id text NOT NULL,
        invocation_id text NOT NULL,
        interrupt_id text NOT NULL,
        raised_seq bigint NOT NULL,
        step integer NOT NULL,
        due_at double precision NOT NULL,
        app_name text NOT NULL,
        path text NOT NULL,
        timer text NOT NULL,
        status text NOT NULL DEFAULT 'pending',
        claimed_by text,
        claimed_until double precision,
        fired_at double precision,
        outcome text,
        PRIMARY KEY (session_id, invocation_id, interrupt_id, raised_seq, step)
    )""",
    "CREATE INDEX IF NOT EXISTS deadline_timers_due ON deadline_timers(due_at) WHERE status = 'pending'",
    "CREATE INDEX IF NOT EXISTS deadline_timers_fired ON deadline_timers(fired_at) WHERE status = 'fired'",
    # Written in the transaction that writes the interrupt's index row, by every path that does
    # (an interrupt asked again is an UPDATE of raised_seq: its raising gets its own timers).
    r"""CREATE OR REPLACE FUNCTION hitl_deadline_timers() RETURNS trigger LANGUAGE plpgsql AS $fn$
    DECLARE
        v_timers jsonb;
    BEGIN
        IF NEW.status <> 'open' OR position('"deadline"' in NEW.args) = 0 THEN
            RETURN NULL;
        END IF;
        v_timers := NEW.args::jsonb #> '{deadline,timers}';
        IF v_timers IS NULL OR jsonb_typeof(v_timers) <> 'array' THEN
            RETURN NULL;
        END IF;
        INSERT INTO deadline_timers (session_id, invocation_id, interrupt_id, raised_seq, step, due_at, app_name,
                                     path, timer, status)
        SELECT NEW.session_id, NEW.invocation_id, NEW.interrupt_id, NEW.raised_seq, (t.n - 1)::integer,
               NEW.raised_at + CASE WHEN jsonb_typeof(t.v -> 'after') = 'number'
                                    THEN (t.v ->> 'after')::double precision ELSE 0 END,
               NEW.app_name, NEW.path, t.v::text, 'pending'
          FROM jsonb_array_elements(v_timers) WITH ORDINALITY AS t(v, n)
         WHERE jsonb_typeof(t.v) = 'object'
        ON CONFLICT DO NOTHING;
        RETURN NULL;
    END
    $fn$""",
    "DROP TRIGGER IF EXISTS interrupts_deadline_timers ON interrupts",
    """CREATE TRIGGER interrupts_deadline_timers AFTER INSERT OR UPDATE OF raised_seq ON interrupts
        FOR EACH ROW EXECUTE FUNCTION hitl_deadline_timers()""",
]
"""The schema migration (appended to :data:`engine.store.postgres.schema._MIGRATIONS`)."""

_JOINED = ", ".join(f"t.{c.strip()}" for c in COLUMNS.split(",")) + ", i.status, i.raised_seq, i.args"
_FROM = ("FROM deadline_timers t LEFT JOIN interrupts i ON i.session_id = t.session_id"
         " AND i.invocation_id = t.invocation_id AND i.interrupt_id = t.interrupt_id")
_KEY = "session_id = $1 AND invocation_id = $2 AND interrupt_id = $3 AND raised_seq = $4 AND step = $5"


class PostgresTimers:
    def __init__(self, store: PostgresStore) -> None:
        self.store = store

    async def due(self, now: float, limit: int = 200) -> list[Timer]:
        async def fn(conn: asyncpg.Connection) -> list[Timer]:
            rows = await conn.fetch(
                f"SELECT {_JOINED} {_FROM} WHERE t.status = 'pending' AND t.due_at <= $1"
                " AND (t.claimed_by IS NULL OR t.claimed_until <= $1) ORDER BY t.due_at LIMIT $2", now, limit,
            )
            return [from_row(r, with_interrupt=True) for r in rows]

        return await self.store._run(fn)

    async def claim(self, t: Timer, owner: str, ttl: float, now: float) -> bool:
        self.store._check_writable()

        async def fn(conn: asyncpg.Connection) -> bool:
            status = await conn.execute(
                f"UPDATE deadline_timers SET claimed_by = $6, claimed_until = $7 WHERE {_KEY} AND status = 'pending'"
                " AND (claimed_by IS NULL OR claimed_until <= $8)", *t.key, owner, now + ttl, now,
            )
            return bool(status == "UPDATE 1")

        return await self.store._run(fn, reconnect=False)

    async def finish(self, t: Timer, owner: str, status: TimerStatus, outcome: str, now: float,
                     audit: AuditRecord | None = None) -> bool:
        self.store._check_writable()

        async def fn(conn: asyncpg.Connection) -> bool:
            async with conn.transaction():
                done = await conn.execute(
                    f"UPDATE deadline_timers SET status = $6, outcome = $7, fired_at = $8, claimed_by = NULL,"
                    f" claimed_until = NULL WHERE {_KEY} AND status = 'pending' AND claimed_by = $9",
                    *t.key, status, outcome, now, owner,
                )
                if done != "UPDATE 1":
                    return False
                if audit is not None:
                    await conn.execute(
                        "INSERT INTO audit (at, action, operator, reason, session_id, invocation_id, seq, event_id,"
                        " details) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
                        audit.at, audit.action, audit.operator, audit.reason, audit.session_id, audit.invocation_id,
                        audit.seq, audit.event_id, json.dumps(audit.details),
                    )
                return True

        return await self.store._run(fn, reconnect=False)

    async def due_of(self, session_ids: list[str]) -> dict[str, float]:
        async def fn(conn: asyncpg.Connection) -> dict[str, float]:
            if not session_ids or not await conn.fetchval("SELECT to_regclass('deadline_timers') IS NOT NULL"):
                return {}
            rows = await conn.fetch(  # step 0: one row per raising that has a rule
                f"SELECT t.session_id, i.raised_at, i.args {_FROM} WHERE t.session_id = ANY($1::text[])"
                " AND t.step = 0 AND i.status = 'open' AND i.raised_seq = t.raised_seq", session_ids,
            )
            return soonest([(r[0], r[1], r[2]) for r in rows])

        return await self.store._run(fn)

    async def listing(self, *, session_id: str | None = None, status: str | None = None, since: float | None = None,
                      limit: int = 1000) -> list[Timer]:
        async def fn(conn: asyncpg.Connection) -> list[Timer]:
            if not await conn.fetchval("SELECT to_regclass('deadline_timers') IS NOT NULL"):
                return []
            rows = await conn.fetch(
                f"SELECT {COLUMNS} FROM deadline_timers WHERE ($1::text IS NULL OR session_id = $1)"
                " AND ($2::text IS NULL OR status = $2) AND ($3::double precision IS NULL OR fired_at >= $3)"
                " ORDER BY due_at, session_id, interrupt_id, step LIMIT $4", session_id, status, since, limit,
            )
            return [from_row(r) for r in rows]

        return await self.store._run(fn)
