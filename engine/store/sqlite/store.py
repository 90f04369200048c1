"""The :class:`SQLiteStore` class: the store contract over the units of work of this package."""

from __future__ import annotations

import asyncio
import json
import os
import sqlite3
import time
from collections.abc import AsyncIterator, Callable, Generator, Iterable, Sequence
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import ValidationError
from pydantic_core import to_json

from ... import telemetry
from ...errors import (
    ReadOnlyError,
    StoreError,
)
from ...models import Event, Session, StoredEvent, new_id
from ..base import (
    AuditRecord,
    Capability,
    InterruptRecord,
    InvocationSummary,
    Lease,
    Page,
    SessionOrder,
    SessionSummary,
    StoreOverview,
    import_record,
)
from ..metric_rows import StoreMetrics
from ..sql.columns import AUDIT_COLS
from ..sql.cursors import decode_cursor, encode_cursor
from ..sql.prepared import prepare
from .append import _append_many_tx, _append_tx, _bulk_tx, _create_tx, _import_tx
from .connection import (
    _AiosqliteDriver,
    _check_file,
    _Driver,
    _immutable_ok,
    _InlineDriver,
    _is_cantopen,
    _probe,
    _setup,
    _ThreadDriver,
    _translate,
)
from .leases import (
    _acquire_append_tx,
    _acquire_lease_tx,
    _append_release_tx,
    _audit_rows,
    _get_lease,
    _leases_of,
    _list_leases,
    _release_lease_tx,
    _renew_lease_tx,
)
from .listing import interrupt_cursor, interrupt_page_query, page_cursor, session_page_query
from .reads import (
    _corrupt_events,
    _event_at,
    _get_session,
    _get_snapshot,
    _invocation_count,
    _last_checkpoint,
    _list_invocations,
    _list_sessions,
    _lookup_interrupts,
    _open_interrupts,
    _put_snapshot,
    _read_event_rows,
    _read_events,
    _snapshot_and_events,
)
from .rows import _in_write_tx
from .schema import _SYNCHRONOUS, default_db_path
from .workers import _WorkerSteps, _WorkerTables

if TYPE_CHECKING:
    from ..deadlines import Timers
    from ..notify import Ledger

T = TypeVar("T")

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


