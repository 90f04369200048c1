"""In-memory ``SessionStore``: for tests and embedding. Same contract as SQLite.

Events are kept as their JSON text (as SQLite keeps them), so a caller can never
mutate stored history through a shared object.
"""

from __future__ import annotations

import asyncio
import copy
import json
import time
from collections.abc import AsyncIterator, Iterable
from typing import TYPE_CHECKING, Any

from ..errors import (
    AlreadyResolvedError,
    ConflictError,
    InvocationBusyError,
    LeaseLostError,
    ReadOnlyError,
    SessionNotFoundError,
)
from ..models import Event, Session, StoredEvent, new_id
from . import jsonl
from .base import (
    AuditRecord,
    Capability,
    InterruptRecord,
    InvocationSummary,
    Lease,
    Page,
    SessionOrder,
    SessionSummary,
    StoreOverview,
    import_record,
    index_effects,
    session_status,
)
from .memory_workers import MemoryWorkerQueue
from .metric_rows import StoreMetrics, store_metrics
from .owner_index import check_owner_change

if TYPE_CHECKING:
    from .deadlines import Timers
    from .notify import Ledger


def _audit_cursor(cursor: str) -> tuple[float, int]:
    try:
        at, no = json.loads(cursor)
        return float(at), int(no)
    except (ValueError, TypeError):
        raise ValueError(f"invalid page cursor {cursor!r}; pass back a next_cursor this store returned") from None


def _check_limit(limit: int) -> None:
    if limit < 1:
        raise ValueError(f"limit must be at least 1, not {limit}")


class _SessionData:
    def __init__(self, session: Session) -> None:
        self.session = session
        self.events: list[str] = []
        self.invocation_seqs: dict[str, list[int]] = {}
        self.invocations: dict[str, InvocationSummary] = {}
        self.interrupts: dict[tuple[str, str], InterruptRecord] = {}
        self.snapshots: dict[str, tuple[int, dict[str, Any]]] = {}


