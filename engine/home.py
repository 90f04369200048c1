"""The home summary: what needs attention in the whole store, in one line.

The sessions screen (and anything else that wants it) shows the counts per
state -- waiting, interrupted mid-run, in doubt, failed, running --, the age of
the oldest open interrupt, the open interrupts per app and the interrupts raised
per hour over the last day. :func:`home_summary` computes them from one store
read (:meth:`~engine.store.base.SessionStore.overview`, a few aggregate queries
over the derived indexes) plus the liveness policy (:mod:`engine.liveness`) for
the invocations the index calls running: so it costs the same on a store of ten
sessions as on one of 100,000.

Rules:

* ``waiting``, ``failed``: sessions with that stored status.
* ``interrupted``: sessions with a running invocation no live process holds
  (its lease row is missing, expired, or its owner provably dead) and no
  worker will take (no runnable turn request);
  ``queued``: the other sessions with such an invocation -- a turn request
  waits for a worker of the app (one read of their requests);
  ``running``: the other running sessions.
* ``in_doubt``: interrupted sessions with a leaf run started and never ended
  (it may have done its side effect). Judging that loads the invocation, so it
  is done for at most :data:`DOUBT_LIMIT` interrupted invocations;
  ``in_doubt_exact`` says whether every one was judged.

Blind spots: the counts are a snapshot (a turn may end between the read and the
paint), and an owner on another host counts as live until its lease expires.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .liveness import Requests, invocation_health, queued_turns
from .owners import owner_live
from .store.base import SessionStore, StoreOverview

HOUR = 3600.0
BUCKETS = 24
DOUBT_LIMIT = 20
"""At most this many interrupted invocations are loaded to find nodes in doubt."""
SPARK = "▁▂▃▄▅▆▇█"


@dataclass(frozen=True)
class HomeSummary:
    """The home screen's summary line, computed once (see the module docstring)."""

    waiting: int = 0
    interrupted: int = 0
    queued: int = 0
    """Sessions whose turn waits for a worker (no live process, a runnable turn request)."""
    in_doubt: int = 0
    failed: int = 0
    running: int = 0
    total: int = 0
    """Every session of the store."""
    oldest_open_at: float | None = None
    open_by_app: tuple[tuple[str, int], ...] = ()
    """(app, open interrupts), most first (ties by name)."""
    raised_per_hour: tuple[int, ...] = field(default=())
    """Interrupts raised per hour over the last day, oldest hour first."""
    in_doubt_exact: bool = True
    open_by_owner: tuple[tuple[str, int], ...] = ()
    """(owner, open interrupts): an operator's name or ``@group``."""

    @property
    def open_interrupts(self) -> int:
        return sum(n for _, n in self.open_by_app)

    def yours(self, operator: str | None) -> int:
        """Open interrupts ``operator`` owns (claimed by them or assigned to them by name)."""
        return sum(n for who, n in self.open_by_owner if operator and who == operator)


def sparkline(values: tuple[int, ...] | list[int]) -> str:
    """One character per value, ``▁`` (none or the least) to ``█`` (the most);
    a zero is always the lowest bar, so an idle hour never looks busy."""
    top = max(values, default=0)
    if top <= 0:
        return SPARK[0] * len(values)
    return "".join(SPARK[0] if v <= 0 else SPARK[max(1, round(v / top * (len(SPARK) - 1)))] for v in values)


Running = list[tuple[str, str, str | None, float | None]]
"""The index's running invocations: (session id, invocation id, lease owner, lease expiry)."""


def index_stopped(running: Running, requests: Requests | None = None) -> set[str]:
    """Sessions with an invocation the index calls running, no live process holds
    (its lease row missing, expired, or its owner provably dead) and no runnable
    turn request in ``requests``, or one whose request a worker held: interrupted
    mid-run, judged from the index, the lease rows and the requests alone (no
    projection: what is in doubt needs one, :func:`engine.liveness.interrupted_invocations`)."""
    return {sid for sid, _inv in stopped_keys(running, requests)}


def stopped_keys(running: Running, requests: Requests | None) -> list[tuple[str, str]]:
    """The (session, invocation) pairs behind :func:`index_stopped`: the index's
    running ones first, then those whose request a worker held (their index may
    say waiting), each once."""
    live = _live(running)
    runnable = _runnable(requests, live)
    out = [(sid, inv) for sid, inv, *_ in running if (sid, inv) not in live and (sid, inv) not in runnable]
    seen = set(out)
    out += [key for key, r in (requests or {}).items() if r.held is not None and key not in live and key not in seen]
    return out


def _live(running: Running) -> set[tuple[str, str]]:
    """(session, invocation) of the running ones a live process holds."""
    return {(sid, inv) for sid, inv, owner, expires_at in running
            if owner is not None and owner_live(owner, expires_at or 0.0)}


def _runnable(requests: Requests | None, live: set[tuple[str, str]]) -> set[tuple[str, str]]:
    """(session, invocation) of the runnable turn requests no live process is running.
    A queued answer leaves its invocation ``waiting`` in the index (an FR changes no
    status there), so the requests are judged whether the index says running or not."""
    return {key for key, r in (requests or {}).items() if r.held is None and key not in live}


def summarize(
    overview: StoreOverview, doubt: dict[str, bool] | None = None, requests: Requests | None = None
) -> HomeSummary:
    """The summary from a store overview. ``doubt``: session id -> whether an
    interrupted invocation of it has a node in doubt (the sessions judged);
    ``requests``: the store's turn requests (queued for workers).
    Leases are judged against the real clock, like everywhere else."""
    counts = overview.status_counts
    stopped = index_stopped(overview.running, requests)
    queued = {sid for sid, _inv in _runnable(requests, _live(overview.running))} - stopped
    in_running = {sid for sid, *_ in overview.running}
    doubt = doubt or {}
    n_running = counts.get("running", 0)
    return HomeSummary(
        # an answer left to a worker leaves its session "waiting" in the index: it is queued (or held) now
        waiting=max(0, counts.get("waiting", 0) - len((queued | stopped) - in_running)),
        interrupted=len(stopped),
        queued=len(queued),
        in_doubt=sum(1 for sid in stopped if doubt.get(sid)),
        failed=counts.get("failed", 0),
        running=max(0, n_running - len((stopped | queued) & in_running)),
        total=sum(counts.values()),
        oldest_open_at=overview.oldest_open_at,
        open_by_app=tuple(sorted(overview.open_by_app.items(), key=lambda kv: (-kv[1], kv[0]))),
        raised_per_hour=tuple(overview.raised),
        in_doubt_exact=all(sid in doubt for sid in stopped),
        open_by_owner=tuple(sorted(overview.open_by_owner.items())),
    )


async def home_summary(store: SessionStore, now: float) -> HomeSummary:
    """The summary of ``store`` with the last day's hours ending at ``now``: one overview read, then
    at most :data:`DOUBT_LIMIT` invocation loads to find nodes in doubt."""
    since = (now // HOUR + 1) * HOUR - BUCKETS * HOUR  # whole hours, the current one last
    overview = await store.overview(since=since, bucket=HOUR, buckets=BUCKETS)
    requests = await queued_turns(store)  # one read
    doubt: dict[str, bool] = {}
    for sid, inv in stopped_keys(overview.running, requests)[:DOUBT_LIMIT]:  # the interrupted ones
        health = await invocation_health(store, sid, inv, request=requests.get((sid, inv)))
        doubt[sid] = doubt.get(sid, False) or bool(health.interrupted and health.in_doubt)
    return summarize(overview, doubt, requests)
