"""The append path: one unit of work writes a batch of events and every row derived from
them (interrupts, invocations, summary, audit); imports and bulk loads go through it."""

from __future__ import annotations

import functools
import json
import sqlite3
import time
from dataclasses import dataclass
from typing import Any

from pydantic_core import to_json

from ...errors import (
    AlreadyResolvedError,
    ConflictError,
    InvocationBusyError,
    LeaseLostError,
    SessionNotFoundError,
)
from ...models import Event, Session
from ..base import (
    AuditRecord,
    InvocationState,
    Lease,
    session_status,
)
from ..owner_index import check_owner_change
from ..sql.prepared import Prepared, prepare


def _create_tx(
    conn: sqlite3.Connection,
    session_id: str,
    app_name: str,
    user_id: str,
    state_json: str,
    created_at: float,
    updated_at: float,
) -> tuple[str, str, str, float]:
    """Insert a new session's row (ConflictError if the id exists); returns what
    ``_append_batch(created=)`` needs of it."""
    try:  # the primary key refuses an existing id: no lookup first
        conn.execute(
            "INSERT INTO sessions (id, app_name, user_id, state, created_at, updated_at, last_seq, status)"
            " VALUES (?, ?, ?, ?, ?, ?, 0, 'new')",
            (session_id, app_name, user_id, state_json, created_at, updated_at),
        )
    except sqlite3.IntegrityError:
        raise ConflictError(f"session {session_id!r} already exists") from None
    return app_name, user_id, state_json, updated_at


_UPDATED_AT_RESOLUTION = 1.0
"""Seconds: how stale a session's ``updated_at`` may get while it only appends."""


def _append_many_tx(
    conn: sqlite3.Connection, session_id: str, prepared: list[Prepared], expected_seq: int | None, lease_owner: str | None
) -> list[int]:
    """Several appends in the caller's one transaction (``append_events``)."""
    return _append_batch(conn, session_id, prepared, expected_seq, lease_owner)[0]


_INVOCATION_STATES: tuple[InvocationState, ...] = ("running", "waiting", "failed", "completed", "cancelled")


@functools.cache
def _append_head_sql(
    lease: bool, state: bool, acquire: bool = False, moved: bool = False, probe: bool = False, touch: bool = False
) -> str:
    """The append path's first statement: the session row, and what the checks
    and the summary need folded in -- the lease's owner (fencing, or taking it:
    with its times), the state (a delta), the invocation's last seq (a turn's
    first write proves the invocation unchanged), whether the session's *other*
    invocations have each status (one index probe each; the batch's invocation
    gets a status the session's then depends on)."""
    lease_row = "(SELECT {} FROM leases WHERE session_id = s.id AND invocation_id = ?1)"
    cols = [
        "app_name, user_id, last_seq, updated_at, status, open_interrupts, oldest_open_at, invocation_count",
        lease_row.format("owner") if lease or acquire else "NULL",
        "state" if state else "NULL",
    ]
    if acquire:
        cols += [lease_row.format("acquired_at"), lease_row.format("expires_at")]
    if moved:
        cols.append("(SELECT max(seq) FROM events WHERE session_id = s.id AND invocation_id = ?1)")
    if probe:
        cols += [
            f"EXISTS (SELECT 1 FROM invocations WHERE session_id = s.id AND status = '{st}' AND invocation_id != ?1)"
            for st in _INVOCATION_STATES
        ]
    if touch:  # whether the invocation has a row: a new one is inserted without trying an UPDATE
        cols.append("EXISTS (SELECT 1 FROM invocations WHERE session_id = s.id AND invocation_id = ?1)")
    return f"SELECT {', '.join(cols)} FROM sessions s WHERE id = ?2"


_STATUSES_SQL = "SELECT " + ", ".join(
    f"EXISTS (SELECT 1 FROM invocations WHERE session_id = ?1 AND status = '{s}')" for s in _INVOCATION_STATES
)
"""Which invocation statuses a session has: one index probe each."""

_EVENT_COLS = 8
_INSERT_EVENTS_CHUNK = 500
"""Events per multi-row INSERT (8 parameters each, well under SQLite's limit)."""


def _append_tx(
    conn: sqlite3.Connection, session_id: str, p: Prepared, expected_seq: int | None, lease_owner: str | None = None
) -> int:
    """One append (see :func:`_append_batch`)."""
    return _append_batch(conn, session_id, [p], expected_seq, lease_owner)[0][0]


