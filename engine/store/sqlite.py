"""SQLite session store, the default backend, on aiosqlite.

Tables (schema version :data:`SCHEMA_VERSION`, kept in ``PRAGMA user_version``):

``sessions``
    One row per session: identity, state (JSON), ``last_seq``, and the summary
    the sessions screen lists (status, open interrupts, oldest open, last event,
    counts), maintained in the same transaction as every append.
``events``
    The append-only log, primary key ``(session_id, seq)``; the event's JSON plus
    a few columns copied out of it for indexes (invocation, path, kind).
``invocations``
    Per invocation: status (from root lifecycle records), start seq and message.
``interrupts``
    The interrupt index: interrupt id -> invocation, node path, call; open or not.
``snapshots``
    Cached projections of one invocation at some seq.
``leases``
    Which process runs a turn of an invocation, until when (schema 3).
``audit``
    Operator writes: answers, re-drives and cancels (derived from their events)
    and imports (written in the import's transaction) (schema 3).

Everything but ``events``, the session's identity, leases and import audit rows
is derived: the one definition of how an event changes it is
:func:`engine.store.base.index_effects`.

Concurrency and durability
    WAL journal: readers never block the writer nor each other. Every append is
    one ``BEGIN IMMEDIATE`` transaction (event + derived rows + state + summary),
    so writers in several processes are serialised; one that cannot get the
    write lock within ``busy_timeout`` seconds fails with a :class:`StoreError`
    saying the database is locked. With ``synchronous=NORMAL`` (default) a
    committed append survives the process being killed; a power cut may lose
    the last few commits but never corrupts the file. ``FULL`` also survives
    power cuts, at a cost per append that ``benchmarks/bench_store.py`` measures.
    Each store call is one unit of work on the connection's thread (one
    round-trip); if the awaiting task is cancelled, a started append still
    commits or rolls back as a whole -- re-read ``last_seq`` to know which.

Corrupt rows
    An event row whose JSON does not parse as an :class:`Event` raises
    :class:`CorruptEventError` naming the session and seq wherever it is read
    (``events``, ``event_at``, ``invocation_events``, export). Other sessions,
    the listings and the inbox are unaffected (they never parse event JSON).
    ``events(..., skip_corrupt=True)`` returns the readable events and
    :meth:`SQLiteStore.corrupt_events` lists the bad seqs, so a viewer can show
    what it can with a warning.

Schema migrations
    ``_MIGRATIONS[i]`` upgrades version ``i`` to ``i + 1``; a writer runs the
    pending ones in one transaction when it opens the file. To change the
    schema, append a function (never edit a released one). A file with a newer
    version than this code knows is refused untouched.

All SQL of the project lives in this module.
"""

from __future__ import annotations

import asyncio
import functools
import json
import os
import shutil
import sqlite3
import time
from collections.abc import AsyncIterator, Callable, Generator, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

import aiosqlite
from pydantic import ValidationError
from pydantic_core import to_json

from ..errors import (
    AlreadyResolvedError,
    ConflictError,
    CorruptEventError,
    HitlError,
    InvocationBusyError,
    LeaseLostError,
    ReadOnlyError,
    SchemaUpgradeNeeded,
    SessionNotFoundError,
    StoreError,
    StoreFullError,
)
from ..models import Event, Session, StoredEvent, new_id
from . import jsonl
from .base import (
    AuditRecord,
    InterruptRecord,
    InvocationSummary,
    Lease,
    Page,
    SessionOrder,
    SessionSummary,
    import_record,
    index_effects,
    session_status,
)

T = TypeVar("T")

APPLICATION_ID = 0x48495443
"""``PRAGMA application_id`` of our files ("HITC"), to tell them from other SQLite files."""

_SYNCHRONOUS = ("OFF", "NORMAL", "FULL", "EXTRA")


def default_db_path() -> Path:
    """``$HITL_DB`` if set, else ``~/.local/share/hitl-console/hitl.sqlite``."""
    env = os.environ.get("HITL_DB")
    if env:
        return Path(env).expanduser()
    return Path.home() / ".local" / "share" / "hitl-console" / "hitl.sqlite"


# --------------------------------------------------------------------------- schema


def _exec_all(conn: sqlite3.Connection, statements: Iterable[str]) -> None:
    # Not executescript(): it commits first, and migrations run in one transaction.
    for stmt in statements:
        conn.execute(stmt)


def _migrate_1(conn: sqlite3.Connection) -> None:
    """v0 (empty file) -> v1: the log, the derived tables and their indexes."""
    _exec_all(
        conn,
        [
            f"PRAGMA application_id = {APPLICATION_ID}",
            """CREATE TABLE sessions (
                id TEXT NOT NULL PRIMARY KEY,
                app_name TEXT NOT NULL,
                user_id TEXT NOT NULL,
                state TEXT NOT NULL DEFAULT '{}',
                created_at REAL NOT NULL,
                updated_at REAL NOT NULL,
                last_seq INTEGER NOT NULL DEFAULT 0
            )""",
            """CREATE TABLE events (
                session_id TEXT NOT NULL REFERENCES sessions(id),
                seq INTEGER NOT NULL,
                invocation_id TEXT NOT NULL,
                event_id TEXT NOT NULL,
                timestamp REAL NOT NULL,
                path TEXT,
                kind TEXT NOT NULL,
                json TEXT NOT NULL,
                PRIMARY KEY (session_id, seq)
            )""",
            "CREATE INDEX events_by_invocation ON events(session_id, invocation_id, seq)",
            """CREATE TABLE invocations (
                session_id TEXT NOT NULL REFERENCES sessions(id),
                invocation_id TEXT NOT NULL,
                status TEXT NOT NULL,
                started_seq INTEGER NOT NULL,
                started_at REAL NOT NULL,
                updated_at REAL NOT NULL,
                message TEXT NOT NULL DEFAULT '',
                PRIMARY KEY (session_id, invocation_id)
            ) WITHOUT ROWID""",
            """CREATE TABLE interrupts (
                session_id TEXT NOT NULL REFERENCES sessions(id),
                invocation_id TEXT NOT NULL,
                interrupt_id TEXT NOT NULL,
                path TEXT NOT NULL,
                event_id TEXT NOT NULL,
                name TEXT NOT NULL,
                args TEXT NOT NULL DEFAULT '{}',
                raised_seq INTEGER NOT NULL,
                raised_at REAL NOT NULL,
                status TEXT NOT NULL DEFAULT 'open',
                resolved_by TEXT,
                resolved_seq INTEGER,
                app_name TEXT NOT NULL,
                user_id TEXT NOT NULL,
                PRIMARY KEY (session_id, invocation_id, interrupt_id)
            )""",
            "CREATE INDEX interrupts_by_id ON interrupts(session_id, interrupt_id)",
            # The inbox: open interrupts oldest first, overall, per app and per session.
            # Partial indexes stay small however many interrupts were ever answered.
            """CREATE INDEX interrupts_inbox ON interrupts(raised_at, session_id, raised_seq, interrupt_id)
                WHERE status = 'open'""",
            """CREATE INDEX interrupts_inbox_by_app
                ON interrupts(app_name, raised_at, session_id, raised_seq, interrupt_id) WHERE status = 'open'""",
            """CREATE INDEX interrupts_open_by_session
                ON interrupts(session_id, raised_at, raised_seq, interrupt_id) WHERE status = 'open'""",
            """CREATE TABLE snapshots (
                session_id TEXT NOT NULL REFERENCES sessions(id),
                invocation_id TEXT NOT NULL,
                seq INTEGER NOT NULL,
                data TEXT NOT NULL,
                PRIMARY KEY (session_id, invocation_id)
            )""",
        ],
    )


def _migrate_2(conn: sqlite3.Connection) -> None:
    """v1 -> v2: session summary columns (filled from the derived tables) and
    the indexes behind the sessions listing."""
    _exec_all(
        conn,
        [
            "ALTER TABLE sessions ADD COLUMN status TEXT NOT NULL DEFAULT 'new'",
            "ALTER TABLE sessions ADD COLUMN open_interrupts INTEGER NOT NULL DEFAULT 0",
            "ALTER TABLE sessions ADD COLUMN oldest_open_at REAL",
            "ALTER TABLE sessions ADD COLUMN last_event_at REAL",
            "ALTER TABLE sessions ADD COLUMN event_count INTEGER NOT NULL DEFAULT 0",
            "ALTER TABLE sessions ADD COLUMN invocation_count INTEGER NOT NULL DEFAULT 0",
            """UPDATE sessions SET
                event_count = last_seq,
                last_event_at = (SELECT e.timestamp FROM events e WHERE e.session_id = sessions.id
                                 ORDER BY e.seq DESC LIMIT 1),
                invocation_count = (SELECT count(*) FROM invocations i WHERE i.session_id = sessions.id),
                open_interrupts = (SELECT count(*) FROM interrupts r
                                   WHERE r.session_id = sessions.id AND r.status = 'open'),
                oldest_open_at = (SELECT min(r.raised_at) FROM interrupts r
                                  WHERE r.session_id = sessions.id AND r.status = 'open'),
                status = CASE
                    WHEN EXISTS (SELECT 1 FROM invocations i
                                 WHERE i.session_id = sessions.id AND i.status = 'running') THEN 'running'
                    WHEN EXISTS (SELECT 1 FROM invocations i
                                 WHERE i.session_id = sessions.id AND i.status = 'waiting') THEN 'waiting'
                    WHEN EXISTS (SELECT 1 FROM invocations i
                                 WHERE i.session_id = sessions.id AND i.status = 'failed') THEN 'failed'
                    WHEN NOT EXISTS (SELECT 1 FROM invocations i WHERE i.session_id = sessions.id) THEN 'new'
                    WHEN EXISTS (SELECT 1 FROM invocations i
                                 WHERE i.session_id = sessions.id AND i.status = 'completed') THEN 'completed'
                    ELSE 'cancelled' END""",
            # Listing: most recently updated first, keyset-paginated on (updated_at, id),
            # optionally filtered by one of status / app / user (equality prefix).
            "CREATE INDEX sessions_by_updated ON sessions(updated_at DESC, id)",
            "CREATE INDEX sessions_by_status ON sessions(status, updated_at DESC, id)",
            "CREATE INDEX sessions_by_app ON sessions(app_name, updated_at DESC, id)",
            "CREATE INDEX sessions_by_user ON sessions(user_id, updated_at DESC, id)",
        ],
    )


