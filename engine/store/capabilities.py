"""What a store may offer beyond :class:`~engine.store.base.SessionStore`: one
typed protocol per optional capability, and :func:`capability` to ask for one.

A new backend implements ``SessionStore`` (engine/store/base.py) and then, from
this file, what it can:

:class:`WorkerQueue`
    Turn requests, worker heartbeats and invocation graph versions
    (:mod:`engine.store.workers` says what they are); declared with
    ``worker_queue``. Without it nothing can be
    left to a worker: ``hitl worker`` refuses the store, answers and starts run
    in the process that makes them. :class:`~engine.store.memory.MemoryStore`
    is the reference implementation (plain Python, no SQL; opened with
    ``MemoryStore(workers=True)``, as no other process can see its queue).
:class:`ChangeCounter`
    A cheap number that changes when another connection commits (SQLite's
    ``data_version``): what a waiting worker polls without notifications.
:class:`Notifications` / :class:`TurnNotifications`
    Call-backs as appends (or runnable turn requests) commit; declared also
    with the ``notify`` entry of ``capabilities``.
:class:`ProjectionCheckpoints`
    Seek checkpoints (:mod:`engine.checkpoints`); declared with
    ``projection_checkpoints``.
:class:`Migrates`, :class:`SkipsCorrupt`
    ``hitl migrate``; reads that leave corrupt rows out; declared with
    ``migrate`` / ``skip_corrupt``.

The one-statement shortcuts a store declares in ``capabilities``
(:class:`SnapshotAndEvents`, :class:`AnswerReads`, :class:`LeasesOf`,
:class:`AppendAndRelease`, :class:`AcquireAndAppend`) are described by
:data:`engine.store.base.Capability`; callers use the portable functions next
to it, which fall back to the plain protocol.

Every protocol is runtime-checkable; callers never probe a store with
``hasattr`` (a test scans engine/ and console/ for that): they call
``capability(store, WorkerQueue)``, which returns the store typed as a
``WorkerQueue`` or None, or :func:`require`, which raises a one-line
:class:`~engine.errors.StoreError` instead.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, cast, runtime_checkable

from ..errors import StoreError

if TYPE_CHECKING:
    from ..models import Event, StoredEvent
    from .base import Capability, InterruptRecord, Lease, LoadedInvocation
    from .workers import Settle, TurnReads, TurnRequest, WorkerRecord

C = TypeVar("C")

OnChange = Callable[[str | None, int | None], None]
"""``callback(session_id, seq)``; ``(None, None)``: notifications may have been missed."""


@runtime_checkable
class WorkerQueue(Protocol):
    """Turn requests left to workers, the workers' heartbeats and the graph
    version each invocation runs under. Every write is one transaction."""

    async def request_turn(self, request: TurnRequest) -> None:
        """Add a request, or renew the one of its invocation (new kind, payload and
        ``requested_at``; no longer held; a claim stands)."""
        ...

    async def turn_requests(
        self, apps: list[str] | None = None, *, limit: int = 200, claimed: bool = False
    ) -> list[TurnRequest]:
        """Requests of ``apps`` (None: every app), oldest first (``claimed``: only
        those a worker claims -- a heartbeat's look for dead claimers reads no backlog)."""
        ...

    async def get_turn_request(self, session_id: str, invocation_id: str) -> TurnRequest | None:
        """The request of one invocation, if any."""
        ...

    async def turn_requests_of(self, session_ids: list[str]) -> list[TurnRequest]:
        """Every request of these sessions, oldest first, in one read."""
        ...

    async def claim_turn_request(
        self, session_id: str, invocation_id: str, owner: str, ttl: float, *, expected: str | None = None
    ) -> bool:
        """Compare-and-swap: claim a request that is not held and whose claim is
        ``expected`` (None: unclaimed) or expired. True: claimed."""
        ...

    async def unclaim_turn_request(
        self, session_id: str, invocation_id: str, owner: str, *, held: str | None = None, note: str | None = None
    ) -> None:
        """Hand back a request ``owner`` claimed (``held``: why workers leave it alone;
        ``note``: replaces the note when given)."""
        ...

    async def drop_turn_request(
        self, session_id: str, invocation_id: str, *, owner: str | None = None, requested_at: float | None = None
    ) -> None:
        """Delete a request (only while ``owner`` claims it, and only if it was not
        requested again since ``requested_at``, when given)."""
        ...

    async def claim_next_turn(
        self,
        apps: list[str],
        owner: str,
        ttl: float,
        *,
        skip: set[tuple[str, str, float]] | None = None,
        versions: dict[str, str] | None = None,
    ) -> TurnRequest | None:
        """Claim the oldest runnable request of ``apps`` (not held; unclaimed or its
        claim expired) that is not in ``skip`` ((session, invocation, requested_at)).
        In the same transaction, record ``versions[app]`` as its invocation's graph
        version unless one was recorded (as :meth:`invocation_graph`); the request
        returned carries the recorded one in ``graph`` (None: none recorded)."""
        ...

    async def finish_turn_request(self, session_id: str, invocation_id: str, owner: str, requested_at: float) -> bool:
        """Delete the request ``owner`` claimed; when it was requested again since
        ``requested_at``, unclaim it instead. True: deleted."""
        ...

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
        """In one transaction: take the invocation's lease as ``owner``
        (InvocationBusyError while another's is live), refuse with ConflictError
        when the invocation has an event after ``invocation_after``, append the
        events, add ``request`` (as :meth:`request_turn`; None: none) and
        release the lease."""
        ...

    async def interrupted_turns(self, apps: list[str], *, limit: int = 200) -> list[tuple[str, str, str, Any]]:
        """``(app, session, invocation, lease or None)`` of the running invocations
        of ``apps`` (in running sessions) that no request names."""
        ...

    async def adopt_turn(self, request: TurnRequest) -> bool:
        """Add ``request`` unless its invocation has one already. True: added."""
        ...

    async def settled_held_requests(self, apps: list[str], *, limit: int = 50) -> list[TurnRequest]:
        """Held requests of ``apps`` whose invocation is no longer running."""
        ...

    async def drop_held_request(self, request: TurnRequest) -> None:
        """Delete a held request unless it was requested again since it was read."""
        ...

    async def invocation_graph(self, session_id: str, invocation_id: str, graph: str) -> str:
        """The graph version the invocation runs under: the first one recorded
        (``graph`` when this call records it)."""
        ...

    async def put_worker(
        self, worker: WorkerRecord, *, renew: list[tuple[str, str]] | None = None, ttl: float = 30.0
    ) -> None:
        """Write (or rewrite) a worker's heartbeat row; and in the same write renew its
        claims of the requests ``renew`` names ((session, invocation)) for ``ttl``, as
        ``claim_turn_request(..., expected=worker.worker_id)`` does each (one commit a beat)."""
        ...

    async def list_workers(self) -> list[WorkerRecord]:
        """Every worker row, live or stale, by start time then id."""
        ...

    async def drop_worker(self, worker_id: str) -> None:
        """Delete a worker's row (it stopped cleanly)."""
        ...


@runtime_checkable
class ChangeCounter(Protocol):
    """A number that changes when another connection commits."""

    async def change_counter(self) -> int: ...


class Listener(Protocol):
    """What a subscription returns: close it when done."""

    async def close(self) -> None: ...


@runtime_checkable
class Notifications(Protocol):
    """``callback(session_id, seq)`` for every committed append; close the listener returned."""

    async def notifications(self, callback: OnChange) -> Listener: ...


@runtime_checkable
class TurnNotifications(Protocol):
    """``callback(None, 0)``-style wake-ups when a turn request becomes runnable;
    ``lead``: a worker pool's key, only one idle worker of it listens."""

    async def turn_notifications(self, callback: OnChange, *, lead: int | None = None) -> Listener: ...


@runtime_checkable
class ProjectionCheckpoints(Protocol):
    """Seek checkpoints (:mod:`engine.checkpoints`)."""

    async def last_projection_checkpoint(self, session_id: str) -> tuple[int, int]: ...

    async def get_projection_checkpoint(self, session_id: str, at_most: int) -> tuple[int, dict[str, Any]] | None: ...

    async def put_projection_checkpoints(
        self, session_id: str, rows: Sequence[tuple[int, dict[str, Any] | bytes]]
    ) -> None: ...


@runtime_checkable
class Migrates(Protocol):
    """``hitl migrate``: bring the schema up to date, ``(version before, after)``."""

    async def migrate(self) -> tuple[int, int]: ...


@runtime_checkable
class SkipsCorrupt(Protocol):
    """Reads that leave corrupt rows out instead of raising CorruptEventError."""

    async def events(
        self, session_id: str, *, after_seq: int = 0, limit: int | None = None, skip_corrupt: bool = False
    ) -> list[StoredEvent]: ...

    async def invocation_events(
        self, session_id: str, invocation_id: str, *, after_seq: int = 0, skip_corrupt: bool = False
    ) -> list[StoredEvent]: ...


@runtime_checkable
class EventRows(Protocol):
    """A session's events as stored, unparsed: what an export copies and a long
    read folds without building a StoredEvent per event."""

    async def event_rows(self, session_id: str, *, after_seq: int = 0, limit: int = 1000) -> list[tuple[int, str]]: ...


@runtime_checkable
class SnapshotAndEvents(Protocol):
    """``get_snapshot`` and ``invocation_events`` after it in one read."""

    async def snapshot_and_events(
        self, session_id: str, invocation_id: str
    ) -> tuple[tuple[int, dict[str, Any]] | None, list[StoredEvent]]: ...


@runtime_checkable
class AnswerReads(Protocol):
    """``lookup_interrupts`` and the invocation an answer resumes, in one read."""

    async def answer_reads(
        self, session_id: str, interrupt_ids: list[str], invocation_id: str | None = None
    ) -> tuple[list[InterruptRecord], LoadedInvocation | None]: ...


@runtime_checkable
class LeasesOf(Protocol):
    """The lease rows of several sessions in one read."""

    async def leases_of(self, session_ids: list[str]) -> list[Lease]: ...


@runtime_checkable
class AppendAndRelease(Protocol):
    """A turn's last events, its snapshot and its lease's release in one transaction."""

    async def append_and_release(
        self,
        session_id: str,
        invocation_id: str,
        events: list[Event],
        *,
        owner: str,
        expected_seq: int | None = None,
        snapshot: tuple[int, dict[str, Any]] | None = None,
    ) -> list[StoredEvent]: ...


@runtime_checkable
class LeaseAndNews(Protocol):
    """Whether an invocation read at ``after_seq`` stopped mid-run, in one read: its
    lease row (None: none) and whether it has an event after ``after_seq``
    (SessionNotFoundError for a missing session), the lease read first."""

    async def lease_and_news(self, session_id: str, invocation_id: str, after_seq: int) -> tuple[Lease | None, bool]: ...


@runtime_checkable
class ClaimAndRead(Protocol):
    """A worker's claim that also reads what the turn's Runner would read next
    (:class:`~engine.store.workers.TurnReads`): one round trip, not four. The
    claim is :meth:`WorkerQueue.claim_next_turn`'s; the reads are None when the
    session is gone (the Runner then reads, and says so)."""

    async def claim_and_read(
        self, apps: list[str], owner: str, ttl: float, *,
        skip: set[tuple[str, str, float]] | None = None, versions: dict[str, str] | None = None,
    ) -> tuple[TurnRequest, TurnReads | None] | None: ...


@runtime_checkable
class WarmTurns(Protocol):
    """A worker's connections made ready for its turns before it claims any: the
    server's first run of the turn's statements on a new connection (compiling
    and planning them) is paid there, not inside the first turns. Writes nothing."""

    async def warm_turns(self, connections: int, apps: list[str], owner: str) -> int: ...


@runtime_checkable
class AppendAndSettle(Protocol):
    """A worker's turn's last write: :class:`AppendAndRelease`'s, and the request it
    ran finished in the same transaction (:class:`~engine.store.workers.Settle`)."""

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
    ) -> list[StoredEvent]: ...


