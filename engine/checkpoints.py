"""Seek checkpoints: the session's projection every :data:`EVERY` events, so
``hitl replay S --at N`` folds at most about that many events whatever N is.

A checkpoint at seq ``c`` is :meth:`~engine.projection.Projection.compact_all`
of the fold of events ``1..c`` (every invocation's latest runs, the session
state): a function of history that never changes (events are append-only), so
one stays valid forever and is a cache, never a source of truth -- an export
leaves them out and an import rebuilds them from the events it validated.

Who writes them: the end of a turn (:class:`engine.runner.Runner`, after the
lease is released: :func:`after_turn`) whose events crossed a multiple of
:data:`EVERY`; an import (``import_session`` of a store with the capability), in
its own transaction, from the pass that validates the file's events
(:class:`Builder`: no second read of the events). Any other turn pays nothing (not a statement); such a turn reads
the last checkpoint's seq and folds the events since it, each read once:
amortised, one read and fold per event written, off the append path and the
lease (``benchmarks/bench_read_scale.py`` measures it). A store written before
checkpoints existed (or a turn killed mid-run) simply has fewer: the next such
turn end catches up, at most :data:`CATCH_UP_SPANS` checkpoints at a time so
that one resume never pays for a whole old session. Reads
never write one (``--read-only`` or not): they seek from the nearest one at or
before N, else from the invocation snapshot, else from event 1.

Spacing: one every :data:`EVERY` events (measured: reading and folding an event
costs ~10-90 us, loading a checkpoint of a few KB well under 1 ms, so 1000
events keep a seek under ~0.1 s on a loaded machine), stretched for sessions
whose checkpoint is large (many invocations): never more than
:data:`BYTES_PER_EVENT` bytes of checkpoint per event on average. The size is
that of the checkpoint's JSON, whatever the store keeps (SQLite deflates large
ones, :mod:`engine.store.sql.packing`, 15-20 times smaller, and keeps the JSON's
length with them): writing one costs a fold and a compaction of every invocation,
in proportion to its JSON, so the spacing keeps that cost per event the same in
every store. (Spaced by the deflated size, a session of 20,000 invocations had a
turn end pay 1.2 s of CPU every ~4,000 events instead of every ~78,000.)

The store's side is the ``projection_checkpoints`` capability:
``last_projection_checkpoint(session_id) -> (seq, bytes)`` (the latest one's seq
and the size of its JSON, read without loading it; ``(0, 0)``: none),
``get_projection_checkpoint(session_id, at_most) -> (seq, data) | None`` (the
latest at or before ``at_most``; None also for an unreadable row) and
``put_projection_checkpoints(session_id, [(seq, data), ...])`` (``data`` a dict, or
its UTF-8 JSON already encoded, as :class:`Builder` makes it: stored as given).
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Any

from pydantic_core import to_json

from .projection import Projection
from .store.base import SessionStore
from .store.capabilities import ProjectionCheckpoints, capability

if TYPE_CHECKING:
    from .models import Event

EVERY = 1000
"""Events between two checkpoints (at least)."""

BYTES_PER_EVENT = 256
"""A checkpoint of B bytes is followed by the next one no sooner than
B / BYTES_PER_EVENT events later: their storage stays a fraction of the events'."""

CATCH_UP_SPANS = 8
"""Checkpoints one :func:`catch_up` call writes at most (bounds its cost); a turn
end's also folds at most ``CATCH_UP_SPANS * EVERY`` events."""

PAGE = 2000
"""Events read per store call while folding."""


def supported(store: object) -> bool:
    """Whether ``store`` keeps seek checkpoints."""
    return capability(store, ProjectionCheckpoints) is not None


def projection_from(data: dict[str, Any]) -> Projection | None:
    """A checkpoint's projection; None for a damaged one (a cache: as good as none)."""
    try:
        return Projection.from_dict(data)
    except (KeyError, TypeError, ValueError, AttributeError):
        return None


async def nearest(store: SessionStore, session_id: str, position: int) -> tuple[Projection, int] | None:
    """The latest checkpoint at or before ``position``: (its projection, its seq)."""
    if position <= 0 or (keeps := capability(store, ProjectionCheckpoints)) is None:
        return None
    found = await keeps.get_projection_checkpoint(session_id, position)
    if found is None:
        return None
    proj = projection_from(found[1])
    return None if proj is None else (proj, found[0])


