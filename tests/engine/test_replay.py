"""Replay: the state at every position equals a fresh fold of the prefix, and
markers explain answers, inferred auto-completions, re-executions, loop runs
and failures."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine import START, Workflow, WorkflowFailed, node
from engine.projection import project
from engine.replay import Replay, diff

from .conftest import Harness
from .deploy_loop import deploy, gate, review, verify


@node
async def done(ctx, node_input):
    if not ctx.state.get("fixed"):
        raise RuntimeError("disk full")
    return "shipped"


async def history():
    wf = Workflow("wf", [(START, deploy, gate, verify), (verify, {"retry": deploy, "ok": review}), (review, done)])
    h = Harness(wf)
    await h.start()
    await h.answer({"gate-1": "bad"}, operator="ann", reason="smoke test red")
    await h.answer({"gate-2": "good"}, operator="ann")
    with pytest.raises(WorkflowFailed):
        await h.answer({"r": "ok"}, operator="bob")
    inv = next(iter((await h.projection()).invocations))
    await h.redrive(inv, state_delta={"fixed": True}, operator="bob", reason="disk cleaned")
    return await h.store.events("s1")


def state(p):
    return p.to_dict()


@settings(max_examples=25, deadline=None)
@given(moves=st.lists(st.integers(0, 200), min_size=1, max_size=15), every=st.sampled_from([1, 3, 7, 1024]))
async def test_state_at_every_position_equals_a_fresh_fold(moves, every):
    events = await history()
    r = Replay(events, checkpoint_every=every)
    for m in moves:
        k = m % (len(events) + 1)
        r.seek(k)
        assert r.position == k
        assert state(r.projection) == state(project([(s.seq, s.event) for s in events[:k]]))
        if k > 0:
            r.step(-1)
            assert state(r.projection) == state(project([(s.seq, s.event) for s in events[: k - 1]]))


async def test_markers_and_operator_action_jumps():
    events = await history()
    r = Replay(events)
    kinds_seen: dict[str, list[str]] = {}
    while r.position < len(r):
        step = r.step(1)
        for m in step.markers:
            kinds_seen.setdefault(m.kind, []).append(m.text)
    assert any("gate-1 by ann (smoke test red)" in t for t in kinds_seen["answer"])
    assert any("wf@1/gate@1 auto-completed from the answer" in t for t in kinds_seen["auto-complete"])
    assert any("wf@1/review@1 will re-execute" in t for t in kinds_seen["pending"])
    assert any("wf@1/review@1 re-executes with the same run id" in t for t in kinds_seen["re-execute"])
    assert any("wf@1/deploy@2: fresh run 2" in t for t in kinds_seen["fresh-run"])
    assert kinds_seen["error"] == ["wf@1/done@1 attempt 1 raised RuntimeError: disk full"]
    assert kinds_seen["failure"] == ["wf@1/done@1 failed: RuntimeError: disk full", "wf@1 failed: RuntimeError: disk full"]
    assert kinds_seen["redrive"] == ["redrive by bob (disk cleaned)"]
    # jumps between operator actions
    r.seek(0)
    positions = []
    while True:
        before = r.position
        r.next_action()
        if r.position == before:
            break
        positions.append(r.position)
    assert positions == r.actions and len(positions) == 4
    r.prev_action()
    assert r.position == positions[-2]


async def test_diff_between_two_positions():
    events = await history()
    r = Replay(events)
    first_answer = r.actions[0]
    a = r.projection_at(first_answer - 1)
    b = r.projection_at(first_answer + 12)
    rows = {(row.area, row.key): (row.before, row.after) for row in diff(a, b)}
    assert rows[("node", "wf@1/gate@1 status")] == ("WAITING", "COMPLETED")
    assert rows[("interrupt", "gate-1")] == ("open", 'answered: "bad"')
    assert rows[("node", "wf@1/deploy@2")][1].startswith("new run")
    assert rows[("state", "n")] == (1, 2)
