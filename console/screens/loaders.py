"""Store reads for the console's workers: no widgets here, only the engine's public API.

* :func:`read_events` -- a chunk of a session's log that survives corrupt rows
  (it reports their seqs instead of failing), whatever the backend offers;
* :func:`load_view` -- what the session screen draws first: one invocation's
  projection from the store's cached snapshot plus the events after it, so a
  session with 100,000 events opens in the time of a few small reads;
* :func:`load_history` -- the same invocation folded from its first event, in
  chunks (bounded memory, the UI stays live), when the snapshot left out
  earlier loop iterations.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from engine.errors import CorruptEventError
from engine.models import StoredEvent
from engine.outcome import one_line as engine_one_line
from engine.projection import Projection
from engine.status import InvocationState
from engine.store.base import InvocationSummary, SessionStore
from engine.store.capabilities import Notifications, SkipsCorrupt, capability

from ..messages import InvocationView

CHUNK = 2000
"""Events per read when folding or tailing."""


def skipping_corrupt(store: SessionStore) -> SkipsCorrupt | None:
    """``store`` as one whose reads skip corrupt rows, when it declares that capability."""
    return capability(store, SkipsCorrupt)


async def listen(store: SessionStore, callback: Callable[[str | None, int | None], None]) -> object | None:
    """Subscribe to the store's append notifications (None: it sends none; poll).
    The listener returned has an async ``close()``."""
    if (listens := capability(store, Notifications)) is None:
        return None
    return await listens.notifications(callback)


def one_line(exc: BaseException) -> str:
    """An error as the console's panes and toasts say it (:func:`engine.outcome.one_line`, cut at 300)."""
    return engine_one_line(exc, limit=300)


def _gaps(after_seq: int, events: list[StoredEvent], upto: int | None) -> list[int]:
    """Seqs missing between ``after_seq`` and the last event read (or ``upto``)."""
    got = {e.seq for e in events}
    end = max(max(got, default=after_seq), upto or 0)
    return [s for s in range(after_seq + 1, end + 1) if s not in got]


async def read_events(
    store: SessionStore, session_id: str, *, after_seq: int, limit: int | None, last_seq: int | None = None
) -> tuple[list[StoredEvent], list[int]]:
    """Up to ``limit`` readable events after ``after_seq`` and the seqs of the
    corrupt rows met on the way. ``last_seq`` (read *before* this call) lets a
    short read also report corrupt rows at the end of the log."""
    skipping = skipping_corrupt(store)
    if skipping is not None:
        events = await skipping.events(session_id, after_seq=after_seq, limit=limit, skip_corrupt=True)
        reached_end = limit is None or len(events) < limit
        return events, _gaps(after_seq, events, last_seq if reached_end else None)
    try:
        events = await store.events(session_id, after_seq=after_seq, limit=limit)
        return events, []
    except CorruptEventError as e:
        if e.session_id != session_id or e.seq <= after_seq:
            raise
        # Read around the bad row: what is before it, then what is after it.
        before: list[StoredEvent] = []
        corrupt: list[int] = []
        if e.seq - after_seq - 1 > 0:
            before, corrupt = await read_events(store, session_id, after_seq=after_seq, limit=e.seq - after_seq - 1)
        corrupt.append(e.seq)
        rest = None if limit is None else limit - len(before) - 1
        after: list[StoredEvent] = []
        if rest is None or rest > 0:
            after, more = await read_events(store, session_id, after_seq=e.seq, limit=rest, last_seq=last_seq)
            corrupt += more
        return before + after, corrupt


async def _invocation_tail(
    store: SessionStore, session_id: str, invocation_id: str, after_seq: int, last_seq: int
) -> tuple[list[StoredEvent], list[int]]:
    """One invocation's events after ``after_seq``, skipping corrupt rows."""
    try:
        return await store.invocation_events(session_id, invocation_id, after_seq=after_seq), []
    except CorruptEventError as e:
        first_bad = e.seq
    skipping = skipping_corrupt(store)
    if skipping is not None:
        events = await skipping.invocation_events(session_id, invocation_id, after_seq=after_seq, skip_corrupt=True)
        return events, [first_bad]
    # Fallback: scan the session from after_seq and keep this invocation's events.
    out: list[StoredEvent] = []
    corrupt: list[int] = []
    pos = after_seq
    while True:
        chunk, bad = await read_events(store, session_id, after_seq=pos, limit=CHUNK, last_seq=last_seq)
        corrupt += bad
        out += [e for e in chunk if e.event.invocation_id == invocation_id]
        if not chunk:
            return out, sorted(set(corrupt))
        pos = chunk[-1].seq


