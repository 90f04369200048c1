"""The store's connection pool, its opening and schema migration, and how a unit of work runs."""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import json
import logging
import time
import weakref
from collections.abc import Awaitable, Callable, Generator
from functools import partial
from typing import TYPE_CHECKING, Any, Generic, Self, TypeVar

import asyncpg
from pydantic import ValidationError

from ... import telemetry
from ...errors import HitlError, ReadOnlyError, SchemaUpgradeNeeded, SessionNotFoundError, StoreError
from ..sql.prepared import Prepared
from . import onetrip, pooler
from .errors import _CONNECTION_ERRORS, ConnectionLostError, _connect_error, _newer_schema_error, _translate
from .listen import Listener
from .schema import _LOCK_KEY, _MIGRATIONS, SCHEMA_VERSION
from .statements import _keep_session, _seq_of_event
from .urls import mask_url, split_ours

if TYPE_CHECKING:
    from ...models import Session
    from ..base import Lease

T = TypeVar("T")
S = TypeVar("S", bound="_Core")


_RETRIES = 5
"""Tries a unit of work gets after serialisation failures and deadlocks."""
RECONNECT_FOR = 30.0
"""Seconds a unit of work waits for a lost server to come back (a restart, a
failover) before it fails: it retries, each wait twice the last, up to a second."""
_SAY_LOST_AFTER = 2.0
"""Seconds of waiting after which the operator is told the store is reconnecting."""

log = logging.getLogger(__name__)

_SETTLING: contextvars.ContextVar[bool] = contextvars.ContextVar("hitl_pg_settling", default=False)
"""True in the task that checks (and creates or migrates) a deferred schema: its own
units of work run unchecked."""


_SET: weakref.WeakSet[asyncpg.Connection] = weakref.WeakSet()
"""Behind a connection pooler: the connections that run with the store's settings."""


class _SchemaNotChecked(Exception):
    """A deferred schema check failed or could not ride on a unit of work's first
    statement: check the schema the slow way (outside the connection), then redo it."""


class _QuietFloor(logging.Filter):
    """asyncpg's pool logs a warning with a traceback each time it fails to
    reconnect its idle connections (its *floor*) while the server is down -- a
    restart printed a screenful on the CLI and in a worker's log though nothing
    was lost. Those records are dropped here and counted; the store says it in
    one line once a unit of work runs on the server again (:meth:`_Core._run`)."""

    failures = 0

    def filter(self, record: logging.LogRecord) -> bool:
        if str(record.msg).startswith("Failed to restore the pool connection floor"):
            _QuietFloor.failures += 1
            return False
        return True


_QUIET_FLOOR = _QuietFloor()
if _QUIET_FLOOR not in logging.getLogger("asyncpg.pool").filters:
    logging.getLogger("asyncpg.pool").addFilter(_QUIET_FLOOR)


class _Opener(Generic[S]):
    """What :meth:`PostgresStore.open` returns: awaitable, and an async context manager."""

    def __init__(self, cls: type[S], **kwargs: Any) -> None:
        self._cls = cls
        self._kwargs = kwargs
        self._store: S | None = None

    def __await__(self) -> Generator[Any, None, S]:
        return self._cls._open(**self._kwargs).__await__()

    async def __aenter__(self) -> S:
        self._store = await self._cls._open(**self._kwargs)
        return self._store

    async def __aexit__(self, *exc: object) -> None:
        if self._store is not None:
            await self._store.close()