def _migrate_3(conn: sqlite3.Connection) -> None:
    """v2 -> v3: invocation leases and the audit log (filled from the operator
    events already in the log, through the same ``index_effects`` as appends).
    Idempotent: safe on a file that already has some of it."""
    _exec_all(
        conn,
        [
            """CREATE TABLE IF NOT EXISTS leases (
                session_id TEXT NOT NULL REFERENCES sessions(id),
                invocation_id TEXT NOT NULL,
                owner TEXT NOT NULL,
                acquired_at REAL NOT NULL,
                renewed_at REAL NOT NULL,
                expires_at REAL NOT NULL,
                PRIMARY KEY (session_id, invocation_id)
            ) WITHOUT ROWID""",
            # No foreign key: the audit trail outlives whatever it is about.
            """CREATE TABLE IF NOT EXISTS audit (
                id INTEGER PRIMARY KEY,
                at REAL NOT NULL,
                action TEXT NOT NULL,
                operator TEXT,
                reason TEXT,
                session_id TEXT NOT NULL,
                invocation_id TEXT,
                seq INTEGER,
                event_id TEXT,
                details TEXT NOT NULL DEFAULT '{}'
            )""",
            "CREATE INDEX IF NOT EXISTS audit_by_time ON audit(at, id)",
            "CREATE INDEX IF NOT EXISTS audit_by_operator ON audit(operator, at, id)",
            "CREATE INDEX IF NOT EXISTS audit_by_session ON audit(session_id, at, id)",
        ],
    )
    rows = conn.execute(
        "SELECT e.session_id, e.seq, e.json FROM events e WHERE e.kind IN ('response', 'redrive', 'cancel')"
        " AND NOT EXISTS (SELECT 1 FROM audit a WHERE a.session_id = e.session_id AND a.seq = e.seq)"
        " ORDER BY e.rowid"
    ).fetchall()
    for session_id, seq, text in rows:
        try:
            event = Event.from_json(text)
        except (ValidationError, ValueError, TypeError):
            continue  # a corrupt row is reported where it is read; it has no audit row
        p = _prepare(event)
        if p.audit is not None:
            _insert_audit(conn, session_id, seq, p)


def _migrate_4(conn: sqlite3.Connection) -> None:
    """v3 -> v4: the triage order (oldest open interrupt first) of the sessions list."""
    conn.execute(
        "CREATE INDEX IF NOT EXISTS sessions_by_oldest_open ON sessions(oldest_open_at, id)"
        " WHERE oldest_open_at IS NOT NULL"
    )


def _migrate_5(conn: sqlite3.Connection) -> None:
    """v4 -> v5: invocations by status within a session, so that the append path
    finds the session's status with a few index probes instead of reading every
    invocation of the session (issue 15)."""
    conn.execute("CREATE INDEX IF NOT EXISTS invocations_by_status ON invocations(session_id, status)")


_MIGRATIONS: list[Callable[[sqlite3.Connection], None]] = [
    _migrate_1,
    _migrate_2,
    _migrate_3,
    _migrate_4,
    _migrate_5,
]
"""``_MIGRATIONS[i]`` upgrades schema version ``i`` to ``i + 1``. Append only."""

SCHEMA_VERSION = len(_MIGRATIONS)


def _migrate(conn: sqlite3.Connection, path: Path) -> None:
    if _user_version(conn) >= SCHEMA_VERSION:
        return
    conn.execute("BEGIN IMMEDIATE")
    try:
        version = _user_version(conn)  # another process may have migrated meanwhile
        if version > SCHEMA_VERSION:
            raise _newer_schema_error(path, version)
        for n, migration in enumerate(_MIGRATIONS[version:], start=version + 1):
            try:
                migration(conn)
            except (sqlite3.Error, HitlError):
                raise
            except Exception as e:
                raise StoreError(
                    f"upgrading {path} to schema version {n} failed ({type(e).__name__}: {e}); "
                    f"the file was left at version {version}"
                ) from e
        conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise


def _user_version(conn: sqlite3.Connection) -> int:
    return int(conn.execute("PRAGMA user_version").fetchone()[0])


def _newer_schema_error(path: Path, version: int) -> StoreError:
    return StoreError(
        f"the database {path} has schema version {version}, newer than this hitl-console understands "
        f"(up to {SCHEMA_VERSION}); upgrade hitl-console to open it. The file was not modified."
    )


async def schema_version(path: str | os.PathLike[str]) -> int:
    """The schema version of the store file at ``path`` (0: an empty file), read
    without changing it (no -wal/-shm created)."""
    db_path = Path(path).expanduser().absolute()
    try:
        info = await asyncio.to_thread(_probe, db_path.as_uri() + "?mode=ro", 5.0)
    except sqlite3.Error as e:
        raise _translate(e, db_path, 5.0) from e
    _check_file(info, db_path, read_only=False)
    return info.version


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


def _is_cantopen(exc: sqlite3.Error) -> bool:
    code = (getattr(exc, "sqlite_errorcode", None) or 0) & 0xFF
    return code in (sqlite3.SQLITE_CANTOPEN, sqlite3.SQLITE_READONLY, sqlite3.SQLITE_IOERR, sqlite3.SQLITE_FULL)


@dataclass
class _FileInfo:
    application_id: int
    version: int
    tables: list[str]


def _probe(uri: str, timeout: float) -> _FileInfo:
    """Read identity and schema version through a separate read-only connection,
    so that a file we refuse is never touched (not even switched to WAL).

    Without a -wal beside it the file holds everything (a checkpointed store, or
    not in WAL mode; an empty -wal holds nothing either), so the probe opens it ``immutable``: no locks, and no
    -wal/-shm companions are created beside a file we may refuse."""
    path = Path(sqlite3_uri_path(uri))
    if _immutable_ok(path):  # no -wal, or an empty one (left by a reader on a full disk): nothing waits in it
        uri += "&immutable=1"
    conn = sqlite3.connect(uri, uri=True, timeout=timeout)
    try:
        app_id = int(conn.execute("PRAGMA application_id").fetchone()[0])
        version = _user_version(conn)
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")]
    finally:
        conn.close()
    return _FileInfo(app_id, version, tables)


def _check_file(info: _FileInfo, path: Path, read_only: bool) -> None:
    foreign = info.application_id not in (0, APPLICATION_ID) or (
        info.tables and ("sessions" not in info.tables or "events" not in info.tables)
    )
    if foreign:
        shown = ", ".join(info.tables[:5]) or "none"
        raise StoreError(
            f"{path} is a SQLite database of another application (tables: {shown}), not a hitl-console "
            "store; point --db / $HITL_DB at a hitl-console store or at a new file"
        )
    if info.version > SCHEMA_VERSION:
        raise _newer_schema_error(path, info.version)
    if read_only and info.version < SCHEMA_VERSION:
        if info.version == 0:
            raise StoreError(
                f"{path} is an empty file, not a hitl-console store yet; reading never creates one: "
                "a command that writes (hitl import, hitl demo, hitl migrate) makes it a store, "
                "or check --db / $HITL_DB"
            )
        raise SchemaUpgradeNeeded(
            f"the store {path} has schema version {info.version}, older than this hitl-console's "
            f"{SCHEMA_VERSION}; reads never change it: run `hitl --db {path} migrate` to upgrade it in "
            "place (any command that writes also upgrades it first)"
        )


# --------------------------------------------------------------------------- drivers


class _AiosqliteDriver:
    """Runs one unit of work on aiosqlite's connection thread in ONE round-trip.

    aiosqlite executes every statement on a dedicated thread; through its public
    API each ``execute``/``fetch``/``commit`` is a separate hop to that thread.
    Its private ``Connection._execute(fn, *args)`` queues an arbitrary callable
    there, so a whole append (a dozen statements and COMMIT) costs one hop. This
    class is the only user of aiosqlite internals: :meth:`available` checks for
    them, and the store falls back to :class:`_ThreadDriver` if they are gone.
    """

    def __init__(self, db: aiosqlite.Connection) -> None:
        self._db = db
        self._raw: sqlite3.Connection = db._conn

    @staticmethod
    def available() -> bool:
        return callable(getattr(aiosqlite.Connection, "_execute", None)) and isinstance(
            getattr(aiosqlite.Connection, "_conn", None), property
        )

    @classmethod
    async def connect(cls, target: str, **kwargs: Any) -> _AiosqliteDriver:
        return cls(await aiosqlite.connect(target, **kwargs))

    async def run(self, fn: Callable[..., T], *args: Any) -> T:
        return await self._db._execute(fn, self._raw, *args)

    async def close(self) -> None:
        await self._db.close()


