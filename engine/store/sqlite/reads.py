"""Read units of work: sessions, events, derived rows and snapshots."""

from __future__ import annotations

import json
import sqlite3
from typing import Any

from ...errors import (
    CorruptEventError,
    SessionNotFoundError,
)
from ...models import Session, StoredEvent
from ..base import (
    InterruptRecord,
    InvocationSummary,
    SessionSummary,
)
from ..sql.columns import INTERRUPT_COLS, INVOCATION_COLS, SESSION_COLS
from ..sql.packing import HEAD, json_size, pack, unpack
from ..sql.rows import interrupt_from_row, invocation_from_row, parse_event, session_from_row, summary_from_row
from .rows import _require_session


def _missing_table(e: sqlite3.OperationalError) -> bool:
    return "no such table" in str(e)


def _last_checkpoint(conn: sqlite3.Connection, session_id: str) -> tuple[int, int]:
    """The latest seek checkpoint's (seq, size of its JSON), without loading it;
    (0, 0): none (see :mod:`.checkpoints`)."""
    try:
        row = conn.execute(
            "SELECT rowid, seq, length(data), typeof(data) = 'blob'"
            " FROM projection_checkpoints WHERE session_id = ? ORDER BY seq DESC LIMIT 1",
            (session_id,),
        ).fetchone()
    except sqlite3.OperationalError as e:
        if _missing_table(e):
            return 0, 0
        raise
    if row is None:
        return 0, 0
    rowid, seq, length, is_blob = row
    head = None
    if is_blob:  # its first bytes only: a packed row keeps its JSON's length there
        with conn.blobopen("projection_checkpoints", "data", rowid, readonly=True) as blob:
            head = blob.read(HEAD)

    def whole() -> Any:
        found = conn.execute("SELECT data FROM projection_checkpoints WHERE rowid = ?", (rowid,)).fetchone()
        return None if found is None else found[0]

    return int(seq), json_size(int(length or 0), head, whole)


def _get_session(conn: sqlite3.Connection, session_id: str) -> Session:
    row = conn.execute(f"SELECT {SESSION_COLS} FROM sessions WHERE id = ?", (session_id,)).fetchone()
    if row is None:
        raise SessionNotFoundError(session_id)
    return session_from_row(row)


def _list_sessions(conn: sqlite3.Connection, sql: str, params: list[Any]) -> list[SessionSummary]:
    return [summary_from_row(r) for r in conn.execute(sql, params)]


def _read_event_rows(conn: sqlite3.Connection, session_id: str, after_seq: int, limit: int) -> list[tuple[int, str]]:
    """``(seq, stored JSON)`` of the events after ``after_seq``, at most ``limit``,
    unparsed (an export copies them as they are)."""
    rows = conn.execute(
        "SELECT seq, json FROM events WHERE session_id = ? AND seq > ? ORDER BY seq LIMIT ?",
        (session_id, after_seq, max(limit, 0)),
    ).fetchall()
    if not rows:
        _require_session(conn, session_id)
    return [(int(seq), text if isinstance(text, str) else bytes(text).decode("utf-8")) for seq, text in rows]


def _read_events(
    conn: sqlite3.Connection,
    session_id: str,
    invocation_id: str | None,
    after_seq: int,
    limit: int | None,
    skip_corrupt: bool,
) -> list[StoredEvent]:
    if invocation_id is None:
        sql, params = (
            "SELECT seq, json FROM events WHERE session_id = ? AND seq > ? ORDER BY seq",
            [session_id, after_seq],
        )
    else:
        sql = "SELECT seq, json FROM events WHERE session_id = ? AND invocation_id = ? AND seq > ? ORDER BY seq"
        params = [session_id, invocation_id, after_seq]
    if limit is not None and not skip_corrupt:
        sql += " LIMIT ?"
        params.append(max(limit, 0))
    out: list[StoredEvent] = []
    if limit is not None and limit <= 0:
        _require_session(conn, session_id)
        return out
    cur = conn.execute(sql, params)
    try:
        for seq, text in cur:
            try:
                event = parse_event(session_id, seq, text)
            except CorruptEventError:
                if skip_corrupt:
                    continue
                raise
            out.append(StoredEvent(seq=seq, session_id=session_id, event=event))
            if limit is not None and len(out) >= limit:
                break
    finally:
        cur.close()
    if not out:  # the session check costs a statement only when there is nothing to return
        _require_session(conn, session_id)
    return out


_SNAPSHOT_AND_EVENTS_SQL = (
    "SELECT seq, data, NULL FROM snapshots WHERE session_id = ?1 AND invocation_id = ?2"
    " UNION ALL SELECT seq, NULL, json FROM events WHERE session_id = ?1 AND invocation_id = ?2"
    " AND seq > coalesce((SELECT seq FROM snapshots WHERE session_id = ?1 AND invocation_id = ?2), 0)"
)
"""An invocation's cached snapshot and the events after it: one statement, in seq order
(the snapshot row first: it is at a seq no later event has)."""


