"""Schema of the SQLite store: the tables, their migrations and the schema version."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterable
from pathlib import Path

from pydantic import ValidationError

from ...errors import (
    HitlError,
    StoreError,
)
from ...models import Event
from ..sql.prepared import prepare
from .listing import APPLICATION_ID, default_db_path  # noqa: F401 (re-exported)
from .rows import _insert_audit

_SYNCHRONOUS = ("OFF", "NORMAL", "FULL", "EXTRA")


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
        p = prepare(event)
        if p.audit is not None:
            _insert_audit(conn, session_id, seq, p)


def _migrate_4(conn: sqlite3.Connection) -> None:
    """v3 -> v4: the triage order (oldest open interrupt first) of the sessions list."""
    conn.execute(
        "CREATE INDEX IF NOT EXISTS sessions_by_oldest_open ON sessions(oldest_open_at, id)"
        " WHERE oldest_open_at IS NOT NULL"
    )


def _migrate_workers(conn: sqlite3.Connection) -> None:
    """Turn requests, worker heartbeats and invocation graph versions."""
    from .workers import migrate

    migrate(conn)


def _migrate_5(conn: sqlite3.Connection) -> None:
    """v4 -> v5: invocations by status within a session, so that the append path
    finds the session's status with a few index probes instead of reading every
    invocation of the session."""
    conn.execute("CREATE INDEX IF NOT EXISTS invocations_by_status ON invocations(session_id, status)")


def _migrate_projection_checkpoints(conn: sqlite3.Connection) -> None:
    """Seek checkpoints (engine/checkpoints.py): the session's compact projection
    every ~1000 events, so ``replay --at N`` folds at most that many. Derived
    data, filled by the next turn end (an old session without any is folded).
    Idempotent."""
    conn.execute(
        """CREATE TABLE IF NOT EXISTS projection_checkpoints (
            session_id TEXT NOT NULL REFERENCES sessions(id),
            seq INTEGER NOT NULL,
            data TEXT NOT NULL,
            PRIMARY KEY (session_id, seq)
        )"""
    )


def _migrate_owners(conn: sqlite3.Connection) -> None:
    """Owners of open interrupts (claim / assign / release events, engine/ownership.py):
    the current owner and since when, derived with the event; the inbox filters by owner.
    Idempotent (a file set back to an older version runs it again)."""
    have = {r[1] for r in conn.execute("PRAGMA table_info(interrupts)")}
    _exec_all(
        conn,
        [
            *(["ALTER TABLE interrupts ADD COLUMN owner TEXT"] if "owner" not in have else []),
            *(["ALTER TABLE interrupts ADD COLUMN owned_at REAL"] if "owned_at" not in have else []),
            """CREATE INDEX IF NOT EXISTS interrupts_open_by_owner
                ON interrupts(owner, raised_at, session_id, raised_seq, interrupt_id) WHERE status = 'open'""",
        ],
    )


def _migrate_deadlines(conn: sqlite3.Connection) -> None:
    """Deadline timers (engine/deadlines.py): one row per step of an interrupt's
    rule, written with its index row by a trigger. Idempotent."""
    from .deadlines import MIGRATION

    _exec_all(conn, MIGRATION)


_MIGRATIONS: list[Callable[[sqlite3.Connection], None]] = [
    _migrate_1,
    _migrate_2,
    _migrate_3,
    _migrate_4,
    _migrate_5,
    _migrate_projection_checkpoints,
    _migrate_workers,
    _migrate_owners,  # v8
    _migrate_deadlines,  # v9
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