class MemoryStore(MemoryWorkerQueue):
    """A dict-backed store; one asyncio lock makes each append atomic. Its worker
    queue is :class:`~engine.store.memory_workers.MemoryWorkerQueue`."""

    capabilities: frozenset[Capability] = frozenset({"append_and_release", "acquire_and_append", "leases_of"})
    """No optional features (see :data:`engine.store.base.Capability`)."""

    def __init__(self, *, read_only: bool = False, workers: bool = False) -> None:
        """``workers``: declare the worker queue (a worker in this process serves it;
        without it answers and starts run where they are made, as nothing else could)."""
        self.read_only = read_only
        if workers:
            self.capabilities = self.capabilities | {"worker_queue"}
        self._sessions: dict[str, _SessionData] = {}
        self._lock = asyncio.Lock()
        self._leases: dict[tuple[str, str], Lease] = {}
        self._audit: list[tuple[int, AuditRecord]] = []
        """(insertion number, record): the number orders ties of ``at``, like SQLite's rowid."""
        self._audit_no = 0
        self._deadline_rows: dict[Any, Any] = {}
        """The deadline timers' rows (:class:`engine.store.deadlines.MemoryTimers`), kept with the store."""
        self._init_queue()

    def _data(self, session_id: str) -> _SessionData:
        try:
            return self._sessions[session_id]
        except KeyError:
            raise SessionNotFoundError(session_id) from None

    def _check_writable(self) -> None:
        if self.read_only:
            raise ReadOnlyError("the store is open read-only; nothing was written")

    async def create_session(
        self, app_name: str, user_id: str, session_id: str | None = None, state: dict[str, Any] | None = None
    ) -> Session:
        self._check_writable()
        sid = session_id or new_id()
        if sid in self._sessions:
            raise ConflictError(f"session {sid!r} already exists")
        now = time.time()
        session = Session(id=sid, app_name=app_name, user_id=user_id, state=dict(state or {}), created_at=now, updated_at=now)
        self._sessions[sid] = _SessionData(session)
        return session.model_copy(deep=True)

    async def get_session(self, session_id: str) -> Session:
        return self._data(session_id).session.model_copy(deep=True)

    def _summary(self, d: _SessionData) -> SessionSummary:
        s = d.session
        open_ = [r for r in d.interrupts.values() if r.status == "open"]
        last_at = Event.from_json(d.events[-1]).timestamp if d.events else None
        return SessionSummary(
            id=s.id,
            app_name=s.app_name,
            user_id=s.user_id,
            status=session_status([i.status for i in d.invocations.values()]),
            open_interrupts=len(open_),
            oldest_open_at=min((r.raised_at for r in open_), default=None),
            last_event_at=last_at,
            event_count=len(d.events),
            invocation_count=len(d.invocations),
            created_at=s.created_at,
            updated_at=s.updated_at,
            owners=sorted({r.owner for r in open_ if r.owner}),
        )

    def _text_matches(self, r: SessionSummary, needle: str) -> bool:
        """The id, the user, the app, or one of its interrupt ids contains ``needle``."""
        if needle in r.id.lower() or needle in r.user_id.lower() or needle in r.app_name.lower():
            return True
        return any(needle in iid.lower() for _, iid in self._sessions[r.id].interrupts)

    def _owner_matches(self, session_id: str, owner: str) -> bool:
        """An open interrupt of the session is owned by ``owner`` (``""``: by nobody)."""
        return any(r.status == "open" and (r.owner or "") == owner
                   for r in self._sessions[session_id].interrupts.values())

    async def list_sessions(
        self,
        *,
        app_name: str | None = None,
        user_id: str | None = None,
        status: str | None = None,
        text: str | None = None,
        updated_before: float | None = None,
        updated_after: float | None = None,
        limit: int = 50,
        cursor: str | None = None,
        order: SessionOrder = "updated",
        owner: str | None = None,
    ) -> Page[SessionSummary]:
        _check_limit(limit)
        rows = [self._summary(d) for d in self._sessions.values()]
        rows = [
            r
            for r in rows
            if (app_name is None or r.app_name == app_name)
            and (user_id is None or r.user_id == user_id)
            and (status is None or r.status == status)
            and (text is None or self._text_matches(r, text.lower()))
            and (owner is None or self._owner_matches(r.id, owner))
            and (updated_before is None or r.updated_at < updated_before)
            and (updated_after is None or r.updated_at > updated_after)
        ]
        if order == "oldest_open":
            rows = [r for r in rows if r.oldest_open_at is not None]

            def key(r: SessionSummary) -> tuple[float, str]:
                return (r.oldest_open_at or 0.0, r.id)

            def field(r: SessionSummary) -> float:
                return r.oldest_open_at or 0.0

            sign = 1.0
        else:

            def key(r: SessionSummary) -> tuple[float, str]:
                return (-r.updated_at, r.id)

            def field(r: SessionSummary) -> float:
                return r.updated_at

            sign = -1.0
        rows.sort(key=key)
        if cursor:
            ts, sid = json.loads(cursor)
            rows = [r for r in rows if key(r) > (sign * ts, sid)]
        page = rows[:limit]
        nxt = json.dumps([field(page[-1]), page[-1].id]) if len(rows) > limit else None
        return Page(items=page, next_cursor=nxt)

    async def append_event(
        self, session_id: str, event: Event, *, expected_seq: int | None = None, lease_owner: str | None = None
    ) -> StoredEvent:
        self._check_writable()
        async with self._lock:
            return self._append(session_id, event, expected_seq, lease_owner)

    async def append_events(
        self, session_id: str, events: list[Event], *, expected_seq: int | None = None, lease_owner: str | None = None
    ) -> list[StoredEvent]:
        self._check_writable()
        async with self._lock:
            # Check every event before writing any: rejected means nothing written.
            d = self._data(session_id)
            answered: set[tuple[str, str]] = set()
            for i, event in enumerate(events):
                for iid in self._check_append(d, session_id, event, expected_seq if i == 0 else None, lease_owner):
                    if (event.invocation_id, iid) in answered:
                        raise AlreadyResolvedError([iid])
                    answered.add((event.invocation_id, iid))
            return [self._append(session_id, event, None, None) for event in events]

    def _check_append(
        self, d: _SessionData, session_id: str, event: Event, expected_seq: int | None, lease_owner: str | None
    ) -> list[str]:
        """Raise what appending ``event`` now would raise; return the ids it answers."""
        last = len(d.events)
        if expected_seq is not None and expected_seq != last:
            raise ConflictError(
                f"session {session_id} changed (now at event {last}, expected {expected_seq}); reload and retry"
            )
        if lease_owner is not None:
            held = self._leases.get((session_id, event.invocation_id))
            if held is None or held.owner != lease_owner:
                raise LeaseLostError(session_id, event.invocation_id, lease_owner, held.holder if held else None)
        eff = index_effects(event)
        inv = event.invocation_id
        bad = [i for i in eff.resolved if (r := d.interrupts.get((inv, i))) is None or r.status != "open"]
        if bad:
            raise AlreadyResolvedError(bad)
        if eff.owners is not None:
            check_owner_change(
                eff.owners,
                {i: (r.status, r.owner) for i in eff.owners.ids if (r := d.interrupts.get((inv, i))) is not None},
            )
        return list(eff.resolved)

    def _append(
        self, session_id: str, event: Event, expected_seq: int | None, lease_owner: str | None
    ) -> StoredEvent:
        d = self._data(session_id)
        self._check_append(d, session_id, event, expected_seq, lease_owner)
        last = len(d.events)
        if event.state_delta:
            kept = {k: v for k, v in event.state_delta.items() if not k.startswith("temp:")}
            event = event.model_copy(update={"state_delta": kept or None})
        eff = index_effects(event)
        inv = event.invocation_id
        seq = last + 1
        d.events.append(event.to_json())
        d.invocation_seqs.setdefault(inv, []).append(seq)
        s = d.session
        for iid, path, name, args in eff.opened:
            d.interrupts[(inv, iid)] = InterruptRecord(
                interrupt_id=iid,
                session_id=s.id,
                app_name=s.app_name,
                user_id=s.user_id,
                invocation_id=inv,
                path=path,
                event_id=event.id,
                name=name,
                args=copy.deepcopy(args),
                raised_seq=seq,
                raised_at=event.timestamp,
            )
        for iid in eff.resolved:
            r = d.interrupts[(inv, iid)]
            r.status, r.resolved_by, r.resolved_seq = "resolved", event.id, seq
        if eff.owners is not None:
            for iid in eff.owners.ids:
                r = d.interrupts[(inv, iid)]
                r.owner, r.owned_at = eff.owners.owner, event.timestamp if eff.owners.owner else None
        if eff.cancel_invocation:
            for r in d.interrupts.values():
                if r.invocation_id == inv and r.status == "open":
                    r.status, r.resolved_seq = "cancelled", seq
        summary = d.invocations.get(inv)
        if summary is None:
            summary = d.invocations[inv] = InvocationSummary(
                session_id=s.id,
                invocation_id=inv,
                status=eff.invocation_status or "running",
                started_seq=seq,
                started_at=event.timestamp,
                updated_at=event.timestamp,
                message=eff.new_invocation_message or "",
            )
        elif eff.invocation_status:
            summary.status = eff.invocation_status
        summary.updated_at = event.timestamp
        if eff.audit is not None:
            action, operator, reason, details = eff.audit
            self._add_audit(
                AuditRecord(
                    at=event.timestamp,
                    action=action,
                    operator=operator,
                    reason=reason,
                    session_id=session_id,
                    invocation_id=inv,
                    seq=seq,
                    event_id=event.id,
                    details=copy.deepcopy(details),
                )
            )
        if event.state_delta:
            s.state.update(copy.deepcopy(event.state_delta))
        s.last_seq = seq
        s.updated_at = max(time.time(), s.updated_at)
        return StoredEvent(seq=seq, session_id=session_id, event=Event.from_json(d.events[-1]))

    async def events(self, session_id: str, *, after_seq: int = 0, limit: int | None = None) -> list[StoredEvent]:
        d = self._data(session_id)
        end = len(d.events) if limit is None else min(len(d.events), after_seq + limit)
        return [
            StoredEvent(seq=i + 1, session_id=session_id, event=Event.from_json(d.events[i]))
            for i in range(max(after_seq, 0), end)
        ]

    async def event_at(self, session_id: str, seq: int) -> StoredEvent:
        d = self._data(session_id)
        if not 1 <= seq <= len(d.events):
            raise IndexError(f"session {session_id} has no event {seq} (it has {len(d.events)})")
        return StoredEvent(seq=seq, session_id=session_id, event=Event.from_json(d.events[seq - 1]))

    async def invocation_events(
        self, session_id: str, invocation_id: str, *, after_seq: int = 0
    ) -> list[StoredEvent]:
        d = self._data(session_id)
        return [
            StoredEvent(seq=q, session_id=session_id, event=Event.from_json(d.events[q - 1]))
            for q in d.invocation_seqs.get(invocation_id, [])
            if q > after_seq
        ]

    async def list_invocations(self, session_id: str) -> list[InvocationSummary]:
        d = self._data(session_id)
        return sorted((i.model_copy() for i in d.invocations.values()), key=lambda i: i.started_seq)

    async def invocation_count(self, session_id: str) -> int:
        return len(self._data(session_id).invocations)

    async def lookup_interrupts(self, session_id: str, interrupt_ids: list[str]) -> list[InterruptRecord]:
        d = self._data(session_id)
        wanted = set(interrupt_ids)
        return [r.model_copy(deep=True) for (_, iid), r in d.interrupts.items() if iid in wanted]

    async def open_interrupts(
        self,
        *,
        session_id: str | None = None,
        app_name: str | None = None,
        limit: int = 50,
        cursor: str | None = None,
        node: str | None = None,
        text: str | None = None,
        raised_before: float | None = None,
    ) -> Page[InterruptRecord]:
        _check_limit(limit)
        rows = [
            r
            for d in self._sessions.values()
            for r in d.interrupts.values()
            if r.status == "open"
            and (session_id is None or r.session_id == session_id)
            and (app_name is None or r.app_name == app_name)
            and (not node or f"/{node}@" in f"/{r.path}")
            and (not text or _message_has(r, text))
            and (raised_before is None or r.raised_at < raised_before)
        ]
        rows.sort(key=lambda r: (r.raised_at, r.session_id, r.raised_seq, r.interrupt_id))
        if cursor:
            key = tuple(json.loads(cursor))
            rows = [r for r in rows if (r.raised_at, r.session_id, r.raised_seq, r.interrupt_id) > key]
        page = rows[:limit]
        nxt = None
        if len(rows) > limit:
            last = page[-1]
            nxt = json.dumps([last.raised_at, last.session_id, last.raised_seq, last.interrupt_id])
        return Page(items=[r.model_copy(deep=True) for r in page], next_cursor=nxt)

    async def get_snapshot(self, session_id: str, invocation_id: str) -> tuple[int, dict[str, Any]] | None:
        snap = self._data(session_id).snapshots.get(invocation_id)
        return (snap[0], copy.deepcopy(snap[1])) if snap else None

    async def put_snapshot(self, session_id: str, invocation_id: str, seq: int, data: dict[str, Any]) -> None:
        self._check_writable()
        snaps = self._data(session_id).snapshots
        old = snaps.get(invocation_id)
        if old is None or seq >= old[0]:  # never replace a newer cache with an older one
            snaps[invocation_id] = (seq, copy.deepcopy(data))

    # ------------------------------------------------------------------ leases
    async def acquire_lease(
        self, session_id: str, invocation_id: str, owner: str, ttl: float, *, steal_from: str | None = None
    ) -> Lease:
        self._check_writable()
        async with self._lock:
            self._data(session_id)
            key = (session_id, invocation_id)
            now = time.time()
            held = self._leases.get(key)
            if held is not None and held.owner not in (owner, steal_from) and not held.expired(now):
                raise InvocationBusyError(invocation_id, held.model_copy())
            acquired = held.acquired_at if held is not None and held.owner == owner else now
            lease = Lease(
                session_id=session_id,
                invocation_id=invocation_id,
                owner=owner,
                acquired_at=acquired,
                renewed_at=now,
                expires_at=now + ttl,
            )
            self._leases[key] = lease
            return lease.model_copy()

    async def renew_lease(self, session_id: str, invocation_id: str, owner: str, ttl: float) -> Lease:
        self._check_writable()
        async with self._lock:
            self._data(session_id)
            held = self._leases.get((session_id, invocation_id))
            if held is None or held.owner != owner:
                raise LeaseLostError(session_id, invocation_id, owner, held.holder if held else None)
            now = time.time()
            held.renewed_at, held.expires_at = now, now + ttl
            return held.model_copy()

    async def release_lease(
        self,
        session_id: str,
        invocation_id: str,
        owner: str,
        *,
        snapshot: tuple[int, dict[str, Any]] | None = None,
    ) -> bool:
        self._check_writable()
        if snapshot is not None:
            await self.put_snapshot(session_id, invocation_id, *snapshot)
        async with self._lock:
            self._data(session_id)
            key = (session_id, invocation_id)
            held = self._leases.get(key)
            if held is None or held.owner != owner:
                return False
            del self._leases[key]
            return True

    async def acquire_and_append(
        self,
        session_id: str,
        invocation_id: str,
        events: list[Event],
        *,
        owner: str,
        ttl: float,
        expected_seq: int | None = None,
        invocation_after: int | None = None,
    ) -> tuple[Lease, list[StoredEvent], dict[str, Any]]:
        """Take the lease and append, all or none (see :data:`engine.store.base.Capability`)."""
        self._check_writable()
        d = self._data(session_id)
        if invocation_after is not None and any(q > invocation_after for q in d.invocation_seqs.get(invocation_id, [])):
            raise ConflictError(f"invocation {invocation_id} changed since event {invocation_after}; read it again")
        before = self._leases.get((session_id, invocation_id))
        lease = await self.acquire_lease(session_id, invocation_id, owner, ttl)
        try:
            written = await self.append_events(session_id, events, expected_seq=expected_seq, lease_owner=owner)
        except BaseException:
            if before is None:
                self._leases.pop((session_id, invocation_id), None)
            else:
                self._leases[(session_id, invocation_id)] = before
            raise
        return lease, written, copy.deepcopy(d.session.state)

    async def append_and_release(
        self,
        session_id: str,
        invocation_id: str,
        events: list[Event],
        *,
        owner: str,
        expected_seq: int | None = None,
        snapshot: tuple[int, dict[str, Any]] | None = None,
    ) -> list[StoredEvent]:
        """A turn's last events, its snapshot and its lease's release, all or none."""
        written = await self.append_events(session_id, events, expected_seq=expected_seq, lease_owner=owner)
        await self.release_lease(session_id, invocation_id, owner, snapshot=snapshot)
        return written

    def _running_invocations(self) -> list[tuple[str, InvocationSummary]]:
        """(app, invocation) of the running invocations of running sessions."""
        return [
            (d.session.app_name, i)
            for d in self._sessions.values()
            if self._summary(d).status == "running"
            for i in sorted(d.invocations.values(), key=lambda i: i.started_seq)
            if i.status == "running"
        ]

    def _invocation(self, session_id: str, invocation_id: str) -> InvocationSummary | None:
        d = self._sessions.get(session_id)
        return d.invocations.get(invocation_id) if d is not None else None

    async def get_lease(self, session_id: str, invocation_id: str) -> Lease | None:
        self._data(session_id)
        held = self._leases.get((session_id, invocation_id))
        return held.model_copy() if held else None

    async def list_leases(self, session_id: str) -> list[Lease]:
        self._data(session_id)
        return [v.model_copy() for (sid, _), v in sorted(self._leases.items()) if sid == session_id]

    async def leases_of(self, session_ids: list[str]) -> list[Lease]:
        wanted = set(session_ids)
        return [v.model_copy() for (sid, _), v in sorted(self._leases.items()) if sid in wanted]

    # ------------------------------------------------------------------- audit
    def _add_audit(self, record: AuditRecord) -> None:
        self._audit_no += 1
        self._audit.append((self._audit_no, record))

    async def overview(
        self, *, since: float, bucket: float = 3600.0, buckets: int = 24, running_limit: int = 500
    ) -> StoreOverview:
        status: dict[str, int] = {}
        by_app: dict[str, int] = {}
        by_owner: dict[str, int] = {}
        raised = [0] * buckets
        oldest: float | None = None
        running: list[tuple[str, str, str | None, float | None]] = []
        for sid in sorted(self._sessions):
            d = self._sessions[sid]
            summary = self._summary(d)
            status[summary.status] = status.get(summary.status, 0) + 1
            for r in d.interrupts.values():
                if r.status == "open":
                    by_app[r.app_name] = by_app.get(r.app_name, 0) + 1
                    if r.owner:
                        by_owner[r.owner] = by_owner.get(r.owner, 0) + 1
                    oldest = r.raised_at if oldest is None else min(oldest, r.raised_at)
                b = int((r.raised_at - since) // bucket)
                if r.raised_at >= since and 0 <= b < buckets:
                    raised[b] += 1
            if summary.status == "running":
                for inv in sorted(d.invocations.values(), key=lambda i: i.started_seq):
                    if inv.status == "running" and len(running) < running_limit:
                        lease = self._leases.get((sid, inv.invocation_id))
                        running.append((sid, inv.invocation_id, lease.owner if lease else None,
                                        lease.expires_at if lease else None))
        return StoreOverview(status_counts=status, open_by_app=by_app, oldest_open_at=oldest, raised=raised,
                             running=running, open_by_owner=by_owner)

    async def metric_reads(self) -> StoreMetrics:
        """Open interrupts per app and node, turn requests per app."""
        rows = [
            (r.app_name, r.path, 1, r.raised_at)
            for d in self._sessions.values()
            for r in d.interrupts.values()
            if r.status == "open"
        ]
        queued: dict[str, list[Any]] = {}
        for r in self._requests.values():
            cell = queued.setdefault(r.app_name, [r.app_name, 0, 0, r.requested_at])
            cell[1] += 1
            cell[2] += r.held is not None
            cell[3] = min(cell[3], r.requested_at)
        return store_metrics(rows, queued.values())

    async def audit_log(
        self,
        *,
        operator: str | None = None,
        session_id: str | None = None,
        action: str | None = None,
        since: float | None = None,
        until: float | None = None,
        limit: int = 50,
        cursor: str | None = None,
    ) -> Page[AuditRecord]:
        _check_limit(limit)
        rows = [
            (n, r)
            for n, r in self._audit
            if (operator is None or r.operator == operator)
            and (session_id is None or r.session_id == session_id)
            and (action is None or r.action == action)
            and (since is None or r.at >= since)
            and (until is None or r.at < until)
        ]
        rows.sort(key=lambda x: (-x[1].at, -x[0]))
        if cursor:
            at, no = _audit_cursor(cursor)
            rows = [(n, r) for n, r in rows if (-r.at, -n) > (-at, -no)]
        page = rows[:limit]
        nxt = json.dumps([page[-1][1].at, page[-1][0]]) if len(rows) > limit else None
        return Page(items=[r.model_copy(deep=True) for _, r in page], next_cursor=nxt)

    def export_session(self, session_id: str) -> AsyncIterator[str]:
        """The session as JSON Lines (see :mod:`engine.store.jsonl`)."""
        return jsonl.export_lines(self, session_id)

    async def import_session(
        self,
        lines: Iterable[str | bytes],
        *,
        session_id: str | None = None,
        operator: str | None = None,
        reason: str | None = None,
        source: str | None = None,
    ) -> Session:
        """Create a session from an export, validated as a whole first and then
        replayed through ``append_event``, plus its audit record; a bad file
        writes nothing."""
        self._check_writable()
        parsed = jsonl.parse_export(lines)
        header = parsed.session
        sid = session_id or header.id
        await self.create_session(header.app_name, header.user_id, sid, header.state)
        try:
            for i, event in enumerate(parsed.events):
                await self.append_event(sid, event, expected_seq=i)
        except BaseException:
            self._sessions.pop(sid, None)
            self._audit = [(n, r) for n, r in self._audit if r.session_id != sid]
            raise
        self._sessions[sid].session.created_at = header.created_at
        self._add_audit(import_record(sid, len(parsed.events), operator, reason, source, header.id))
        return await self.get_session(sid)

    def notification_ledger(self) -> Ledger:
        """The notification ledger of this store (:mod:`engine.store.notify`)."""
        from .notify import MemoryLedger

        return MemoryLedger(self)

    def deadline_timers(self) -> Timers:
        """The deadline timers of this store (:mod:`engine.store.deadlines`)."""
        from .deadlines import MemoryTimers

        return MemoryTimers(self)

    async def close(self) -> None:
        return None


def _message_has(rec: InterruptRecord, text: str) -> bool:
    """The inbox's text filter: the interrupt's message contains ``text``, ignoring case."""
    message = rec.args.get("message")
    return message is not None and text.lower() in (message if isinstance(message, str) else json.dumps(message)).lower()
