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
  acknowledgement -- which covers exactly the runs it names, once
  (:func:`unacknowledged`): a worker that continues an acknowledged re-drive
  after its predecessor died does not stretch it over a node that went in
  doubt later, nor over a named one that ran again and went in doubt again.
* *queued for a worker* -- mid-run by the projection, no live
  lease, but a turn request waits for a worker of the app (an answer sent
  without the app's code, a re-drive through a worker): nothing is wrong, a
  worker will run it. A request a worker *held* (nodes in doubt wait for an
  acknowledged re-drive) does not count: that invocation is interrupted, with
  the held reason. :func:`turn_requests_by_invocation` reads the requests of a
  page of sessions in one store read.

Blind spot: a request is QUEUED until a worker looks at it; one whose
invocation has nodes in doubt is then held (and reads interrupted).

The console and the CLI call these to show "interrupted mid-run" and the in
doubt nodes; the Runner calls :func:`acquire_invocation_lease`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .errors import InvocationBusyError, LeaseLostError, StoreError
from .loading import load_invocation
from .models import NodeStatus
from .owners import _OPEN_OWNERS, INTERRUPTED, QUEUED, new_owner, owner_live, owner_state  # noqa: F401 (re-exported: owner ids live in engine.owners, which needs no pydantic)
from .status import DisplayStatus, InvocationState, SessionStatus
from .store.base import Lease, SessionStore
from .store.capabilities import LeaseAndNews, WorkerQueue, capability

if TYPE_CHECKING:
    from .projection import Projection
    from .store.workers import TurnReads, TurnRequest

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
        self._timer: asyncio.TimerHandle | None = None
        self._task: asyncio.Task[None] | None = None

    @property
    def owner(self) -> str:
        return self.lease.owner

    @property
    def _interval(self) -> float:
        return max(self.ttl / 3, 0.01)

    def start(self) -> None:
        """Renew from one interval from now. A timer, not a task, until the first
        renewal is due: most turns end before it, and stopping a timer is a
        ``cancel()``, where stopping a task costs a trip through the event loop
        (a cold ``hitl resume`` paid one per turn for a renewal it never made)."""
        if self._timer is None and self._task is None:
            self._timer = asyncio.get_running_loop().call_later(self._interval, self._begin)

    def _begin(self) -> None:
        self._timer = None
        self._task = asyncio.ensure_future(self._beat())

    async def _beat(self) -> None:
        while True:
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
            except Exception as exc:  # noqa: BLE001 -- a driver's own error: stopping would let the lease lapse unsaid
                log.error("renewing the lease of invocation %s failed (%s: %s); trying again",
                          self.lease.invocation_id, type(exc).__name__, exc)
            await asyncio.sleep(self._interval)

    async def _stop_beating(self) -> None:
        if self._timer is not None:  # no renewal started yet: none can be in flight
            self._timer.cancel()
            self._timer = None
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
    """Mid-run by the projection, no live process, and no worker will take it
    (no turn request, or one held): it stopped mid-run."""
    in_doubt: tuple[str, ...] = field(default=())
    """Leaf paths started without an end record (only when interrupted)."""
    queued_for: str | None = None
    """The app whose worker will run the turn: mid-run by the projection, no live
    process, and a runnable turn request waits (None: not queued)."""
    held: str | None = None
    """Why a worker left the invocation's request alone (only when interrupted),
    e.g. nodes in doubt waiting for an acknowledged re-drive."""

    @property
    def queued(self) -> bool:
        return self.queued_for is not None

    @property
    def display(self) -> DisplayStatus | None:
        """INTERRUPTED, QUEUED, or the projected status (None: no run yet)."""
        if self.interrupted:
            return DisplayStatus.INTERRUPTED
        if self.queued:
            return DisplayStatus.QUEUED
        return DisplayStatus.of(self.status) if self.status is not None else None

    @property
    def label(self) -> str:
        """``interrupted mid-run``, ``queued for a worker of APP`` or the projected status (``-`` when none)."""
        if self.interrupted:
            return INTERRUPTED
        if self.queued_for is not None:
            return queued_label(self.queued_for)
        return self.status.value if self.status is not None else "-"

    def to_dict(self) -> dict[str, object]:
        return {
            "invocation_id": self.invocation_id,
            "status": self.status.value if self.status else None,
            "label": self.label,
            "display": self.display.value if self.display else None,
            "live": self.live,
            "interrupted": self.interrupted,
            "in_doubt": list(self.in_doubt),
            "queued": self.queued,
            "queued_for": self.queued_for,
            "held": self.held,
            "lease": None
            if self.lease is None
            else {**self.lease.model_dump(), "holder": self.lease.holder, "live": self.live},
        }


def queued_label(app_name: str) -> str:
    """What a surface says of a queued invocation."""
    return f"{QUEUED} of {app_name}"


Requests = dict[tuple[str, str], "TurnRequest"]
"""Turn requests by (session id, invocation id)."""


async def turn_requests_by_invocation(store: SessionStore, session_ids: list[str]) -> Requests:
    """The turn requests of these sessions, one store read ({} for none, or for
    a store that keeps no turn requests)."""
    if not session_ids or (q := capability(store, WorkerQueue)) is None:
        return {}
    return {(r.session_id, r.invocation_id): r for r in await q.turn_requests_of(session_ids)}


async def queued_turns(store: SessionStore, limit: int = 100_000) -> Requests:
    """Every turn request of the store (at most ``limit``), one read; {} for a store without them."""
    if (q := capability(store, WorkerQueue)) is None:
        return {}
    return {(r.session_id, r.invocation_id): r for r in await q.turn_requests(limit=limit)}


async def _request_of(store: SessionStore, session_id: str, invocation_id: str) -> TurnRequest | None:
    if (q := capability(store, WorkerQueue)) is None:
        return None
    return await q.get_turn_request(session_id, invocation_id)


def in_doubt_paths(proj: Projection, invocation_id: str) -> list[str]:
    """Leaf runs with a start record and no end record (``NodeRun.unfinished``).
    Meaningful only when no process is running the invocation."""
    return sorted(r.path for r in proj.runs(invocation_id) if r.unfinished)


def in_doubt_runs(proj: Projection, invocation_id: str) -> dict[str, int]:
    """The runs in doubt (:func:`in_doubt_paths`) -> the position of the start
    record each is in doubt since: what an operator's acknowledgement names."""
    return {r.path: r.last_start_pos for r in proj.runs(invocation_id) if r.unfinished}


Acknowledgement = Mapping[str, int]
"""An operator's acknowledgement of nodes in doubt: run path -> the position of
the start record the operator saw it in doubt since (:func:`in_doubt_runs`)."""


def unacknowledged(proj: Projection, invocation_id: str, ack: Acknowledgement) -> list[str]:
    """The runs in doubt that ``ack`` does not cover. An acknowledgement covers
    exactly the runs it names, once: a named run that started again since (its
    acknowledged re-drive re-ran it) and went in doubt again is not covered, nor
    is a run that went in doubt after it -- each holds the turn again."""
    return sorted(p for p, pos in in_doubt_runs(proj, invocation_id).items() if ack.get(p) != pos)


def is_mid_run(proj: Projection, invocation_id: str) -> bool:
    """The projection says a turn of the invocation has not finished."""
    if invocation_id not in proj.invocations:
        return False
    status = proj.invocation_status(invocation_id)
    return status is None or status in MID_RUN


async def stopped_mid_run(
    store: SessionStore, session_id: str, invocation_id: str, proj: Projection, *, read: TurnReads | None = None
) -> tuple[bool, Lease | None]:
    """Whether ``proj`` (read *before* this call) shows the invocation stopped
    mid-run, checked against the store now: no live lease, and no event of the
    invocation appended since ``proj`` was read (a turn that was live when
    ``proj`` was read held the lease then, and wrote its end record before it
    let go). Returns (stopped, the lease row read). ``read``: ``proj`` and the
    lease as a worker's claim read them in one snapshot (nothing can have been
    appended between the two), so the store is not asked again."""
    if not is_mid_run(proj, invocation_id):
        return False, None
    if read is not None:
        return not lease_is_live(read.lease), read.lease
    if (both := capability(store, LeaseAndNews)) is not None:  # one read (a worker's every continuation)
        lease, moved = await both.lease_and_news(session_id, invocation_id, proj.position)
        return not lease_is_live(lease) and not moved, lease
    lease = await store.get_lease(session_id, invocation_id)
    if lease_is_live(lease):
        return False, lease
    if await store.invocation_events(session_id, invocation_id, after_seq=proj.position):
        return False, lease  # it moved on since: judge a fresh read, not this one
    return True, lease


def health_from(
    proj: Projection,
    invocation_id: str,
    lease: Lease | None,
    now: float | None = None,
    request: TurnRequest | None = None,
) -> InvocationHealth:
    """Pure: the health of one invocation from its projection, its lease row and
    its turn request (queued when a runnable one waits; its held reason when not)."""
    live = lease_is_live(lease, now)
    status = proj.invocation_status(invocation_id)
    stopped = not live and is_mid_run(proj, invocation_id)
    if stopped and request is not None and request.held is None:
        return InvocationHealth(invocation_id, status, lease, live, False, queued_for=request.app_name)
    doubt = tuple(in_doubt_paths(proj, invocation_id)) if stopped else ()
    held = request.held if stopped and request is not None else None
    return InvocationHealth(invocation_id, status, lease, live, stopped, doubt, held=held)


_UNREAD: Any = object()


async def invocation_health(
    store: SessionStore,
    session_id: str,
    invocation_id: str,
    proj: Projection | None = None,
    *,
    request: TurnRequest | None = _UNREAD,
) -> InvocationHealth:
    """The health of one invocation (loads its projection unless given; a given
    one must be at least as new as the store was when the call began).
    ``request``: its turn request when the caller read it (else it is read here,
    when the invocation looks stopped)."""
    if proj is None:
        proj = await load_invocation(store, session_id, invocation_id)
    for _ in range(3):
        stopped, lease = await stopped_mid_run(store, session_id, invocation_id, proj)
        if stopped or lease_is_live(lease) or not is_mid_run(proj, invocation_id):
            break
        proj = await load_invocation(store, session_id, invocation_id)  # it moved on: read again
    else:
        lease = await store.get_lease(session_id, invocation_id)
    if request is _UNREAD:
        request = await _request_of(store, session_id, invocation_id) if is_mid_run(proj, invocation_id) else None
    return health_from(proj, invocation_id, lease, request=request)


async def session_health(
    store: SessionStore, session_id: str, proj: Projection | None = None, requests: Requests | None = None
) -> dict[str, InvocationHealth]:
    """Health of every invocation of a session, by invocation id.

    With ``proj`` (a projection of the whole session, e.g. the console's), one
    store read (the lease rows) and one for the turn requests (unless given).
    Without it, only *candidates* are loaded -- the invocations with a lease
    row, a turn request or a running status in the index -- and the others are
    reported from the index alone (they cannot be mid-run)."""
    leases = {lease.invocation_id: lease for lease in await store.list_leases(session_id)}
    if requests is None:
        requests = await turn_requests_by_invocation(store, [session_id])
    now = time.time()
    out: dict[str, InvocationHealth] = {}
    if proj is not None:
        for inv in proj.invocations:
            request = requests.get((session_id, inv))
            h = health_from(proj, inv, leases.get(inv), now, request)
            if h.interrupted or h.queued:  # confirm: the projection may predate a turn that just ended
                h = await invocation_health(store, session_id, inv, proj, request=request)
            out[inv] = h
        return out
    for summary in await store.list_invocations(session_id):
        inv = summary.invocation_id
        if inv in leases or (session_id, inv) in requests or summary.status == InvocationState.RUNNING:
            out[inv] = await invocation_health(store, session_id, inv, request=requests.get((session_id, inv)))
        else:
            status = NodeStatus(DisplayStatus.of(summary.status))
            out[inv] = InvocationHealth(inv, status, None, False, False)
    return out


def page_verdicts(
    sessions: Iterable[tuple[str, str]],
    leases: Iterable[Lease],
    requests: Requests | None = None,
    now: float | None = None,
) -> tuple[set[str], set[str], list[str]]:
    """Pure: a first verdict on a page of the sessions list from its ``(session id,
    status)`` rows and their lease rows (one read: :func:`engine.store.base.leases_of`).
    and the page's turn requests (one read: :func:`turn_requests_by_invocation`).
    Returns (the sessions that look stopped mid-run: RUNNING, no live lease and no
    runnable turn request; those that look queued for a worker: RUNNING, no live lease
    and a runnable request; every session whose verdict :func:`stopped_invocations`
    must still give: the RUNNING ones and any with a lease row or a turn request).
    The others cannot be mid-run and need nothing more.
    A first verdict cannot tell nodes in doubt (that needs the invocation's events),
    nor a running session whose other invocation stopped beside a live one."""
    held: dict[str, list[Lease]] = {}
    for lease in leases:
        held.setdefault(lease.session_id, []).append(lease)
    runnable = {sid for (sid, _inv), req in (requests or {}).items() if req.held is None}
    asked = {sid for sid, _inv in (requests or {})}
    stopped: set[str] = set()
    queued: set[str] = set()
    judge: list[str] = []
    for sid, status in sessions:
        rows = held.get(sid, [])
        if status != SessionStatus.RUNNING and not rows and sid not in asked:
            continue
        judge.append(sid)
        if status == SessionStatus.RUNNING and not any(lease_is_live(x, now) for x in rows):
            (queued if sid in runnable else stopped).add(sid)
    return stopped, queued, judge


async def stopped_invocations(
    store: SessionStore, session_id: str, session_status: str | None = None, requests: Requests | None = None
) -> list[InvocationHealth]:
    """The session's invocations that stopped mid-run or are queued for a worker
    (what a sessions list flags). Pass the listing's ``session_status`` to skip the
    invocation index for sessions that are not running and hold no lease rows nor
    turn requests (the common case); ``requests``: the page's turn requests
    (:func:`turn_requests_by_invocation`), else they are read here."""
    if requests is None:
        requests = await turn_requests_by_invocation(store, [session_id])
    if (
        session_status is not None
        and session_status != SessionStatus.RUNNING
        and not any(sid == session_id for sid, _ in requests)
        and not await store.list_leases(session_id)
    ):
        return []
    health = await session_health(store, session_id, requests=requests)
    return [h for h in health.values() if h.interrupted or h.queued]


async def interrupted_invocations(
    store: SessionStore, session_id: str, session_status: str | None = None, requests: Requests | None = None
) -> list[InvocationHealth]:
    """The session's invocations that stopped mid-run, queued ones left out
    (:func:`stopped_invocations`)."""
    return [h for h in await stopped_invocations(store, session_id, session_status, requests) if h.interrupted]


async def page_health(store: SessionStore, sessions: Iterable[tuple[str, str]]) -> dict[str, list[InvocationHealth]]:
    """For a page of sessions (``(session id, status)``, as :func:`page_verdicts`
    takes them): the invocations of each that stopped mid-run or are queued
    (sessions with none left out). The turn requests of the whole page are one
    store read; what the sessions list (``hitl sessions``) and the console's full
    verdict after its first paint both show."""
    rows = list(sessions)
    requests = await turn_requests_by_invocation(store, [sid for sid, _status in rows])
    out: dict[str, list[InvocationHealth]] = {}
    for sid, status in rows:
        found = await stopped_invocations(store, sid, status, requests)
        if found:
            out[sid] = found
    return out