class _Core:
    """The pool: opening, migrating, closing, and running a unit of work on a connection."""

    def __init__(
        self, pool: asyncpg.Pool, url: str, schema: str | None, *, read_only: bool, busy_timeout: float
    ) -> None:
        self._pool: asyncpg.Pool | None = pool
        self._url = url
        self.schema = schema
        """The PostgreSQL schema of the tables (None: the connection's default, ``public``)."""
        self.read_only = read_only
        self.busy_timeout = busy_timeout
        """Seconds a statement waits for a row lock held by another session before failing."""
        self.migrated_from: int | None = None
        """The schema version found when a writer opened the store (before migrating)."""
        self.retries = 0
        """Units of work redone after a serialisation failure, a deadlock or a lost
        connection (for tests and benchmarks)."""
        self.reconnect_for = RECONNECT_FOR
        """Seconds a unit of work waits for a lost server (:data:`RECONNECT_FOR`)."""
        self._said_lost = False
        self._floor_seen = _QuietFloor.failures
        self._connect_args: dict[str, Any] = {}
        self._schema_unchecked = False
        """Opened with the schema check deferred, and no unit of work has checked it yet."""
        self._session_sets = ""
        """Behind a connection pooler: the settings each new connection runs as ``SET`` statements."""

    if TYPE_CHECKING:  # the other mixins' reads (reads.py, leases.py): a write reads back after a lost connection

        async def get_session(self, session_id: str) -> Session: ...

        async def get_lease(self, session_id: str, invocation_id: str) -> Lease | None: ...

    @property
    def url(self) -> str:
        """The store's URL with any password masked: what every message shows."""
        return mask_url(self._url)

    @classmethod
    def open(
        cls,
        url: str,
        *,
        read_only: bool = False,
        busy_timeout: float = 5.0,
        statement_timeout: float | None = None,
        min_size: int = 1,
        max_size: int = 10,
        migrate: bool = True,
        password: str | None = None,
        defer_schema_check: bool = False,
    ) -> _Opener[Self]:
        """Connect to ``url`` (``postgresql://user@host:port/db?sslmode=...&schema=...``;
        the password from the URL, ``PGPASSWORD`` or ``~/.pgpass``/``PGPASSFILE``,
        TLS options as libpq's). A writer creates or upgrades the schema
        (``migrate=False`` leaves it, for ``hitl migrate`` to report first); a
        reader requires the current one. Raises StoreError with the masked URL.

        ``defer_schema_check``: the open sends nothing but the connection's
        startup; the first unit of work checks the schema -- on the server, inside
        its first statement when that is a read that can carry the check (a
        turn's first read: no round trip of its own), else in a statement before
        it -- and a store that is not current is judged (created, migrated or
        refused, with the same messages) then. For a process that opens the store
        to do one thing, such as ``hitl resume``; ignored with ``migrate=False``."""
        return _Opener(
            cls,
            url=url,
            read_only=read_only,
            busy_timeout=busy_timeout,
            statement_timeout=statement_timeout,
            min_size=min_size,
            max_size=max_size,
            migrate=migrate,
            password=password,
            defer_schema_check=defer_schema_check,
        )

    @classmethod
    async def _open(
        cls,
        *,
        url: str,
        read_only: bool,
        busy_timeout: float,
        statement_timeout: float | None,
        min_size: int,
        max_size: int,
        migrate: bool,
        password: str | None = None,
        defer_schema_check: bool = False,
    ) -> Self:
        dsn, schema, behind = split_ours(url)
        where = mask_url(url)
        settings = {"lock_timeout": str(int(busy_timeout * 1000)), "application_name": "hitl-console"}
        # Every double read back as text (onetrip.py) is the same double, whatever a
        # server's or a role's default says.
        settings["extra_float_digits"] = "3"
        if statement_timeout is not None:
            settings["statement_timeout"] = str(int(statement_timeout * 1000))
        if read_only:
            settings["default_transaction_read_only"] = "on"
        if schema is not None:
            settings["search_path"] = schema
        sets = ""
        if behind is not None:  # pooler=session: no refused first connection to learn it from
            settings, sets = pooler.split(settings)
        create = partial(
            asyncpg.create_pool, dsn, password=password, min_size=min_size, max_size=max_size, reset=_keep_session
        )
        try:
            try:
                pool = await create(server_settings=settings)
            except asyncpg.ProtocolViolationError as e:
                if not pooler.refuses_settings(e):
                    raise
                settings, sets = pooler.split(settings)  # a pooler: the rest as SET statements
                pool = await create(server_settings=settings)
        except (TimeoutError, OSError, asyncpg.PostgresError, asyncpg.InterfaceError) as e:
            raise _connect_error(e, where) from None
        store = cls(pool, url, schema, read_only=read_only, busy_timeout=busy_timeout)
        store._session_sets = sets
        store._connect_args = {"dsn": dsn, "password": password, "server_settings": settings}
        if defer_schema_check and migrate:
            store._schema_unchecked = True
            return store
        try:
            if await store._schema_is_current():
                return store
            await store._judge_schema(migrate=migrate)
        except BaseException:
            await store.close()
            raise
        return store

    async def _judge_schema(self, *, migrate: bool) -> None:
        """A schema that is not this version's: create it (a writer, on a new store),
        migrate it (a writer, when ``migrate``), or refuse it with the line that says why."""
        if not self.read_only and self.schema is not None:
            await self._create_schema(self.schema)
        version = await self.schema_version()
        if version > SCHEMA_VERSION:
            raise _newer_schema_error(self.url, version)
        if version < SCHEMA_VERSION:
            if self.read_only:
                if version == 0:
                    raise StoreError(
                        f"{self.url} has no hitl-console store yet; open it without --read-only to create one"
                    )
                raise SchemaUpgradeNeeded(
                    f"the store {self.url} has schema version {version}, older than this hitl-console's "
                    f"{SCHEMA_VERSION}; run `hitl migrate` (or open it once without --read-only)"
                )
            if migrate:
                await self.migrate()

    async def _check_deferred_schema(self) -> None:
        """The slow check of a deferred open (:meth:`open`'s ``defer_schema_check``),
        once a unit of work found the schema not current or could not carry the check."""
        token = _SETTLING.set(True)
        try:
            if not await self._schema_is_current():
                await self._judge_schema(migrate=True)
        finally:
            _SETTLING.reset(token)
        self._schema_unchecked = False

    async def _schema_is_current(self) -> bool:
        """Whether the store's schema is this version's, in one round trip (no
        statement to prepare, and no PL/pgSQL block to compile on the new
        backend) -- what every open of an existing store asks; anything else (no
        tables yet, older, newer) takes the slow path."""

        async def fn(conn: asyncpg.Connection) -> bool:
            try:
                [(version,)] = await onetrip.fetch(conn, "SELECT max(version) FROM hitl_schema", (), "i")
            except (asyncpg.UndefinedTableError, asyncpg.InvalidSchemaNameError):
                return False
            return bool(version == SCHEMA_VERSION)

        return await self._run(fn, carries_check=True)

    async def _create_schema(self, schema: str) -> None:
        """``CREATE SCHEMA IF NOT EXISTS`` the URL's schema (a writer opening a new one)."""

        async def fn(conn: asyncpg.Connection) -> None:
            with contextlib.suppress(asyncpg.UniqueViolationError):  # created concurrently by another writer
                await conn.execute(f'CREATE SCHEMA IF NOT EXISTS "{schema}"')

        await self._run(fn)

    async def schema_version(self) -> int:
        """The schema version in the database (0: no hitl-console tables yet)."""

        async def fn(conn: asyncpg.Connection) -> int:
            # One statement when the store exists (every open of one: a round trip less);
            # only a database without our table asks whether it holds someone else's.
            try:
                return int(await conn.fetchval("SELECT max(version) FROM hitl_schema") or 0)
            except asyncpg.UndefinedTableError:
                pass
            if await conn.fetchval("SELECT to_regclass('sessions') IS NOT NULL"):
                raise StoreError(
                    f"{self.url} has a 'sessions' table that is not a hitl-console store's; "
                    "use another database or add ?schema=NAME to the URL"
                )
            return 0

        return await self._run(fn)

    async def migrate(self) -> tuple[int, int]:
        """Run the pending migrations in one transaction; returns (version before, after).
        A newer schema is refused untouched (StoreError)."""
        self._check_writable()

        async def fn(conn: asyncpg.Connection) -> tuple[int, int]:
            async with conn.transaction():
                await conn.execute("SELECT pg_advisory_xact_lock($1)", _LOCK_KEY)
                await conn.execute("CREATE TABLE IF NOT EXISTS hitl_schema (version integer NOT NULL)")
                version = int(await conn.fetchval("SELECT coalesce(max(version), 0) FROM hitl_schema"))
                if version > SCHEMA_VERSION:
                    raise _newer_schema_error(self.url, version)
                for n, statements in enumerate(_MIGRATIONS[version:], start=version + 1):
                    try:
                        for stmt in statements:
                            await conn.execute(stmt)
                    except asyncpg.PostgresError as e:
                        raise StoreError(
                            f"upgrading {self.url} to schema version {n} failed ({type(e).__name__}: {e}); "
                            f"the store was left at version {version}"
                        ) from None
                if version < SCHEMA_VERSION:
                    await conn.execute("DELETE FROM hitl_schema")
                    await conn.execute("INSERT INTO hitl_schema (version) VALUES ($1)", SCHEMA_VERSION)
                return version, SCHEMA_VERSION

        before, after = await self._run(fn)
        if self.migrated_from is None:
            self.migrated_from = before
        return before, after

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        """Close the pool (idempotent); later calls raise StoreError."""
        pool, self._pool = self._pool, None
        if pool is not None:
            try:
                await asyncio.wait_for(pool.close(), timeout=5)
            except (TimeoutError, OSError, asyncpg.PostgresError, asyncpg.InterfaceError):
                pool.terminate()

    def __repr__(self) -> str:
        mode = "ro" if self.read_only else "rw"
        return f"<PostgresStore {self.url!r} {mode}{' closed' if self._pool is None else ''}>"

    async def notifications(self, callback: Callable[[str | None, int | None], None]) -> Listener:
        """Call ``callback(session_id, seq)`` (on this event loop) for every append
        committed by anyone, from a dedicated LISTEN connection. After that
        connection was lost and re-made, ``callback(None, None)``: notifications
        may have been missed meanwhile, so re-read from the last seq seen. Close
        the returned :class:`Listener` when done."""
        listener = Listener(self._connect_args, callback, self.url)
        await listener.start()
        return listener

    async def _run(
        self,
        fn: Callable[[asyncpg.Connection], Awaitable[T]],
        *,
        retry: bool = True,
        reconnect: bool = True,
        carries_check: bool = False,
    ) -> T:
        """``fn(conn)`` on a pooled connection; server errors become HitlErrors.
        Serialisation failures and deadlocks are retried (``fn`` is one transaction,
        rolled back by the server). So is a lost connection (a restarted server, a
        pooled connection that died) when ``reconnect``: callers whose ``fn`` may have
        committed before the connection broke pass False and decide themselves.
        ``carries_check``: ``fn``'s first statement is a read through
        :func:`.onetrip.fetch`, which carries a deferred schema check."""
        tries = 0  # serialisation failures, deadlocks, deferred schema checks
        lost_at: float | None = None  # when this unit of work first found the server gone
        while tries < _RETRIES:
            if self._pool is None:
                raise StoreError(f"the store {self.url} is closed")
            try:
                async with self._pool.acquire() as conn:
                    check = self._schema_unchecked and not _SETTLING.get()
                    sets = self._session_sets if self._session_sets and conn._con not in _SET else None
                    if check or sets:
                        result = await self._first_use(conn, fn, carries_check, check, sets)
                    else:
                        result = await self._call(conn, fn)
                if self._lost or _QuietFloor.failures != self._floor_seen:
                    self._restored()
                return result
            except _SchemaNotChecked:
                tries += 1
                await self._check_deferred_schema()
                continue  # nothing of fn ran, or its first statement failed: do it now
            except ConnectionLostError:
                raise
            except HitlError:
                raise
            except _CONNECTION_ERRORS as e:
                lost_at = await self._wait_for_server(e, reconnect, lost_at)
            except asyncpg.PostgresError as e:
                if e.sqlstate and (e.sqlstate.startswith("08") or e.sqlstate in ("57P01", "57P02", "57P03")):
                    lost_at = await self._wait_for_server(e, reconnect, lost_at)
                    continue
                if isinstance(e, (asyncpg.SerializationError, asyncpg.DeadlockDetectedError)):
                    tries += 1
                    if not retry or tries == _RETRIES:
                        raise _translate(e, self.url, self.busy_timeout) from None
                    self.retries += 1
                    await asyncio.sleep(0.01 * (2 ** (tries - 1)))
                    continue
                raise _translate(e, self.url, self.busy_timeout) from None
            except (json.JSONDecodeError, ValidationError) as e:
                detail = " ".join(str(e).split())[:200]
                raise StoreError(
                    f"a row of {self.url} is corrupted ({type(e).__name__}: {detail}); "
                    "export the readable sessions and repair the row"
                ) from e
        raise AssertionError("unreachable")

    async def _call(self, conn: asyncpg.Connection, fn: Callable[[asyncpg.Connection], Awaitable[T]]) -> T:
        tr = telemetry.store_tracer()
        if tr is None:
            return await fn(conn)
        with telemetry.store_span(tr, telemetry.call_name(fn), "postgres") as counts:
            return await _counting(conn, counts, fn)

    async def _first_use(
        self,
        conn: asyncpg.Connection,
        fn: Callable[[asyncpg.Connection], Awaitable[T]],
        carries_check: bool,
        check: bool,
        sets: str | None,
    ) -> T:
        """``fn`` where the deferred schema check has not run (``check``) or, behind a
        pooler, on a connection without its settings (``sets``): both ride on its
        first statement when it ``carries_check``; else they come first, each in a
        round trip of its own."""
        if not carries_check:
            if sets:
                await conn.execute(sets)
                _SET.add(conn._con)
            if check:
                raise _SchemaNotChecked
            return await self._call(conn, fn)
        carried = onetrip.carry(conn, version=SCHEMA_VERSION if check else None, settings=sets)
        try:
            result = await self._call(conn, fn)
        except asyncpg.PostgresError as e:
            if check and carried.sent and not carried.passed and _schema_refused(e):
                raise _SchemaNotChecked from None  # refused before it read anything: judge the schema, redo fn
            raise
        finally:
            onetrip.forget(conn)
            if carried.passed:
                if sets:
                    _SET.add(conn._con)
                if check:
                    self._schema_unchecked = False
        if not carried.sent:
            raise AssertionError("a unit of work said its first statement carries the schema check, and it did not")
        return result

    _lost = False
    """A unit of work lost its connection since the last one that ran."""
    _floor_seen = 0
    """:attr:`_QuietFloor.failures` when this store last said the connection was fine."""

    async def _wait_for_server(self, exc: BaseException, reconnect: bool, lost_at: float | None) -> float:
        """A unit of work found its connection lost (``exc``): wait, then let it try
        again -- for up to :attr:`reconnect_for` seconds from ``lost_at`` (its first
        loss; returned), each wait twice the last (50 ms to 1 s). After that, or when
        it must not reconnect (it may have committed), the operator's error."""
        self._lost = True
        now = time.monotonic()
        lost_at = now if lost_at is None else lost_at
        waited = now - lost_at
        if not reconnect or waited >= self.reconnect_for:
            raise _translate(exc, self.url, self.busy_timeout) from None
        if waited >= _SAY_LOST_AFTER and not self._said_lost:  # long work says so, once
            self._said_lost = True
            log.warning(
                "lost the connection to %s; reconnecting (for up to %.0fs more)", self.url, self.reconnect_for - waited
            )
        self.retries += 1
        await asyncio.sleep(min(max(waited, 0.05), 1.0, self.reconnect_for - waited))
        return lost_at

    def _restored(self) -> None:
        """The one line an operator reads about a server restart (or a dropped
        connection): it came back, and the store carried on."""
        if self._lost or _QuietFloor.failures > self._floor_seen:
            log.warning("the connection to %s was lost and is restored; nothing was lost", self.url)
        self._lost = self._said_lost = False
        self._floor_seen = _QuietFloor.failures

    def _check_writable(self) -> None:
        if self.read_only:
            raise ReadOnlyError(
                f"the store {self.url} is open read-only; nothing was written (open it without --read-only)"
            )

    async def _write_batch(
        self, fn: Callable[[asyncpg.Connection], Awaitable[T]], session_id: str, prepared: list[Prepared]
    ) -> tuple[T, None] | tuple[None, int]:
        """Run ``fn``, a statement that appends ``prepared`` (all or none), and return
        ``(its result, None)``. When the connection breaks, the first event's id
        says whether it committed: then ``(None, the batch's last seq)``, else it
        is run again (nothing of it was written)."""
        for _ in range(_RETRIES):
            try:
                return await self._run(fn, reconnect=False), None
            except ConnectionLostError:
                found = await self._run(partial(_seq_of_event, session_id=session_id, event_id=prepared[0].event_id))
                if found is not None:
                    return None, found + len(prepared) - 1
                self.retries += 1
        raise ConnectionLostError(f"lost the connection to {self.url} again and again; the events were not stored")

    async def _require_session(self, conn: asyncpg.Connection, session_id: str) -> None:
        if await conn.fetchval("SELECT 1 FROM sessions WHERE id = $1", session_id) is None:
            raise SessionNotFoundError(session_id)

    async def _session_rows(
        self, sql: str, session_id: str, from_row: Callable[[Any], T], *args: Any, types: str | None = None
    ) -> list[T]:
        """A session's rows of a derived table in one statement: ``sql`` selects
        ``FROM sessions s LEFT JOIN ...`` with ``s.id = $1``, so no row means no
        session (SessionNotFoundError) and one row of NULLs means none. ``types``
        (:func:`.onetrip.fetch`'s): one round trip on a new connection too, which
        can carry a deferred schema check (a read an answer's checks make first)."""

        async def fn(conn: asyncpg.Connection) -> list[T]:
            if types is None:
                rows: Any = await conn.fetch(sql, session_id, *args)
            else:
                rows = await onetrip.fetch(conn, sql, (session_id, *args), types)
            if not rows:
                raise SessionNotFoundError(session_id)
            return [from_row(r) for r in rows if r[0] is not None]

        return await self._run(fn, carries_check=types is not None)

    async def checkpoint(self) -> None:
        """Nothing to do on a server (the file stores fold their journal here)."""
        self._check_writable()


def _schema_refused(exc: asyncpg.PostgresError) -> bool:
    """Whether a statement that carried the schema check failed on the schema: the
    check itself, or no such table, column, function or schema (a store of another
    version, or none)."""
    state = exc.sqlstate or ""
    return (state == "22P02" and onetrip.SCHEMA_MARK in str(exc)) or state.startswith("42") or state == "3F000"


async def _counting(conn: asyncpg.Connection, counts: dict[str, int], fn: Callable[[asyncpg.Connection], Awaitable[T]]) -> T:
    """``fn(conn)`` counting the statements it sends (a ``hitl.store`` span's)."""

    def seen(_query: object) -> None:
        counts["statements"] += 1

    conn.add_query_logger(seen)
    try:
        result = await fn(conn)
        await asyncio.sleep(0)  # asyncpg calls query loggers with call_soon: let them run
    finally:
        conn.remove_query_logger(seen)
    counts["commits"] = 1  # one unit of work, committed as one transaction
    return result
