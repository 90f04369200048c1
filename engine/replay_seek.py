"""``hitl replay --at N`` without loading the whole history.

:func:`frame_at` gives the same :class:`~engine.views.Frame` as
``goto(Replay(events), N)`` but reads the store page by page and keeps no
event list: memory is that of one projection, whatever N is. It seeks from the
store's snapshot (the cache a resume loads) when that snapshot is exact for
position N - 1 -- the session has one invocation so far and the snapshot is not
past N - 1 -- and reads only the events after it. A snapshot is compact (it
keeps the latest run of each node; run ids still count the earlier ones), so
it is used only for the latest-runs view, never with ``--all-runs``.

It also seeks from the nearest seek checkpoint at or before N - 1 (the session's
compact projection every ~1000 events, :mod:`engine.checkpoints`), whichever of
the two is later: then ``--at N`` folds at most about 1000 events whatever N
and however many invocations. A store without checkpoints folds from event 1.
"""

from __future__ import annotations

from collections.abc import Callable

from .checkpoints import nearest, projection_from
from .models import Event
from .projection import Projection
from .replay import Step, markers_for
from .store.base import SessionStore
from .views import Frame

PAGE = 2000
"""Events read per store call."""


async def base_at(store: SessionStore, session_id: str, position: int, *, compact_ok: bool) -> tuple[Projection, int, bool]:
    """(projection, its position, from a snapshot?) to start folding from for
    the state after ``position`` events: a usable snapshot, else the empty one."""
    if not compact_ok or position <= 0:
        return Projection(), 0, False
    best = await nearest(store, session_id, position)  # a seek checkpoint (engine/checkpoints.py)
    if best is not None and best[1] == position:
        return best[0], best[1], True
    started = [i for i in await store.list_invocations(session_id) if i.started_seq <= position]
    if len(started) == 1:  # several invocations: a per-invocation snapshot misses the others' state
        snap = await store.get_snapshot(session_id, started[0].invocation_id)
        if snap is not None and (best[1] if best else 0) < snap[0] <= position:
            proj = projection_from(snap[1])  # a damaged cache is no cache
            if proj is not None:
                return proj, snap[0], True
    if best is not None:
        return best[0], best[1], True
    return Projection(), 0, False


async def frame_at(
    store: SessionStore,
    session_id: str,
    position: int,
    total: int,
    *,
    compact_ok: bool = False,
    shown: Callable[[Event], Event] = lambda e: e,
) -> tuple[Frame, bool]:
    """The frame at ``position`` (1..total) and whether it started from a snapshot.

    ``shown`` maps each event read before it is folded (the CLI masks secrets
    there); events from a snapshot were never seen by it -- render the frame's
    values through the same redactor."""
    proj, seq, from_snapshot = await base_at(store, session_id, position - 1, compact_ok=compact_ok)
    while seq < position - 1:
        page = await store.events(session_id, after_seq=seq, limit=min(PAGE, position - 1 - seq))
        if not page:
            break
        for se in page:
            proj.apply(shown(se.event), se.seq)
        seq = page[-1].seq
    before = proj.fork()
    stored = await store.event_at(session_id, position)
    event = shown(stored.event)
    change = proj.apply(event, stored.seq)
    step = Step(position, stored.seq, event, change, markers_for(event, change, proj))
    return Frame(position, total, step, before, proj), from_snapshot
