"""Liveness: who runs an invocation right now, and which invocations stopped mid-run.

The store keeps one *lease* per invocation (:class:`~engine.store.base.Lease`:
owner id + expiry, see the store contract). A :class:`~engine.runner.Runner`
takes it before it writes a turn's first event, renews it while the turn runs
(:class:`LeaseKeeper`) and releases it when the turn ends -- after a clean end
(the root recorded WAITING, COMPLETED, FAILED or CANCELLED, or nothing ran) the
row is deleted; after an abnormal one (an exception other than a node failure)
it is left to lapse at once, as a trace. A process killed mid-turn leaves its
lease behind.

This module is the policy on top of those rows:

* :func:`lease_is_live` -- a lease is live until it expires, *unless* its owner
  is provably dead: owner ids (:func:`new_owner`) name the host, the pid, the
  process start time and a scope (boot id + pid namespace). A reader in the
  same scope can tell a dead owner at once (no such pid, or a different process
  start time: pid reuse); from anywhere else it waits for the expiry. A wrong
  "dead" is never possible: an unknown scope counts as alive until expiry.
* :func:`health_from` / :func:`invocation_health` / :func:`session_health` --
  the derived status *interrupted mid-run*: the projection says the invocation
  is RUNNING or PENDING (or it has a message but no root run yet), and no live
  process holds its lease. Its *in doubt* nodes are the leaf runs with a start
  record but no end record: they may have done their side effects before the
  process died, so continuing (re-driving) them needs an explicit
  acknowledgement.

The console and the CLI call these to show "interrupted mid-run" and the in
doubt nodes; the Runner calls :func:`acquire_invocation_lease`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .errors import InvocationBusyError, LeaseLostError, StoreError
from .models import NodeStatus
from .owners import _OPEN_OWNERS, INTERRUPTED, new_owner, owner_live, owner_state  # noqa: F401 (re-exported: owner ids live in engine.owners, which needs no pydantic)
from .status import DisplayStatus, InvocationState, SessionStatus
from .store.base import Lease, SessionStore

if TYPE_CHECKING:
    from .projection import Projection

log = logging.getLogger(__name__)

DEFAULT_LEASE_TTL = 30.0
"""Seconds a lease lasts without renewal. The keeper renews it every third of
that; an owner on another host that died is seen as dead after at most this."""

DEFAULT_LEASE_WAIT = 1.0
"""Seconds a turn waits for another process's turn of the same invocation to
finish before it gives up with InvocationBusyError."""

def lease_is_live(lease: Lease | None, now: float | None = None) -> bool:
    """True while some process may still be running the turn that holds the lease."""
    return lease is not None and owner_live(lease.owner, lease.expires_at, now)


# ------------------------------------------------------------------ acquiring
async def acquire_invocation_lease(
    store: SessionStore,
    session_id: str,
    invocation_id: str,
    *,
    ttl: float = DEFAULT_LEASE_TTL,
    wait: float = DEFAULT_LEASE_WAIT,
    owner: str | None = None,
) -> Lease:
    """Take the invocation's lease, taking it over from a dead holder (compare-
    and-swap on its owner id) and waiting up to ``wait`` seconds for a live one
    to let go. Raises InvocationBusyError (with ``.lease``) when it does not."""
    owner = owner or new_owner()
    loop = asyncio.get_running_loop()
    deadline = loop.time() + wait
    delay = 0.005
    while True:
        current = await store.get_lease(session_id, invocation_id)
        steal = current.owner if current is not None and not lease_is_live(current) else None
        try:
            return await store.acquire_lease(session_id, invocation_id, owner, ttl, steal_from=steal)
        except InvocationBusyError:
            if loop.time() + delay > deadline:
                raise
        await asyncio.sleep(delay)
        delay = min(delay * 2, 0.1)


class LeaseKeeper:
    """Renews a held lease every ``ttl / 3`` seconds until :meth:`close`.

    When a renewal finds the lease taken over (LeaseLostError), ``lost`` is set
    and ``on_lost`` is called (the Runner cancels its turn); the fenced appends
    would refuse that process's writes anyway. Transient store errors (a locked
    database) are retried at the next beat."""

    def __init__(self, store: SessionStore, lease: Lease, ttl: float, on_lost: object = None) -> None:
        self.store = store
        self.lease = lease
        self.ttl = ttl
        self.lost: LeaseLostError | None = None
        self._on_lost = on_lost
        self._task: asyncio.Task[None] | None = None

    @property
    def owner(self) -> str:
        return self.lease.owner

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.ensure_future(self._beat())

    async def _beat(self) -> None:
        interval = max(self.ttl / 3, 0.01)
        while True:
            await asyncio.sleep(interval)
            try:
                self.lease = await self.store.renew_lease(
                    self.lease.session_id, self.lease.invocation_id, self.lease.owner, self.ttl
                )
            except LeaseLostError as exc:
                self.lost = exc
                if callable(self._on_lost):
                    self._on_lost()
                return
            except StoreError as exc:  # locked, full...: the lease may lapse; fencing keeps writes safe
                log.warning("renewing the lease of invocation %s failed: %s", self.lease.invocation_id, exc)

    async def _stop_beating(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task
            self._task = None

    async def stop(self) -> None:
        """Stop renewing (the turn is about to release the lease itself)."""
        await self._stop_beating()

    def released(self) -> None:
        """The turn released the lease itself (``append_and_release``): :meth:`close` has nothing to write."""
        self._released = True

    _released = False

    async def revoke(self) -> None:
        """Let go of the lease *now*, while the turn's tasks still run: their
        appends are fenced from here on, so whatever they try to write on their
        way out (CANCELLED records) is refused. For a turn stopped from outside
        (Ctrl-C, a cancelled worker), which must leave the invocation as it was:
        interrupted mid-run, to be continued -- not cancelled."""
        await self._stop_beating()
        self.revoked = True
        lease = self.lease
        with contextlib.suppress(Exception):
            await self.store.release_lease(lease.session_id, lease.invocation_id, lease.owner)

    revoked = False

    snapshot: tuple[int, dict[str, Any]] | None = None
    """The turn's projection cache (seq, data), written by :meth:`close` with
    the lease's release in one transaction."""

    async def close(self, *, clean: bool) -> None:
        """Stop renewing; delete the lease (``clean``) or let it lapse now but keep
        the row (a turn that did not finish). Never raises: a lease that cannot
        be written lapses by itself."""
        await self._stop_beating()
        _OPEN_OWNERS.discard(self.lease.owner)
        if self.lost is not None or self._released:
            return
        lease = self.lease
        snapshot, self.snapshot = self.snapshot, None
        with contextlib.suppress(Exception):
            if self.revoked:
                if not clean:  # leave a lapsed row as the trace of the stopped turn
                    owner = f"{lease.owner}~stopped"
                    await self.store.acquire_lease(lease.session_id, lease.invocation_id, owner, 0)
            elif clean:
                await self.store.release_lease(lease.session_id, lease.invocation_id, lease.owner, snapshot=snapshot)
                snapshot = None
            else:
                await self.store.renew_lease(lease.session_id, lease.invocation_id, lease.owner, 0)
        if snapshot is not None:  # a cache: a full or locked disk must not mask the outcome
            with contextlib.suppress(Exception):
                await self.store.put_snapshot(lease.session_id, lease.invocation_id, *snapshot)