@dataclass(slots=True)
class _InvocationChange:
    """What a batch does to one invocation's row."""

    first_seq: int
    first_at: float
    message: str
    status: str | None = None
    """The last status an event of the batch set (None: unchanged)."""
    updated_at: float = 0.0


def _append_batch(
    conn: sqlite3.Connection,
    session_id: str,
    prepared: list[Prepared],
    expected_seq: int | None,
    lease_owner: str | None,
    *,
    want_state: bool = False,
    acquire: tuple[str, float] | None = None,
    invocation_after: int | None = None,
    created: tuple[str, str, str, float] | None = None,
) -> tuple[list[int], dict[str, Any] | None, float | None]:
    """The append path: events, interrupt index, invocations, state, summary and
    audit, for a batch of events in order, inside the caller's write
    transaction. Raises before anything is kept (the caller rolls back) on a
    missing session, a seq conflict (``expected_seq``, for the first event), a
    lost lease (fencing) or an answer to an id that is not open.

    The derived rows are computed in one pass in Python and written once per
    batch -- one session row read and update, one multi-row INSERT of the
    events, one UPDATE per invocation -- so a batch costs a few statements more
    than one event, and nothing here grows with the session's history (index
    probes only; see tests/store/test_append_cost.py).

    ``acquire=(owner, now)``: the batch takes the invocation's lease (the caller
    writes the row): InvocationBusyError if another owner's has not expired.
    ``invocation_after``: ConflictError if the invocation has an event after it.
    ``created=(app_name, user_id, state json, updated_at)``: the caller inserted
    the session's row in this transaction with these values (a new session's
    first turn, an import, a bulk load): nothing to read back -- no head
    statement; a new session has no lease, event or invocation, so every
    invocation of the batch is new and no row needs looking for.
    Returns the seqs, the session's state after the batch (when it carried a
    delta, or ``want_state``) and, with ``acquire``, the held lease's
    ``acquired_at`` (None: a new lease)."""
    fresh = created is not None
    invs = list(dict.fromkeys(p.invocation_id for p in prepared))
    has_delta = any(p.delta for p in prepared)
    final_status = next((p.invocation_status for p in reversed(prepared) if p.invocation_status), None)
    # One invocation whose status becomes something other than running: the
    # session's status then depends on the others', probed in the same read.
    probe = len(invs) == 1 and final_status not in (None, "running")
    touch = len(invs) == 1 and not fresh
    head = _read_head(
        conn, session_id, invs[0], created, lease=lease_owner is not None, state=has_delta or want_state,
        acquire=acquire, invocation_after=invocation_after, probe=probe, touch=touch,
    )
    _check_writer(conn, session_id, invs, head, expected_seq, lease_owner)
    batch = _fold(conn, session_id, prepared, head)
    _write_interrupt_changes(conn, session_id, batch)
    _insert_events_and_interrupts(conn, batch)
    statuses, n_new = _write_invocations(conn, session_id, batch.changes, update_first=not fresh and not (touch and not head.inv_exists))
    status = _status_after(conn, session_id, head, final_status, statuses)
    interrupts_changed = bool(batch.new_rows or batch.stored_answers or batch.cancels)
    n_open, oldest_open = _open_after(conn, session_id, batch, head.n_open, head.oldest_open)
    if batch.audits:
        conn.executemany(
            "INSERT INTO audit (at, action, operator, reason, session_id, invocation_id, seq, event_id, details)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            batch.audits,
        )
    _update_session(
        conn, session_id, head, prepared[-1].timestamp, batch.seqs[-1], status,
        (n_open, oldest_open) if interrupts_changed else None,
        head.n_invocations + n_new if n_new else None,
        batch.state if has_delta else None,
    )
    return batch.seqs, batch.state, head.acquired_at


@dataclass(slots=True)
class _Head:
    """The session row as the batch finds it (the head statement's columns)."""

    app_name: str
    user_id: str
    last: int
    updated_at: float
    status: str
    n_open: int
    oldest_open: float | None
    n_invocations: int
    held: str | None
    """The lease owner of the batch's first invocation (read for fencing)."""
    state_json: str | None
    acquired_at: float | None = None
    """With ``acquire``: the held lease's ``acquired_at`` (None: a new lease)."""
    inv_exists: bool = True
    """Whether the batch's one invocation has a row (a new one: no UPDATE tried first)."""
    others: list[Any] | None = None
    """With ``probe``: whether the session's other invocations have each status."""


