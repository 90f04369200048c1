"""Opening a SQLite store file: probing it, the drivers that run units of work, error translation
and the per-connection PRAGMAs."""

from __future__ import annotations

import asyncio
import os
import sqlite3
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from ...errors import (
    HitlError,
    ReadOnlyError,
    SchemaUpgradeNeeded,
    StoreError,
    StoreFullError,
)
from .listing import (  # noqa: F401 (re-exported: the listing probes a file the same way)
    _FileInfo,
    _immutable_ok,
    _lower,
    _probe,
    check_side_files,
    side_files,
    sqlite3_uri_path,
)
from .schema import APPLICATION_ID, SCHEMA_VERSION, _migrate, _newer_schema_error, _user_version

if TYPE_CHECKING:  # imported by the drivers that use them: the CLI's inline driver needs neither
    from concurrent.futures import ThreadPoolExecutor

    import aiosqlite

T = TypeVar("T")

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


def _is_cantopen(exc: sqlite3.Error) -> bool:
    code = (getattr(exc, "sqlite_errorcode", None) or 0) & 0xFF
    return code in (sqlite3.SQLITE_CANTOPEN, sqlite3.SQLITE_READONLY, sqlite3.SQLITE_IOERR, sqlite3.SQLITE_FULL)


def _check_file(info: _FileInfo, path: Path, read_only: bool) -> None:
    foreign = info.application_id not in (0, APPLICATION_ID) or (
        info.tables and ("sessions" not in info.tables or "events" not in info.tables)
    )
    if foreign:
        shown = ", ".join(info.tables[:5]) or "none"
        stray = _foreign_side_files(path, shown)
        if stray:
            raise StoreError(stray)
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
        import aiosqlite

        return callable(getattr(aiosqlite.Connection, "_execute", None)) and isinstance(
            getattr(aiosqlite.Connection, "_conn", None), property
        )

    @classmethod
    async def connect(cls, target: str, **kwargs: Any) -> _AiosqliteDriver:
        import aiosqlite

        pending = aiosqlite.connect(target, **kwargs)
        # aiosqlite's connection thread is not a daemon: a script that forgets
        # ``close()`` (or ``async with``) would hang at exit forever. Every unit of
        # work is awaited until committed, so nothing is lost when exit ends it.
        thread = getattr(pending, "_thread", None)
        if thread is not None and not thread.is_alive():
            thread.daemon = True
        return cls(await pending)

    async def run(self, fn: Callable[..., T], *args: Any) -> T:
        result: T = await self._db._execute(fn, self._raw, *args)  # aiosqlite's private API is untyped
        return result

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
        from concurrent.futures import ThreadPoolExecutor

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
    import shutil  # with zlib, bz2 and lzma: only this probe after an I/O error uses it
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


def damage_report(path: Path, msg: str) -> str:
    """What an operator reads when SQLite says ``msg`` (malformed, not a
    database) about ``path``: which file is at fault -- the store itself, or
    side files that do not belong to it (the store alone checks out) -- and
    what to do about it."""
    try:
        with open(path, "rb") as fh:
            header = fh.read(16)
    except OSError:
        header = b""
    if header != b"SQLite format 3\0":
        return (
            f"{path} is not a usable SQLite database ({msg}: it does not even begin with SQLite's header); "
            "point --db / $HITL_DB at a hitl-console store, or restore this file from a backup"
        )
    wal = Path(f"{path}-wal")
    sides = side_files(path) if wal.exists() and wal.stat().st_size > 0 else []  # an empty -wal holds nothing
    names = " and ".join(p.name for p in sides)
    alone = _quick_check(path)
    if sides and alone == "ok":
        return (
            f"{path} cannot be read with {names} beside it ({msg}), though the file alone is a sound store: those "
            "side files belong to another store (a file restored or copied next to old -wal/-shm files); move "
            f"{names} away and open it again (keep them if a writer of this very file crashed: they hold its last commits)"
        )
    where = f"SQLite's check says: {alone}" if alone not in ("ok", "") else msg
    return (
        f"{path} is damaged ({where}): part of the file was overwritten or lost. Restore it from a backup; "
        "sessions in the undamaged part can be saved first, one by one, with hitl export SESSION "
        "(hitl sessions lists them)"
        + (f"; if {names} beside it come from another store, move them away first and try again" if sides else "")
    )


def _foreign_side_files(path: Path, shown: str) -> str | None:
    """Why a store reads as another application's database when the -wal beside
    it is that database's (SQLite takes its frames as the file's last commits):
    None unless the file alone (immutable: its -wal ignored) is a store."""
    wal = Path(f"{path}-wal")
    try:
        if not wal.exists() or wal.stat().st_size == 0:
            return None
        conn = sqlite3.connect(f"{path.as_uri()}?mode=ro&immutable=1", uri=True, timeout=1.0)
        try:
            tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        finally:
            conn.close()
    except (OSError, sqlite3.Error):
        return None
    if not {"sessions", "events"} <= tables:
        return None
    names = " and ".join(p.name for p in side_files(path))
    return (
        f"{path} cannot be read with {names} beside it (with them it reads as another application's database, "
        f"tables: {shown}), though the file alone is a sound store: those side files belong to another database; "
        f"move {names} away and open it again"
    )


def _quick_check(path: Path) -> str:
    """``PRAGMA quick_check`` of the file alone (immutable: its -wal ignored,
    nothing written): "ok", the first problem found, or "" when it cannot run."""
    try:
        conn = sqlite3.connect(f"{path.as_uri()}?mode=ro&immutable=1", uri=True, timeout=1.0)
    except sqlite3.Error:
        return ""
    try:
        row = conn.execute("PRAGMA quick_check(1)").fetchone()
        return str(row[0]) if row else ""
    except sqlite3.Error as exc:
        return str(exc)
    finally:
        conn.close()


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
        return StoreError(damage_report(path, msg))
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




def _setup(conn: sqlite3.Connection, path: Path, read_only: bool, synchronous: str, busy_ms: int) -> None:
    conn.execute(f"PRAGMA busy_timeout = {busy_ms}")
    conn.execute("PRAGMA foreign_keys = ON")
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
