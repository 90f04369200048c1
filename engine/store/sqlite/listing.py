"""The sessions listing on plain :mod:`sqlite3`: no pydantic, no asyncio, no aiosqlite.

``hitl sessions`` prints one page of the ``sessions`` table and flags the
sessions with an invocation *interrupted mid-run*. Through the store API that
costs the models' import and, per running session, the invocation index, the
lease rows and a projection load per candidate.
:func:`~.session_rows.list_session_rows` reads the same page with one statement
and the interrupted invocations of the whole page with one more (both in one
read transaction), and judges the lease rows with :mod:`engine.owners`.

Why the index is enough: an invocation can only be interrupted while the
projection says its root is RUNNING or PENDING (or it has no root run yet), and
the invocation index (:func:`engine.store.base.index_effects`) records exactly
that as ``running`` until a root end record lands. So the page's interrupted
invocations are its ``running`` ones without a live lease -- the verdict
:func:`engine.liveness.interrupted_invocations` reaches by loading them --
and of those, the ones with a runnable turn request (not held) are *queued
for a worker* instead (:func:`engine.liveness.health_from`'s rule,
read from the ``turn_requests`` table in the same statement). An answer left
to a worker leaves the index ``waiting`` (an FR message does not change it:
:func:`engine.store.base.index_effects`), so an invocation with a turn request
is judged whatever its index status: the request exists only while the turn
is due.

The keyset page query (:func:`session_page_query`) and the page cursor are
defined here once: :meth:`SQLiteStore.list_sessions` builds its statement with
them too, so both paths list the same rows in the same order.

``hitl inbox`` reads its page the same way (:mod:`.inbox_rows`, one
statement built by :func:`interrupt_page_query`, which
:meth:`SQLiteStore.open_interrupts` uses too): plain rows, no model built.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, TypeVar

from ...errors import StoreError
from ..sql.columns import INTERRUPT_COLS, owner_condition, summary_cols
from ..sql.cursors import decode_cursor, encode_cursor

T = TypeVar("T")

APPLICATION_ID = 0x48495443
"""``PRAGMA application_id`` of a hitl-console SQLite file ("HITC")."""

LISTING_SCHEMA_VERSION = 9  # 6: projection_checkpoints, 7: the workers tables, 9: deadline timers (read by none of these); 8: interrupts.owner, owned_at (read)
"""The schema version these statements are written for. A file at another
version is not read here (:func:`list_session_rows` returns None and the caller
takes the store path, which migrates or refuses it). A test keeps this equal to
``SCHEMA_VERSION``: a migration makes whoever adds it look at these statements."""

_SUMMARY_COLS = summary_cols("json_group_array")
"""A session summary row's columns in SQLite."""


def default_db_path() -> Path:
    """``$HITL_DB`` if set, else ``~/.local/share/hitl-console/hitl.sqlite``."""
    env = os.environ.get("HITL_DB")
    if env:
        return Path(env).expanduser()
    return Path.home() / ".local" / "share" / "hitl-console" / "hitl.sqlite"


def sqlite3_uri_path(uri: str) -> str:
    """The file path of a ``file:`` URI as made by :meth:`Path.as_uri` (query removed)."""
    from urllib.parse import unquote, urlparse

    return unquote(urlparse(uri).path)


def _immutable_ok(path: Path) -> bool:
    """Whether reading ``path`` as an immutable file sees everything: nothing is
    waiting in a -wal beside it."""
    wal = Path(str(path) + "-wal")
    try:
        return not wal.exists() or wal.stat().st_size == 0
    except OSError:
        return False


@dataclass
class _FileInfo:
    application_id: int
    version: int
    tables: list[str]


def side_files(path: Path) -> list[Path]:
    """The ``-wal`` and ``-shm`` files beside ``path`` that exist."""
    return [p for p in (Path(f"{path}-wal"), Path(f"{path}-shm")) if p.exists()]