def _snapshot_and_events(
    conn: sqlite3.Connection, session_id: str, invocation_id: str
) -> tuple[tuple[int, dict[str, Any]] | None, list[StoredEvent]]:
    snap: tuple[int, dict[str, Any]] | None = None
    events: list[StoredEvent] = []
    damaged = False
    for seq, data, text in conn.execute(_SNAPSHOT_AND_EVENTS_SQL, (session_id, invocation_id)):
        if text is None:
            value = unpack(data)
            if value is not None:
                snap = (seq, value)
            else:
                damaged = True  # a cache: an unreadable snapshot is as good as none
        else:
            events.append(StoredEvent(seq=seq, session_id=session_id, event=parse_event(session_id, seq, text)))
    if damaged:
        return None, _read_events(conn, session_id, invocation_id, 0, None, False)
    if snap is None and not events:
        _require_session(conn, session_id)
    events.sort(key=lambda e: e.seq)
    return snap, events


def _event_at(conn: sqlite3.Connection, session_id: str, seq: int) -> StoredEvent:
    row = conn.execute("SELECT last_seq FROM sessions WHERE id = ?", (session_id,)).fetchone()
    if row is None:
        raise SessionNotFoundError(session_id)
    ev = conn.execute("SELECT json FROM events WHERE session_id = ? AND seq = ?", (session_id, seq)).fetchone()
    if ev is None:
        raise IndexError(f"session {session_id} has no event {seq} (it has {row[0]})")
    return StoredEvent(seq=seq, session_id=session_id, event=parse_event(session_id, seq, ev[0]))


def _corrupt_events(conn: sqlite3.Connection, session_id: str) -> list[int]:
    _require_session(conn, session_id)
    bad: list[int] = []
    for seq, text in conn.execute("SELECT seq, json FROM events WHERE session_id = ? ORDER BY seq", (session_id,)):
        try:
            parse_event(session_id, seq, text)
        except CorruptEventError:
            bad.append(seq)
    return bad


def _list_invocations(conn: sqlite3.Connection, session_id: str) -> list[InvocationSummary]:
    _require_session(conn, session_id)
    rows = conn.execute(
        f"SELECT {INVOCATION_COLS} FROM invocations WHERE session_id = ? ORDER BY started_seq", (session_id,)
    )
    return [invocation_from_row(r) for r in rows]


def _invocation_count(conn: sqlite3.Connection, session_id: str) -> int:
    row = conn.execute("SELECT invocation_count FROM sessions WHERE id = ?", (session_id,)).fetchone()
    if row is None:
        raise SessionNotFoundError(session_id)
    return int(row[0])


_INLINE_IDS = 32
"""Up to this many ids are bound one parameter each; more go as one JSON array
(json_each). A resume answers a few: its first json_each in a fresh process
costs ~170 us more to compile than ``IN (?, ...)``."""


def _lookup_interrupts(conn: sqlite3.Connection, session_id: str, ids: list[str]) -> list[InterruptRecord]:
    if len(ids) <= _INLINE_IDS:
        match, params = f"IN ({', '.join('?' * len(ids))})", [session_id, *ids]
    else:
        match, params = "IN (SELECT value FROM json_each(?))", [session_id, json.dumps(ids)]
    rows = conn.execute(
        f"SELECT {INTERRUPT_COLS} FROM interrupts WHERE session_id = ? AND interrupt_id {match}"
        " ORDER BY raised_seq, invocation_id, interrupt_id",
        params,
    ).fetchall()
    if not rows:
        _require_session(conn, session_id)
    return [interrupt_from_row(r) for r in rows]


def _open_interrupts(conn: sqlite3.Connection, sql: str, params: list[Any]) -> list[InterruptRecord]:
    return [interrupt_from_row(r) for r in conn.execute(sql, params)]


def _get_snapshot(conn: sqlite3.Connection, session_id: str, invocation_id: str) -> tuple[int, dict[str, Any]] | None:
    row = conn.execute(
        "SELECT seq, data FROM snapshots WHERE session_id = ? AND invocation_id = ?", (session_id, invocation_id)
    ).fetchone()
    if row is None:
        _require_session(conn, session_id)
        return None
    data = unpack(row[1])  # a cache: an unreadable snapshot is as good as none
    return None if data is None else (row[0], data)


def _put_snapshot(conn: sqlite3.Connection, session_id: str, invocation_id: str, seq: int, data: str) -> None:
    try:
        _upsert_snapshot(conn, session_id, invocation_id, seq, data)
    except sqlite3.IntegrityError:  # the foreign key: no such session (there are no other constraints to break)
        _require_session(conn, session_id)
        raise


def _upsert_snapshot(conn: sqlite3.Connection, session_id: str, invocation_id: str, seq: int, data: str) -> None:
    conn.execute(
        "INSERT INTO snapshots (session_id, invocation_id, seq, data) VALUES (?, ?, ?, ?)"
        " ON CONFLICT (session_id, invocation_id) DO UPDATE SET seq = excluded.seq, data = excluded.data"
        " WHERE excluded.seq >= snapshots.seq",  # never replace a newer cache with an older one
        (session_id, invocation_id, seq, pack(data)),
    )