# ------------------------------------------------------------------ health
MID_RUN = (NodeStatus.RUNNING, NodeStatus.PENDING)


@dataclass(frozen=True)
class InvocationHealth:
    """Liveness of one invocation: what the console and ``hitl show`` display."""

    invocation_id: str
    status: NodeStatus | None
    """The projected status of the invocation's root run (None: no run yet)."""
    lease: Lease | None
    live: bool
    """A process holds a live lease: the invocation is running right now."""
    interrupted: bool
    """Mid-run by the projection, but no live process: it stopped mid-run."""
    in_doubt: tuple[str, ...] = field(default=())
    """Leaf paths started without an end record (only when interrupted)."""

    @property
    def label(self) -> str:
        """``interrupted mid-run`` or the projected status (``-`` when none)."""
        if self.interrupted:
            return INTERRUPTED
        return self.status.value if self.status is not None else "-"

    def to_dict(self) -> dict[str, object]:
        return {
            "invocation_id": self.invocation_id,
            "status": self.status.value if self.status else None,
            "label": self.label,
            "live": self.live,
            "interrupted": self.interrupted,
            "in_doubt": list(self.in_doubt),
            "lease": None
            if self.lease is None
            else {**self.lease.model_dump(), "holder": self.lease.holder, "live": self.live},
        }


def in_doubt_paths(proj: Projection, invocation_id: str) -> list[str]:
    """Leaf runs with a start record and no end record (``NodeRun.unfinished``).
    Meaningful only when no process is running the invocation."""
    return sorted(r.path for r in proj.runs(invocation_id) if r.unfinished)


def is_mid_run(proj: Projection, invocation_id: str) -> bool:
    """The projection says a turn of the invocation has not finished."""
    if invocation_id not in proj.invocations:
        return False
    status = proj.invocation_status(invocation_id)
    return status is None or status in MID_RUN


