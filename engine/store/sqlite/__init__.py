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

Modules
    ``schema``: tables, migrations, schema version. ``connection``: probing a
    file, the drivers, error translation, per-connection PRAGMAs. ``rows``: row
    converters, cursors, an event prepared for the append path, the write
    transaction. ``append``: the append path (and import, bulk load).
    ``reads``: sessions, events, derived rows, snapshots. ``leases``: leases and
    audit rows. ``store``: :class:`SQLiteStore` over those units of work.

All SQL of the project lives in this package (and :mod:`engine.store.postgres`).
"""

from types import ModuleType
from typing import TYPE_CHECKING, Any

# Names resolve on first use (PEP 562): ``engine.store.sqlite.listing`` (the
# sessions listing on plain sqlite3) must not pull in pydantic and aiosqlite.
_LAZY = {
    "ConflictError": "errors",
    "_AiosqliteDriver": "connection",
    "_InlineDriver": "connection",
    "_ThreadDriver": "connection",
    "no_room": "connection",
    "schema_version": "connection",
    "sqlite3_uri_path": "connection",
    # one definition of each, whatever the backend (engine.store.postgres uses them)
    "_AUDIT_COLS": "rows",
    "_INTERRUPT_COLS": "rows",
    "_INVOCATION_COLS": "rows",
    "_LEASE_COLS": "rows",
    "_SESSION_COLS": "rows",
    "_SUMMARY_COLS": "rows",
    "_audit_from_row": "rows",
    "_decode_cursor": "rows",
    "_encode_cursor": "rows",
    "_interrupt_from_row": "rows",
    "_invocation_from_row": "rows",
    "_lease_from_row": "rows",
    "_parse_event": "rows",
    "_prepare": "rows",
    "_Prepared": "rows",
    "_session_from_row": "rows",
    "_summary_from_row": "rows",
    "APPLICATION_ID": "schema",
    "SCHEMA_VERSION": "schema",
    "default_db_path": "listing",
    "SQLiteStore": "store",
}

if TYPE_CHECKING:
    from ...errors import ConflictError
    from .connection import _AiosqliteDriver, _InlineDriver, _ThreadDriver, no_room, schema_version, sqlite3_uri_path
    from .listing import default_db_path
    from .rows import (
        _AUDIT_COLS,
        _INTERRUPT_COLS,
        _INVOCATION_COLS,
        _LEASE_COLS,
        _SESSION_COLS,
        _SUMMARY_COLS,
        _audit_from_row,
        _decode_cursor,
        _encode_cursor,
        _interrupt_from_row,
        _invocation_from_row,
        _lease_from_row,
        _parse_event,
        _prepare,
        _Prepared,
        _session_from_row,
        _summary_from_row,
    )
    from .schema import APPLICATION_ID, SCHEMA_VERSION
    from .store import SQLiteStore


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(_submodule(module), name)
    globals()[name] = value
    return value


def _submodule(module: str) -> ModuleType:
    # Static imports: the product imports code by name only in its app registry.
    if module == "errors":
        from ... import errors
        return errors
    elif module == "connection":
        from . import connection
        return connection
    elif module == "rows":
        from . import rows
        return rows
    elif module == "listing":
        from . import listing
        return listing
    elif module == "schema":
        from . import schema
        return schema
    else:
        from . import store
        return store


def __dir__() -> list[str]:
    return sorted([*globals(), *_LAZY])


__all__ = [
    "APPLICATION_ID",
    "ConflictError",
    "SCHEMA_VERSION",
    "SQLiteStore",
    "default_db_path",
    "no_room",
    "schema_version",
    "sqlite3_uri_path",
    "_AiosqliteDriver",
    "_InlineDriver",
    "_ThreadDriver",
    "_AUDIT_COLS",
    "_INTERRUPT_COLS",
    "_INVOCATION_COLS",
    "_LEASE_COLS",
    "_SESSION_COLS",
    "_SUMMARY_COLS",
    "_audit_from_row",
    "_decode_cursor",
    "_encode_cursor",
    "_interrupt_from_row",
    "_invocation_from_row",
    "_lease_from_row",
    "_parse_event",
    "_prepare",
    "_Prepared",
    "_session_from_row",
    "_summary_from_row",
]
