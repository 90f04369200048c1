"""The sessions page of ``hitl sessions`` read on plain :mod:`sqlite3` (:mod:`.listing`
has the why): its rows and the interrupted and queued invocations of the page.

Apart from :mod:`.listing`, whose page query and cursor it uses, so that a turn
-- which imports the listing for the store's own page queries -- does not build
these rows' dataclasses.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import KW_ONLY, dataclass, fields
from pathlib import Path
from typing import Any, Literal

from ...owners import owner_live
from ..sql.columns import session_owners
from .listing import _read_file, page_cursor, session_page_query


@dataclass(frozen=True, slots=True)
class SessionRow:
    """One line of the sessions listing: the fields of
    :class:`~engine.store.base.SessionSummary` plus the interrupted invocations."""

    id: str
    app_name: str
    user_id: str
    status: str
    open_interrupts: int
    oldest_open_at: float | None
    last_event_at: float | None
    event_count: int
    invocation_count: int
    created_at: float
    updated_at: float
    _: KW_ONLY  # the rest are named: a row's columns fill the fields above in order
    owners: tuple[str, ...] = ()
    """The owners of its open interrupts (:func:`~engine.store.sql.columns.session_owners`)."""
    interrupted: tuple[str, ...] = ()
    """Ids of the session's invocations interrupted mid-run, in start order."""
    queued: tuple[str, ...] = ()
    """Ids of its invocations whose turn waits for a worker (a runnable turn request), in start order."""

    def summary_dict(self) -> dict[str, Any]:
        """The ``SessionSummary.model_dump()`` of the row (without ``interrupted`` and ``queued``)."""
        out = {f.name: getattr(self, f.name) for f in fields(self) if f.name not in ("interrupted", "queued")}
        return {**out, "owners": list(self.owners)}


@dataclass(slots=True)
class SessionRows:
    items: list[SessionRow]
    next_cursor: str | None


_INTERRUPTED_SQL = (
    "SELECT i.session_id, i.invocation_id, l.owner, l.expires_at, t.invocation_id IS NOT NULL AND t.held IS NULL"
    " FROM invocations AS i"
    " LEFT JOIN leases AS l ON l.session_id = i.session_id AND l.invocation_id = i.invocation_id"
    " LEFT JOIN turn_requests AS t ON t.session_id = i.session_id AND t.invocation_id = i.invocation_id"
    " WHERE (i.status = 'running' OR t.invocation_id IS NOT NULL) AND i.session_id IN (SELECT value FROM json_each(?))"
    " ORDER BY i.session_id, i.started_seq"
)


def stopped_by_session(
    conn: sqlite3.Connection, session_ids: list[str], now: float | None = None
) -> dict[str, tuple[list[str], list[str]]]:
    """The invocations of the given sessions that no live process holds, by session
    id (one statement): (interrupted mid-run, queued for a worker). Both are
    ``running`` in the index with a lease row missing, expired or held by a
    provably dead process; the queued ones have a turn request a worker may run."""
    out: dict[str, tuple[list[str], list[str]]] = {}
    for sid, inv, owner, expires_at, queued in conn.execute(_INTERRUPTED_SQL, (json.dumps(session_ids),)):
        if owner is None or not owner_live(owner, expires_at, now):
            out.setdefault(sid, ([], []))[1 if queued else 0].append(inv)
    return out


def read_session_rows(
    conn: sqlite3.Connection, *, order: Literal["updated", "oldest_open"] = "updated", **filters: Any
) -> SessionRows:
    """One page of sessions with their interrupted invocations, in one read
    transaction on ``conn`` (which has ``hitl_lower`` registered)."""
    sql, params = session_page_query(order=order, **filters)
    limit = params[-1] - 1
    conn.execute("BEGIN")
    try:
        rows = conn.execute(sql, params).fetchall()
        page = rows[:limit]
        stopped = stopped_by_session(conn, [r[0] for r in page])
    finally:
        conn.execute("COMMIT")
    none: tuple[list[str], list[str]] = ([], [])
    items = [
        SessionRow(*r[:-1], owners=session_owners(r[-1]), interrupted=tuple(stopped.get(r[0], none)[0]), queued=tuple(stopped.get(r[0], none)[1]))
        for r in page
    ]
    nxt = None
    if len(rows) > limit:
        last = items[-1]
        nxt = page_cursor(last.oldest_open_at, last.updated_at, last.id, order)
    return SessionRows(items, nxt)


def list_session_rows(path: str | Path, **filters: Any) -> SessionRows | None:
    """:func:`read_session_rows` of the hitl-console SQLite file at ``path``, opened
    read-only. None when this fast path cannot answer for the store -- no such
    file, not a hitl-console file, another schema version, a bad cursor, any
    SQLite error -- so the caller opens the store as usual, which reports the
    problem the usual way (one clear line)."""
    return _read_file(path, lambda conn: read_session_rows(conn, **filters))
