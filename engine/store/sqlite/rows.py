"""The pieces every unit of work shares (an event prepared for the append path,
the write transaction, the session check); rows read back into records are
:mod:`engine.store.sql.rows`."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from pydantic_core import to_json

from ...errors import (
    SessionNotFoundError,
)
from ...models import Event
from ..base import (
    index_effects,
)
from ..owner_index import OwnerChange

T = TypeVar("T")

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
