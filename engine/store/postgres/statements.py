"""Statements and argument builders shared by the store's readers and writers."""

from __future__ import annotations

import json
import time
from typing import Any

import asyncpg
from pydantic_core import to_json

from ...models import Event, StoredEvent
from ..sql.columns import SESSION_COLS, summary_cols
from ..sql.prepared import Prepared

_PUT_SNAPSHOT_SQL = (
    "INSERT INTO snapshots (session_id, invocation_id, seq, data) VALUES ($1, $2, $3, $4)"
    " ON CONFLICT (session_id, invocation_id) DO UPDATE SET seq = excluded.seq, data = excluded.data"
    " WHERE excluded.seq >= snapshots.seq"
)
"""A snapshot is replaced only by a newer one (a late writer never rolls it back)."""


def _snapshot_from(seq: int, text: str) -> tuple[int, dict[str, Any]] | None:
    try:
        data = json.loads(text)
    except (ValueError, TypeError):
        return None  # a cache: an unreadable snapshot is as good as none
    return (seq, data) if isinstance(data, dict) else None


_LOAD_INVOCATION_SQL = (
    "SELECT 0 AS k, seq, data FROM snapshots WHERE session_id = $1 AND invocation_id = $2"
    " UNION ALL SELECT 1, seq, json FROM events WHERE session_id = $1 AND invocation_id = $2 AND seq > coalesce("
    "(SELECT seq FROM snapshots WHERE session_id = $1 AND invocation_id = $2), 0)"
    " UNION ALL SELECT 2, NULL, NULL FROM sessions WHERE id = $1"
    " ORDER BY 1, 2"
)
"""An invocation's snapshot (kind 0), its events after it (1), and a row saying
the session exists (2, last)."""


_ANSWER_READS_SQL = (
    "WITH r AS (SELECT {cols} FROM interrupts WHERE session_id = $1 AND interrupt_id = ANY($2::text[])),"
    " v AS (SELECT coalesce($3::text, (SELECT invocation_id FROM r WHERE status = 'open'"
    " ORDER BY raised_seq, invocation_id LIMIT 1)) AS inv),"
    " sn AS (SELECT seq, data FROM snapshots WHERE session_id = $1 AND invocation_id = (SELECT inv FROM v))"
    " SELECT 3 AS k, NULL::bigint AS seq, NULL::text AS data, r.* FROM r"
    " UNION ALL SELECT 0, seq, data{nulls} FROM sn"
    " UNION ALL SELECT 1, e.seq, e.json{nulls} FROM events e WHERE e.session_id = $1"
    " AND e.invocation_id = (SELECT inv FROM v) AND e.seq > coalesce((SELECT seq FROM sn), 0)"
    " UNION ALL SELECT 2, NULL, (SELECT inv FROM v){nulls} FROM sessions WHERE id = $1"
    " ORDER BY 1, 2"
)
"""What an answer reads before its first write, in one statement: the interrupt
rows of the ids (kind 3), and the invocation they resume -- ``$3``, or the one of
the first open id -- as ``snapshot_and_events`` reads it: its snapshot (0), its
events after it (1), and a row saying the session exists, naming it (2)."""


_RELEASE_SQL = (
    "WITH d AS (DELETE FROM leases WHERE session_id = $1 AND invocation_id = $2 AND owner = $3 RETURNING 1),"
    " p AS (INSERT INTO snapshots (session_id, invocation_id, seq, data) SELECT $1, $2, $4, $5"
    " WHERE $4::bigint IS NOT NULL AND EXISTS (SELECT 1 FROM d)"
    " ON CONFLICT (session_id, invocation_id) DO UPDATE SET seq = excluded.seq, data = excluded.data"
    " WHERE excluded.seq >= snapshots.seq RETURNING 1)"
    " SELECT EXISTS (SELECT 1 FROM d), EXISTS (SELECT 1 FROM sessions WHERE id = $1)"
)
"""Release a lease and, if it was ours, keep the snapshot: one statement, so one
transaction and one round trip."""


class _Query:
    """A WHERE clause built with numbered ``$n`` parameters."""

    def __init__(self) -> None:
        self.args: list[Any] = []
        self._where: list[str] = []

    def arg(self, value: Any) -> str:
        self.args.append(value)
        return f"${len(self.args)}"

    def where(self, clause: str) -> None:
        self._where.append(clause)

    def where_sql(self) -> str:
        return (" WHERE " + " AND ".join(self._where)) if self._where else ""


_SESSION_COLS_PG = SESSION_COLS.replace("state", "state::text")
_SUMMARY_COLS_PG = summary_cols("json_agg")
"""A session summary row's columns in PostgreSQL (``json_agg`` is NULL, not ``[]``, over no row)."""


