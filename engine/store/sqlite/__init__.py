"""SQLite session store, the default backend, on aiosqlite.

Tables
    Those of every SQL store, described once in :mod:`engine.store.sql.columns`;
    the schema version (:data:`SCHEMA_VERSION`) is kept in ``PRAGMA user_version``.

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
    file, the drivers, error translation, per-connection PRAGMAs. ``rows``: the
    write transaction, the session check. ``append``: the append path (and
    import, bulk load). ``reads``: sessions, events, derived rows, snapshots.
    ``leases``: leases and audit rows. ``store``: :class:`SQLiteStore` over
    those units of work. What both SQL stores share (row converters, columns,
    cursors, the prepared event) is :mod:`engine.store.sql`'s.

All SQL of the project lives in this package, :mod:`engine.store.postgres` and
:mod:`engine.store.sql` (what both share).
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
    "APPLICATION_ID": "schema",
    "SCHEMA_VERSION": "schema",
    "default_db_path": "listing",
    "SQLiteStore": "store",
}

if TYPE_CHECKING:
    from ...errors import ConflictError
    from .connection import _AiosqliteDriver, _InlineDriver, _ThreadDriver, no_room, schema_version, sqlite3_uri_path
    from .listing import default_db_path
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
]
