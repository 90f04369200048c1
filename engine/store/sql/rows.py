"""Rows read back into records: one converter per table, whatever the dialect
(both stores select the columns of :mod:`.columns` in that order).

Rows are the store's own, written from validated records into typed columns:
most records are made with ``model_construct`` (no validation), so that a read
builds no validator (a read command pays neither the build nor the validation).
An event's JSON is parsed and validated (:func:`parse_event`): a corrupt row
says which one it is."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from ...errors import CorruptEventError
from ...models import Event, Session
from ..base import AuditRecord, InterruptRecord, InvocationSummary, Lease, SessionSummary
from .columns import session_owners

if TYPE_CHECKING:  # the worker queue's rows: imported by the reads that make them, not by every store
    from ..workers import TurnRequest, WorkerRecord


def session_from_row(r: tuple[Any, ...]) -> Session:
    return Session.model_construct(
        id=r[0], app_name=r[1], user_id=r[2], state=json.loads(r[3]), created_at=r[4], updated_at=r[5], last_seq=r[6]
    )

def summary_from_row(r: tuple[Any, ...]) -> SessionSummary:
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


def interrupt_from_row(r: tuple[Any, ...]) -> InterruptRecord:
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


def invocation_from_row(r: tuple[Any, ...]) -> InvocationSummary:
    return InvocationSummary.model_construct(
        session_id=r[0],
        invocation_id=r[1],
        status=r[2],
        started_seq=r[3],
        started_at=r[4],
        updated_at=r[5],
        message=r[6],
    )


def lease_from_row(r: tuple[Any, ...]) -> Lease:
    return Lease.model_construct(
        session_id=r[0], invocation_id=r[1], owner=r[2], acquired_at=r[3], renewed_at=r[4], expires_at=r[5]
    )


def audit_from_row(r: tuple[Any, ...]) -> AuditRecord:
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


def parse_event(session_id: str, seq: int, text: Any) -> Event:
    try:
        return Event.from_json(text)
    except ValidationError as e:
        first = e.errors()[0]
        loc = ".".join(str(p) for p in first.get("loc", ())) or "(root)"
        raise CorruptEventError(session_id, seq, f"{loc}: {first.get('msg', 'invalid')}") from None
    except (TypeError, ValueError) as e:
        raise CorruptEventError(session_id, seq, str(e)) from None


def request_from_row(row: Any, graph: str | None = None) -> TurnRequest:
    """A turn request from its columns (``REQUEST_COLS``); ``graph``: the version a
    claim read with it (built with it, not copied after: once per worker turn)."""
    from ..workers import TurnRequest

    return TurnRequest(
        app_name=row[0], session_id=row[1], invocation_id=row[2], kind=row[3], payload=json.loads(row[4]),
        requested_at=row[5], claimed_by=row[6], claimed_until=row[7], held=row[8], note=row[9], graph=graph,
    )


def worker_from_row(row: Any) -> WorkerRecord:
    from ..workers import WorkerRecord

    return WorkerRecord(
        worker_id=row[0], host=row[1], pid=row[2], apps=json.loads(row[3]), versions=json.loads(row[4]),
        current=json.loads(row[5]), state=row[6], started_at=row[7], heartbeat_at=row[8], stale_after=row[9],
    )