def check_side_files(path: Path) -> None:
    """Refuse, before SQLite touches anything, an empty file with a non-empty
    ``-wal`` beside it: a store never has one (its header is written before its
    first -wal frame), so the side files are another store's, or the file was
    lost; SQLite would silently drop that -wal and read an empty store."""
    wal = Path(f"{path}-wal")
    try:
        if path.stat().st_size != 0 or not wal.exists() or wal.stat().st_size == 0:
            return
    except OSError:
        return
    names = " and ".join(p.name for p in side_files(path))
    raise StoreError(
        f"{path} is an empty file (0 bytes) with {names} beside it ({wal.stat().st_size} bytes of journal): "
        "a store never looks like that, so those side files belong to another store or the file itself was "
        f"lost; nothing was read. Restore {path.name} from a backup, or move {names} away to start a new store there"
    )


def _probe(uri: str, timeout: float) -> _FileInfo:
    """Read identity and schema version through a separate read-only connection,
    so that a file we refuse is never touched (not even switched to WAL).

    Without a -wal beside it the file holds everything (a checkpointed store, or
    not in WAL mode; an empty -wal holds nothing either), so the probe opens it ``immutable``: no locks, and no
    -wal/-shm companions are created beside a file we may refuse."""
    path = Path(sqlite3_uri_path(uri))
    check_side_files(path)  # before SQLite opens it: it would drop a -wal beside an empty file
    if _immutable_ok(path):  # no -wal, or an empty one (left by a reader on a full disk): nothing waits in it
        uri += "&immutable=1"
    conn = sqlite3.connect(uri, uri=True, timeout=timeout)
    try:
        app_id = int(conn.execute("PRAGMA application_id").fetchone()[0])
        version = int(conn.execute("PRAGMA user_version").fetchone()[0])
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")]
    finally:
        conn.close()
    return _FileInfo(app_id, version, tables)


def _lower(value: Any) -> Any:
    """``hitl_lower()`` in SQL: Python's str.lower, so text search matches MemoryStore's
    exactly (SQLite's lower() is ASCII-only)."""
    return value.lower() if isinstance(value, str) else value


def session_page_query(
    *,
    app_name: str | None = None,
    user_id: str | None = None,
    status: str | None = None,
    text: str | None = None,
    updated_before: float | None = None,
    updated_after: float | None = None,
    limit: int = 50,
    cursor: str | None = None,
    order: Literal["updated", "oldest_open"] = "updated",
    owner: str | None = None,
) -> tuple[str, list[Any]]:
    """The statement of one page of sessions (``limit + 1`` rows of :data:`_SUMMARY_COLS`:
    the extra one says there is a next page). ValueError: a bad limit or cursor."""
    if limit < 1:
        raise ValueError(f"limit must be at least 1, not {limit}")
    where: list[str] = []
    params: list[Any] = []
    for column, value in (("app_name", app_name), ("user_id", user_id), ("status", status)):
        if value is not None:
            where.append(f"{column} = ?")
            params.append(value)
    if text is not None:  # the id, the user, the app, or one of its interrupt ids (open or answered)
        where.append(
            "(instr(hitl_lower(id), ?) > 0 OR instr(hitl_lower(user_id), ?) > 0 OR instr(hitl_lower(app_name), ?) > 0"
            " OR EXISTS (SELECT 1 FROM interrupts AS r WHERE r.session_id = sessions.id"
            " AND instr(hitl_lower(r.interrupt_id), ?) > 0))"
        )
        params += [text.lower()] * 4
    if owner is not None:

        def arg(value: Any) -> str:
            params.append(value)
            return "?"

        where.append(owner_condition(owner, arg))
    if updated_before is not None:
        where.append("updated_at < ?")
        params.append(updated_before)
    if updated_after is not None:
        where.append("updated_at > ?")
        params.append(updated_after)
    oldest = order == "oldest_open"
    if oldest:
        where.append("oldest_open_at IS NOT NULL")
    if cursor:
        ts, sid = decode_cursor(cursor, (float, str))
        # Keyset: rows after (ts, sid) in index order. The first term is a
        # plain range on the index, the second resolves ties.
        if oldest:
            where.append("oldest_open_at >= ? AND (oldest_open_at > ? OR id > ?)")
        else:
            where.append("updated_at <= ? AND (updated_at < ? OR id > ?)")
        params += [ts, ts, sid]
    sql = f"SELECT {_SUMMARY_COLS} FROM sessions"
    if where:
        sql += " WHERE " + " AND ".join(where)
    sql += " ORDER BY oldest_open_at, id LIMIT ?" if oldest else " ORDER BY updated_at DESC, id LIMIT ?"
    params.append(limit + 1)
    return sql, params