async def stopped_mid_run(
    store: SessionStore, session_id: str, invocation_id: str, proj: Projection
) -> tuple[bool, Lease | None]:
    """Whether ``proj`` (read *before* this call) shows the invocation stopped
    mid-run, checked against the store now: no live lease, and no event of the
    invocation appended since ``proj`` was read (a turn that was live when
    ``proj`` was read held the lease then, and wrote its end record before it
    let go). Returns (stopped, the lease row read)."""
    if not is_mid_run(proj, invocation_id):
        return False, None
    lease = await store.get_lease(session_id, invocation_id)
    if lease_is_live(lease):
        return False, lease
    if await store.invocation_events(session_id, invocation_id, after_seq=proj.position):
        return False, lease  # it moved on since: judge a fresh read, not this one
    return True, lease


def health_from(
    proj: Projection, invocation_id: str, lease: Lease | None, now: float | None = None
) -> InvocationHealth:
    """Pure: the health of one invocation from its projection and its lease row."""
    live = lease_is_live(lease, now)
    status = proj.invocation_status(invocation_id)
    interrupted = not live and is_mid_run(proj, invocation_id)
    doubt = tuple(in_doubt_paths(proj, invocation_id)) if interrupted else ()
    return InvocationHealth(invocation_id, status, lease, live, interrupted, doubt)


async def invocation_health(
    store: SessionStore, session_id: str, invocation_id: str, proj: Projection | None = None
) -> InvocationHealth:
    """The health of one invocation (loads its projection unless given; a given
    one must be at least as new as the store was when the call began)."""
    from .resume import load_invocation

    if proj is None:
        proj = await load_invocation(store, session_id, invocation_id)
    for _ in range(3):
        stopped, lease = await stopped_mid_run(store, session_id, invocation_id, proj)
        if stopped or lease_is_live(lease) or not is_mid_run(proj, invocation_id):
            return health_from(proj, invocation_id, lease)
        proj = await load_invocation(store, session_id, invocation_id)  # it moved on: read again
    return health_from(proj, invocation_id, await store.get_lease(session_id, invocation_id))


async def session_health(
    store: SessionStore, session_id: str, proj: Projection | None = None
) -> dict[str, InvocationHealth]:
    """Health of every invocation of a session, by invocation id.

    With ``proj`` (a projection of the whole session, e.g. the console's), one
    store read (the lease rows). Without it, only *candidates* are loaded -- the
    invocations with a lease row or a running status in the index -- and the
    others are reported from the index alone (they cannot be mid-run)."""
    leases = {lease.invocation_id: lease for lease in await store.list_leases(session_id)}
    now = time.time()
    out: dict[str, InvocationHealth] = {}
    if proj is not None:
        for inv in proj.invocations:
            h = health_from(proj, inv, leases.get(inv), now)
            if h.interrupted:  # confirm: the projection may predate a turn that just ended
                h = await invocation_health(store, session_id, inv, proj)
            out[inv] = h
        return out
    for summary in await store.list_invocations(session_id):
        inv = summary.invocation_id
        if inv in leases or summary.status == InvocationState.RUNNING:
            out[inv] = await invocation_health(store, session_id, inv)
        else:
            status = NodeStatus(DisplayStatus.of(summary.status))
            out[inv] = InvocationHealth(inv, status, None, False, False)
    return out


def page_verdicts(
    sessions: Iterable[tuple[str, str]], leases: Iterable[Lease], now: float | None = None
) -> tuple[set[str], list[str]]:
    """Pure: a first verdict on a page of the sessions list from its ``(session id,
    status)`` rows and their lease rows (one read: :func:`engine.store.base.leases_of`).
    Returns (the sessions that look stopped mid-run: RUNNING and no live lease; every
    session whose verdict :func:`interrupted_invocations` must still give: the RUNNING
    ones and any with a lease row). The others cannot be mid-run and need nothing more.
    A first verdict cannot tell nodes in doubt (that needs the invocation's events),
    nor a running session whose other invocation stopped beside a live one."""
    held: dict[str, list[Lease]] = {}
    for lease in leases:
        held.setdefault(lease.session_id, []).append(lease)
    stopped: set[str] = set()
    judge: list[str] = []
    for sid, status in sessions:
        rows = held.get(sid, [])
        if status != SessionStatus.RUNNING and not rows:
            continue
        judge.append(sid)
        if status == SessionStatus.RUNNING and not any(lease_is_live(x, now) for x in rows):
            stopped.add(sid)
    return stopped, judge


async def interrupted_invocations(
    store: SessionStore, session_id: str, session_status: str | None = None
) -> list[InvocationHealth]:
    """The session's invocations that stopped mid-run (what the sessions list
    flags). Pass the listing's ``session_status`` to skip the invocation index
    for sessions that are not running and hold no lease rows (the common case)."""
    if session_status is not None and session_status != SessionStatus.RUNNING and not await store.list_leases(session_id):
        return []
    return [h for h in (await session_health(store, session_id)).values() if h.interrupted]