def pick_invocation(invocations: list[InvocationSummary], wanted: str | None) -> str | None:
    """``wanted`` if the session has it, else the latest waiting invocation, else the latest."""
    if not invocations:
        return None
    if wanted and any(i.invocation_id == wanted for i in invocations):
        return wanted
    waiting = [i for i in invocations if i.status == InvocationState.WAITING]
    return (waiting or invocations)[-1].invocation_id


def is_complete(proj: Projection, invocation_id: str) -> bool:
    """False when runs are missing (a compact snapshot drops earlier loop iterations):
    some (parent, name) has a run id higher than the number of its runs."""
    counts: dict[tuple[str | None, str], list[int]] = {}
    for r in proj.runs(invocation_id):
        if r.parent is None:
            continue  # root run ids count invocations, not loops
        try:
            n = int(r.run_id)
        except ValueError:
            continue
        counts.setdefault((r.parent, r.name), []).append(n)
    return all(max(ns) <= len(ns) for ns in counts.values())


async def fold(
    proj: Projection, events: list[StoredEvent], invocation_id: str, *, yield_every: int = CHUNK
) -> None:
    """Apply one invocation's events, yielding to the event loop now and then."""
    for i, se in enumerate(events):
        if se.event.invocation_id == invocation_id and se.seq > proj.position:
            proj.apply(se.event, se.seq)
        if i % yield_every == yield_every - 1:
            await asyncio.sleep(0)


async def load_view(store: SessionStore, session_id: str, invocation_id: str | None) -> InvocationView:
    """The first drawing of a session: its invocations and one invocation's projection."""
    session = await store.get_session(session_id)
    invocations = await store.list_invocations(session_id)
    inv = pick_invocation(invocations, invocation_id)
    if inv is None:
        return InvocationView(session, invocations, None, Projection(), session.last_seq, True)
    proj: Projection | None = None
    after = 0
    snap = await store.get_snapshot(session_id, inv)
    if snap is not None:
        try:
            proj = Projection.from_dict(snap[1])
            after = snap[0]
        except (KeyError, TypeError, ValueError):
            proj = None  # a snapshot from another version: fold from the start instead
    if proj is None:
        return await load_history(store, session_id, inv, session=session, invocations=invocations)
    tail, corrupt = await _invocation_tail(store, session_id, inv, after, session.last_seq)
    await fold(proj, tail, inv)
    return InvocationView(
        session,
        invocations,
        inv,
        proj,
        tree_seq=max(session.last_seq, proj.position),
        complete=is_complete(proj, inv),
        corrupt=corrupt,
    )


async def load_history(
    store: SessionStore,
    session_id: str,
    invocation_id: str,
    *,
    session: Any = None,
    invocations: list[InvocationSummary] | None = None,
) -> InvocationView:
    """One invocation folded from the session's first event, ``CHUNK`` events at a time."""
    if session is None:
        session = await store.get_session(session_id)
    if invocations is None:
        invocations = await store.list_invocations(session_id)
    proj = Projection()
    corrupt: list[int] = []
    pos = 0
    while True:
        chunk, bad = await read_events(store, session_id, after_seq=pos, limit=CHUNK, last_seq=session.last_seq)
        corrupt += bad
        if not chunk:
            break
        await fold(proj, chunk, invocation_id)
        pos = chunk[-1].seq
        await asyncio.sleep(0)
    return InvocationView(
        session,
        invocations,
        invocation_id,
        proj,
        tree_seq=max(pos, session.last_seq),
        complete=True,
        corrupt=sorted(set(corrupt)),
    )