def page_cursor(oldest_open_at: float | None, updated_at: float, session_id: str, order: str) -> str:
    """The next-page cursor after a page whose last row is this one."""
    return encode_cursor(oldest_open_at if order == "oldest_open" else updated_at, session_id)


def interrupt_page_query(
    *,
    app_name: str | None = None,
    session_id: str | None = None,
    node: str | None = None,
    text: str | None = None,
    raised_before: float | None = None,
    limit: int = 50,
    cursor: str | None = None,
) -> tuple[str, list[Any]]:
    """The statement of one page of the inbox (open interrupts, oldest first):
    ``limit + 1`` rows of :data:`~engine.store.sql.columns.INTERRUPT_COLS`. ValueError: a bad limit or cursor."""
    if limit < 1:
        raise ValueError(f"limit must be at least 1, not {limit}")
    # The literal status = 'open' lets SQLite use the partial inbox indexes.
    where = ["status = 'open'"]
    params: list[Any] = []
    if session_id is not None:
        where.append("session_id = ?")
        params.append(session_id)
    if app_name is not None:
        where.append("app_name = ?")
        params.append(app_name)
    if node:  # a path segment NAME@run: instr is case-sensitive, like the other backends
        where.append("instr('/' || path, '/' || ? || '@') > 0")
        params.append(node)
    if text:
        where.append("instr(hitl_lower(json_extract(args, '$.message')), ?) > 0")
        params.append(text.lower())
    if raised_before is not None:
        where.append("raised_at < ?")
        params.append(raised_before)
    if cursor:
        where.append("(raised_at, session_id, raised_seq, interrupt_id) > (?, ?, ?, ?)")
        params += decode_cursor(cursor, (float, str, int, str))
    sql = (
        f"SELECT {INTERRUPT_COLS} FROM interrupts WHERE {' AND '.join(where)}"
        " ORDER BY raised_at, session_id, raised_seq, interrupt_id LIMIT ?"
    )
    params.append(limit + 1)
    return sql, params


def interrupt_cursor(raised_at: float, session_id: str, raised_seq: int, interrupt_id: str) -> str:
    """The next-page cursor of the inbox after a page whose last row is this one."""
    return encode_cursor(raised_at, session_id, raised_seq, interrupt_id)


def open_read_only(path: str | Path) -> sqlite3.Connection | None:
    """A read-only connection to the hitl-console SQLite file at ``path``, or None
    when it is not one these plain reads answer for (no such file, not a
    hitl-console file, another schema version, any SQLite error)."""
    try:
        uri = f"{Path(path).resolve().as_uri()}?mode=ro"
        # First the store's probe (immutable when nothing waits in a -wal): a file
        # declined here gets no -wal/-shm companions, as the store path refuses it.
        info = _probe(uri, 5.0)
        if info.application_id not in (0, APPLICATION_ID) or info.version != LISTING_SCHEMA_VERSION:
            return None
        return sqlite3.connect(uri, uri=True, isolation_level=None)
    except (sqlite3.Error, ValueError, OSError, StoreError):
        return None


def _read_file(path: str | Path, read: Callable[[sqlite3.Connection], T]) -> T | None:
    """``read`` on a read-only connection to the hitl-console SQLite file at ``path``
    (``hitl_lower`` registered), or None when the file is not one this module
    reads (see :func:`list_session_rows`) or ``read`` fails on it."""
    conn = open_read_only(path)
    if conn is None:
        return None
    try:
        conn.execute("PRAGMA query_only = ON")
        conn.create_function("hitl_lower", 1, _lower, deterministic=True)
        return read(conn)
    except (sqlite3.Error, ValueError):
        return None
    finally:
        conn.close()
