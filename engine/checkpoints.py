"""Seek checkpoints: the session's projection every :data:`EVERY` events, so
``hitl replay S --at N`` folds at most about that many events whatever N is.

A checkpoint at seq ``c`` is :meth:`~engine.projection.Projection.compact_all`
of the fold of events ``1..c`` (every invocation's latest runs, the session
state): a function of history that never changes (events are append-only), so
one stays valid forever and is a cache, never a source of truth -- an export
leaves them out and an import rebuilds them from the events it validated.

Who writes them: the end of a turn (:class:`engine.runner.Runner`, after the
lease is released: :func:`after_turn`) whose events crossed a multiple of
:data:`EVERY`. Any other turn pays nothing (not a statement); such a turn reads
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
:data:`BYTES_PER_EVENT` bytes of checkpoint per event on average.

The store's side is the ``projection_checkpoints`` capability:
``last_projection_checkpoint(session_id) -> int`` (0: none),
``get_projection_checkpoint(session_id, at_most) -> (seq, data) | None`` (the
latest at or before ``at_most``; None also for an unreadable row) and
``put_projection_checkpoints(session_id, [(seq, data), ...])``.
"""

from __future__ import annotations

import contextlib
import json
from typing import Any

from pydantic_core import to_json

from .projection import Projection
from .store.base import SessionStore, has_capability

EVERY = 1000
"""Events between two checkpoints (at least)."""

BYTES_PER_EVENT = 256
"""A checkpoint of B bytes is followed by the next one no sooner than
B / BYTES_PER_EVENT events later: their storage stays a fraction of the events'."""

CATCH_UP_SPANS = 8
"""Checkpoints one :func:`catch_up` call writes at most (bounds its cost)."""

PAGE = 2000
"""Events read per store call while folding."""


def supported(store: object) -> bool:
    return has_capability(store, "projection_checkpoints")


def projection_from(data: dict[str, Any]) -> Projection | None:
    """A checkpoint's projection; None for a damaged one (a cache: as good as none)."""
    try:
        return Projection.from_dict(data)
    except (KeyError, TypeError, ValueError, AttributeError):
        return None


async def nearest(store: SessionStore, session_id: str, position: int) -> tuple[Projection, int] | None:
    """The latest checkpoint at or before ``position``: (its projection, its seq)."""
    if position <= 0 or not supported(store):
        return None
    found = await store.get_projection_checkpoint(session_id, position)  # type: ignore[attr-defined]
    if found is None:
        return None
    proj = projection_from(found[1])
    return None if proj is None else (proj, found[0])


def _gap(data_bytes: int) -> int:
    return max(EVERY, data_bytes // BYTES_PER_EVENT)


async def catch_up(
    store: SessionStore, session_id: str, *, spans: int | None = CATCH_UP_SPANS, last_seq: int | None = None
) -> int:
    """Write the checkpoints the session is due since its last one (at most
    ``spans`` of them; None: all) up to ``last_seq`` (default: the session's
    last event). Returns how many were written. Folds from the last checkpoint
    (or event 1), reading each event once."""
    if not supported(store) or getattr(store, "read_only", False):
        return 0
    if last_seq is None:
        last_seq = (await store.get_session(session_id)).last_seq
    last = await store.last_projection_checkpoint(session_id)  # type: ignore[attr-defined]
    proj: Projection | None = None
    gap = EVERY
    if last:
        found = await nearest(store, session_id, last)
        if found is not None and found[1] == last:
            proj = found[0]
            gap = _gap(len(to_json(proj.to_dict())))
    if proj is None:
        proj, last = Projection(), 0
    if last_seq < last + gap:
        return 0
    written: list[tuple[int, dict[str, Any]]] = []
    target = last + gap
    seq = last
    while seq < last_seq and (spans is None or len(written) < spans):
        page = await store.events(session_id, after_seq=seq, limit=min(PAGE, target - seq))
        if not page:
            break
        for se in page:
            proj.apply(se.event, se.seq)
        seq = page[-1].seq
        if seq == target:
            proj = proj.compact_all()  # also keeps the fold's memory that of one checkpoint
            text = to_json(proj.to_dict())  # now: to_dict shares values the fold goes on changing
            written.append((seq, json.loads(text)))
            target = seq + _gap(len(text))
            if target > last_seq:
                break
    if written:
        await store.put_projection_checkpoints(session_id, written)  # type: ignore[attr-defined]
    return len(written)


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
        await catch_up(store, session_id, last_seq=last)


async def rebuild(store: SessionStore, session_id: str) -> int:
    """Every checkpoint of a session just imported or copied (from its events,
    already validated: a file's checkpoints are never trusted, it has none)."""
    return await catch_up(store, session_id, spans=None)
