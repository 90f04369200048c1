"""Replay over every sample app's demo session: the state at any position equals
a fresh projection of the events before it, and what the replay views show about
one event (``engine.views``) agrees with a fresh fold too."""

from __future__ import annotations

import asyncio
from functools import cache

from hypothesis import given, settings
from hypothesis import strategies as st

from engine.apps import AppRegistry
from engine.models import StoredEvent
from engine.projection import project
from engine.replay import Replay, diff
from engine.store import MemoryStore
from engine.views import frame_dict, goto, node_statuses, status_changes
from sample_sessions.demo import EXPECTED, FIXTURE_EPOCH, build_demo


@cache
def demo_sessions() -> dict[str, list[StoredEvent]]:
    """Every named demo session (each sample app, every state), built once."""

    async def build() -> dict[str, list[StoredEvent]]:
        store = MemoryStore()
        await build_demo(store, epoch=FIXTURE_EPOCH, long_iterations=4)
        return {sid: await store.events(sid) for sid in EXPECTED}

    return asyncio.run(build())


SESSIONS = sorted(EXPECTED)


def fresh(events: list[StoredEvent], k: int):  # type: ignore[no-untyped-def]
    return project([(s.seq, s.event) for s in events[:k]])


def test_the_demo_covers_every_sample_app():
    assert {e.app_name for e in EXPECTED.values()} == set(AppRegistry().names())


@settings(max_examples=60, deadline=None)
@given(
    sid=st.sampled_from(SESSIONS),
    moves=st.lists(st.floats(0, 1), min_size=1, max_size=6),
    every=st.sampled_from([1, 4, 16, 1024]),
)
def test_seek_equals_a_fresh_projection_of_the_prefix(sid, moves, every):
    events = demo_sessions()[sid]
    replay = Replay(events, checkpoint_every=every)
    for m in moves:
        k = round(m * len(events))
        replay.seek(k)
        assert replay.position == k
        assert replay.projection.to_dict() == fresh(events, k).to_dict(), (sid, k)


@settings(max_examples=60, deadline=None)
@given(sid=st.sampled_from(SESSIONS), at=st.floats(0, 1), every=st.sampled_from([3, 1024]))
def test_a_frame_agrees_with_fresh_folds(sid, at, every):
    """goto(k): the state before and after event k, what it changed and the
    per-node statuses ``hitl replay --json`` prints, all from fresh folds."""
    events = demo_sessions()[sid]
    replay = Replay(events, checkpoint_every=every)
    k = max(1, round(at * len(events)))
    frame = goto(replay, k)
    before, after = fresh(events, k - 1), fresh(events, k)
    assert frame.before is not None
    assert frame.before.to_dict() == before.to_dict()
    assert frame.projection.to_dict() == after.to_dict()
    # the restricted diff misses nothing: only what the event touched changes
    whole = diff(before, after)
    assert frame.effects == whole
    inv = events[k - 1].event.invocation_id
    data = frame_dict(frame)
    assert data["nodes"] == node_statuses(after, inv)
    assert data["statuses"] == status_changes(whole)
    assert data["open"] == [i.id for i in after.open_interrupts(inv)]


def test_every_position_of_one_session_in_order():
    """Stepping forward through a whole session (the CLI's pass) stays exact."""
    events = demo_sessions()["incident-redriven-1"]
    replay = Replay(events, checkpoint_every=5)
    kinds = []
    for k in range(1, len(events) + 1):
        frame = goto(replay, k)
        assert frame.projection.to_dict() == fresh(events, k).to_dict()
        kinds += [m.kind for m in frame.markers]
    for kind in ("invocation", "interrupt", "answer", "auto-complete", "pending", "re-execute", "failure", "redrive"):
        assert kind in kinds, kind