class SQLiteStore(_WorkerTables, _WorkerSteps):
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

    capabilities: frozenset[Capability] = frozenset(
        {
            "worker_queue",
            "skip_corrupt",
            "corrupt_events",
            "bulk_load",
            "checkpoint",
            "path",
            "append_and_release",
            "acquire_and_append",
            "snapshot_and_events",
            "create_in_first_write",
            "leases_of",
            "projection_checkpoints",
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
        only run workflows (the file's probe too: such a process starts no thread,
        and imports neither aiosqlite nor a thread pool).

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
                # inline: this process runs its SQL on the loop's thread anyway (the CLI),
                # and a thread for one probe would be the only one it starts
                probe = partial(_probe, uri + "?mode=ro", busy_timeout)
                info = probe() if inline else await asyncio.to_thread(probe)
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
        # inline first: the CLI's driver does not import aiosqlite to ask whether it could use it
        driver_cls: type[_Driver] = (
            _InlineDriver if inline else _AiosqliteDriver if _AiosqliteDriver.available() else _ThreadDriver
        )
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

    def notification_ledger(self) -> Ledger:
        """The notification ledger of this store (:mod:`engine.store.notify`)."""
        from .notify import SQLiteLedger

        return SQLiteLedger(self)

    def deadline_timers(self) -> Timers:
        """The deadline timers of this store (:mod:`engine.store.deadlines`)."""
        from .deadlines import SQLiteTimers

        return SQLiteTimers(self)

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
        tr = telemetry.store_tracer()
        try:
            if tr is not None:
                with telemetry.store_span(tr, telemetry.call_name(args[0] if fn is _in_write_tx else fn), "sqlite") as counts:
                    return await self._driver.run(_counting, counts, fn, *args)
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
        owner: str | None = None,
    ) -> Page[SessionSummary]:
        sql, params = session_page_query(
            app_name=app_name,
            user_id=user_id,
            status=status,
            text=text,
            updated_before=updated_before,
            updated_after=updated_after,
            limit=limit,
            cursor=cursor,
            order=order,
            owner=owner,
        )
        rows = await self._call(_list_sessions, sql, params)
        page = rows[:limit]
        nxt = None
        if len(rows) > limit:
            last = page[-1]
            nxt = page_cursor(last.oldest_open_at, last.updated_at, last.id, order)
        return Page(items=page, next_cursor=nxt)

    # ---------------------------------------------------------------- events
    async def append_event(
        self, session_id: str, event: Event, *, expected_seq: int | None = None, lease_owner: str | None = None
    ) -> StoredEvent:
        self._check_writable()
        p = prepare(event)
        seq = await self._write(_append_tx, session_id, p, expected_seq, lease_owner)
        return StoredEvent(seq=seq, session_id=session_id, event=Event.from_json(p.json))

    async def append_events(
        self, session_id: str, events: list[Event], *, expected_seq: int | None = None, lease_owner: str | None = None
    ) -> list[StoredEvent]:
        self._check_writable()
        prepared = [prepare(e) for e in events]
        seqs = await self._write(_append_many_tx, session_id, prepared, expected_seq, lease_owner)
        return [StoredEvent(seq=q, session_id=session_id, event=Event.from_json(p.json)) for q, p in zip(seqs, prepared, strict=True)]

    async def events(
        self, session_id: str, *, after_seq: int = 0, limit: int | None = None, skip_corrupt: bool = False
    ) -> list[StoredEvent]:
        """Events with ``seq > after_seq`` in order. A corrupt row raises
        CorruptEventError; with ``skip_corrupt=True`` it is left out instead
        (``limit`` then counts readable events) -- see :meth:`corrupt_events`."""
        return await self._call(_read_events, session_id, None, after_seq, limit, skip_corrupt)

    async def event_rows(self, session_id: str, *, after_seq: int = 0, limit: int = 1000) -> list[tuple[int, str]]:
        """``(seq, JSON)`` of the events after ``after_seq`` as stored, unparsed:
        what :func:`engine.store.jsonl.export_lines` copies (parsing and
        re-serialising every event was most of an export's time)."""
        return await self._call(_read_event_rows, session_id, after_seq, limit)

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
        return await self._call(_lookup_interrupts, session_id, list(interrupt_ids))

    async def open_interrupts(
        self,
        *,
        session_id: str | None = None,
        app_name: str | None = None,
        limit: int = 50,
        cursor: str | None = None,
        node: str | None = None,
        text: str | None = None,
        raised_before: float | None = None,
    ) -> Page[InterruptRecord]:
        sql, params = interrupt_page_query(
            app_name=app_name, session_id=session_id, node=node, text=text, raised_before=raised_before,
            limit=limit, cursor=cursor,
        )
        rows = await self._call(_open_interrupts, sql, params)
        page = rows[:limit]
        nxt = None
        if len(rows) > limit:
            last = page[-1]
            nxt = interrupt_cursor(last.raised_at, last.session_id, last.raised_seq, last.interrupt_id)
        return Page(items=page, next_cursor=nxt)

    async def get_snapshot(self, session_id: str, invocation_id: str) -> tuple[int, dict[str, Any]] | None:
        return await self._call(_get_snapshot, session_id, invocation_id)

    async def snapshot_and_events(
        self, session_id: str, invocation_id: str
    ) -> tuple[tuple[int, dict[str, Any]] | None, list[StoredEvent]]:
        """``get_snapshot`` and the invocation's events after it, in one read
        (see :func:`engine.store.base.snapshot_and_events`)."""
        return await self._call(_snapshot_and_events, session_id, invocation_id)

    # ------------------------------------------ seek checkpoints (engine/checkpoints.py)
    async def last_projection_checkpoint(self, session_id: str) -> tuple[int, int]:
        return await self._call(_last_checkpoint, session_id)

    async def get_projection_checkpoint(self, session_id: str, at_most: int) -> tuple[int, dict[str, Any]] | None:
        from .checkpoints import _get_checkpoint

        return await self._call(_get_checkpoint, session_id, at_most)

    async def put_projection_checkpoints(self, session_id: str, rows: Sequence[tuple[int, dict[str, Any] | bytes]]) -> None:
        from ..sql.packing import encoded
        from .checkpoints import _put_checkpoints

        await self._write(_put_checkpoints, session_id, [(q, encoded(d)) for q, d in rows])

    async def put_snapshot(self, session_id: str, invocation_id: str, seq: int, data: dict[str, Any]) -> None:
        self._check_writable()
        await self._write(_put_snapshot, session_id, invocation_id, seq, to_json(data).decode())

    # ---------------------------------------------------------- export/import
    def export_session(self, session_id: str) -> AsyncIterator[str]:
        """The session as JSON Lines (see :mod:`engine.store.jsonl`), one line per item."""
        from .. import jsonl  # the export format: imported by the commands that move sessions only

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
        rebuilt, the seek checkpoints too) together with its audit record
        (operator, reason, source); a bad file raises ImportFormatError naming
        the line and writes nothing."""
        self._check_writable()
        # Each event reduced to its row as it is read (one parse, no Event list), and
        # folded into the seek checkpoints, written in the same transaction.
        from .. import jsonl

        reader = jsonl.ExportReader(lines, checkpoints=True)
        sid = session_id or reader.session.id
        prepared = [prepare(e) for e in reader.events()]
        record = import_record(sid, len(prepared), operator, reason, source, reader.session.id)
        rows = reader.checkpoints.rows if reader.checkpoints is not None else []
        await self._write(_import_tx, sid, reader.session, prepared, record, rows)
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
        create: tuple[str, str] | None = None,
    ) -> tuple[Lease, list[StoredEvent], dict[str, Any]]:
        """A turn's first write in one transaction (see
        :data:`engine.store.base.Capability`): the lease, then the events;
        returns the lease, the stored events and the session's state after them.
        ``create=(app_name, user_id)`` creates the session first, in the same
        transaction (capability ``create_in_first_write``)."""
        self._check_writable()
        prepared = [prepare(e) for e in events]
        lease, seqs, state = await self._write(
            _acquire_append_tx, session_id, invocation_id, owner, ttl, time.time(), prepared, expected_seq,
            invocation_after, create,
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
        prepared = [prepare(e) for e in events]
        snap = None if snapshot is None else (snapshot[0], to_json(snapshot[1]).decode())
        seqs = await self._write(_append_release_tx, session_id, invocation_id, prepared, expected_seq, owner, snap)
        return [StoredEvent(seq=q, session_id=session_id, event=Event.from_json(p.json)) for q, p in zip(seqs, prepared, strict=True)]

    async def get_lease(self, session_id: str, invocation_id: str) -> Lease | None:
        return await self._call(_get_lease, session_id, invocation_id)

    async def list_leases(self, session_id: str) -> list[Lease]:
        return await self._call(_list_leases, session_id)

    async def leases_of(self, session_ids: list[str]) -> list[Lease]:
        return await self._call(_leases_of, json.dumps(list(session_ids)))

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
            at, no = decode_cursor(cursor, (float, int))
            where.append("at <= ? AND (at < ? OR id < ?)")
            params += [at, at, no]
        sql = f"SELECT {AUDIT_COLS} FROM audit"
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += " ORDER BY at DESC, id DESC LIMIT ?"
        params.append(limit + 1)
        rows = await self._call(_audit_rows, sql, params)
        page = rows[:limit]
        nxt = encode_cursor(page[-1][1].at, page[-1][0]) if len(rows) > limit else None
        return Page(items=[r for _, r in page], next_cursor=nxt)

    # ------------------------------------------------------------- overview
    async def overview(
        self, *, since: float, bucket: float = 3600.0, buckets: int = 24, running_limit: int = 500
    ) -> StoreOverview:
        from .overview import read_overview

        return await self._call(read_overview, since, bucket, buckets, running_limit)

    async def metric_reads(self) -> StoreMetrics:
        """Open interrupts per app and node, queued turns per app (``/metrics``)."""
        from .overview import read_metrics

        return await self._call(read_metrics)

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


def _counting(conn: sqlite3.Connection, counts: dict[str, int], fn: Callable[..., T], *args: Any) -> T:
    """``fn(conn, *args)`` counting the statements it runs (a ``hitl.store`` span's)."""

    def seen(sql: str) -> None:
        counts["statements"] += 1
        counts["commits"] += sql.lstrip()[:6].upper() == "COMMIT"

    conn.set_trace_callback(seen)
    try:
        return fn(conn, *args)
    finally:
        conn.set_trace_callback(None)
