"""The ``SessionStore`` contract (the rows it returns are :mod:`engine.store.records`).

Every backend (in-memory, SQLite, PostgreSQL) implements
:class:`SessionStore` and passes the one contract suite in
``tests/contract``. Guarantees stated here are what callers rely on:

* **Append-only, contiguous.** ``append_event`` assigns the next ``seq``
  (1, 2, 3, ...) per session atomically. Events are never rewritten.
* **One transaction per append.** The event, the session state delta, and the
  derived rows (interrupt index, invocation status, session summary) commit
  together or not at all.
* **Optimistic concurrency.** With ``expected_seq`` the append fails with
  :class:`~engine.errors.ConflictError` if the session's last seq differs. A
  FunctionResponse event is rejected atomically with
  :class:`~engine.errors.AlreadyResolvedError` if any id it answers is no
  longer open, so two writers answering one id: exactly one wins.
* **Derived rows are caches**: they can be rebuilt from the event log
  (:func:`index_effects` is the single definition of what an event does to them).
  The audit rows of operator events (answers, re-drives, cancels) are derived
  too; an import's audit row is not (it is written in the import's transaction).
* **Invocation leases.** A process that runs a turn of an invocation holds its
  lease (owner id + expiry), renews it while it runs and releases it at the
  end. ``acquire_lease`` is a compare-and-swap: it succeeds when nobody holds
  the lease, the holder's lease expired, ``owner`` already holds it, or the
  holder is ``steal_from`` (the caller established that holder is dead); else it
  raises :class:`~engine.errors.InvocationBusyError`. ``append_event(...,
  lease_owner=o)`` is *fenced*: it fails with
  :class:`~engine.errors.LeaseLostError`, writing nothing, unless ``o`` holds
  the invocation's lease, so a process that lost its lease can never interleave
  events with the process that took over. Leases are plain rows: deciding
  whether a holder is alive is policy, in :mod:`engine.liveness`.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import AsyncIterator, Iterable
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

from ..errors import SessionNotFoundError
from ..models import Event, NodeStatus, Session, StoredEvent
from .capabilities import AnswerReads, AppendAndRelease, LeasesOf, SnapshotAndEvents, capability
from .metric_rows import StoreMetrics  # the protocol's metric_reads returns it
from .owner_index import AUDITED_ACTIONS, OwnerChange, audited, owner_effects  # noqa: F401 -- index_effects uses them
from .records import (  # noqa: F401 -- the contract's rows, here as ever
    AuditAction,
    AuditRecord,
    InterruptRecord,
    InvocationState,
    InvocationSummary,
    Lease,
    Page,
    SessionOrder,
    SessionStatus,
    SessionSummary,
    StoreOverview,
    build_records,
)


@dataclass
class IndexEffects:
    """What one event does to the derived rows (shared by every backend)."""

    opened: list[tuple[str, str, str, dict[str, Any]]] = field(default_factory=list)
    """(interrupt_id, path, function name, args) raised by the event."""
    resolved: list[str] = field(default_factory=list)
    """Interrupt ids the event answers (must be open in ``invocation_id``)."""
    cancel_invocation: bool = False
    invocation_status: InvocationState | None = None
    new_invocation_message: str | None = None
    audit: tuple[AuditAction, str | None, str | None, dict[str, Any]] | None = None
    """(action, operator, reason, details) when the event is an operator write."""
    owners: OwnerChange | None = None


_END_STATUS: dict[NodeStatus, InvocationState] = {
    NodeStatus.COMPLETED: "completed",
    NodeStatus.WAITING: "waiting",
    NodeStatus.FAILED: "failed",
    NodeStatus.CANCELLED: "cancelled",
}


def index_effects(event: Event) -> IndexEffects:
    """The one definition of how an event changes the interrupt index and the
    invocation status. Root lifecycle records decide the invocation status; an
    FR message does not (a partial answer to a leaf runs nothing)."""
    eff = IndexEffects()
    info = event.node_info
    if info is None:
        if event.author == "user":
            meta = event.custom_metadata or {}
            who = (_str_or_none(meta.get("operator")), _str_or_none(meta.get("reason")))
            if event.function_responses:
                eff.resolved = [fr.id for fr in event.function_responses]
                details: dict[str, Any] = {"ids": list(eff.resolved)}
                if meta.get("batch"):
                    details["batch"] = str(meta["batch"])  # one bulk answer (engine.bulk): its rows share it
                eff.audit = ("answer", *who, details)
            elif event.action in ("cancel", "fail"):  # fail: a deadline's outcome, closing interrupts as a cancel
                eff.cancel_invocation = True
                eff.invocation_status = "cancelled" if event.action == "cancel" else "failed"
                eff.audit = ("cancel" if event.action == "cancel" else "fail", *who, {k: meta.get(k) for k in ("path", "error_code") if event.action == "fail"})
            elif audited(event.action):  # claim, assign, release, approve
                eff.owners, details = owner_effects(meta)
                eff.audit = (event.action, *who, details)
            elif event.action == "redrive":
                doubt = meta.get("in_doubt")
                eff.audit = ("redrive", *who, {"in_doubt": doubt} if doubt else {})
            elif event.action is None and event.content is not None:
                eff.new_invocation_message = event.content.text
                eff.invocation_status = "running"
        return eff
    if event.long_running_tool_ids:
        eff.opened = [(c.id, info.path, c.name, c.args) for c in event.interrupt_calls]
    if "/" not in info.path:
        if info.lifecycle == "start":
            eff.invocation_status = "running"
        elif info.lifecycle == "end" and info.status is not None:
            eff.invocation_status = _END_STATUS.get(info.status)
    return eff


def import_record(
    session_id: str, events: int, operator: str | None, reason: str | None, source: str | None, original_id: str
) -> AuditRecord:
    """The audit record of an import (shared by the stores)."""
    details: dict[str, Any] = {"events": events}
    if source:
        details["source"] = source
    if original_id != session_id:
        details["original_id"] = original_id
    return AuditRecord(
        at=time.time(), action="import", operator=operator, reason=reason, session_id=session_id, details=details
    )


def _str_or_none(value: Any) -> str | None:
    return None if value is None else str(value)


def session_status(statuses: list[InvocationState]) -> SessionStatus:
    """A session's status from its invocations': running > waiting > failed >
    cancelled > completed; ``new`` when it has none."""
    for s in ("running", "waiting", "failed"):
        if s in statuses:
            return s
    if not statuses:
        return "new"
    return "completed" if "completed" in statuses else "cancelled"


Capability = Literal[
    "skip_corrupt",
    "corrupt_events",
    "bulk_load",
    "checkpoint",
    "path",
    "notify",
    "migrate",
    "append_and_release",
    "acquire_and_append",
    "snapshot_and_events",
    "answer_reads",
    "create_in_first_write",
    "projection_checkpoints",
    "leases_of",
    "worker_queue",
]
"""Optional features beyond the protocol, declared in a store's ``capabilities``
(their typed protocols, and the worker queue's, are in :mod:`engine.store.capabilities`):

``skip_corrupt``    ``events`` / ``invocation_events`` accept ``skip_corrupt=True``
``corrupt_events``  ``await store.corrupt_events(session_id) -> list[int]``
``bulk_load``       ``await store.bulk_load(sessions, batch_size=) -> int`` (events written)
``checkpoint``      ``await store.checkpoint()`` (fold a journal before copying/measuring)
``path``            ``store.path`` is the store's file
``notify``          ``store.notifications()`` yields ``(session_id, seq)`` as appends commit
``migrate``         ``await store.migrate() -> (version before, after)``
``append_and_release``  ``await store.append_and_release(session_id, invocation_id, events, owner=,
                    expected_seq=, snapshot=) -> list[StoredEvent]``: a turn's last events,
                    its snapshot and the release of its lease in one transaction
                    (:func:`append_and_release` is the portable call)
``acquire_and_append``  ``await store.acquire_and_append(session_id, invocation_id, events, owner=,
                    ttl=, expected_seq=, invocation_after=) -> (Lease, list[StoredEvent], state)``:
                    a turn's first write in one transaction -- take the lease like
                    ``acquire_lease`` (no ``steal_from``; InvocationBusyError), refuse
                    with ConflictError if the invocation has an event after
                    ``invocation_after`` or (``expected_seq``) the session moved, append
                    the events, and return the session's state after them. Without it
                    the Runner calls ``acquire_lease`` then ``append_events``
``snapshot_and_events``  ``await store.snapshot_and_events(session_id, invocation_id)``:
                    ``get_snapshot`` and ``invocation_events`` after it in one read
                    (:func:`snapshot_and_events` is the portable call)
``answer_reads``    ``await store.answer_reads(session_id, interrupt_ids, invocation_id=None)
                    -> (records, LoadedInvocation | None)``: ``lookup_interrupts`` and
                    ``snapshot_and_events`` of the invocation the answer resumes
                    (``invocation_id``, else the first open id's) in one read
                    (:func:`answer_reads` is the portable call)
``create_in_first_write``  ``acquire_and_append`` also takes ``create=(app_name, user_id)``:
                    it creates the session (empty state; ConflictError if it exists) in
                    the same transaction, so a new session's first turn commits once
                    for both. Without it the Runner calls ``create_session`` first
``projection_checkpoints``  seek checkpoints: ``last_projection_checkpoint(session_id)``,
                    ``get_projection_checkpoint(session_id, at_most)``,
                    ``put_projection_checkpoints(session_id, rows)`` (see :mod:`engine.checkpoints`)
``leases_of``       ``await store.leases_of(session_ids) -> list[Lease]``: the lease rows of
                    several sessions in one read (unknown ids: none); :func:`leases_of` is the
                    portable call (a page of the sessions list judges liveness with it)
``worker_queue``    turn requests and worker heartbeats (``capabilities.WorkerQueue``)
"""


def has_capability(store: object, capability: Capability) -> bool:
    """Whether ``store`` declares ``capability`` (see :data:`Capability`)."""
    return capability in getattr(store, "capabilities", ())


async def snapshot_and_events(
    store: SessionStore, session_id: str, invocation_id: str
) -> tuple[tuple[int, dict[str, Any]] | None, list[StoredEvent]]:
    """An invocation's cached snapshot (None: none, or unreadable) and its events
    after it -- all its events without one. One read on a store with the
    ``snapshot_and_events`` capability, else ``get_snapshot`` then
    ``invocation_events``."""
    if (one := capability(store, SnapshotAndEvents)) is not None:
        return await one.snapshot_and_events(session_id, invocation_id)
    snap = await store.get_snapshot(session_id, invocation_id)
    return snap, await store.invocation_events(session_id, invocation_id, after_seq=snap[0] if snap else 0)


@dataclass(frozen=True)
class LoadedInvocation:
    """An invocation as a resume reads it: its snapshot and the events after it
    (:func:`snapshot_and_events`), read together with the interrupts (:func:`answer_reads`)."""

    invocation_id: str
    snapshot: tuple[int, dict[str, Any]] | None
    events: list[StoredEvent]


AnswerRead = tuple[list[InterruptRecord], LoadedInvocation | None]
"""What :func:`answer_reads` returns: the interrupt rows, and the invocation or None."""


async def answer_reads(
    store: SessionStore, session_id: str, interrupt_ids: list[str], invocation_id: str | None = None
) -> AnswerRead:
    """The interrupt rows of ``interrupt_ids`` (``lookup_interrupts``) and, on a
    store with the ``answer_reads`` capability, the invocation the answer
    resumes, read with them in one round trip; elsewhere None (read it later)."""
    if (one := capability(store, AnswerReads)) is not None:
        return await one.answer_reads(session_id, interrupt_ids, invocation_id)
    return await store.lookup_interrupts(session_id, interrupt_ids), None


async def leases_of(store: SessionStore, session_ids: list[str]) -> list[Lease]:
    """Every lease row (live or lapsed) of the sessions ``session_ids``: one read on a
    store with the ``leases_of`` capability, else ``list_leases`` per session (a
    session deleted meanwhile has none)."""
    if (one := capability(store, LeasesOf)) is not None:
        return await one.leases_of(list(session_ids))
    out: list[Lease] = []
    for sid in dict.fromkeys(session_ids):
        with contextlib.suppress(SessionNotFoundError):
            out += await store.list_leases(sid)
    return out


async def append_and_release(
    store: SessionStore,
    session_id: str,
    invocation_id: str,
    events: list[Event],
    *,
    owner: str,
    expected_seq: int | None = None,
    snapshot: tuple[int, dict[str, Any]] | None = None,
) -> list[StoredEvent]:
    """A turn's last write: append ``events`` fenced by ``owner``'s lease (with
    ``expected_seq`` for the first, as :meth:`SessionStore.append_events`), then
    cache ``snapshot`` and release the lease. One transaction (one commit, one
    disk sync) on a store with the ``append_and_release`` capability; elsewhere
    ``append_events`` then ``release_lease(snapshot=)``, two. Raises what
    ``append_events`` raises, and then nothing was written and the lease is
    still held. Once the events are written it does not raise: a lease that
    cannot be released lapses by itself, and the snapshot is a cache."""
    if (one := capability(store, AppendAndRelease)) is not None:
        return await one.append_and_release(
            session_id, invocation_id, events, owner=owner, expected_seq=expected_seq, snapshot=snapshot
        )
    written = await store.append_events(session_id, events, expected_seq=expected_seq, lease_owner=owner)
    with contextlib.suppress(Exception):
        await store.release_lease(session_id, invocation_id, owner, snapshot=snapshot)
    return written


@runtime_checkable
class SessionStore(Protocol):
    """Durable home of sessions and their event logs. See the module docstring."""

    read_only: bool

    capabilities: frozenset[Capability]
    """What the store offers beyond this protocol (:data:`Capability`)."""

    async def create_session(
        self, app_name: str, user_id: str, session_id: str | None = None, state: dict[str, Any] | None = None
    ) -> Session:
        """Create a session; ``session_id`` must be new (ConflictError otherwise)."""
        ...

    async def get_session(self, session_id: str) -> Session:
        """The session with its current state; SessionNotFoundError if absent."""
        ...

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
        """Sessions, keyset-paginated. ``order="updated"``: most recently updated
        first. ``order="oldest_open"``: the triage queue -- only sessions with open
        interrupts, the one whose oldest open interrupt is oldest first."""
        ...

    async def append_event(
        self, session_id: str, event: Event, *, expected_seq: int | None = None, lease_owner: str | None = None
    ) -> StoredEvent:
        """Append one event atomically (see module docstring). ``temp:`` keys of
        its state delta are dropped before storing. With ``lease_owner`` the
        append is fenced: LeaseLostError unless that owner holds the lease of
        the event's invocation."""
        ...

    async def append_events(
        self, session_id: str, events: list[Event], *, expected_seq: int | None = None, lease_owner: str | None = None
    ) -> list[StoredEvent]:
        """Append several events, in order, in one transaction: all or none.
        ``expected_seq`` applies to the first; every event is fenced by
        ``lease_owner``. The runner writes an answer together with the
        completion records of the runs it auto-completes (DESIGN.md 3.2)."""
        ...

    async def events(self, session_id: str, *, after_seq: int = 0, limit: int | None = None) -> list[StoredEvent]:
        """Events with ``seq > after_seq`` in order (tailing and paging)."""
        ...

    async def event_at(self, session_id: str, seq: int) -> StoredEvent:
        """The event at position ``seq`` (1-based)."""
        ...

    async def invocation_events(
        self, session_id: str, invocation_id: str, *, after_seq: int = 0
    ) -> list[StoredEvent]:
        """Only one invocation's events, in order (no session scan)."""
        ...

    async def list_invocations(self, session_id: str) -> list[InvocationSummary]:
        """The session's invocations in start order with their status."""
        ...

    async def invocation_count(self, session_id: str) -> int:
        """How many invocations the session has (``len(list_invocations(...))``),
        from the session's summary: it costs the same however many there are."""
        ...

    async def lookup_interrupts(self, session_id: str, interrupt_ids: list[str]) -> list[InterruptRecord]:
        """Every index row (open or not) for these ids in the session."""
        ...

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
        """Open interrupts, oldest first: the operator's inbox. Filters (every
        backend gives the same rows): ``node`` -- a node of that name is on the
        interrupt's path (it raised it, or runs the node that did), matched
        exactly; ``text`` -- the interrupt's ``message`` contains it, ignoring
        case (Python's ``str.lower``; PostgreSQL's ``lower()``); ``raised_before``
        -- raised strictly before this timestamp (older than an age)."""
        ...

    async def get_snapshot(self, session_id: str, invocation_id: str) -> tuple[int, dict[str, Any]] | None:
        """A cached projection of one invocation at some seq, if one was saved."""
        ...

    async def put_snapshot(self, session_id: str, invocation_id: str, seq: int, data: dict[str, Any]) -> None:
        """Cache a projection of one invocation as of ``seq`` (derived data)."""
        ...

    # ------------------------------------------------------- export/import
    def export_session(self, session_id: str) -> AsyncIterator[str]:
        """The session as JSON Lines (:mod:`engine.store.jsonl`)."""
        ...

    async def import_session(
        self,
        lines: Iterable[str | bytes],
        *,
        session_id: str | None = None,
        operator: str | None = None,
        reason: str | None = None,
        source: str | None = None,
    ) -> Session:
        """Create a session from an export: validated as a whole first, then
        written in one transaction with its audit record (operator, reason,
        source); a bad file writes nothing."""
        ...

    # ------------------------------------------------------------ leases
    async def acquire_lease(
        self, session_id: str, invocation_id: str, owner: str, ttl: float, *, steal_from: str | None = None
    ) -> Lease:
        """Take (or renew) the invocation's lease for ``ttl`` seconds; see the
        module docstring. InvocationBusyError (with ``.lease``) when another
        owner holds a lease that has not expired and is not ``steal_from``."""
        ...

    async def renew_lease(self, session_id: str, invocation_id: str, owner: str, ttl: float) -> Lease:
        """Extend ``owner``'s lease to now + ``ttl`` (``ttl=0`` lets it lapse now but
        keeps the row, a trace of a turn that did not finish). LeaseLostError when
        ``owner`` does not hold it any more."""
        ...

    async def release_lease(
        self,
        session_id: str,
        invocation_id: str,
        owner: str,
        *,
        snapshot: tuple[int, dict[str, Any]] | None = None,
    ) -> bool:
        """Delete the lease if ``owner`` holds it; False when it did not. With
        ``snapshot=(seq, data)``, also :meth:`put_snapshot` it, in the same
        transaction (a turn's last write: one commit instead of two)."""
        ...

    async def get_lease(self, session_id: str, invocation_id: str) -> Lease | None:
        """The invocation's lease row (possibly expired), or None."""
        ...

    async def list_leases(self, session_id: str) -> list[Lease]:
        """Every lease row of the session's invocations (live or lapsed)."""
        ...

    # ------------------------------------------------------------- audit
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
        """Operator writes, newest first, keyset-paginated; ``since <= at < until``."""
        ...

    # ------------------------------------------------------------- overview
    async def overview(
        self, *, since: float, bucket: float = 3600.0, buckets: int = 24, running_limit: int = 500
    ) -> StoreOverview:
        """The home summary's counts (:class:`StoreOverview`): a few aggregate
        queries over the derived indexes, never a scan of events."""
        ...

    async def metric_reads(self) -> StoreMetrics:
        """What a ``/metrics`` scrape reads (:class:`StoreMetrics`): aggregates
        over the open-interrupt and turn-request indexes."""
        ...

    async def close(self) -> None: ...