@runtime_checkable
class AcquireAndAppend(Protocol):
    """A turn's first write in one transaction: lease taken, events appended
    (``create=(app, user)`` too with ``create_in_first_write``)."""

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
    ) -> tuple[Lease, list[StoredEvent], dict[str, Any]]: ...


DECLARED: dict[type, Capability] = {
    WorkerQueue: "worker_queue",
    SnapshotAndEvents: "snapshot_and_events",
    AnswerReads: "answer_reads",
    LeasesOf: "leases_of",
    AppendAndRelease: "append_and_release",
    AcquireAndAppend: "acquire_and_append",
    Notifications: "notify",
    ProjectionCheckpoints: "projection_checkpoints",
    Migrates: "migrate",
    SkipsCorrupt: "skip_corrupt",
}
"""Protocols a store must also declare in ``capabilities`` (a method alone is not
enough: e.g. every store's ``events`` has a signature, only some skip corrupt rows)."""


_MEMBERS: dict[type, tuple[str, ...]] = {}


def members(kind: type) -> tuple[str, ...]:
    """The methods a store implements to offer ``kind``."""
    found = _MEMBERS.get(kind)
    if found is None:
        found = _MEMBERS[kind] = tuple(sorted(n for n in vars(kind) if not n.startswith("_")))
    return found


def capability(store: object, kind: type[C]) -> C | None:
    """``store`` typed as ``kind`` when it offers that capability, else None: it
    declares it (the kinds in :data:`DECLARED`: one set lookup, so the hot paths
    pay nothing) or has every method of it (what ``isinstance(store, kind)``
    checks, without its per-call cost)."""
    declared = DECLARED.get(kind)
    if declared is not None:
        found = declared in getattr(store, "capabilities", ())
    else:
        found = all(hasattr(store, name) for name in members(kind))
    return cast("C", store) if found else None


def require(store: object, kind: type[C], why: str) -> C:
    """``store`` typed as ``kind``; StoreError saying ``why`` it is needed when it
    does not offer it (e.g. ``require(store, WorkerQueue, "hitl worker")``)."""
    found = capability(store, kind)
    if found is None:
        name = re.sub(r"(?<!^)(?=[A-Z])", " ", kind.__name__).lower()
        raise StoreError(f"this store ({type(store).__name__}) has no {name}: {why} needs one")
    return found