def _gap(data_bytes: int) -> int:
    return max(EVERY, data_bytes // BYTES_PER_EVENT)


class Builder:
    """The checkpoints of a fold fed one event at a time: what :func:`catch_up`
    folds page by page, and what an import computes in the pass that validates
    its file (:class:`engine.store.jsonl.ExportReader`), so the events are read
    once. Starts from ``proj`` (a checkpoint's projection, its ``position`` the
    checkpoint's seq; default: the empty one) whose size gives ``gap``, the
    events to the next checkpoint (default :data:`EVERY`)."""

    def __init__(self, proj: Projection | None = None, gap: int | None = None) -> None:
        self.proj = proj if proj is not None else Projection()
        self.next = self.proj.position + (EVERY if gap is None else gap)
        """The seq of the next checkpoint."""
        self.rows: list[tuple[int, bytes]] = []
        """(seq, UTF-8 JSON) of each checkpoint written so far, in seq order."""

    def add(self, event: Event, seq: int) -> None:
        """Fold the event at ``seq`` (the one after the last added)."""
        self.proj.apply(event, seq)
        if seq == self.next:
            self.take(seq)

    def take(self, seq: int) -> Projection:
        """The checkpoint at ``seq`` (:attr:`next`, the last event folded into
        :attr:`proj`): compact the fold, keep its row; returns the fold as it
        was before (an import's lifecycle checks keep what compaction dropped)."""
        before = self.proj
        self.proj = before.compact_all()  # also keeps the fold's memory that of one checkpoint
        data = to_json(self.proj.to_dict())  # now: to_dict shares values the fold goes on changing
        self.rows.append((seq, data))
        self.next = seq + _gap(len(data))
        return before


async def catch_up(
    store: SessionStore,
    session_id: str,
    *,
    spans: int | None = CATCH_UP_SPANS,
    last_seq: int | None = None,
    budget: int | None = None,
) -> int:
    """Write the checkpoints the session is due since its last one (at most
    ``spans`` of them; None: all) up to ``last_seq`` (default: the session's
    last event), folding at most ``budget`` events past the first checkpoint it
    writes (None: no limit): a call that is due always writes one, however far
    the stretched spacing puts it -- stopping short of it would leave nothing
    to start from, and every later turn end would fold the same events again
    and write nothing, for ever. Returns how many were written. Folds from the
    last checkpoint (or event 1), reading each event once."""
    if (keeps := capability(store, ProjectionCheckpoints)) is None or store.read_only:
        return 0
    if last_seq is None:
        last_seq = (await store.get_session(session_id)).last_seq
    last, size = await keeps.last_projection_checkpoint(session_id)
    if last and last_seq < last + _gap(size):
        return 0  # not due: decided from the row's size, without loading it (it grows with the session)
    builder: Builder | None = None
    if last:
        found = await nearest(store, session_id, last)
        if found is not None and found[1] == last:
            builder = Builder(found[0], _gap(size))
    if builder is None:
        builder = Builder()
    if last_seq < builder.next:
        return 0
    seq = builder.proj.position
    while seq < last_seq and (spans is None or len(builder.rows) < spans):
        want = min(PAGE, builder.next - seq)
        if budget is not None and builder.rows:
            want = min(want, builder.rows[0][0] + budget - seq)
            if want <= 0:
                break
        page = await store.events(session_id, after_seq=seq, limit=want)
        if not page:
            break
        for se in page:
            builder.add(se.event, se.seq)
        seq = page[-1].seq
        if builder.next > last_seq:
            break
    if builder.rows:  # one per page at most (a page ends at the next checkpoint): never more than spans
        await keeps.put_projection_checkpoints(session_id, builder.rows)
    return len(builder.rows)


async def after_turn(store: SessionStore, session_id: str, before: int, last: int) -> None:
    """At the end of a turn that wrote events ``before + 1 .. last`` (the lease
    already released): :func:`catch_up` when the turn crossed a multiple of
    :data:`EVERY`, else nothing (no statement: the common turn pays nothing).
    A checkpoint is a cache: a store error writing it (busy, full) is not the
    turn's, and a later turn tries again."""
    from .errors import HitlError

    if before // EVERY == last // EVERY or not supported(store):
        return
    with contextlib.suppress(HitlError):
        # Bounded in events too: a session far behind (bulk-loaded, from before the
        # checkpoints) catches up over several turns, each writing at least one,
        # instead of making one resume fold tens of thousands of events. (A single
        # span stretched past the budget by a large checkpoint is still folded whole:
        # once per that many events.)
        await catch_up(store, session_id, last_seq=last, budget=CATCH_UP_SPANS * EVERY)


async def rebuild(store: SessionStore, session_id: str) -> int:
    """Every checkpoint a session is due, folded from its events (a session
    written without them: ``bulk_load``, a store from before them). An import
    needs none of this: it writes them itself, from the pass that validated
    the file (:class:`Builder`; a file's checkpoints are never trusted, it has none)."""
    return await catch_up(store, session_id, spans=None)