def _cols(alias: str, cols: str) -> str:
    """``cols`` (a comma-separated column list) qualified by a table alias."""
    return ", ".join(f"{alias}.{c.strip()}" for c in cols.split(","))


_ROW_FIELDS = (
    "x->>0", "x->>1", "x->>2", "(x->>3)::float8", "x->>4", "x->>5", "nullif(x->6, 'null')", "x->7", "x->8",
    "(x->>9)::boolean", "x->>10", "x->>11", "x->>12", "x->>13", "x->>14", "x->>15",
)
"""How the server reads each field of an event's row (:func:`_append_many_args`)
into the append functions' sixteen arrays, in their order."""


def _call(select: str, function: str, n: int) -> str:
    """``SELECT <select> hitl_fn($1, ..., $n, <the sixteen arrays>)``: the events
    come as ONE parameter, ``$(n + 1)``, a JSON array of rows (one per event,
    :func:`_append_many_args`), split into the function's arrays by one aggregate
    in the same statement. Sixteen array parameters cost the client a Python
    type check per element (asyncpg's encoder: ~6 % of a worker's CPU) and a new
    connection six type look-ups (asyncpg has no built-in codec for
    ``boolean[]``, ``double precision[]`` or ``jsonb[]``); one text parameter
    costs neither, and the server parses one jsonb value instead of sixteen
    array literals and five casts. The aggregates take the rows in the order
    ``jsonb_array_elements`` returns them (an aggregate over a function scan,
    no sort between): the events' order (tests/reliability/test_append_set.py
    holds the results to the per-event path's)."""
    args = ", ".join(f"${i}" for i in range(1, n + 1))
    cols = ", ".join(f"array_agg({f}) AS c{i}" for i, f in enumerate(_ROW_FIELDS))
    rows = f"(SELECT {cols} FROM jsonb_array_elements(${n + 1}::text::jsonb) AS x) AS r"
    arrays = ", ".join(f"r.c{i}" for i in range(len(_ROW_FIELDS)))
    if select:  # a set-returning call: FROM the rows, then the function
        return f"SELECT f.* FROM {rows}, {function}({args}, {arrays}) AS f"
    return f"SELECT {function}({args}, {arrays}) FROM {rows}"


_APPEND_MANY_SQL = _call("", "hitl_append_many", 4)

_ACQUIRE_APPEND_SQL = _call("*", "hitl_acquire_append", 7)

_CREATE_ACQUIRE_APPEND_SQL = _call("*", "hitl_create_acquire_append", 9)

_APPEND_RELEASE_SQL = _call("", "hitl_append_release", 7)


def _stored(session_id: str, prepared: list[Prepared], last: int | None) -> list[StoredEvent]:
    """The stored events of a batch whose last one got seq ``last``."""
    if not prepared:
        return []
    assert last is not None
    first = last - len(prepared) + 1
    return [
        StoredEvent(seq=first + i, session_id=session_id, event=Event.from_json(p.json)) for i, p in enumerate(prepared)
    ]


def _append_many_args(
    session_id: str, prepared: list[Prepared], expected_seq: int | None, lease_owner: str | None
) -> tuple[Any, ...]:
    """The arguments of ``hitl_append_many`` as :func:`_call` sends them: the
    session, the expected seq, the lease's owner, the time, and the events as one
    JSON text, a row per event with ``hitl_append``'s fields in order."""
    rows = []
    for p in prepared:
        opened = {iid: [iid, path, name, args] for iid, path, name, args in p.opened}  # last wins, as in SQLite
        rows.append([
            p.json, p.event_id, p.invocation_id,
            repr(float(p.timestamp)),  # as text: the same double back (a JSON number would go through numeric)
            p.path, p.kind, p.delta, list(opened.values()), p.resolved, p.cancel, p.invocation_status,
            p.new_message, *(p.audit or (None, None, None, None)),
        ])
    return (session_id, expected_seq, lease_owner, time.time(), to_json(rows).decode())


async def _seq_of_event(conn: asyncpg.Connection, *, session_id: str, event_id: str) -> int | None:
    """The seq of event ``event_id`` in the session, if it was stored (a scan of that
    session's log: only after a lost connection)."""
    seq = await conn.fetchval(
        "SELECT seq FROM events WHERE session_id = $1 AND event_id = $2 ORDER BY seq DESC LIMIT 1",
        session_id,
        event_id,
    )
    return None if seq is None else int(seq)


async def _keep_session(_conn: asyncpg.Connection) -> None:
    """The pool's reset on release: nothing. asyncpg's default sends ``RESET ALL;
    UNLISTEN *; CLOSE ALL; ...`` on every release -- one more round trip per store
    call -- to undo session state this store never creates (its settings are
    connection parameters, or behind a pooler set once for the connection's life;
    its locks transaction-scoped, LISTEN has its own connection). A transaction
    left open is still rolled back by the pool."""
