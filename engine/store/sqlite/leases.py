"""Lease units of work (take, renew, release, and folded into a turn's first and last
write) and audit rows."""

from __future__ import annotations

import sqlite3
from typing import Any

from ...errors import (
    InvocationBusyError,
    LeaseLostError,
)
from ..base import (
    AuditRecord,
    Lease,
)
from ..sql.columns import LEASE_COLS
from ..sql.prepared import Prepared
from ..sql.rows import audit_from_row, lease_from_row
from .append import _append_batch, _append_many_tx, _create_tx
from .reads import _put_snapshot, _upsert_snapshot
from .rows import _require_session


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
        f"SELECT {LEASE_COLS} FROM leases WHERE session_id = ? AND invocation_id = ?", (session_id, invocation_id)
    ).fetchone()
    acquired = now
    if row is None:
        _require_session(conn, session_id)
    else:
        held = lease_from_row(row)
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
        f"INSERT OR REPLACE INTO leases ({LEASE_COLS}) VALUES (?, ?, ?, ?, ?, ?)",
        (session_id, invocation_id, owner, lease.acquired_at, lease.renewed_at, lease.expires_at),
    )
    return lease


def _renew_lease_tx(
    conn: sqlite3.Connection, session_id: str, invocation_id: str, owner: str, ttl: float, now: float
) -> Lease:
    _require_session(conn, session_id)
    row = conn.execute(
        f"SELECT {LEASE_COLS} FROM leases WHERE session_id = ? AND invocation_id = ?", (session_id, invocation_id)
    ).fetchone()
    if row is None or row[2] != owner:
        raise LeaseLostError(session_id, invocation_id, owner, lease_from_row(row).holder if row else None)
    conn.execute(
        "UPDATE leases SET renewed_at = ?, expires_at = ? WHERE session_id = ? AND invocation_id = ?",
        (now, now + ttl, session_id, invocation_id),
    )
    return lease_from_row((*row[:4], now, now + ttl))


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
    prepared: list[Prepared],
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
    prepared: list[Prepared],
    expected_seq: int | None,
    invocation_after: int | None,
    create: tuple[str, str] | None = None,
) -> tuple[Lease, list[int], dict[str, Any]]:
    """A turn's first write (``acquire_and_append``): take the lease (as
    ``acquire_lease``, without stealing), check that the invocation has no event
    after ``invocation_after``, append; in the caller's one transaction.
    ``create=(app_name, user_id)``: first create the session (ConflictError if
    it exists), so a new session's first turn costs no commit of its own."""
    created = None if create is None else _create_tx(conn, session_id, *create, "{}", now, now)
    seqs, state, acquired = _append_batch(
        conn, session_id, prepared, expected_seq, None, want_state=True, acquire=(owner, now),
        invocation_after=invocation_after, created=created,
    )
    lease = Lease(
        session_id=session_id, invocation_id=invocation_id, owner=owner, acquired_at=acquired or now, renewed_at=now,
        expires_at=now + ttl,
    )
    conn.execute(
        f"INSERT OR REPLACE INTO leases ({LEASE_COLS}) VALUES (?, ?, ?, ?, ?, ?)",
        (session_id, invocation_id, owner, lease.acquired_at, lease.renewed_at, lease.expires_at),
    )
    return lease, seqs, state or {}


def _get_lease(conn: sqlite3.Connection, session_id: str, invocation_id: str) -> Lease | None:
    row = conn.execute(
        f"SELECT {LEASE_COLS} FROM leases WHERE session_id = ? AND invocation_id = ?", (session_id, invocation_id)
    ).fetchone()
    if row is None:
        _require_session(conn, session_id)
    return lease_from_row(row) if row else None


def _list_leases(conn: sqlite3.Connection, session_id: str) -> list[Lease]:
    _require_session(conn, session_id)
    rows = conn.execute(
        f"SELECT {LEASE_COLS} FROM leases WHERE session_id = ? ORDER BY invocation_id", (session_id,)
    )
    return [lease_from_row(r) for r in rows]


def _leases_of(conn: sqlite3.Connection, session_ids: str) -> list[Lease]:
    rows = conn.execute(
        f"SELECT {LEASE_COLS} FROM leases WHERE session_id IN (SELECT value FROM json_each(?))"
        " ORDER BY session_id, invocation_id",
        (session_ids,),
    )
    return [lease_from_row(r) for r in rows]


def _audit_rows(conn: sqlite3.Connection, sql: str, params: list[Any]) -> list[tuple[int, AuditRecord]]:
    return [(r[0], audit_from_row(r)) for r in conn.execute(sql, params)]