class _ThreadDriver:
    """Fallback: a plain sqlite3 connection owned by one dedicated thread.

    Units of work run there one after another in submission order, like on
    aiosqlite's thread -- also when the awaiting task is cancelled, so a
    transaction is never interleaved with the next unit of work."""

    def __init__(self, executor: ThreadPoolExecutor, raw: sqlite3.Connection) -> None:
        self._executor = executor
        self._raw = raw

    @classmethod
    async def connect(cls, target: str, **kwargs: Any) -> _ThreadDriver:
        executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="hitl-sqlite")
        loop = asyncio.get_running_loop()
        try:
            raw = await loop.run_in_executor(executor, partial(sqlite3.connect, target, **kwargs))
        except BaseException:
            executor.shutdown(wait=False)
            raise
        return cls(executor, raw)

    async def run(self, fn: Callable[..., T], *args: Any) -> T:
        return await asyncio.get_running_loop().run_in_executor(self._executor, partial(fn, self._raw, *args))

    async def close(self) -> None:
        try:
            await asyncio.get_running_loop().run_in_executor(self._executor, self._raw.close)
        finally:
            self._executor.shutdown(wait=False)


class _InlineDriver:
    """Runs units of work directly on the event loop's thread: no hop at all.

    For processes that only run workflows (``hitl resume``, workers, benchmarks):
    an append blocks the loop for its ~40 us of SQL instead of paying two
    thread wake-ups (~80 us here). Never for the console: a locked database
    would freeze the UI for up to the busy timeout."""

    def __init__(self, raw: sqlite3.Connection) -> None:
        self._raw = raw

    @classmethod
    async def connect(cls, target: str, **kwargs: Any) -> _InlineDriver:
        return cls(sqlite3.connect(target, **kwargs))

    async def run(self, fn: Callable[..., T], *args: Any) -> T:
        return fn(self._raw, *args)

    async def close(self) -> None:
        self._raw.close()


_Driver = _AiosqliteDriver | _ThreadDriver | _InlineDriver


_ROOM_PROBE = 64 * 1024
"""Bytes :func:`no_room` tries to write beside the database."""


def no_room(path: Path) -> str | None:
    """Why nothing more can be written beside ``path`` -- a full disk (ENOSPC),
    a quota (EDQUOT), a file-size limit (``ulimit -f``: EFBIG) -- or None.

    SQLite reports all of these as "disk I/O error" when they hit its -wal or
    -shm files, so after an I/O error the directory is probed: free space, the
    process's file-size limit, then a 64 KiB scratch file (always removed; the
    database and its companions are never touched)."""
    import errno
    import resource
    import tempfile

    parent = path.parent
    if not parent.is_dir():
        return None
    soft = resource.getrlimit(resource.RLIMIT_FSIZE)[0]
    if soft != resource.RLIM_INFINITY and soft < _ROOM_PROBE:
        return f"this process may not grow files beyond {soft} bytes (ulimit -f)"
    try:
        free = shutil.disk_usage(parent).free
    except OSError:
        free = None
    if free is not None and free < 1024 * 1024:
        return f"{free} bytes free"
    try:
        with tempfile.TemporaryFile(dir=parent, prefix=".hitl-room-") as fh:
            fh.write(b"\0" * _ROOM_PROBE)
            fh.flush()
            os.fsync(fh.fileno())
    except OSError as exc:
        if exc.errno in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG):
            return os.strerror(exc.errno).lower()
    return None


def _translate(exc: sqlite3.Error, path: Path, busy_timeout: float) -> HitlError:
    msg = str(exc)
    code = (getattr(exc, "sqlite_errorcode", None) or 0) & 0xFF
    if code == sqlite3.SQLITE_FULL or "disk is full" in msg:
        return StoreFullError(
            f"the database {path} is full ({msg}): the disk or the database's size limit has no room; "
            "the write was rolled back and nothing of it was stored. Free disk space, then retry"
        )
    if code in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED) or "locked" in msg:
        return StoreError(
            f"the database {path} is locked by another process (waited {busy_timeout:g}s for it); "
            "retry in a moment, or raise the busy timeout"
        )
    if code == sqlite3.SQLITE_READONLY or "readonly" in msg:
        return ReadOnlyError(
            f"the database {path} cannot be written ({msg}); check the permissions of the file and its "
            "directory, or open it read-only"
        )
    if code in (sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB) or "malformed" in msg or "not a database" in msg:
        return StoreError(
            f"{path} is not a usable SQLite database ({msg}); restore it from a backup or use another file"
        )
    if code == sqlite3.SQLITE_CANTOPEN or "unable to open" in msg:
        return StoreError(f"cannot open the database {path} ({msg}); check that the path and its directory exist")
    if code in (sqlite3.SQLITE_IOERR, sqlite3.SQLITE_CANTOPEN) or "disk I/O error" in msg:
        room = no_room(path)
        if room is not None:
            return StoreFullError(
                f"the disk holding {path} is full ({room}); nothing was written. "
                "Free disk space, then retry (reads of a checkpointed store still work)"
            )
        return StoreError(
            f"cannot use {path} ({msg}): SQLite could not read or create the file or its -wal/-shm companions; "
            "check the disk, and the permissions of the file and its directory"
        )
    return StoreError(f"database error on {path}: {msg}")


# --------------------------------------------------------------------------- row converters

_SESSION_COLS = "id, app_name, user_id, state, created_at, updated_at, last_seq"
_SUMMARY_COLS = (
    "id, app_name, user_id, status, open_interrupts, oldest_open_at, last_event_at, "
    "event_count, invocation_count, created_at, updated_at"
)
_INTERRUPT_COLS = (
    "interrupt_id, session_id, app_name, user_id, invocation_id, path, event_id, name, args, "
    "raised_seq, raised_at, status, resolved_by, resolved_seq"
)
_INVOCATION_COLS = "session_id, invocation_id, status, started_seq, started_at, updated_at, message"
_LEASE_COLS = "session_id, invocation_id, owner, acquired_at, renewed_at, expires_at"
_AUDIT_COLS = "id, at, action, operator, reason, session_id, invocation_id, seq, event_id, details"


def _session_from_row(r: tuple[Any, ...]) -> Session:
    return Session(
        id=r[0], app_name=r[1], user_id=r[2], state=json.loads(r[3]), created_at=r[4], updated_at=r[5], last_seq=r[6]
    )


def _summary_from_row(r: tuple[Any, ...]) -> SessionSummary:
    return SessionSummary(
        id=r[0],
        app_name=r[1],
        user_id=r[2],
        status=r[3],
        open_interrupts=r[4],
        oldest_open_at=r[5],
        last_event_at=r[6],
        event_count=r[7],
        invocation_count=r[8],
        created_at=r[9],
        updated_at=r[10],
    )


def _interrupt_from_row(r: tuple[Any, ...]) -> InterruptRecord:
    return InterruptRecord(
        interrupt_id=r[0],
        session_id=r[1],
        app_name=r[2],
        user_id=r[3],
        invocation_id=r[4],
        path=r[5],
        event_id=r[6],
        name=r[7],
        args=json.loads(r[8]),
        raised_seq=r[9],
        raised_at=r[10],
        status=r[11],
        resolved_by=r[12],
        resolved_seq=r[13],
    )


def _invocation_from_row(r: tuple[Any, ...]) -> InvocationSummary:
    return InvocationSummary(
        session_id=r[0],
        invocation_id=r[1],
        status=r[2],
        started_seq=r[3],
        started_at=r[4],
        updated_at=r[5],
        message=r[6],
    )


def _lease_from_row(r: tuple[Any, ...]) -> Lease:
    return Lease(
        session_id=r[0], invocation_id=r[1], owner=r[2], acquired_at=r[3], renewed_at=r[4], expires_at=r[5]
    )


def _audit_from_row(r: tuple[Any, ...]) -> AuditRecord:
    try:
        details = json.loads(r[9])
    except (ValueError, TypeError):
        details = {}
    return AuditRecord(
        at=r[1],
        action=r[2],
        operator=r[3],
        reason=r[4],
        session_id=r[5],
        invocation_id=r[6],
        seq=r[7],
        event_id=r[8],
        details=details if isinstance(details, dict) else {},
    )


def _parse_event(session_id: str, seq: int, text: Any) -> Event:
    try:
        return Event.from_json(text)
    except ValidationError as e:
        first = e.errors()[0]
        loc = ".".join(str(p) for p in first.get("loc", ())) or "(root)"
        raise CorruptEventError(session_id, seq, f"{loc}: {first.get('msg', 'invalid')}") from None
    except (TypeError, ValueError) as e:
        raise CorruptEventError(session_id, seq, str(e)) from None


def _encode_cursor(*key: Any) -> str:
    return json.dumps(list(key), separators=(",", ":"))


def _decode_cursor(cursor: str, types: tuple[type, ...]) -> list[Any]:
    try:
        key = json.loads(cursor)
        if isinstance(key, list) and len(key) == len(types):
            return [float(v) if t is float else t(v) for v, t in zip(key, types, strict=True)]
    except (ValueError, TypeError):
        pass
    raise ValueError(f"invalid page cursor {cursor!r}; pass back a next_cursor this store returned")


# --------------------------------------------------------------------------- units of work
# Each runs on the connection's thread with the raw sqlite3 connection first.


@dataclass(slots=True)
class _Prepared:
    """An event reduced to what the append transaction writes."""

    json: str
    event_id: str
    invocation_id: str
    timestamp: float
    path: str | None
    kind: str
    delta: dict[str, Any] | None
    opened: list[tuple[str, str, str, str]]
    """(interrupt_id, path, name, args JSON)"""
    resolved: list[str]
    cancel: bool
    invocation_status: str | None
    new_message: str | None
    audit: tuple[str, str | None, str | None, str] | None
    """(action, operator, reason, details JSON) of an operator write."""