def _read_head(
    conn: sqlite3.Connection,
    session_id: str,
    inv0: str,
    created: tuple[str, str, str, float] | None,
    *,
    lease: bool,
    state: bool,
    acquire: tuple[str, float] | None,
    invocation_after: int | None,
    probe: bool,
    touch: bool,
) -> _Head:
    """The head statement (:func:`_append_head_sql`), or what it would read of a
    row just inserted (``created``); and the checks of taking the lease
    (``acquire``) and of the invocation not having moved on (``invocation_after``)."""
    if created is None:
        head = _append_head_sql(lease, state, acquire is not None, invocation_after is not None, probe, touch)
        row = conn.execute(head, (inv0, session_id)).fetchone()
        if row is None:
            raise SessionNotFoundError(session_id)
    else:  # what the head would read of the row just inserted, in the head's column order
        c_app, c_user, c_state, c_updated = created
        row = (
            c_app, c_user, 0, c_updated, "new", 0, None, 0, None, c_state if state else None,
            *((None, None) if acquire is not None else ()), *((None,) if invocation_after is not None else ()),
            *((0,) * len(_INVOCATION_STATES) if probe else ()),
        )
    out = _Head(*row[:10])
    extra = list(row[10:])
    if acquire is not None:
        acquired_at, expires_at = extra[:2]
        del extra[:2]
        owner, now = acquire
        held = out.held
        if held is not None and held != owner and expires_at > now:
            raise InvocationBusyError(
                inv0,
                Lease(
                    session_id=session_id, invocation_id=inv0, owner=held, acquired_at=acquired_at,
                    renewed_at=acquired_at, expires_at=expires_at,
                ),
            )
        out.acquired_at = acquired_at if held == owner else None
        out.held = None
    if invocation_after is not None:
        inv_last = extra.pop(0)
        if inv_last is not None and inv_last > invocation_after:
            raise ConflictError(f"invocation {inv0} changed since event {invocation_after}; read it again")
    out.inv_exists = bool(extra.pop()) if touch else True
    out.others = extra if probe else None
    return out


def _check_writer(
    conn: sqlite3.Connection,
    session_id: str,
    invs: list[str],
    head: _Head,
    expected_seq: int | None,
    lease_owner: str | None,
) -> None:
    """The session is where the writer expects it (``expected_seq``) and the writer
    holds the lease of every invocation of the batch (fencing, ``lease_owner``)."""
    last = head.last
    if expected_seq is not None and expected_seq != last:
        raise ConflictError(
            f"session {session_id} changed (now at event {last}, expected {expected_seq}); reload and retry"
        )
    if lease_owner is not None:
        held = head.held
        for inv in invs:
            if inv != invs[0]:
                r = conn.execute(
                    "SELECT owner FROM leases WHERE session_id = ? AND invocation_id = ?", (session_id, inv)
                ).fetchone()
                held = r[0] if r else None
            if held != lease_owner:
                holder = Lease(
                    session_id=session_id, invocation_id=inv, owner=held, acquired_at=0, renewed_at=0, expires_at=0
                ).holder if held is not None else None
                raise LeaseLostError(session_id, inv, lease_owner, holder)


@dataclass(slots=True)
class _Batch:
    """What a batch of events does, folded in one pass in order (:func:`_fold`)."""

    seqs: list[int]
    state: dict[str, Any] | None
    event_rows: list[Any]
    new_rows: dict[tuple[str, str], list[Any]]
    """(invocation, id) -> interrupts row raised in this batch, as it ends up."""
    stored_answers: dict[tuple[str, str], tuple[str, int]]
    """(invocation, id) -> (event id, seq): answers to ids raised before this batch."""
    cancels: list[tuple[int, str]]
    owned: dict[tuple[str, str], tuple[str | None, float | None]]
    """(invocation, id) -> (owner, since) of stored rows that ownership events of this batch change."""
    changes: dict[str, _InvocationChange]
    audits: list[tuple[Any, ...]]


