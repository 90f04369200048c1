"""DESIGN.md 3.12: a node has at most one active run (RUNNING, PENDING or
WAITING) per parent run; an activation that arrives while one is active
queues, in order, and is dispatched as a fresh run with the next run id when
the active run ends (as ADK does)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine import START, RequestInput, Workflow, node
from engine.models import NodeStatus
from engine.projection import Projection

from .conftest import Harness

ACTIVE = {NodeStatus.RUNNING, NodeStatus.PENDING, NodeStatus.WAITING}


def approval_workflow(rerun: bool, first: str = "a") -> Workflow:
    """Two parallel predecessors into one human-approval node with a fixed interrupt id."""

    async def settle(n: int) -> None:
        for _ in range(n):
            await asyncio.sleep(0)

    @node
    async def a(node_input):
        await settle(0 if first == "a" else 20)
        return "A"

    @node
    async def b(node_input):
        await settle(0 if first == "b" else 20)
        return "B"

    if rerun:

        @node(rerun_on_resume=True)
        async def approve(ctx, node_input):
            if "approval" in ctx.resume_inputs:
                yield f"{node_input}:{ctx.resume_inputs['approval']}"
            else:
                yield RequestInput(f"approve {node_input}?", interrupt_id="approval")

    else:

        @node
        async def approve(node_input):
            yield RequestInput(f"approve {node_input}?", interrupt_id="approval")

    return Workflow("wf", [(START, (a, b), approve)])


def approve_runs(p: Projection) -> list[tuple[str, Any, str, Any]]:
    (inv,) = p.invocations
    runs = [r for r in p.runs(inv) if r.name == "approve"]
    return sorted((r.path, r.input, r.status.value, r.output) for r in runs)


@pytest.mark.parametrize("rerun", [True, False], ids=["rerun", "leaf"])
@pytest.mark.parametrize("first", ["a", "b"])
@pytest.mark.parametrize("answers", [("yes", "no"), ("no", "yes")])
async def test_two_predecessors_into_one_approval_node_queue_the_second_activation(rerun, first, answers):
    h = Harness(approval_workflow(rerun, first))
    first_out, second = ("A", "B") if first == "a" else ("B", "A")
    events = await h.start()
    # The first turn does not fail on the fixed id: one run asks, the other activation queues.
    p = await h.projection()
    assert [(i.id, i.path) for i in p.open_interrupts()] == [("approval", "wf@1/approve@1")]
    assert approve_runs(p) == [("wf@1/approve@1", first_out, "WAITING", None)]
    assert await h.status("wf@1") == "WAITING"
    assert [e.path for e in events if e.kind == "start" and e.author == "approve"] == ["wf@1/approve@1"]

    await h.answer({"approval": answers[0]})
    p = await h.projection()
    assert [(i.id, i.path) for i in p.open_interrupts()] == [("approval", "wf@1/approve@2")]
    assert p.get(list(p.invocations)[0], "wf@1/approve@2").input == second

    await h.answer({"approval": answers[1]})
    p = await h.projection()
    out1 = f"{first_out}:{answers[0]}" if rerun else answers[0]
    out2 = f"{second}:{answers[1]}" if rerun else answers[1]
    assert approve_runs(p) == [
        ("wf@1/approve@1", first_out, "COMPLETED", out1),
        ("wf@1/approve@2", second, "COMPLETED", out2),
    ]
    root = await h.run("wf@1")
    assert (root.status, root.output) == (NodeStatus.COMPLETED, out2)  # the run dispatched last, not a race


async def test_fan_in_without_join_runs_the_node_once_per_activation_in_dispatch_order(calls):
    seen: list[tuple[str, Any]] = []

    @node
    async def a(node_input):
        return "A"

    @node
    async def b(node_input):
        return "B"

    @node
    async def c(node_input):
        return "C"

    @node
    async def sink(ctx, node_input):
        seen.append((ctx.run_id, node_input))
        await asyncio.sleep(0)  # another activation arrives while this run is RUNNING
        await asyncio.sleep(0)
        return node_input

    h = Harness(Workflow("wf", [(START, (a, b, c), sink)]))
    await h.start()
    assert [rid for rid, _ in seen] == ["1", "2", "3"]
    assert sorted(v for _, v in seen) == ["A", "B", "C"]
    p = await h.projection()
    (inv,) = p.invocations
    sinks = sorted((r for r in p.runs(inv) if r.name == "sink"), key=lambda r: r.started_pos)
    assert [r.path for r in sinks] == ["wf@1/sink@1", "wf@1/sink@2", "wf@1/sink@3"]
    # never two at once: each run started after the previous one ended
    for prev, nxt in zip(sinks, sinks[1:], strict=False):
        assert prev.completed_pos is not None and prev.completed_pos < nxt.started_pos
    assert (await h.run("wf@1")).output == seen[-1][1]


def assert_one_active_per_node(stored: list[Any]) -> None:
    p = Projection()
    for s in stored:
        p.apply(s.event, s.seq)
        active: dict[tuple[str | None, str], list[str]] = {}
        for r in p.nodes.values():
            if r.status in ACTIVE and r.parent is not None:
                active.setdefault((r.parent, r.name), []).append(r.path)
        assert all(len(v) == 1 for v in active.values()), (s.seq, active)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(
    preds=st.lists(st.sampled_from(["calc", "ask"]), min_size=2, max_size=4),
    target_asks=st.booleans(),
    rerun=st.booleans(),
    data=st.data(),
)
async def test_property_at_most_one_active_run_per_node_at_every_event_prefix(preds, target_asks, rerun, data):
    def pred(i: int, kind: str):
        @node(name=f"p{i}")
        async def p(node_input):
            if kind == "ask":
                yield RequestInput("go?", interrupt_id=f"p{i}")
            else:
                yield f"p{i}"

        return p

    @node(name="target", rerun_on_resume=rerun)
    async def target(ctx, node_input):
        if target_asks and "t" not in ctx.resume_inputs:
            yield RequestInput("ok?", interrupt_id="t")
        elif rerun or not target_asks:
            yield ["target", node_input]

    h = Harness(Workflow("wf", [(START, tuple(pred(i, k) for i, k in enumerate(preds)), target)]))
    await h.start()
    for _ in range(20):
        p = await h.projection()
        open_ids = sorted(i.id for i in p.open_interrupts())
        if not open_ids:
            break
        pick = data.draw(st.sampled_from(open_ids))
        await h.answer({pick: pick})
    stored = await h.store.events(h.session_id)
    assert_one_active_per_node(stored)
    p = await h.projection()
    (inv,) = p.invocations
    runs = sorted(r.run_id for r in p.runs(inv) if r.name == "target")
    assert runs == [str(i) for i in range(1, len(preds) + 1)]
    assert p.root(inv).status is NodeStatus.COMPLETED


async def test_a_queued_activation_survives_the_turn_when_both_ends_are_logged_before_the_first_start():
    # Both predecessors end before the approval's first run starts: the log alone
    # (positions) would say that run consumed both; its start record's ``after`` says which.
    @node
    def a(node_input):
        return "A"

    @node
    def b(node_input):
        return "B"

    @node
    async def approve(node_input):
        yield RequestInput("ok?", interrupt_id="approval")

    h = Harness(Workflow("wf", [(START, (a, b), approve)]))
    await h.start()
    stored = await h.store.events(h.session_id)
    order = [(s.event.kind, s.event.path) for s in stored if s.event.kind in ("start", "end")]
    assert order.index(("end", "wf@1/b@1")) < order.index(("start", "wf@1/approve@1"))
    await h.answer({"approval": "yes"})
    assert (await h.run("wf@1/approve@2")).input == "B"
    await h.answer({"approval": "no"})
    p = await h.projection()
    assert approve_runs(p) == [
        ("wf@1/approve@1", "A", "COMPLETED", "yes"),
        ("wf@1/approve@2", "B", "COMPLETED", "no"),
    ]
    assert (await h.run("wf@1")).output == "no"
