"""Row converters, page cursors and the pieces every unit of work shares (an event
prepared for the append path, the write transaction, the session check)."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from pydantic import ValidationError
from pydantic_core import to_json

from ...errors import (
    CorruptEventError,
    SessionNotFoundError,
)
from ...models import Event, Session
from ..base import (
    AuditRecord,
    InterruptRecord,
    InvocationSummary,
    Lease,
    SessionSummary,
    index_effects,
)
from ..owner_index import OwnerChange
from ..sql.columns import session_owners

T = TypeVar("T")

# --------------------------------------------------------------------------- row converters
# Rows are the store's own, written from validated records into typed columns:
# they are made with model_construct (no validation), so that a read builds no
# validator (a read command pays neither the build nor the validation).

def _session_from_row(r: tuple[Any, ...]) -> Session:
    return Session.model_construct(
        id=r[0], app_name=r[1], user_id=r[2], state=json.loads(r[3]), created_at=r[4], updated_at=r[5], last_seq=r[6]
    )


def _summary_from_row(r: tuple[Any, ...]) -> SessionSummary:
    return SessionSummary.model_construct(
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
        owners=list(session_owners(r[11])),
    )


def _interrupt_from_row(r: tuple[Any, ...]) -> InterruptRecord:
    return InterruptRecord.model_construct(
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
        owner=r[14],
        owned_at=r[15],
    )


def _invocation_from_row(r: tuple[Any, ...]) -> InvocationSummary:
    return InvocationSummary.model_construct(
        session_id=r[0],
        invocation_id=r[1],
        status=r[2],
        started_seq=r[3],
        started_at=r[4],
        updated_at=r[5],
        message=r[6],
    )


def _lease_from_row(r: tuple[Any, ...]) -> Lease:
    return Lease.model_construct(
        session_id=r[0], invocation_id=r[1], owner=r[2], acquired_at=r[3], renewed_at=r[4], expires_at=r[5]
    )


def _audit_from_row(r: tuple[Any, ...]) -> AuditRecord:
    try:
        details = json.loads(r[9])
    except (ValueError, TypeError):
        details = {}
    return AuditRecord.model_construct(
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
    owners: OwnerChange | None = None
    """Who owns which interrupts after it (a claim, assignment or release)."""


def _prepare(event: Event) -> _Prepared:
    # Once per event written (a bulk load prepares every event): positional
    # construction, and no comprehension over what an event rarely has.
    if event.state_delta:
        kept = {k: v for k, v in event.state_delta.items() if not k.startswith("temp:")}
        event = event.model_copy(update={"state_delta": kept or None})
    eff = index_effects(event)
    text = event.to_json()
    delta = None
    if event.state_delta:  # as JSON would give it back, like the event log does
        delta = event.model_dump(mode="json", include={"state_delta"})["state_delta"]
    info = event.node_info
    return _Prepared(
        text,
        event.id,
        event.invocation_id,
        event.timestamp,
        info.path if info is not None else None,
        event.kind,
        delta,
        [(iid, path, name, to_json(args).decode()) for iid, path, name, args in eff.opened] if eff.opened else [],
        eff.resolved,
        eff.cancel_invocation,
        eff.invocation_status,
        eff.new_invocation_message,
        None if eff.audit is None else (*eff.audit[:3], to_json(eff.audit[3]).decode()),
        eff.owners,
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