def _fold(conn: sqlite3.Connection, session_id: str, prepared: list[Prepared], head: _Head) -> _Batch:
    """One pass over the batch, in order: what each event does to the interrupts
    raised in this batch (in memory), to rows already stored, and to invocations.
    AlreadyResolvedError: an answer to an id this batch or the index shows is not open."""
    app_name, user_id = head.app_name, head.user_id
    new_rows: dict[tuple[str, str], list[Any]] = {}
    stored_answers: dict[tuple[str, str], tuple[str, int]] = {}
    cancels: list[tuple[int, str]] = []
    cancelled: set[str] = set()
    owned: dict[tuple[str, str], tuple[str | None, float | None]] = {}
    changes: dict[str, _InvocationChange] = {}
    audits: list[tuple[Any, ...]] = []
    event_rows: list[Any] = []
    seqs: list[int] = []
    state: dict[str, Any] | None = json.loads(head.state_json) if head.state_json is not None else None
    for seq, p in enumerate(prepared, start=head.last + 1):
        inv = p.invocation_id
        seqs.append(seq)
        event_rows += (session_id, seq, inv, p.event_id, p.timestamp, p.path, p.kind, p.json)
        if p.resolved:
            bad = []
            for iid in p.resolved:
                key = (inv, iid)
                r = new_rows.get(key)
                if r is not None:
                    if r[9] != "open":
                        bad.append(iid)
                    else:
                        r[9], r[10], r[11] = "resolved", p.event_id, seq
                elif key in stored_answers or inv in cancelled:
                    bad.append(iid)
                else:
                    stored_answers[key] = (p.event_id, seq)
            if bad:
                raise AlreadyResolvedError(bad)
        for iid, path, name, args in p.opened:
            new_rows[(inv, iid)] = [
                session_id, inv, iid, path, p.event_id, name, args, seq, p.timestamp, "open", None, None, app_name, user_id,
                None, None,
            ]
            owned.pop((inv, iid), None)  # raised again: a new interrupt, nobody's yet
        if p.owners is not None:
            owned.update(_owner_change(conn, session_id, inv, p, new_rows, stored_answers, owned, cancelled))
        if p.cancel:
            for (r_inv, _), r in new_rows.items():
                if r_inv == inv and r[9] == "open":
                    r[9], r[11] = "cancelled", seq
            cancels.append((seq, inv))
            cancelled.add(inv)
        ch = changes.get(inv)
        if ch is None:
            ch = changes[inv] = _InvocationChange(seq, p.timestamp, p.new_message or "")
        if p.invocation_status is not None:
            ch.status = p.invocation_status
        ch.updated_at = p.timestamp
        if p.audit is not None:
            action, operator, reason, details = p.audit
            audits.append((p.timestamp, action, operator, reason, session_id, inv, seq, p.event_id, details))
        if p.delta:
            assert state is not None
            state.update(p.delta)
    return _Batch(seqs, state, event_rows, new_rows, stored_answers, cancels, owned, changes, audits)


def _write_interrupt_changes(conn: sqlite3.Connection, session_id: str, batch: _Batch) -> None:
    """What the batch does to interrupts stored before it: answers (AlreadyResolvedError
    naming the ids that were not open), cancellations and ownership."""
    stored_answers = batch.stored_answers
    if stored_answers:
        cur = conn.executemany(
            "UPDATE interrupts SET status = 'resolved', resolved_by = ?, resolved_seq = ?"
            " WHERE session_id = ? AND invocation_id = ? AND interrupt_id = ? AND status = 'open'",
            [(eid, seq, session_id, inv, iid) for (inv, iid), (eid, seq) in stored_answers.items()],
        )
        if cur.rowcount != len(stored_answers):  # some id was not open: say which (nothing is kept)
            bad = [
                iid
                for (inv, iid), (eid, _) in stored_answers.items()
                if conn.execute(
                    "SELECT 1 FROM interrupts WHERE session_id = ? AND invocation_id = ? AND interrupt_id = ?"
                    " AND resolved_by = ?",
                    (session_id, inv, iid, eid),
                ).fetchone()
                is None
            ]
            raise AlreadyResolvedError(bad)
    for seq, inv in batch.cancels:
        conn.execute(
            "UPDATE interrupts SET status = 'cancelled', resolved_seq = ?"
            " WHERE session_id = ? AND invocation_id = ? AND status = 'open'",
            (seq, session_id, inv),
        )
    if batch.owned:
        conn.executemany(
            "UPDATE interrupts SET owner = ?, owned_at = ?"
            " WHERE session_id = ? AND invocation_id = ? AND interrupt_id = ? AND status = 'open'",
            [(who, at, session_id, inv, iid) for (inv, iid), (who, at) in batch.owned.items()],
        )


