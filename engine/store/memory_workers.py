"""The in-memory store's worker queue (:class:`~engine.store.capabilities.WorkerQueue`):
turn requests, worker heartbeats and invocation graph versions in dicts, with
the semantics of the SQLite statements (the contract suite runs both). A mixin
of :class:`~engine.store.memory.MemoryStore`; each call runs without awaiting
in between (or under the store's lock), so it is one transaction."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from .workers import Settle, TurnRequest, WorkerRecord

if TYPE_CHECKING:
    from typing import Protocol

    from ..models import Event, StoredEvent
    from .base import InvocationSummary, Lease
    from .capabilities import AcquireAndAppend, AppendAndRelease

    class _Store(AcquireAndAppend, AppendAndRelease, Protocol):
        """The store this mixes into: its first write and its last, and the reads it makes."""

        async def get_lease(self, session_id: str, invocation_id: str) -> Lease | None: ...

        async def invocation_events(
            self, session_id: str, invocation_id: str, *, after_seq: int = 0
        ) -> list[StoredEvent]: ...
else:
    _Store = object

Key = tuple[str, str]


def _fresh(r: TurnRequest) -> TurnRequest:
    """``r`` as a new row: unclaimed, not held, no note."""
    return r.model_copy(deep=True, update={"claimed_by": None, "claimed_until": None, "held": None, "note": None})


class MemoryWorkerQueue(_Store):
    """Turn requests by (session, invocation), workers by id, graphs by invocation."""

    if TYPE_CHECKING:
        _leases: dict[Key, Lease]

        def _check_writable(self) -> None: ...
        def _running_invocations(self) -> list[tuple[str, InvocationSummary]]: ...
        def _invocation(self, session_id: str, invocation_id: str) -> InvocationSummary | None: ...

    def _init_queue(self) -> None:
        self._requests: dict[Key, TurnRequest] = {}
        self._workers: dict[str, WorkerRecord] = {}
        self._graphs: dict[Key, str] = {}

    def _oldest(self, rows: list[TurnRequest], limit: int | None = None) -> list[TurnRequest]:
        rows = sorted(rows, key=lambda r: r.requested_at)
        return [r.model_copy(deep=True) for r in (rows if limit is None else rows[:limit])]

    def _put_request(self, r: TurnRequest) -> None:
        key = (r.session_id, r.invocation_id)
        old = self._requests.get(key)
        if old is None:
            self._requests[key] = _fresh(r)
        else:
            self._requests[key] = old.model_copy(
                update={"kind": r.kind, "payload": dict(r.payload), "requested_at": r.requested_at, "held": None,
                        "note": None}
            )

    # ------------------------------------------------------------ requests
    async def request_turn(self, request: TurnRequest) -> None:
        """Add (or renew) a turn request for a worker."""
        self._check_writable()
        self._put_request(request)

    async def turn_requests(
        self, apps: list[str] | None = None, *, limit: int = 200, claimed: bool = False
    ) -> list[TurnRequest]:
        """Requests for ``apps`` (None: every app), oldest first (``claimed``: only claimed ones)."""
        rows = [
            r for r in self._requests.values()
            if (apps is None or r.app_name in apps) and (not claimed or r.claimed_by is not None)
        ]
        return self._oldest(rows, limit)

    async def get_turn_request(self, session_id: str, invocation_id: str) -> TurnRequest | None:
        """The request of one invocation, if any."""
        r = self._requests.get((session_id, invocation_id))
        return r.model_copy(deep=True) if r else None

    async def turn_requests_of(self, session_ids: list[str]) -> list[TurnRequest]:
        """Every request of these sessions, oldest first."""
        wanted = set(session_ids)
        return self._oldest([r for r in self._requests.values() if r.session_id in wanted])

    async def claim_turn_request(
        self, session_id: str, invocation_id: str, owner: str, ttl: float, *, expected: str | None = None
    ) -> bool:
        """Compare-and-swap on the claim (see :class:`~engine.store.capabilities.WorkerQueue`)."""
        self._check_writable()
        now = time.time()
        r = self._requests.get((session_id, invocation_id))
        lapsed = r is not None and r.claimed_until is not None and r.claimed_until <= now
        if r is None or r.held is not None or not (r.claimed_by == expected or lapsed):
            return False
        r.claimed_by, r.claimed_until = owner, now + ttl
        return True

    async def unclaim_turn_request(
        self, session_id: str, invocation_id: str, owner: str, *, held: str | None = None, note: str | None = None
    ) -> None:
        """Hand a claimed request back (``held``: why workers should leave it alone)."""
        self._check_writable()
        r = self._requests.get((session_id, invocation_id))
        if r is not None and r.claimed_by == owner:
            r.claimed_by, r.claimed_until, r.held = None, None, held
            r.note = note if note is not None else r.note

    async def drop_turn_request(
        self, session_id: str, invocation_id: str, *, owner: str | None = None, requested_at: float | None = None
    ) -> None:
        """Delete a request (only while ``owner`` claims it, and only if not requested again since ``requested_at``)."""
        self._check_writable()
        key = (session_id, invocation_id)
        r = self._requests.get(key)
        if r is not None and owner in (None, r.claimed_by) and requested_at in (None, r.requested_at):
            del self._requests[key]

    async def claim_next_turn(
        self,
        apps: list[str],
        owner: str,
        ttl: float,
        *,
        skip: set[tuple[str, str, float]] | None = None,
        versions: dict[str, str] | None = None,
    ) -> TurnRequest | None:
        """Claim the oldest runnable request of ``apps`` not in ``skip`` (recording
        ``versions[app]`` as its graph version unless one was)."""
        self._check_writable()
        now, skip = time.time(), skip or set()
        runnable = [
            r for r in self._requests.values()
            if r.app_name in apps and r.held is None and (r.claimed_by is None or (r.claimed_until or 0.0) <= now)
            and (r.session_id, r.invocation_id, r.requested_at) not in skip
        ]
        if not runnable:
            return None
        r = min(runnable, key=lambda r: r.requested_at)
        r.claimed_by, r.claimed_until = owner, now + ttl
        key = (r.session_id, r.invocation_id)
        if versions and r.app_name in versions:
            self._graphs.setdefault(key, versions[r.app_name])
        return r.model_copy(deep=True, update={"graph": self._graphs.get(key)})

    async def finish_turn_request(self, session_id: str, invocation_id: str, owner: str, requested_at: float) -> bool:
        """Delete the claimed request, or unclaim it when it was requested again. True: deleted."""
        self._check_writable()
        key = (session_id, invocation_id)
        r = self._requests.get(key)
        if r is None or r.claimed_by != owner:
            return False
        if r.requested_at == requested_at:
            del self._requests[key]
            return True
        r.claimed_by = r.claimed_until = None
        return False

    async def lease_and_news(self, session_id: str, invocation_id: str, after_seq: int) -> tuple[Lease | None, bool]:
        """The invocation's lease row and whether it has an event after ``after_seq``."""
        lease = await self.get_lease(session_id, invocation_id)
        return lease, bool(await self.invocation_events(session_id, invocation_id, after_seq=after_seq))

    async def append_and_settle(
        self,
        session_id: str,
        invocation_id: str,
        events: list[Event],
        *,
        owner: str,
        settle: Settle,
        expected_seq: int | None = None,
        snapshot: tuple[int, dict[str, Any]] | None = None,
    ) -> list[StoredEvent]:
        """A worker's turn's last write, then the finish of its request (no await between)."""
        written = await self.append_and_release(
            session_id, invocation_id, events, owner=owner, expected_seq=expected_seq, snapshot=snapshot
        )
        settle.deleted = await self.finish_turn_request(session_id, invocation_id, settle.owner, settle.requested_at)
        return written

    async def append_and_queue(
        self,
        session_id: str,
        invocation_id: str,
        events: list[Event],
        *,
        owner: str,
        invocation_after: int | None,
        request: TurnRequest | None,
        ttl: float = 30.0,
    ) -> list[StoredEvent]:
        """Lease, append, request and release, all or none."""
        _lease, written, _state = await self.acquire_and_append(
            session_id, invocation_id, events, owner=owner, ttl=ttl, invocation_after=invocation_after
        )
        if request is not None:
            self._put_request(request)
        held = self._leases.get((session_id, invocation_id))
        if held is not None and held.owner == owner:
            del self._leases[(session_id, invocation_id)]
        return written

    async def interrupted_turns(self, apps: list[str], *, limit: int = 200) -> list[tuple[str, str, str, Any]]:
        """(app, session, invocation, lease or None) of running invocations no request names."""
        out: list[tuple[str, str, str, Any]] = []
        for app, inv in self._running_invocations():
            key = (inv.session_id, inv.invocation_id)
            if app in apps and key not in self._requests and len(out) < limit:
                lease = self._leases.get(key)
                out.append((app, *key, lease.model_copy() if lease else None))
        return out

    async def adopt_turn(self, request: TurnRequest) -> bool:
        """Add ``request`` unless its invocation has one. True: added."""
        self._check_writable()
        key = (request.session_id, request.invocation_id)
        if key in self._requests:
            return False
        self._requests[key] = _fresh(request)
        return True

    async def settled_held_requests(self, apps: list[str], *, limit: int = 50) -> list[TurnRequest]:
        """Held requests of ``apps`` whose invocation is no longer running."""
        rows = [
            r for r in self._requests.values()
            if r.app_name in apps and r.held is not None
            and (inv := self._invocation(r.session_id, r.invocation_id)) is not None and inv.status != "running"
        ]
        return [r.model_copy(deep=True) for r in rows[:limit]]

    async def drop_held_request(self, request: TurnRequest) -> None:
        """Delete a held request, unless it was requested again since it was read."""
        self._check_writable()
        key = (request.session_id, request.invocation_id)
        r = self._requests.get(key)
        if r is not None and r.held is not None and r.requested_at == request.requested_at:
            del self._requests[key]

    # ------------------------------------------------------------ graphs, workers
    async def invocation_graph(self, session_id: str, invocation_id: str, graph: str) -> str:
        """The graph version the invocation runs under: ``graph`` unless one was recorded before."""
        self._check_writable()
        return self._graphs.setdefault((session_id, invocation_id), graph)

    async def put_worker(
        self, worker: WorkerRecord, *, renew: list[tuple[str, str]] | None = None, ttl: float = 30.0
    ) -> None:
        """Write (or rewrite) a worker's heartbeat row, renewing its claims of ``renew``."""
        self._check_writable()
        self._workers[worker.worker_id] = worker.model_copy(deep=True)
        for session_id, invocation_id in renew or []:
            await self.claim_turn_request(session_id, invocation_id, worker.worker_id, ttl, expected=worker.worker_id)

    async def list_workers(self) -> list[WorkerRecord]:
        """Every worker row, by start time then id."""
        rows = sorted(self._workers.values(), key=lambda w: (w.started_at, w.worker_id))
        return [w.model_copy(deep=True) for w in rows]

    async def drop_worker(self, worker_id: str) -> None:
        """Delete a worker's row."""
        self._check_writable()
        self._workers.pop(worker_id, None)