def _prepare(event: Event) -> _Prepared:
    if event.state_delta:
        kept = {k: v for k, v in event.state_delta.items() if not k.startswith("temp:")}
        event = event.model_copy(update={"state_delta": kept or None})
    eff = index_effects(event)
    text = event.to_json()
    delta = None
    if event.state_delta:  # as JSON would give it back, like the event log does
        delta = event.model_dump(mode="json", include={"state_delta"})["state_delta"]
    return _Prepared(
        json=text,
        event_id=event.id,
        invocation_id=event.invocation_id,
        timestamp=event.timestamp,
        path=event.path,
        kind=event.kind,
        delta=delta,
        opened=[(iid, path, name, to_json(args).decode()) for iid, path, name, args in eff.opened],
        resolved=list(eff.resolved),
        cancel=eff.cancel_invocation,
        invocation_status=eff.invocation_status,
        new_message=eff.new_invocation_message,
        audit=None if eff.audit is None else (*eff.audit[:3], to_json(eff.audit[3]).decode()),
    )


def _insert_audit(conn: sqlite3.Connection, session_id: str, seq: int, p: _Prepared) -> None:
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


def _create_tx(
    conn: sqlite3.Connection,
    session_id: str,
    app_name: str,
    user_id: str,
    state_json: str,
    created_at: float,
    updated_at: float,
) -> None:
    if conn.execute("SELECT 1 FROM sessions WHERE id = ?", (session_id,)).fetchone() is not None:
        raise ConflictError(f"session {session_id!r} already exists")
    conn.execute(
        "INSERT INTO sessions (id, app_name, user_id, state, created_at, updated_at, last_seq, status)"
        " VALUES (?, ?, ?, ?, ?, ?, 0, 'new')",
        (session_id, app_name, user_id, state_json, created_at, updated_at),
    )


_UPDATED_AT_RESOLUTION = 1.0
"""Seconds: how stale a session's ``updated_at`` may get while it only appends."""


def _append_many_tx(
    conn: sqlite3.Connection, session_id: str, prepared: list[_Prepared], expected_seq: int | None, lease_owner: str | None
) -> list[int]:
    """Several appends in the caller's one transaction (``append_events``)."""
    return _append_batch(conn, session_id, prepared, expected_seq, lease_owner)[0]


_INVOCATION_STATES = ("running", "waiting", "failed", "completed", "cancelled")


@functools.cache
def _append_head_sql(lease: bool, state: bool, acquire: bool = False, moved: bool = False, probe: bool = False) -> str:
    """The append path's first statement: the session row, and what the checks
    and the summary need folded in -- the lease's owner (fencing, or taking it:
    with its times), the state (a delta), the invocation's last seq (a turn's
    first write proves the invocation unchanged), whether the session's *other*
    invocations have each status (one index probe each; the batch's invocation
    gets a status the session's then depends on)."""
    lease_row = "(SELECT {} FROM leases WHERE session_id = s.id AND invocation_id = ?1)"
    cols = [
        "app_name, user_id, last_seq, updated_at, status, open_interrupts, oldest_open_at, invocation_count",
        lease_row.format("owner") if lease or acquire else "NULL",
        "state" if state else "NULL",
    ]
    if acquire:
        cols += [lease_row.format("acquired_at"), lease_row.format("expires_at")]
    if moved:
        cols.append("(SELECT max(seq) FROM events WHERE session_id = s.id AND invocation_id = ?1)")
    if probe:
        cols += [
            f"EXISTS (SELECT 1 FROM invocations WHERE session_id = s.id AND status = '{st}' AND invocation_id != ?1)"
            for st in _INVOCATION_STATES
        ]
    return f"SELECT {', '.join(cols)} FROM sessions s WHERE id = ?2"


_STATUSES_SQL = "SELECT " + ", ".join(
    f"EXISTS (SELECT 1 FROM invocations WHERE session_id = ?1 AND status = '{s}')" for s in _INVOCATION_STATES
)
"""Which invocation statuses a session has: one index probe each."""

_EVENT_COLS = 8
_INSERT_EVENTS_CHUNK = 500
"""Events per multi-row INSERT (8 parameters each, well under SQLite's limit)."""


def _append_tx(
    conn: sqlite3.Connection, session_id: str, p: _Prepared, expected_seq: int | None, lease_owner: str | None = None
) -> int:
    """One append (see :func:`_append_batch`)."""
    return _append_batch(conn, session_id, [p], expected_seq, lease_owner)[0][0]


@dataclass(slots=True)
class _InvocationChange:
    """What a batch does to one invocation's row."""

    first_seq: int
    first_at: float
    message: str
    status: str | None = None
    """The last status an event of the batch set (None: unchanged)."""
    updated_at: float = 0.0


