"""DESIGN.md 3.10, the concurrency limit counts items started and not
finished, waiting ones included: an item that interrupted keeps its slot, so
no more humans are asked at once than the limit allows (as ADK)."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine import START, ParallelWorker, RequestInput, Workflow, node
from engine.models import NodeStatus
from engine.projection import Projection

from .conftest import Harness

UNFINISHED = {NodeStatus.RUNNING, NodeStatus.PENDING, NodeStatus.WAITING}


def asking_worker(n: int, limit: int, rerun: bool = False) -> Workflow:
    @node(name="item", rerun_on_resume=rerun)
    async def item(ctx, node_input):
        if rerun and f"q{node_input}" in ctx.resume_inputs:
            yield ["done", node_input, ctx.resume_inputs[f"q{node_input}"]]
            return
        yield RequestInput(f"item {node_input}?", interrupt_id=f"q{node_input}")

    @node
    def items(node_input):
        return list(range(n))

    return Workflow("wf", [(START, items, ParallelWorker(item, name="map", max_concurrency=limit))])


async def open_ids(h: Harness) -> list[str]:
    return sorted(i.id for i in (await h.projection()).open_interrupts())


async def test_a_waiting_item_keeps_its_slot():
    h = Harness(asking_worker(4, 2))
    await h.start()
    assert await open_ids(h) == ["q0", "q1"]  # items 2 and 3 not started: both slots are waiting
    p = await h.projection()
    (inv,) = p.invocations
    assert len(p.children(inv, "wf@1/map@1")) == 2
    await h.answer({"q0": "a"})  # a slot frees by completion: the next item starts
    assert await open_ids(h) == ["q1", "q2"]
    await h.answer({"q2": "c"})
    assert await open_ids(h) == ["q1", "q3"]
    await h.answer({"q1": "b"})
    assert await open_ids(h) == ["q3"]
    await h.answer({"q3": "d"})
    root = await h.run("wf@1")
    assert (root.status, root.output) == (NodeStatus.COMPLETED, ["a", "b", "c", "d"])


def max_unfinished_items(stored: list[Any]) -> int:
    p, most = Projection(), 0
    for s in stored:
        p.apply(s.event, s.seq)
        for (inv, path), run in list(p.nodes.items()):
            if run.name == "map":
                kids = p.children(inv, path)
                most = max(most, sum(1 for k in kids if k.status in UNFINISHED))
    return most


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(n=st.integers(1, 5), limit=st.integers(1, 3), rerun=st.booleans(), data=st.data())
async def test_property_never_more_items_in_flight_or_humans_asked_than_the_limit(n, limit, rerun, data):
    h = Harness(asking_worker(n, limit, rerun))
    await h.start()
    for _ in range(n + 1):
        ids = await open_ids(h)
        assert len(ids) <= limit
        if not ids:
            break
        pick = data.draw(st.sampled_from(ids))
        await h.answer({pick: pick})
    assert max_unfinished_items(await h.store.events(h.session_id)) <= limit
    root = await h.run("wf@1")
    expect = [["done", i, f"q{i}"] if rerun else f"q{i}" for i in range(n)]
    assert (root.status, root.output) == (NodeStatus.COMPLETED, expect)
