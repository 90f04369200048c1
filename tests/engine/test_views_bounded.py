"""The views of a long loop are bounded by what they show: the folding rule read
from an index of a run's children (equal to folding the whole list), and the runs
per status kept by the projection as it folds (equal to counting them)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from engine import views
from engine.models import NodeStatus
from engine.projection import Projection
from engine.replay import Replay
from tests.console.big_store import loop_session

POSITIONS = [*range(590, 598), 300, 301, 299, 200, 598, 150, 151, 3, 0, 597]
"""Forward steps, steps back and jumps over a 600-event loop."""


def counted(proj: Projection, invocation_id: str) -> dict[NodeStatus, int]:
    out: dict[NodeStatus, int] = {}
    for run in proj.runs(invocation_id):
        out[run.status] = out.get(run.status, 0) + 1
    return out


def frames() -> Iterator[tuple[int, Projection, str]]:
    """(position, the replay's projection there, the invocation) over ``POSITIONS``."""
    _s, events, inv = loop_session(600)
    replay = Replay([(i + 1, e) for i, e in enumerate(events)], checkpoint_every=64)
    for position in POSITIONS:
        replay.seek(position)
        yield position, replay.projection, inv


def test_the_indexed_rows_of_a_long_loop_equal_the_folding_rule_at_every_position(monkeypatch: Any) -> None:
    for _position, proj, inv in frames():
        run = proj.get(inv, "crawl@1")
        if run is None or len(run.children) < views.INDEX_FROM:
            continue
        fast, slow = views.visible_children(proj, run), views.visible_children(proj, run, index=False)
        assert [(r.path, n) for r, n in fast.shown] == [(r.path, n) for r, n in slow.shown]
        assert fast.earlier == slow.earlier and len(fast.earlier) == len(slow.earlier) == fast.folded
        assert list(fast.earlier[-3:]) == list(slow.earlier[-3:]) and fast.earlier[0] == slow.earlier[0]
        rows = views.tree_rows(proj, inv)
        with monkeypatch.context() as m:
            m.setattr(views, "INDEX_FROM", 10**9)
            assert rows == views.tree_rows(proj, inv)


def test_a_step_reads_the_new_runs_and_the_rows_not_every_earlier_run(monkeypatch: Any) -> None:
    """Once a run's children are indexed, the next frame (a run appended, or a step
    back in another fork of the same history) reads only what changed and the rows."""
    _s, events, inv = loop_session(2000)
    replay = Replay([(i + 1, e) for i, e in enumerate(events)])
    replay.seek(1500)
    run = replay.projection.get(inv, "crawl@1")
    assert run is not None
    views.visible_children(replay.projection, run)  # indexed once
    reads: list[str] = []
    real = Projection.get

    def get(self: Projection, invocation_id: str, path: str) -> Any:
        reads.append(path)
        return real(self, invocation_id, path)

    monkeypatch.setattr(Projection, "get", get)
    for position in (1501, 1502, 1499, 1200, 1503):
        replay.seek(position)
        run = replay.projection.nodes[(inv, "crawl@1")]
        reads.clear()
        kids = views.visible_children(replay.projection, run)
        assert kids.folded == len(run.children) - 1
        assert len(reads) <= 3, (position, reads)  # the new run, if any, and the row


def test_the_projection_keeps_its_runs_per_status_as_it_folds(monkeypatch: Any) -> None:
    for position, proj, inv in frames():
        if position == 0:
            assert proj.status_counts(inv) == {}
            continue
        assert proj.status_counts(inv) == counted(proj, inv)
        assert proj.fork().status_counts(inv) == counted(proj, inv)
        assert Projection.from_dict(proj.to_dict()).status_counts(inv) == counted(proj, inv)  # counted when asked
        compact = proj.compact(inv)
        assert compact.status_counts(inv) == counted(compact, inv)
    _s, events, inv = loop_session(600)
    replay = Replay([(i + 1, e) for i, e in enumerate(events)], checkpoint_every=64)
    replay.seek(598)
    walks = []
    monkeypatch.setattr(Projection, "runs", lambda self, i: walks.append(i) or [])
    for position in (597, 100, 101, 598):
        replay.seek(position)
        assert sum(replay.projection.status_counts(inv).values()) > 0
    assert walks == []  # kept as events are applied, in forks too: never recounted


def test_a_step_back_starts_from_a_state_the_replay_kept(monkeypatch: Any) -> None:
    """``[`` re-folded up to ``checkpoint_every`` events from the checkpoint before
    the cursor: the frames the cursor stood at keep their state before the event,
    so stepping back over them applies one event; every frame stays what a fresh
    replay computes."""
    import random

    _s, events, _inv = loop_session(1500)
    pairs = [(i + 1, e) for i, e in enumerate(events)]
    replay = Replay(pairs, checkpoint_every=128)
    rng, position = random.Random(5), 700
    for _ in range(200):
        position = max(1, min(len(events), position + rng.choice([1, 1, -1, -1, -2, 5, -40, 300, -200])))
        frame = views.goto(replay, position)
        fresh = views.goto(Replay(pairs, checkpoint_every=128), position)
        assert views.frame_dict(frame) == views.frame_dict(fresh), position
        assert frame.before is not None and fresh.before is not None
        assert frame.projection.nodes == fresh.projection.nodes and frame.before.nodes == fresh.before.nodes
    applied: list[int] = []
    real = Projection.apply
    monkeypatch.setattr(Projection, "apply", lambda self, *a, **kw: applied.append(1) or real(self, *a, **kw))
    views.goto(replay, 1000)  # a jump: from a checkpoint
    for target in (1001, 1002, 1001, 1000, 1001):
        applied.clear()
        views.goto(replay, target)
        assert len(applied) == 1, (target, len(applied))
    views.goto(replay, 1400)  # a jump again, then straight back one
    applied.clear()
    views.goto(replay, 1399)
    assert len(applied) == 1