def _insert_events_and_interrupts(conn: sqlite3.Connection, batch: _Batch) -> None:
    """The batch's events (multi-row INSERTs) and the interrupts it raised."""
    event_rows = batch.event_rows
    for i in range(0, len(event_rows), _EVENT_COLS * _INSERT_EVENTS_CHUNK):
        chunk = event_rows[i : i + _EVENT_COLS * _INSERT_EVENTS_CHUNK]
        conn.execute(
            "INSERT INTO events (session_id, seq, invocation_id, event_id, timestamp, path, kind, json) VALUES "
            + ", ".join(["(?, ?, ?, ?, ?, ?, ?, ?)"] * (len(chunk) // _EVENT_COLS)),
            chunk,
        )
    if batch.new_rows:
        conn.executemany(
            "INSERT OR REPLACE INTO interrupts (session_id, invocation_id, interrupt_id, path, event_id, name, args,"
            " raised_seq, raised_at, status, resolved_by, resolved_seq, app_name, user_id, owner, owned_at)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            list(batch.new_rows.values()),
        )


def _write_invocations(
    conn: sqlite3.Connection, session_id: str, changes: dict[str, _InvocationChange], *, update_first: bool
) -> tuple[list[str], int]:
    """The batch's invocation rows: each updated, or inserted when it has none
    (``update_first`` False: known to have none). Returns the statuses they got
    (the ones that may change the session's) and how many were inserted."""
    # Most events leave the invocation's status alone: touch updated_at only, and
    # recompute the session's status just when an invocation appears or may change.
    statuses: list[str] = []
    new_invocations: list[tuple[Any, ...]] = []
    for inv, ch in changes.items():
        if update_first:
            cur = conn.execute(
                "UPDATE invocations SET status = coalesce(?, status), updated_at = ?"
                " WHERE session_id = ? AND invocation_id = ?",
                (ch.status, ch.updated_at, session_id, inv),
            )
            if cur.rowcount:
                if ch.status is not None:
                    statuses.append(ch.status)
                continue
        st = ch.status or "running"
        new_invocations.append((session_id, inv, st, ch.first_seq, ch.first_at, ch.updated_at, ch.message))
        statuses.append(st)
    if new_invocations:
        conn.executemany(
            "INSERT INTO invocations (session_id, invocation_id, status, started_seq, started_at, updated_at, message)"
            " VALUES (?, ?, ?, ?, ?, ?, ?)",
            new_invocations,
        )
    return statuses, len(new_invocations)


def _status_after(
    conn: sqlite3.Connection, session_id: str, head: _Head, final_status: str | None, statuses: list[str]
) -> str:
    """The session's status after the batch (:func:`engine.store.base.session_status`)."""
    if head.others is not None:  # probed with the head: the other invocations, plus this one
        assert final_status is not None
        present = {st for st, there in zip(_INVOCATION_STATES, head.others, strict=True) if there} | {final_status}
        return session_status([st for st in _INVOCATION_STATES if st in present])
    if statuses:
        if all(s == "running" for s in statuses):
            return "running"  # the highest-ranking status: no need to look at the others
        # index probes (invocations_by_status), not a read of every invocation
        present = conn.execute(_STATUSES_SQL, (session_id,)).fetchone()
        return session_status([s for s, there in zip(_INVOCATION_STATES, present, strict=True) if there])
    return head.status


def _open_after(
    conn: sqlite3.Connection, session_id: str, batch: _Batch, n_open: int, oldest_open: float | None
) -> tuple[int, float | None]:
    """The session's open interrupts after the batch: (count, oldest raised_at)."""
    if batch.new_rows or batch.cancels or (batch.stored_answers and n_open - len(batch.stored_answers) > 0):
        n_open, oldest_open = conn.execute(
            "SELECT count(*), min(raised_at) FROM interrupts WHERE session_id = ? AND status = 'open'", (session_id,)
        ).fetchone()
    elif batch.stored_answers:
        n_open, oldest_open = 0, None  # every open interrupt of the session was answered
    return n_open, oldest_open


def _update_session(
    conn: sqlite3.Connection,
    session_id: str,
    head: _Head,
    last_event_at: float,
    seq: int,
    status: str,
    open_interrupts: tuple[int, float | None] | None,
    invocation_count: int | None,
    state: dict[str, Any] | None,
) -> None:
    """The session row after the batch; ``open_interrupts``, ``invocation_count``
    and ``state``: None when the batch left them as they were."""
    # Only columns that changed are SET: SQLite then leaves the four listing
    # indexes alone. updated_at (in all of them) moves at most once a second
    # unless the status changed, which is precise enough to sort by activity
    # and makes a busy session's appends much cheaper.
    sets: dict[str, Any] = {"last_seq": seq, "last_event_at": last_event_at, "event_count": seq}
    updated_at = head.updated_at
    now = max(time.time(), updated_at)
    status_changed = status != head.status
    if status_changed:
        sets["status"] = status
    if status_changed or now - updated_at >= _UPDATED_AT_RESOLUTION:
        sets["updated_at"] = now
    if open_interrupts is not None:
        sets["open_interrupts"], sets["oldest_open_at"] = open_interrupts
    if invocation_count is not None:
        sets["invocation_count"] = invocation_count
    if state is not None:
        sets["state"] = to_json(state).decode()
    conn.execute(
        f"UPDATE sessions SET {', '.join(f'{k} = ?' for k in sets)} WHERE id = ?",  # keys are fixed names above
        (*sets.values(), session_id),
    )


def _owner_change(
    conn: sqlite3.Connection,
    session_id: str,
    inv: str,
    p: Prepared,
    new_rows: dict[tuple[str, str], list[Any]],
    stored_answers: dict[tuple[str, str], tuple[str, int]],
    owned: dict[tuple[str, str], tuple[str | None, float | None]],
    cancelled: set[str],
) -> dict[tuple[str, str], tuple[str | None, float | None]]:
    """Check an ownership event against the index as this batch leaves it so far
    (:func:`engine.store.owner_index.check_owner_change`); apply it to the rows
    raised in this batch and return what it sets on stored rows."""
    change = p.owners
    assert change is not None
    current: dict[str, tuple[str, str | None]] = {}
    stored = []
    for iid in change.ids:
        key = (inv, iid)
        r = new_rows.get(key)
        if r is not None:
            current[iid] = (r[9], r[14])
        elif key in stored_answers or inv in cancelled:
            current[iid] = ("resolved", None)
        elif key in owned:
            current[iid] = ("open", owned[key][0])
        else:
            stored.append(iid)
    if stored:
        marks = ", ".join("?" * len(stored))
        for iid, status, owner in conn.execute(
            "SELECT interrupt_id, status, owner FROM interrupts"
            f" WHERE session_id = ? AND invocation_id = ? AND interrupt_id IN ({marks})",
            (session_id, inv, *stored),
        ):
            current[iid] = (status, owner)
    check_owner_change(change, current)
    out = {}
    for iid in change.ids:
        r = new_rows.get((inv, iid))
        if r is not None:
            r[14], r[15] = change.owner, p.timestamp if change.owner else None
        else:
            out[(inv, iid)] = (change.owner, p.timestamp if change.owner else None)
    return out


def _import_tx(
    conn: sqlite3.Connection,
    session_id: str,
    session: Session,
    events: list[Prepared],
    record: AuditRecord,
    checkpoints: list[tuple[int, bytes]],
) -> None:
    created = _create_tx(
        conn,
        session_id,
        session.app_name,
        session.user_id,
        to_json(session.state).decode(),
        session.created_at,
        max(time.time(), session.created_at),
    )
    if events:
        _append_batch(conn, session_id, events, 0, None, created=created)
    conn.execute(
        "INSERT INTO audit (at, action, operator, reason, session_id, details) VALUES (?, ?, ?, ?, ?, ?)",
        (record.at, record.action, record.operator, record.reason, session_id, to_json(record.details).decode()),
    )
    if checkpoints:  # the seek checkpoints the import's validating pass folded (engine/checkpoints.py)
        from .checkpoints import _put_checkpoints

        _put_checkpoints(conn, session_id, checkpoints)


def _bulk_tx(conn: sqlite3.Connection, batch: list[tuple[Session, list[Event]]]) -> int:
    n = 0
    for session, events in batch:
        created = _create_tx(
            conn,
            session.id,
            session.app_name,
            session.user_id,
            to_json(session.state).decode(),
            session.created_at,
            session.created_at,
        )
        if events:
            _append_batch(conn, session.id, [prepare(e) for e in events], 0, None, created=created)
            n += len(events)
    return n
