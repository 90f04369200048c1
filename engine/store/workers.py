"""What the store keeps for workers: turn requests and worker heartbeats.

Domain rows only (no SQL: each backend has its statements in its own package).

``turn_requests``
    One row per turn left to a worker: an answer appended by a process that
    does not have the app's code (``continue``), an operator's re-drive sent
    through a worker (``redrive``, maybe acknowledging nodes in doubt), or a
    new invocation to start (``start``). Keyed by ``(session_id,
    invocation_id)``: a start request names the invocation id its start will
    have, so a worker that dies after writing the start is continued, never
    started twice. A worker *claims* a row (compare-and-swap on ``claimed_by``,
    an owner id of :func:`engine.owners.new_owner`, with an expiry) before it
    runs it; the invocation's lease is what makes the turn run once. The row
    is deleted when the invocation is no longer mid-run (the turn settled), so
    a worker killed mid-turn leaves it for the next one. ``held`` says why
    workers leave it alone (nodes in doubt wait for an acknowledged re-drive).
``workers``
    One row per live worker process, rewritten at every heartbeat: host, pid,
    apps and their graph versions, the turns it runs now. A worker that
    stopped cleanly deletes its row; a killed one leaves it, and it reads
    stale once its heartbeat is old (or at once on its host: its pid is gone).
``invocation_graphs``
    The graph version (:func:`engine.worker.graph_version`) an invocation was
    first run under by a worker, so that a worker with other code refuses it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

if TYPE_CHECKING:
    from .base import Lease, LoadedInvocation

RequestKind = Literal["continue", "redrive", "start"]


class TurnRequest(BaseModel):
    """A turn left to a worker."""

    model_config = ConfigDict(defer_build=True)  # built on first use: a read (hitl show) never builds it

    app_name: str
    session_id: str
    invocation_id: str
    kind: RequestKind
    payload: dict[str, Any] = Field(default_factory=dict)
    """``start``: ``user_id``, ``text``, ``state_delta``; ``redrive``: ``ack``;
    every kind: ``operator``, ``reason``."""
    requested_at: float
    claimed_by: str | None = None
    claimed_until: float | None = None
    held: str | None = None
    """Why workers leave the request alone (None: runnable), e.g. nodes in doubt."""
    note: str | None = None
    """The last thing a worker said about it (a refusal: another graph version)."""
    graph: str | None = None
    """The graph version its invocation runs under, as the claim that took it read it
    (``claim_next_turn`` records the claimer's when none was): None elsewhere."""


@dataclass(frozen=True)
class TurnReads:
    """What a continuation's Runner reads before its first write, read by the claim
    that took the request, in the claim's one snapshot (``claim_and_read``): the
    session's user, the invocation (snapshot and events after it) and its lease row.
    One snapshot, so nothing moved on between the log and the lease: whether the
    invocation stopped mid-run needs no second look (``stopped_mid_run(read=)``)."""

    user_id: str
    loaded: LoadedInvocation
    lease: Lease | None


@dataclass
class Settle:
    """A worker's claim of the request whose turn it runs, finished by the turn's
    last write in the same transaction (``append_and_settle``) when that write
    leaves the invocation settled: the request deleted, or handed back when it was
    requested again since ``requested_at`` -- as ``finish_turn_request``."""

    owner: str
    """The claimer (the worker's id), not the turn's lease owner."""
    requested_at: float
    deleted: bool | None = None
    """Set by the write: True deleted, False handed back; None: not finished by the
    turn (its last write was another, or did not run) -- the worker finishes it."""
    claim_next: ClaimNext | None = None
    """Set by the worker: the same statement also claims its next request (a store
    that can: PostgreSQL; others ignore it). Cleared when the worker starts to drain."""
    claimed: tuple[TurnRequest, TurnReads | None] | None = None
    """Set by the write when it claimed (``claim_next``): the request, with its reads."""
    claim_ran: bool = False
    """Set by the write that made the claim: ``claimed`` None then means nothing was runnable."""


@dataclass(frozen=True)
class ClaimNext:
    """A claim to make with a turn's last write (``claim_and_read``'s arguments):
    with a backlog, the worker's next turn costs no claim round trip of its own.
    The claimed request is an ordinary claim -- ``claimed_by`` and an expiry,
    renewed at the heartbeat, taken over when the worker dies."""

    apps: list[str]
    owner: str
    ttl: float
    skip: set[tuple[str, str, float]] | None = None
    versions: dict[str, str] | None = None


class WorkerRecord(BaseModel):
    """One worker process's heartbeat."""

    model_config = ConfigDict(defer_build=True)

    worker_id: str
    """An owner id (:func:`engine.owners.new_owner`): names host, pid and process start."""
    host: str
    pid: int
    apps: list[str]
    versions: dict[str, str] = Field(default_factory=dict)
    """App name -> graph version of the code this worker runs."""
    current: list[str] = Field(default_factory=list)
    """``session_id/invocation_id`` of the turns it runs now."""
    state: str = "running"
    """``running`` or ``draining`` (SIGTERM: finishing its turns, claiming nothing)."""
    started_at: float
    heartbeat_at: float
    stale_after: float
    """Seconds after ``heartbeat_at`` when a reader counts the worker gone."""

    def live(self, now: float | None = None) -> bool:
        """Heartbeat recent and, where that can be told, its process alive."""
        from ..owners import owner_live

        return owner_live(self.worker_id, self.heartbeat_at + self.stale_after, time.time() if now is None else now)