def _append_batch(
    conn: sqlite3.Connection,
    session_id: str,
    prepared: list[_Prepared],
    expected_seq: int | None,
    lease_owner: str | None,
    *,
    want_state: bool = False,
    acquire: tuple[str, float] | None = None,
    invocation_after: int | None = None,
    fresh: bool = False,
) -> tuple[list[int], dict[str, Any] | None, float | None]:
    """The append path: events, interrupt index, invocations, state, summary and
    audit, for a batch of events in order, inside the caller's write
    transaction. Raises before anything is kept (the caller rolls back) on a
    missing session, a seq conflict (``expected_seq``, for the first event), a
    lost lease (fencing) or an answer to an id that is not open.

    The derived rows are computed in one pass in Python and written once per
    batch -- one session row read and update, one multi-row INSERT of the
    events, one UPDATE per invocation -- so a batch costs a few statements more
    than one event, and nothing here grows with the session's history (index
    probes only; see tests/store/test_append_cost.py).

    ``acquire=(owner, now)``: the batch takes the invocation's lease (the caller
    writes the row): InvocationBusyError if another owner's has not expired.
    ``invocation_after``: ConflictError if the invocation has an event after it.
    ``fresh``: the session was created in this transaction (an import, a bulk
    load): every invocation is new, no need to look for its row.
    Returns the seqs, the session's state after the batch (when it carried a
    delta, or ``want_state``) and, with ``acquire``, the held lease's
    ``acquired_at`` (None: a new lease)."""
    invs = list(dict.fromkeys(p.invocation_id for p in prepared))
    inv0 = invs[0]
    has_delta = any(p.delta for p in prepared)
    final_status = next((p.invocation_status for p in reversed(prepared) if p.invocation_status), None)
    # One invocation whose status becomes something other than running: the
    # session's status then depends on the others', probed in the same read.
    probe = len(invs) == 1 and final_status not in (None, "running")
    head = _append_head_sql(
        lease_owner is not None, has_delta or want_state, acquire is not None, invocation_after is not None, probe
    )
    row = conn.execute(head, (inv0, session_id)).fetchone()
    if row is None:
        raise SessionNotFoundError(session_id)
    app_name, user_id, last, updated_at, status, n_open, oldest_open, n_invocations, held, state_json = row[:10]
    extra = list(row[10:])
    acquired_at = None
    if acquire is not None:
        acquired_at, expires_at = extra[:2]
        del extra[:2]
        owner, now = acquire
        if held is not None and held != owner and expires_at > now:
            raise InvocationBusyError(
                inv0,
                Lease(
                    session_id=session_id, invocation_id=inv0, owner=held, acquired_at=acquired_at,
                    renewed_at=acquired_at, expires_at=expires_at,
                ),
            )
        if held != owner:
            acquired_at = None
        held = None
    if invocation_after is not None:
        inv_last = extra.pop(0)
        if inv_last is not None and inv_last > invocation_after:
            raise ConflictError(f"invocation {inv0} changed since event {invocation_after}; read it again")
    others = extra if probe else None
    if expected_seq is not None and expected_seq != last:
        raise ConflictError(
            f"session {session_id} changed (now at event {last}, expected {expected_seq}); reload and retry"
        )
    if lease_owner is not None:
        for inv in invs:
            if inv != inv0:
                r = conn.execute(
                    "SELECT owner FROM leases WHERE session_id = ? AND invocation_id = ?", (session_id, inv)
                ).fetchone()
                held = r[0] if r else None
            if held != lease_owner:
                holder = Lease(
                    session_id=session_id, invocation_id=inv, owner=held, acquired_at=0, renewed_at=0, expires_at=0
                ).holder if held is not None else None
                raise LeaseLostError(session_id, inv, lease_owner, holder)
    # One pass over the batch, in order: what each event does to the interrupts
    # raised in this batch (in memory), to rows already stored, and to invocations.
    new_rows: dict[tuple[str, str], list[Any]] = {}
    """(invocation, id) -> interrupts row raised in this batch, as it ends up."""
    stored_answers: dict[tuple[str, str], tuple[str, int]] = {}
    """(invocation, id) -> (event id, seq): answers to ids raised before this batch."""
    cancels: list[tuple[int, str]] = []
    cancelled: set[str] = set()
    changes: dict[str, _InvocationChange] = {}
    audits: list[tuple[Any, ...]] = []
    event_rows: list[Any] = []
    seqs: list[int] = []
    state: dict[str, Any] | None = json.loads(state_json) if state_json is not None else None
    for seq, p in enumerate(prepared, start=last + 1):
        inv = p.invocation_id
        seqs.append(seq)
        event_rows += (session_id, seq, inv, p.event_id, p.timestamp, p.path, p.kind, p.json)
        if p.resolved:
            bad = []
            for iid in p.resolved:
                key = (inv, iid)
                r = new_rows.get(key)
                if r is not None:
                    if r[9] != "open":
                        bad.append(iid)
                    else:
                        r[9], r[10], r[11] = "resolved", p.event_id, seq
                elif key in stored_answers or inv in cancelled:
                    bad.append(iid)
                else:
                    stored_answers[key] = (p.event_id, seq)
            if bad:
                raise AlreadyResolvedError(bad)
        for iid, path, name, args in p.opened:
            new_rows[(inv, iid)] = [
                session_id, inv, iid, path, p.event_id, name, args, seq, p.timestamp, "open", None, None, app_name, user_id
            ]
        if p.cancel:
            for (r_inv, _), r in new_rows.items():
                if r_inv == inv and r[9] == "open":
                    r[9], r[11] = "cancelled", seq
            cancels.append((seq, inv))
            cancelled.add(inv)
        ch = changes.get(inv)
        if ch is None:
            ch = changes[inv] = _InvocationChange(seq, p.timestamp, p.new_message or "")
        if p.invocation_status is not None:
            ch.status = p.invocation_status
        ch.updated_at = p.timestamp
        if p.audit is not None:
            action, operator, reason, details = p.audit
            audits.append((p.timestamp, action, operator, reason, session_id, inv, seq, p.event_id, details))
        if p.delta:
            assert state is not None
            state.update(p.delta)
    if stored_answers:
        cur = conn.executemany(
            "UPDATE interrupts SET status = 'resolved', resolved_by = ?, resolved_seq = ?"
            " WHERE session_id = ? AND invocation_id = ? AND interrupt_id = ? AND status = 'open'",
            [(eid, seq, session_id, inv, iid) for (inv, iid), (eid, seq) in stored_answers.items()],
        )
        if cur.rowcount != len(stored_answers):  # some id was not open: say which (nothing is kept)
            bad = [
                iid
                for (inv, iid), (eid, _) in stored_answers.items()
                if conn.execute(
                    "SELECT 1 FROM interrupts WHERE session_id = ? AND invocation_id = ? AND interrupt_id = ?"
                    " AND resolved_by = ?",
                    (session_id, inv, iid, eid),
                ).fetchone()
                is None
            ]
            raise AlreadyResolvedError(bad)
    for seq, inv in cancels:
        conn.execute(
            "UPDATE interrupts SET status = 'cancelled', resolved_seq = ?"
            " WHERE session_id = ? AND invocation_id = ? AND status = 'open'",
            (seq, session_id, inv),
        )
    for i in range(0, len(event_rows), _EVENT_COLS * _INSERT_EVENTS_CHUNK):
        chunk = event_rows[i : i + _EVENT_COLS * _INSERT_EVENTS_CHUNK]
        conn.execute(
            "INSERT INTO events (session_id, seq, invocation_id, event_id, timestamp, path, kind, json) VALUES "
            + ", ".join(["(?, ?, ?, ?, ?, ?, ?, ?)"] * (len(chunk) // _EVENT_COLS)),
            chunk,
        )
    if new_rows:
        conn.executemany(
            "INSERT OR REPLACE INTO interrupts (session_id, invocation_id, interrupt_id, path, event_id, name, args,"
            " raised_seq, raised_at, status, resolved_by, resolved_seq, app_name, user_id)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            list(new_rows.values()),
        )
    # Most events leave the invocation's status alone: touch updated_at only, and
    # recompute the session's status just when an invocation appears or may change.
    statuses: list[str] = []
    created: list[tuple[Any, ...]] = []
    for inv, ch in changes.items():
        if not fresh:
            cur = conn.execute(
                "UPDATE invocations SET status = coalesce(?, status), updated_at = ?"
                " WHERE session_id = ? AND invocation_id = ?",
                (ch.status, ch.updated_at, session_id, inv),
            )
            if cur.rowcount:
                if ch.status is not None:
                    statuses.append(ch.status)
                continue
        st = ch.status or "running"
        created.append((session_id, inv, st, ch.first_seq, ch.first_at, ch.updated_at, ch.message))
        statuses.append(st)
    if created:
        conn.executemany(
            "INSERT INTO invocations (session_id, invocation_id, status, started_seq, started_at, updated_at, message)"
            " VALUES (?, ?, ?, ?, ?, ?, ?)",
            created,
        )
        n_invocations += len(created)
    new_invocation = bool(created)
    old_status = status
    if others is not None:  # probed with the head: the other invocations, plus this one
        assert final_status is not None
        present = {st for st, there in zip(_INVOCATION_STATES, others, strict=True) if there} | {final_status}
        status = session_status([st for st in _INVOCATION_STATES if st in present])  # type: ignore[misc]
    elif statuses:
        if all(s == "running" for s in statuses):
            status = "running"  # the highest-ranking status: no need to look at the others
        else:  # index probes (invocations_by_status), not a read of every invocation
            present = conn.execute(_STATUSES_SQL, (session_id,)).fetchone()
            status = session_status([s for s, there in zip(_INVOCATION_STATES, present, strict=True) if there])
    interrupts_changed = bool(new_rows or stored_answers or cancels)
    if new_rows or cancels or (stored_answers and n_open - len(stored_answers) > 0):
        n_open, oldest_open = conn.execute(
            "SELECT count(*), min(raised_at) FROM interrupts WHERE session_id = ? AND status = 'open'", (session_id,)
        ).fetchone()
    elif stored_answers:
        n_open, oldest_open = 0, None  # every open interrupt of the session was answered
    if audits:
        conn.executemany(
            "INSERT INTO audit (at, action, operator, reason, session_id, invocation_id, seq, event_id, details)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            audits,
        )
    # Only columns that changed are SET: SQLite then leaves the four listing
    # indexes alone. updated_at (in all of them) moves at most once a second
    # unless the status changed, which is precise enough to sort by activity
    # and makes a busy session's appends much cheaper.
    seq = seqs[-1]
    sets: dict[str, Any] = {"last_seq": seq, "last_event_at": prepared[-1].timestamp, "event_count": seq}
    now = max(time.time(), updated_at)
    status_changed = status != old_status
    if status_changed:
        sets["status"] = status
    if status_changed or now - updated_at >= _UPDATED_AT_RESOLUTION:
        sets["updated_at"] = now
    if interrupts_changed:
        sets["open_interrupts"], sets["oldest_open_at"] = n_open, oldest_open
    if new_invocation:
        sets["invocation_count"] = n_invocations
    if has_delta:
        sets["state"] = to_json(state).decode()
    conn.execute(
        f"UPDATE sessions SET {', '.join(f'{k} = ?' for k in sets)} WHERE id = ?",  # keys are fixed names above
        (*sets.values(), session_id),
    )
    return seqs, state, acquired_at


def _import_tx(
    conn: sqlite3.Connection, session_id: str, session: Session, events: list[_Prepared], record: AuditRecord
) -> None:
    _create_tx(
        conn,
        session_id,
        session.app_name,
        session.user_id,
        to_json(session.state).decode(),
        session.created_at,
        max(time.time(), session.created_at),
    )
    if events:
        _append_batch(conn, session_id, events, 0, None, fresh=True)
    conn.execute(
        "INSERT INTO audit (at, action, operator, reason, session_id, details) VALUES (?, ?, ?, ?, ?, ?)",
        (record.at, record.action, record.operator, record.reason, session_id, to_json(record.details).decode()),
    )


def _bulk_tx(conn: sqlite3.Connection, batch: list[tuple[Session, list[Event]]]) -> int:
    n = 0
    for session, events in batch:
        _create_tx(
            conn,
            session.id,
            session.app_name,
            session.user_id,
            to_json(session.state).decode(),
            session.created_at,
            session.created_at,
        )
        if events:
            _append_batch(conn, session.id, [_prepare(e) for e in events], 0, None, fresh=True)
            n += len(events)
    return n


def _get_session(conn: sqlite3.Connection, session_id: str) -> Session:
    row = conn.execute(f"SELECT {_SESSION_COLS} FROM sessions WHERE id = ?", (session_id,)).fetchone()
    if row is None:
        raise SessionNotFoundError(session_id)
    return _session_from_row(row)


def _list_sessions(conn: sqlite3.Connection, sql: str, params: list[Any]) -> list[SessionSummary]:
    return [_summary_from_row(r) for r in conn.execute(sql, params)]


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
                event = _parse_event(session_id, seq, text)
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
            try:
                value = json.loads(data)
            except (ValueError, TypeError):
                value = None
            if isinstance(value, dict):
                snap = (seq, value)
            else:
                damaged = True  # a cache: an unreadable snapshot is as good as none
        else:
            events.append(StoredEvent(seq=seq, session_id=session_id, event=_parse_event(session_id, seq, text)))
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
    return StoredEvent(seq=seq, session_id=session_id, event=_parse_event(session_id, seq, ev[0]))


def _corrupt_events(conn: sqlite3.Connection, session_id: str) -> list[int]:
    _require_session(conn, session_id)
    bad: list[int] = []
    for seq, text in conn.execute("SELECT seq, json FROM events WHERE session_id = ? ORDER BY seq", (session_id,)):
        try:
            _parse_event(session_id, seq, text)
        except CorruptEventError:
            bad.append(seq)
    return bad


def _list_invocations(conn: sqlite3.Connection, session_id: str) -> list[InvocationSummary]:
    _require_session(conn, session_id)
    rows = conn.execute(
        f"SELECT {_INVOCATION_COLS} FROM invocations WHERE session_id = ? ORDER BY started_seq", (session_id,)
    )
    return [_invocation_from_row(r) for r in rows]


def _invocation_count(conn: sqlite3.Connection, session_id: str) -> int:
    row = conn.execute("SELECT invocation_count FROM sessions WHERE id = ?", (session_id,)).fetchone()
    if row is None:
        raise SessionNotFoundError(session_id)
    return int(row[0])


def _lookup_interrupts(conn: sqlite3.Connection, session_id: str, ids_json: str) -> list[InterruptRecord]:
    rows = conn.execute(
        f"SELECT {_INTERRUPT_COLS} FROM interrupts WHERE session_id = ?"
        " AND interrupt_id IN (SELECT value FROM json_each(?)) ORDER BY raised_seq, invocation_id, interrupt_id",
        (session_id, ids_json),
    ).fetchall()
    if not rows:
        _require_session(conn, session_id)
    return [_interrupt_from_row(r) for r in rows]


def _open_interrupts(conn: sqlite3.Connection, sql: str, params: list[Any]) -> list[InterruptRecord]:
    return [_interrupt_from_row(r) for r in conn.execute(sql, params)]


def _get_snapshot(conn: sqlite3.Connection, session_id: str, invocation_id: str) -> tuple[int, dict[str, Any]] | None:
    row = conn.execute(
        "SELECT seq, data FROM snapshots WHERE session_id = ? AND invocation_id = ?", (session_id, invocation_id)
    ).fetchone()
    if row is None:
        _require_session(conn, session_id)
        return None
    try:
        data = json.loads(row[1])
    except (ValueError, TypeError):
        return None  # a cache: an unreadable snapshot is as good as none
    return (row[0], data) if isinstance(data, dict) else None


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
        (session_id, invocation_id, seq, data),
    )


def _acquire_lease_tx(
    conn: sqlite3.Connection,
    session_id: str,
    invocation_id: str,
    owner: str,
    ttl: float,
    steal_from: str | None,
    now: float,
) -> Lease:
    row = conn.execute(
        f"SELECT {_LEASE_COLS} FROM leases WHERE session_id = ? AND invocation_id = ?", (session_id, invocation_id)
    ).fetchone()
    acquired = now
    if row is None:
        _require_session(conn, session_id)
    else:
        held = _lease_from_row(row)
        if held.owner not in (owner, steal_from) and not held.expired(now):
            raise InvocationBusyError(invocation_id, held)
        if held.owner == owner:
            acquired = held.acquired_at
    lease = Lease(
        session_id=session_id,
        invocation_id=invocation_id,
        owner=owner,
        acquired_at=acquired,
        renewed_at=now,
        expires_at=now + ttl,
    )
    conn.execute(
        f"INSERT OR REPLACE INTO leases ({_LEASE_COLS}) VALUES (?, ?, ?, ?, ?, ?)",
        (session_id, invocation_id, owner, lease.acquired_at, lease.renewed_at, lease.expires_at),
    )
    return lease


def _renew_lease_tx(
    conn: sqlite3.Connection, session_id: str, invocation_id: str, owner: str, ttl: float, now: float
) -> Lease:
    _require_session(conn, session_id)
    row = conn.execute(
        f"SELECT {_LEASE_COLS} FROM leases WHERE session_id = ? AND invocation_id = ?", (session_id, invocation_id)
    ).fetchone()
    if row is None or row[2] != owner:
        raise LeaseLostError(session_id, invocation_id, owner, _lease_from_row(row).holder if row else None)
    conn.execute(
        "UPDATE leases SET renewed_at = ?, expires_at = ? WHERE session_id = ? AND invocation_id = ?",
        (now, now + ttl, session_id, invocation_id),
    )
    return _lease_from_row((*row[:4], now, now + ttl))


def _release_lease_tx(
    conn: sqlite3.Connection, session_id: str, invocation_id: str, owner: str, snapshot: tuple[int, str] | None
) -> bool:
    if snapshot is not None:
        _put_snapshot(conn, session_id, invocation_id, *snapshot)
    cur = conn.execute(
        "DELETE FROM leases WHERE session_id = ? AND invocation_id = ? AND owner = ?",
        (session_id, invocation_id, owner),
    )
    if cur.rowcount == 0:
        _require_session(conn, session_id)
    return cur.rowcount > 0


def _append_release_tx(
    conn: sqlite3.Connection,
    session_id: str,
    invocation_id: str,
    prepared: list[_Prepared],
    expected_seq: int | None,
    owner: str,
    snapshot: tuple[int, str] | None,
) -> list[int]:
    """A turn's last write (``append_and_release``): its events, fenced by its
    lease, then its snapshot and the lease's release, in the caller's one transaction."""
    seqs = _append_many_tx(conn, session_id, prepared, expected_seq, owner)
    if snapshot is not None:
        _upsert_snapshot(conn, session_id, invocation_id, *snapshot)
    conn.execute(
        "DELETE FROM leases WHERE session_id = ? AND invocation_id = ? AND owner = ?", (session_id, invocation_id, owner)
    )
    return seqs


def _acquire_append_tx(
    conn: sqlite3.Connection,
    session_id: str,
    invocation_id: str,
    owner: str,
    ttl: float,
    now: float,
    prepared: list[_Prepared],
    expected_seq: int | None,
    invocation_after: int | None,
) -> tuple[Lease, list[int], dict[str, Any]]:
    """A turn's first write (``acquire_and_append``): take the lease (as
    ``acquire_lease``, without stealing), check that the invocation has no event
    after ``invocation_after``, append; in the caller's one transaction."""
    seqs, state, acquired = _append_batch(
        conn, session_id, prepared, expected_seq, None, want_state=True, acquire=(owner, now),
        invocation_after=invocation_after,
    )
    lease = Lease(
        session_id=session_id, invocation_id=invocation_id, owner=owner, acquired_at=acquired or now, renewed_at=now,
        expires_at=now + ttl,
    )
    conn.execute(
        f"INSERT OR REPLACE INTO leases ({_LEASE_COLS}) VALUES (?, ?, ?, ?, ?, ?)",
        (session_id, invocation_id, owner, lease.acquired_at, lease.renewed_at, lease.expires_at),
    )
    return lease, seqs, state or {}


def _get_lease(conn: sqlite3.Connection, session_id: str, invocation_id: str) -> Lease | None:
    row = conn.execute(
        f"SELECT {_LEASE_COLS} FROM leases WHERE session_id = ? AND invocation_id = ?", (session_id, invocation_id)
    ).fetchone()
    if row is None:
        _require_session(conn, session_id)
    return _lease_from_row(row) if row else None


def _list_leases(conn: sqlite3.Connection, session_id: str) -> list[Lease]:
    _require_session(conn, session_id)
    rows = conn.execute(
        f"SELECT {_LEASE_COLS} FROM leases WHERE session_id = ? ORDER BY invocation_id", (session_id,)
    )
    return [_lease_from_row(r) for r in rows]


def _audit_rows(conn: sqlite3.Connection, sql: str, params: list[Any]) -> list[tuple[int, AuditRecord]]:
    return [(r[0], _audit_from_row(r)) for r in conn.execute(sql, params)]


def _lower(value: Any) -> Any:
    return value.lower() if isinstance(value, str) else value


def _setup(conn: sqlite3.Connection, path: Path, read_only: bool, synchronous: str, busy_ms: int) -> None:
    conn.execute(f"PRAGMA busy_timeout = {busy_ms}")
    conn.execute("PRAGMA foreign_keys = ON")
    # Python's str.lower, so text search matches MemoryStore's exactly (SQLite's lower() is ASCII-only).
    conn.create_function("hitl_lower", 1, _lower, deterministic=True)
    if read_only:
        conn.execute("PRAGMA query_only = ON")
        version = _user_version(conn)
        if version != SCHEMA_VERSION:  # changed between the probe and now
            raise StoreError(f"the database {path} has schema version {version}, expected {SCHEMA_VERSION}")
        return
    mode = conn.execute("PRAGMA journal_mode").fetchone()[0]
    if str(mode).lower() != "wal":
        mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
        if str(mode).lower() != "wal":
            raise StoreError(f"cannot switch {path} to WAL mode (got {mode}); is it on a network file system?")
    conn.execute(f"PRAGMA synchronous = {synchronous}")
    # Deleted rows (released leases carry host names and pids) are zeroed on the
    # pages being written anyway: no extra I/O, and no stale bytes in the file.
    conn.execute("PRAGMA secure_delete = FAST")
    _migrate(conn, path)


# --------------------------------------------------------------------------- the store


class _Opener:
    """What :meth:`SQLiteStore.open` returns: awaitable, and an async context manager."""

    def __init__(self, **kwargs: Any) -> None:
        self._kwargs = kwargs
        self._store: SQLiteStore | None = None

    def __await__(self) -> Generator[Any, None, SQLiteStore]:
        return SQLiteStore._open(**self._kwargs).__await__()

    async def __aenter__(self) -> SQLiteStore:
        self._store = await SQLiteStore._open(**self._kwargs)
        return self._store

    async def __aexit__(self, *exc: object) -> None:
        if self._store is not None:
            await self._store.close()


class SQLiteStore:
    """:class:`~engine.store.base.SessionStore` on one SQLite file.

    Open with ``store = await SQLiteStore.open(path)`` or
    ``async with SQLiteStore.open(path) as store:``. One store holds one
    connection; several stores (in one or many processes) may share a file.
    """

    read_only: bool
    """True when opened read-only: every write method raises ReadOnlyError."""
    immutable: bool = False
    """True when read-only and opened as an immutable file, because SQLite could
    not create its -shm index beside it (a directory this user cannot write, a
    full disk). Changes another process makes meanwhile are not seen."""

    capabilities: frozenset[str] = frozenset(
        {
            "skip_corrupt",
            "corrupt_events",
            "bulk_load",
            "checkpoint",
            "path",
            "append_and_release",
            "acquire_and_append",
            "snapshot_and_events",
        }
    )
    """Optional features (see :data:`engine.store.base.Capability`)."""

    def __init__(self, driver: _Driver, path: Path, *, read_only: bool, busy_timeout: float) -> None:
        self._driver: _Driver | None = driver
        self.path = path
        """The database file."""
        self.read_only = read_only
        self.busy_timeout = busy_timeout
        """Seconds a writer waits for another process's write lock before failing."""

    # ------------------------------------------------------------------ opening
    @classmethod
    def open(
        cls,
        path: str | os.PathLike[str] | None = None,
        *,
        read_only: bool = False,
        busy_timeout: float = 5.0,
        synchronous: str = "NORMAL",
        inline: bool = False,
    ) -> _Opener:
        """Open (and for a writer, create or upgrade) the store at ``path``
        (default: :func:`default_db_path`). Await it or use it with ``async with``.

        By default statements run on aiosqlite's connection thread, so the event
        loop never blocks (what the console needs). ``inline=True`` runs them on
        the loop's own thread, about twice as fast per append, for processes that
        only run workflows.

        Raises :class:`StoreError` if the file is missing (read-only), not a
        hitl-console database, from a newer version, not writable (writer) or
        locked beyond ``busy_timeout`` seconds.
        """
        return _Opener(
            path=path, read_only=read_only, busy_timeout=busy_timeout, synchronous=synchronous, inline=inline
        )

    @classmethod
    async def _open(
        cls,
        *,
        path: str | os.PathLike[str] | None,
        read_only: bool,
        busy_timeout: float,
        synchronous: str,
        inline: bool = False,
    ) -> SQLiteStore:
        sync = synchronous.upper()
        if sync not in _SYNCHRONOUS:
            raise ValueError(f"synchronous must be one of {', '.join(_SYNCHRONOUS)}, not {synchronous!r}")
        db_path = Path(path if path is not None else default_db_path()).expanduser().absolute()
        if db_path.is_dir():
            raise StoreError(f"{db_path} is a directory; give the path of a database file")
        exists = db_path.exists()
        if exists and not db_path.is_file():
            raise StoreError(
                f"{db_path} is not a regular file (a device, FIFO or socket); give the path of a database file"
            )
        if read_only and not exists:
            raise StoreError(
                f"no session database at {db_path}; check the path (--db / $HITL_DB), "
                "or open it without --read-only to create one"
            )
        if not read_only:
            try:
                db_path.parent.mkdir(parents=True, exist_ok=True)
            except OSError as e:
                raise StoreError(f"cannot create the directory {db_path.parent} for the database: {e.strerror}") from e
        uri = db_path.as_uri()
        if exists:
            try:
                info = await asyncio.to_thread(_probe, uri + "?mode=ro", busy_timeout)
            except sqlite3.Error as e:
                raise _translate(e, db_path, busy_timeout) from e
            _check_file(info, db_path, read_only)
            if not read_only and not os.access(db_path, os.W_OK):
                raise StoreError(
                    f"the database {db_path} is read-only for this user; fix its permissions, "
                    "or open it with --read-only to browse"
                )
        if not read_only and not os.access(db_path.parent, os.W_OK):
            raise StoreError(
                f"the directory {db_path.parent} is not writable (SQLite keeps its -wal file next to the database); "
                "fix its permissions, or open the database with --read-only"
            )
        driver_cls: type[_Driver] = _AiosqliteDriver if _AiosqliteDriver.available() else _ThreadDriver
        if inline:
            driver_cls = _InlineDriver
        target = uri + ("?mode=ro" if read_only else "?mode=rwc")
        try:
            return await cls._connect(driver_cls, target, db_path, read_only, sync, busy_timeout)
        except sqlite3.Error as e:
            if not (read_only and _is_cantopen(e) and _immutable_ok(db_path)):
                raise _translate(e, db_path, busy_timeout) from e
        # Read-only and SQLite cannot create the -shm index beside the file (a
        # directory we may not write, a full disk): read it as an immutable file.
        # Caveat (README): no locks, so changes a writer makes while we read are
        # not seen, and the store must not be in mid-write (no -wal beside it).
        try:
            store = await cls._connect(driver_cls, uri + "?mode=ro&immutable=1", db_path, True, sync, busy_timeout)
        except sqlite3.Error as e:
            raise _translate(e, db_path, busy_timeout) from e
        store.immutable = True
        return store

    @classmethod
    async def _connect(
        cls, driver_cls: type[_Driver], target: str, db_path: Path, read_only: bool, sync: str, busy_timeout: float
    ) -> SQLiteStore:
        driver = await driver_cls.connect(
            target, uri=True, timeout=busy_timeout, isolation_level=None, cached_statements=256
        )
        try:  # sqlite3 errors stay untranslated here: the caller decides on a fallback
            await driver.run(_setup, db_path, read_only, sync, int(busy_timeout * 1000))
        except BaseException:
            await driver.close()
            raise
        return cls(driver, db_path, read_only=read_only, busy_timeout=busy_timeout)

    async def __aenter__(self) -> SQLiteStore:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        """Close the connection (idempotent); later calls raise StoreError."""
        driver, self._driver = self._driver, None
        if driver is not None:
            await driver.close()

    def __repr__(self) -> str:
        mode = "ro" if self.read_only else "rw"
        return f"<SQLiteStore {str(self.path)!r} {mode}{' closed' if self._driver is None else ''}>"

    # ---------------------------------------------------------------- helpers
    async def _call(self, fn: Callable[..., T], *args: Any) -> T:
        """Run ``fn(conn, *args)`` on the connection's thread: one round-trip."""
        if self._driver is None:
            raise StoreError(f"the store {self.path} is closed")
        try:
            return await self._driver.run(fn, *args)
        except sqlite3.Error as e:
            raise _translate(e, self.path, self.busy_timeout) from e
        except (json.JSONDecodeError, ValidationError) as e:
            # A derived or session row that no longer parses (events have CorruptEventError).
            detail = " ".join(str(e).split())[:200]
            raise StoreError(
                f"a row of {self.path} is corrupted ({type(e).__name__}: {detail}); "
                "restore the file from a backup, or export the readable sessions"
            ) from e

    async def _write(self, fn: Callable[..., T], *args: Any) -> T:
        """Run ``fn(conn, *args)`` in one BEGIN IMMEDIATE transaction."""
        self._check_writable()
        return await self._call(_in_write_tx, fn, *args)

    def _check_writable(self) -> None:
        if self.read_only:
            raise ReadOnlyError(
                f"the store {self.path} is open read-only; nothing was written (open it without --read-only)"
            )

    # ---------------------------------------------------------------- sessions
    async def create_session(
        self, app_name: str, user_id: str, session_id: str | None = None, state: dict[str, Any] | None = None
    ) -> Session:
        self._check_writable()
        sid = session_id or new_id()
        now = time.time()
        await self._write(_create_tx, sid, app_name, user_id, to_json(dict(state or {})).decode(), now, now)
        return await self.get_session(sid)

    async def get_session(self, session_id: str) -> Session:
        return await self._call(_get_session, session_id)

    async def list_sessions(
        self,
        *,
        app_name: str | None = None,
        user_id: str | None = None,
        status: str | None = None,
        text: str | None = None,
        updated_before: float | None = None,
        updated_after: float | None = None,
        limit: int = 50,
        cursor: str | None = None,
        order: SessionOrder = "updated",
    ) -> Page[SessionSummary]:
        if limit < 1:
            raise ValueError(f"limit must be at least 1, not {limit}")
        where: list[str] = []
        params: list[Any] = []
        for column, value in (("app_name", app_name), ("user_id", user_id), ("status", status)):
            if value is not None:
                where.append(f"{column} = ?")
                params.append(value)
        if text is not None:
            where.append("instr(hitl_lower(id), ?) > 0")
            params.append(text.lower())
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
            ts, sid = _decode_cursor(cursor, (float, str))
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
        rows = await self._call(_list_sessions, sql, params)
        page = rows[:limit]
        nxt = None
        if len(rows) > limit:
            last = page[-1]
            nxt = _encode_cursor(last.oldest_open_at if oldest else last.updated_at, last.id)
        return Page(items=page, next_cursor=nxt)

    # ---------------------------------------------------------------- events
    async def append_event(
        self, session_id: str, event: Event, *, expected_seq: int | None = None, lease_owner: str | None = None
    ) -> StoredEvent:
        self._check_writable()
        p = _prepare(event)
        seq = await self._write(_append_tx, session_id, p, expected_seq, lease_owner)
        return StoredEvent(seq=seq, session_id=session_id, event=Event.from_json(p.json))

    async def append_events(
        self, session_id: str, events: list[Event], *, expected_seq: int | None = None, lease_owner: str | None = None
    ) -> list[StoredEvent]:
        self._check_writable()
        prepared = [_prepare(e) for e in events]
        seqs = await self._write(_append_many_tx, session_id, prepared, expected_seq, lease_owner)
        return [StoredEvent(seq=q, session_id=session_id, event=Event.from_json(p.json)) for q, p in zip(seqs, prepared, strict=True)]

    async def events(
        self, session_id: str, *, after_seq: int = 0, limit: int | None = None, skip_corrupt: bool = False
    ) -> list[StoredEvent]:
        """Events with ``seq > after_seq`` in order. A corrupt row raises
        CorruptEventError; with ``skip_corrupt=True`` it is left out instead
        (``limit`` then counts readable events) -- see :meth:`corrupt_events`."""
        return await self._call(_read_events, session_id, None, after_seq, limit, skip_corrupt)

    async def event_at(self, session_id: str, seq: int) -> StoredEvent:
        return await self._call(_event_at, session_id, seq)

    async def invocation_events(
        self, session_id: str, invocation_id: str, *, after_seq: int = 0, skip_corrupt: bool = False
    ) -> list[StoredEvent]:
        return await self._call(_read_events, session_id, invocation_id, after_seq, None, skip_corrupt)

    async def corrupt_events(self, session_id: str) -> list[int]:
        """Seqs of this session's events that cannot be read (empty when all are fine).
        Reads the whole log: call it when a read raised CorruptEventError, or once per session view."""
        return await self._call(_corrupt_events, session_id)

    # ------------------------------------------------------------ derived rows
    async def list_invocations(self, session_id: str) -> list[InvocationSummary]:
        return await self._call(_list_invocations, session_id)

    async def invocation_count(self, session_id: str) -> int:
        return await self._call(_invocation_count, session_id)

    async def lookup_interrupts(self, session_id: str, interrupt_ids: list[str]) -> list[InterruptRecord]:
        return await self._call(_lookup_interrupts, session_id, json.dumps(list(interrupt_ids)))

    async def open_interrupts(
        self,
        *,
        session_id: str | None = None,
        app_name: str | None = None,
        limit: int = 50,
        cursor: str | None = None,
    ) -> Page[InterruptRecord]:
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
        if cursor:
            where.append("(raised_at, session_id, raised_seq, interrupt_id) > (?, ?, ?, ?)")
            params += _decode_cursor(cursor, (float, str, int, str))
        sql = (
            f"SELECT {_INTERRUPT_COLS} FROM interrupts WHERE {' AND '.join(where)}"
            " ORDER BY raised_at, session_id, raised_seq, interrupt_id LIMIT ?"
        )
        params.append(limit + 1)
        rows = await self._call(_open_interrupts, sql, params)
        page = rows[:limit]
        nxt = None
        if len(rows) > limit:
            last = page[-1]
            nxt = _encode_cursor(last.raised_at, last.session_id, last.raised_seq, last.interrupt_id)
        return Page(items=page, next_cursor=nxt)

    async def get_snapshot(self, session_id: str, invocation_id: str) -> tuple[int, dict[str, Any]] | None:
        return await self._call(_get_snapshot, session_id, invocation_id)

    async def snapshot_and_events(
        self, session_id: str, invocation_id: str
    ) -> tuple[tuple[int, dict[str, Any]] | None, list[StoredEvent]]:
        """``get_snapshot`` and the invocation's events after it, in one read
        (see :func:`engine.store.base.snapshot_and_events`)."""
        return await self._call(_snapshot_and_events, session_id, invocation_id)

    async def put_snapshot(self, session_id: str, invocation_id: str, seq: int, data: dict[str, Any]) -> None:
        self._check_writable()
        await self._write(_put_snapshot, session_id, invocation_id, seq, to_json(data).decode())

    # ---------------------------------------------------------- export/import
    def export_session(self, session_id: str) -> AsyncIterator[str]:
        """The session as JSON Lines (see :mod:`engine.store.jsonl`), one line per item."""
        return jsonl.export_lines(self, session_id)

    async def import_session(
        self,
        lines: Iterable[str | bytes],
        *,
        session_id: str | None = None,
        operator: str | None = None,
        reason: str | None = None,
        source: str | None = None,
    ) -> Session:
        """Create a session from an export. The whole file is validated first and
        written in one transaction through the append path (derived rows are
        rebuilt) together with its audit record (operator, reason, source); a
        bad file raises ImportFormatError naming the line and writes nothing."""
        self._check_writable()
        reader = jsonl.ExportReader(lines)  # each event reduced to its row as it is read: one parse, no Event list
        sid = session_id or reader.session.id
        prepared = [_prepare(e) for e in reader.events()]
        record = import_record(sid, len(prepared), operator, reason, source, reader.session.id)
        await self._write(_import_tx, sid, reader.session, prepared, record)
        return await self.get_session(sid)

    # ------------------------------------------------------------------ leases
    async def acquire_lease(
        self, session_id: str, invocation_id: str, owner: str, ttl: float, *, steal_from: str | None = None
    ) -> Lease:
        return await self._write(_acquire_lease_tx, session_id, invocation_id, owner, ttl, steal_from, time.time())

    async def renew_lease(self, session_id: str, invocation_id: str, owner: str, ttl: float) -> Lease:
        return await self._write(_renew_lease_tx, session_id, invocation_id, owner, ttl, time.time())

    async def release_lease(
        self,
        session_id: str,
        invocation_id: str,
        owner: str,
        *,
        snapshot: tuple[int, dict[str, Any]] | None = None,
    ) -> bool:
        snap = None if snapshot is None else (snapshot[0], to_json(snapshot[1]).decode())
        return await self._write(_release_lease_tx, session_id, invocation_id, owner, snap)

    async def acquire_and_append(
        self,
        session_id: str,
        invocation_id: str,
        events: list[Event],
        *,
        owner: str,
        ttl: float,
        expected_seq: int | None = None,
        invocation_after: int | None = None,
    ) -> tuple[Lease, list[StoredEvent], dict[str, Any]]:
        """A turn's first write in one transaction (see
        :data:`engine.store.base.Capability`): the lease, then the events;
        returns the lease, the stored events and the session's state after them."""
        self._check_writable()
        prepared = [_prepare(e) for e in events]
        lease, seqs, state = await self._write(
            _acquire_append_tx, session_id, invocation_id, owner, ttl, time.time(), prepared, expected_seq,
            invocation_after,
        )
        stored = [StoredEvent(seq=q, session_id=session_id, event=Event.from_json(p.json)) for q, p in zip(seqs, prepared, strict=True)]
        return lease, stored, state

    async def append_and_release(
        self,
        session_id: str,
        invocation_id: str,
        events: list[Event],
        *,
        owner: str,
        expected_seq: int | None = None,
        snapshot: tuple[int, dict[str, Any]] | None = None,
    ) -> list[StoredEvent]:
        """A turn's last events, its snapshot and its lease's release in one
        transaction (see :func:`engine.store.base.append_and_release`)."""
        self._check_writable()
        prepared = [_prepare(e) for e in events]
        snap = None if snapshot is None else (snapshot[0], to_json(snapshot[1]).decode())
        seqs = await self._write(_append_release_tx, session_id, invocation_id, prepared, expected_seq, owner, snap)
        return [StoredEvent(seq=q, session_id=session_id, event=Event.from_json(p.json)) for q, p in zip(seqs, prepared, strict=True)]

    async def get_lease(self, session_id: str, invocation_id: str) -> Lease | None:
        return await self._call(_get_lease, session_id, invocation_id)

    async def list_leases(self, session_id: str) -> list[Lease]:
        return await self._call(_list_leases, session_id)

    # ------------------------------------------------------------------- audit
    async def audit_log(
        self,
        *,
        operator: str | None = None,
        session_id: str | None = None,
        action: str | None = None,
        since: float | None = None,
        until: float | None = None,
        limit: int = 50,
        cursor: str | None = None,
    ) -> Page[AuditRecord]:
        if limit < 1:
            raise ValueError(f"limit must be at least 1, not {limit}")
        where: list[str] = []
        params: list[Any] = []
        for column, value in (("operator", operator), ("session_id", session_id), ("action", action)):
            if value is not None:
                where.append(f"{column} = ?")
                params.append(value)
        if since is not None:
            where.append("at >= ?")
            params.append(since)
        if until is not None:
            where.append("at < ?")
            params.append(until)
        if cursor:
            at, no = _decode_cursor(cursor, (float, int))
            where.append("at <= ? AND (at < ? OR id < ?)")
            params += [at, at, no]
        sql = f"SELECT {_AUDIT_COLS} FROM audit"
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += " ORDER BY at DESC, id DESC LIMIT ?"
        params.append(limit + 1)
        rows = await self._call(_audit_rows, sql, params)
        page = rows[:limit]
        nxt = _encode_cursor(page[-1][1].at, page[-1][0]) if len(rows) > limit else None
        return Page(items=[r for _, r in page], next_cursor=nxt)

    # ------------------------------------------------------------- utilities
    async def bulk_load(self, sessions: Iterable[tuple[Session, Iterable[Event]]], *, batch_size: int = 500) -> int:
        """Create many sessions with their events through the normal append path,
        ``batch_size`` sessions per transaction, each session's events as one
        batch (linear: one pass computes the derived rows, written with
        multi-row INSERTs): for benchmarks, demo stores and fixtures. Uses each Session's id, app_name, user_id, state and created_at
        (the rest is derived). Returns the number of events written."""
        self._check_writable()
        total = 0
        batch: list[tuple[Session, list[Event]]] = []
        for session, events in sessions:
            batch.append((session, list(events)))
            if len(batch) >= batch_size:
                total += await self._write(_bulk_tx, batch)
                batch = []
        if batch:
            total += await self._write(_bulk_tx, batch)
        return total

    async def checkpoint(self) -> None:
        """Copy the WAL into the database file and truncate it (e.g. before measuring or copying the file)."""
        self._check_writable()  # it rewrites the database file
        await self._call(lambda conn: conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall())

    async def integrity_check(self) -> list[str]:
        """SQLite's quick_check: an empty list when the file is sound, else its complaints."""
        rows = await self._call(lambda conn: [r[0] for r in conn.execute("PRAGMA quick_check")])
        return [] if rows == ["ok"] else rows
