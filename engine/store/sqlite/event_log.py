"""A session's event log on plain :mod:`sqlite3` (``hitl events`` on a SQLite file):
the stored rows a page at a time, no pydantic, no asyncio -- the store's import
costs a long log's read as much as a tenth of its events. Its own module, loaded
by that command only. The file is probed and refused as :mod:`.listing` does
(another schema, not a hitl-console file, side files of another store):
:func:`open_event_log` is then None and the caller opens the store as usual,
which reports the problem the usual way."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from types import TracebackType

from .listing import open_read_only


class EventLog:
    """An open read-only connection and the session's ``last_seq``; ``rows``
    reads a page. Errors past the opening are the caller's (a page already
    printed is not printed again by another path)."""

    def __init__(self, conn: sqlite3.Connection, session_id: str, last_seq: int) -> None:
        self.conn, self.session_id, self.last_seq = conn, session_id, last_seq

    def rows(self, after_seq: int, limit: int) -> list[tuple[int, str]]:
        """``(seq, stored JSON)`` of at most ``limit`` events after ``after_seq``."""
        rows = self.conn.execute(
            "SELECT seq, json FROM events WHERE session_id = ? AND seq > ? ORDER BY seq LIMIT ?",
            (self.session_id, after_seq, max(limit, 0)),
        ).fetchall()
        return [(int(seq), text if isinstance(text, str) else bytes(text).decode("utf-8")) for seq, text in rows]

    def close(self) -> None:
        self.conn.close()

    def __enter__(self) -> EventLog:
        return self

    def __exit__(self, *exc: type[BaseException] | BaseException | TracebackType | None) -> None:
        self.close()


def open_event_log(path: str | Path, session_id: str) -> EventLog | None:
    """The event log of ``session_id`` in the hitl-console SQLite file at ``path``,
    opened read-only; None when this fast path cannot answer (no such file or
    session, another schema version, any SQLite error): the store path answers."""
    conn = open_read_only(path)
    if conn is None:
        return None
    try:
        conn.execute("PRAGMA query_only = ON")
        row = conn.execute("SELECT last_seq FROM sessions WHERE id = ?", (session_id,)).fetchone()
    except (sqlite3.Error, ValueError):
        row = None
    if row is None:
        conn.close()
        return None
    return EventLog(conn, session_id, int(row[0]))
