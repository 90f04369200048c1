"""The pieces every unit of work shares: the write transaction, the session check,
an operator write's audit row. Rows read back into records are
:mod:`engine.store.sql.rows`'s, an event prepared for the append path
:mod:`engine.store.sql.prepared`'s."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from ...errors import (
    SessionNotFoundError,
)

if TYPE_CHECKING:
    from ..sql.prepared import Prepared

T = TypeVar("T")

# --------------------------------------------------------------------------- units of work
# Each runs on the connection's thread with the raw sqlite3 connection first.


def _insert_audit(conn: sqlite3.Connection, session_id: str, seq: int, p: Prepared) -> None:
    assert p.audit is not None
    action, operator, reason, details = p.audit
    conn.execute(
        "INSERT INTO audit (at, action, operator, reason, session_id, invocation_id, seq, event_id, details)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (p.timestamp, action, operator, reason, session_id, p.invocation_id, seq, p.event_id, details),
    )


def _in_write_tx(conn: sqlite3.Connection, fn: Callable[..., T], *args: Any) -> T:
    """``fn(conn, *args)`` in one BEGIN IMMEDIATE transaction: all or nothing."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        out = fn(conn, *args)
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    return out


def _require_session(conn: sqlite3.Connection, session_id: str) -> None:
    if conn.execute("SELECT 1 FROM sessions WHERE id = ?", (session_id,)).fetchone() is None:
        raise SessionNotFoundError(session_id)
