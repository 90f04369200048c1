"""Export, import and bulk load: whole sessions' derived rows in one pass, one statement per batch."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import time
from collections.abc import AsyncIterator, Iterable
from typing import TYPE_CHECKING, Any, cast

import asyncpg
from pydantic_core import to_json

from ...errors import AlreadyResolvedError, ConflictError
from ...models import Event, Session
from .. import jsonl
from ..base import InvocationState, import_record, session_status
from ..owner_index import check_owner_change
from ..sql.prepared import Prepared, prepare
from .core import _Core

if TYPE_CHECKING:
    from ..base import SessionStore


class _Bulk(_Core):
    """Export, import and bulk load."""

    def export_session(self, session_id: str) -> AsyncIterator[str]:
        """The session as JSON Lines (see :mod:`engine.store.jsonl`), one line per item."""
        return jsonl.export_lines(cast("SessionStore", self), session_id)  # self: a mixin of the whole store

    async def import_session(
        self,
        lines: Iterable[str | bytes],
        *,
        session_id: str | None = None,
        operator: str | None = None,
        reason: str | None = None,
        source: str | None = None,
    ) -> Session:
        """Create a session from an export, in ONE transaction: a bad file (or an
        existing session) rolls it back, so nothing of it is ever seen. The events
        stream in: a worker thread parses and checks the next chunk
        (:class:`~engine.store.jsonl.ExportReader`) while the server COPYs the
        previous one; the derived rows of the whole session, computed in one pass
        (:class:`_Batch`), and the audit record follow in one statement, then the
        seek checkpoints the reader folded on the way (engine/checkpoints.py)."""
        self._check_writable()
        reader = jsonl.ExportReader(lines, checkpoints=True)  # the seek checkpoints too, in the same pass
        sid = session_id or reader.session.id
        events = reader.events()

        def next_chunk(first_seq: int) -> tuple[list[Prepared], list[tuple[Any, ...]]]:
            chunk = [prepare(e) for e in itertools.islice(events, _IMPORT_CHUNK)]
            return chunk, [_event_row(sid, first_seq + i, p) for i, p in enumerate(chunk)]

        async def fn(conn: asyncpg.Connection) -> None:
            async with conn.transaction():
                try:  # the events' foreign key; its summary is written at the end
                    await conn.execute(_IMPORT_SESSION_SQL, sid, reader.session.app_name, reader.session.user_id)
                except asyncpg.UniqueViolationError:
                    raise ConflictError(f"session {sid!r} already exists") from None
                prepared: list[Prepared] = []
                pending: asyncio.Future[Any] | None = None
                while True:
                    try:
                        chunk, rows = await asyncio.to_thread(next_chunk, len(prepared) + 1)
                    except BaseException:
                        if pending is not None:  # let the COPY in flight end before the rollback
                            with contextlib.suppress(Exception):
                                await pending
                        raise
                    if pending is not None:
                        await pending
                        pending = None
                    if not chunk:
                        break
                    pending = asyncio.ensure_future(
                        conn.copy_records_to_table("events", records=rows, columns=_EVENT_COLUMNS)
                    )
                    prepared += chunk
                record = import_record(sid, len(prepared), operator, reason, source, reader.session.id)
                now = time.time()
                batch = _Batch()
                batch.add(sid, reader.session, prepared, updated_at=max(now, reader.session.created_at), now=now)
                batch.events = []  # copied above
                batch.audit.append(
                    (
                        record.at,
                        record.action,
                        record.operator,
                        record.reason,
                        sid,
                        None,
                        None,
                        None,
                        to_json(record.details).decode(),
                    )
                )
                await batch.write(conn, _FINISH_IMPORT_SQL)
                if reader.checkpoints is not None and reader.checkpoints.rows:
                    await conn.executemany(
                        "INSERT INTO projection_checkpoints (session_id, seq, data) VALUES ($1, $2, $3)",
                        [(sid, seq, data.decode()) for seq, data in reader.checkpoints.rows],
                    )

        # Neither redone after a lost connection (it may have committed) nor after a
        # serialisation failure: the export's lines were consumed.
        await self._run(fn, retry=False, reconnect=False)
        return await self.get_session(sid)

    async def bulk_load(self, sessions: Iterable[tuple[Session, Iterable[Event]]], *, batch_size: int = 500) -> int:
        """Create many sessions with their events, ``batch_size`` sessions per
        statement (derived rows computed in one pass, :class:`_Batch`). Returns the
        events written."""
        self._check_writable()
        total = 0
        batch = _Batch()

        async def flush(b: _Batch) -> int:
            async def fn(conn: asyncpg.Connection) -> int:
                try:
                    await b.write(conn)
                except asyncpg.UniqueViolationError as e:
                    raise ConflictError(f"a session of the batch already exists ({e.detail or e})") from None
                return len(b.events)

            return await self._run(fn, reconnect=False)

        now = time.time()
        for session, events in sessions:
            batch.add(session.id, session, [prepare(e) for e in events], updated_at=session.created_at, now=now)
            if len(batch.sessions) >= batch_size:
                total += await flush(batch)
                batch = _Batch()
        if batch.sessions:
            total += await flush(batch)
        return total


_SESSION_ARRAYS = """unnest($1::text[], $2::text[], $3::text[], $4::jsonb[], $5::float8[], $6::float8[],
    $7::bigint[], $8::text[], $9::int[], $10::float8[], $11::float8[], $12::bigint[], $13::int[])"""

_BATCH_ROWS_SQL = """ e AS (
    INSERT INTO events (session_id, seq, invocation_id, event_id, timestamp, path, kind, json)
    SELECT * FROM unnest($14::text[], $15::bigint[], $16::text[], $17::text[], $18::float8[], $19::text[],
                         $20::text[], $21::text[])
), i AS (
    INSERT INTO interrupts (session_id, invocation_id, interrupt_id, path, event_id, name, args, raised_seq,
                            raised_at, status, resolved_by, resolved_seq, app_name, user_id)
    SELECT * FROM unnest($22::text[], $23::text[], $24::text[], $25::text[], $26::text[], $27::text[], $28::text[],
                         $29::bigint[], $30::float8[], $31::text[], $32::text[], $33::bigint[], $34::text[],
                         $35::text[])
), v AS (
    INSERT INTO invocations (session_id, invocation_id, status, started_seq, started_at, updated_at, message)
    SELECT * FROM unnest($36::text[], $37::text[], $38::text[], $39::bigint[], $40::float8[], $41::float8[],
                         $42::text[])
), a AS (
    INSERT INTO audit (at, action, operator, reason, session_id, invocation_id, seq, event_id, details)
    SELECT * FROM unnest($43::float8[], $44::text[], $45::text[], $46::text[], $47::text[], $48::text[],
                         $49::bigint[], $50::text[], $51::text[])
)
SELECT 1
"""

_BATCH_SQL = f"""
WITH s AS (
    INSERT INTO sessions (id, app_name, user_id, state, created_at, updated_at, last_seq, status, open_interrupts,
                          oldest_open_at, last_event_at, event_count, invocation_count)
    SELECT * FROM {_SESSION_ARRAYS}
),{_BATCH_ROWS_SQL}"""
"""A batch of whole sessions in ONE statement: every table's rows as column arrays
(unnest), so one round trip and one transaction whatever the size. The foreign
keys are checked at the end of the statement, when the sessions are in."""

_FINISH_IMPORT_SQL = f"""
WITH s AS (
    UPDATE sessions AS t SET state = u.state, created_at = u.created_at, updated_at = u.updated_at,
           last_seq = u.last_seq, status = u.status, open_interrupts = u.open_interrupts,
           oldest_open_at = u.oldest_open_at, last_event_at = u.last_event_at, event_count = u.event_count,
           invocation_count = u.invocation_count
      FROM {_SESSION_ARRAYS} AS u(id, app_name, user_id, state, created_at, updated_at, last_seq, status,
                                  open_interrupts, oldest_open_at, last_event_at, event_count, invocation_count)
     WHERE t.id = u.id
),{_BATCH_ROWS_SQL}"""
"""An import's last statement: the same rows as :data:`_BATCH_SQL` (its events
already COPYed), the session row inserted first updated to its summary."""

_IMPORT_SESSION_SQL = "INSERT INTO sessions (id, app_name, user_id, created_at, updated_at) VALUES ($1, $2, $3, 0, 0)"
"""An import's first statement: the session row its events' foreign key needs
(and the 'already exists' check, held until the import commits or rolls back)."""

_IMPORT_CHUNK = 5000
"""Events per COPY of an import (parsed while the previous one is written)."""

_EVENT_COLUMNS = ["session_id", "seq", "invocation_id", "event_id", "timestamp", "path", "kind", "json"]


def _event_row(sid: str, seq: int, p: Prepared) -> tuple[Any, ...]:
    """The ``events`` row of a prepared event (columns :data:`_EVENT_COLUMNS`)."""
    return (sid, seq, p.invocation_id, p.event_id, p.timestamp, p.path, p.kind, p.json)


class _Batch:
    """The rows a run of appends would write, computed in one pass in Python.

    :meth:`add` folds a new session's prepared events exactly as ``hitl_append``
    does one by one -- the interrupt index (raise, re-raise, answer, cancel), the
    invocations, the session's summary, status, state and ``updated_at`` rule,
    the audit rows -- with the same check (an answer must name an interrupt open
    in its invocation: AlreadyResolvedError), but each row is written once, in
    its final form, by :meth:`write`. This is what makes a 100,000-event import
    linear: the per-event path updates the session row once per event."""

    def __init__(self) -> None:
        self.sessions: list[tuple[Any, ...]] = []
        self.events: list[tuple[Any, ...]] = []
        self.interrupts: list[tuple[Any, ...]] = []
        self.invocations: list[tuple[Any, ...]] = []
        self.audit: list[tuple[Any, ...]] = []
        self.owners: list[tuple[Any, ...]] = []
        """(session, invocation, interrupt id, owner, owned_at) of the interrupts someone owns."""

    def add(self, sid: str, session: Session, prepared: list[Prepared], *, updated_at: float, now: float) -> None:
        interrupts: dict[tuple[str, str], list[Any]] = {}
        """(invocation, interrupt id) -> [path, event_id, name, args, raised_seq, raised_at, status,
        resolved_by, resolved_seq]"""
        open_by_inv: dict[str, set[str]] = {}
        invocations: dict[str, list[Any]] = {}
        """invocation -> [status, started_seq, started_at, updated_at, message]"""
        counts: dict[InvocationState, int] = {}
        owners: dict[tuple[str, str], str | None] = {}
        owned_at: dict[tuple[str, str], float] = {}
        state = dict(session.state)
        status = "new"
        updated = updated_at
        last_ts = None
        for seq, p in enumerate(prepared, start=1):
            inv = p.invocation_id
            open_here = open_by_inv.setdefault(inv, set())
            if p.resolved:
                bad = [r for r in p.resolved if r not in open_here]
                if bad:
                    raise AlreadyResolvedError(bad)
            self.events.append(_event_row(sid, seq, p))
            for iid, path, name, args in p.opened:  # a later duplicate wins, as in hitl_append
                interrupts[inv, iid] = [path, p.event_id, name, args, seq, p.timestamp, "open", None, None]
                open_here.add(iid)
                owners.pop((inv, iid), None)  # raised again: nobody's yet
            for iid in p.resolved:
                rec = interrupts[inv, iid]
                rec[6:9] = ["resolved", p.event_id, seq]
                open_here.discard(iid)
            if p.owners is not None:  # as the live path checks it (engine/store/owner_index.py)
                ch = p.owners
                check_owner_change(
                    ch, {i: (known[6], owners.get((inv, i))) for i in ch.ids if (known := interrupts.get((inv, i)))}
                )
                for i in ch.ids:
                    owners[inv, i] = ch.owner
                    owned_at[inv, i] = p.timestamp
            if p.cancel:
                for iid in open_here:
                    rec = interrupts[inv, iid]
                    rec[6], rec[8] = "cancelled", seq
                open_here.clear()
            row = invocations.get(inv)
            changed = row is None or p.invocation_status is not None
            if row is None:
                invocations[inv] = [
                    p.invocation_status or "running",
                    seq,
                    p.timestamp,
                    p.timestamp,
                    p.new_message or "",
                ]
                counts[invocations[inv][0]] = counts.get(invocations[inv][0], 0) + 1
            else:
                row[3] = p.timestamp
                if p.invocation_status is not None:
                    counts[row[0]] -= 1
                    row[0] = p.invocation_status
                    counts[row[0]] = counts.get(row[0], 0) + 1
            before = status
            if changed:
                status = session_status([k for k, n in counts.items() if n > 0])
            if status != before or max(now, updated) - updated >= 1.0:
                updated = max(now, updated)
            if p.audit is not None:
                action, operator, reason, details = p.audit
                self.audit.append((p.timestamp, action, operator, reason, sid, inv, seq, p.event_id, details))
            if p.delta is not None:
                state.update(p.delta)
            last_ts = p.timestamp
        open_at = [rec[5] for rec in interrupts.values() if rec[6] == "open"]
        self.sessions.append(
            (
                sid,
                session.app_name,
                session.user_id,
                to_json(state).decode(),
                session.created_at,
                updated,
                len(prepared),
                status,
                len(open_at),
                min(open_at, default=None),
                last_ts,
                len(prepared),
                len(invocations),
            )
        )
        for (inv, iid), r in interrupts.items():
            self.interrupts.append((sid, inv, iid, *r, session.app_name, session.user_id))
            if owners.get((inv, iid)) is not None:
                self.owners.append((sid, inv, iid, owners[inv, iid], owned_at[inv, iid]))
        for inv, r in invocations.items():
            self.invocations.append((sid, inv, *r))

    async def write(self, conn: asyncpg.Connection, sql: str = _BATCH_SQL) -> None:
        args: list[list[Any]] = []
        for rows, width in (
            (self.sessions, 13),
            (self.events, 8),
            (self.interrupts, 14),
            (self.invocations, 7),
            (self.audit, 9),
        ):
            args += [list(col) for col in zip(*rows, strict=True)] if rows else [[] for _ in range(width)]
        if not self.owners:
            await conn.execute(sql, *args)
            return
        async with conn.transaction():  # a savepoint inside an import's transaction
            await conn.execute(sql, *args)
            await conn.execute(_SET_OWNERS_SQL, *[list(col) for col in zip(*self.owners, strict=True)])


_SET_OWNERS_SQL = """UPDATE interrupts i SET owner = o.owner, owned_at = o.at
    FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::float8[]) AS o(sid, inv, iid, owner, at)
    WHERE i.session_id = o.sid AND i.invocation_id = o.inv AND i.interrupt_id = o.iid"""
