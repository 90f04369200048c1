"""Seek checkpoints (``projection_checkpoints``, engine/checkpoints.py): read
and write units of work. A file older than the table (opened read-only, so not
migrated) has none: reads then find nothing.

``data`` is written as a BLOB of UTF-8 JSON, deflated when large
(:mod:`engine.store.sql.packing`; rows written before are TEXT or plain JSON; all read alike). A turn end's
"is one due?" check needs the size of the latest one's JSON without loading it -- a
checkpoint holds every invocation's latest runs, megabytes on a long session:
``length(data)`` from the record header, and for a packed row the JSON's length
from its first bytes (an incremental blob read: one page, not the value's pages).

That check (``_last_checkpoint``) lives in :mod:`.reads`, imported with the
store: a cold ``hitl resume`` whose turn crosses a multiple of
``engine.checkpoints.EVERY`` (and finds no checkpoint due) then imports
nothing in the middle of its turn (importing this module there cost ~0.3 ms);
this module is loaded only when a checkpoint is read or written."""

from __future__ import annotations

import sqlite3
from typing import Any

from ..sql.packing import cache_from, pack
from .reads import _missing_table, _require_session


def _get_checkpoint(conn: sqlite3.Connection, session_id: str, at_most: int) -> tuple[int, dict[str, Any]] | None:
    try:
        row = conn.execute(
            "SELECT seq, data FROM projection_checkpoints WHERE session_id = ? AND seq <= ? ORDER BY seq DESC LIMIT 1",
            (session_id, at_most),
        ).fetchone()
    except sqlite3.OperationalError as e:
        if _missing_table(e):
            return None
        raise
    return None if row is None else cache_from(row[0], row[1])


def _put_checkpoints(conn: sqlite3.Connection, session_id: str, rows: list[tuple[int, bytes]]) -> None:
    try:
        conn.executemany(
            "INSERT OR REPLACE INTO projection_checkpoints (session_id, seq, data) VALUES (?, ?, ?)",
            [(session_id, seq, pack(data)) for seq, data in rows],
        )
    except sqlite3.IntegrityError:  # the foreign key: no such session
        _require_session(conn, session_id)
        raise
