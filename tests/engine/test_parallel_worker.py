"""ParallelWorker (DESIGN.md 3.10): one child mapped over the input's items."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from engine import START, ParallelWorker, RequestInput, Workflow, WorkflowFailed, node
from engine.models import NodeStatus

from .conftest import Harness


def reviewer(calls: dict[str, int], *, rerun: bool = False):
    @node(name="doc", rerun_on_resume=rerun)
    async def doc(ctx, node_input):
        calls[node_input] = calls.get(node_input, 0) + 1
        if node_input.startswith("risky"):
            if rerun and node_input in ctx.resume_inputs:
                yield f"{node_input}: {ctx.resume_inputs[node_input]}"
                return
            yield RequestInput(f"review {node_input}", interrupt_id=node_input)
            return
        yield f"{node_input}: auto"

    return doc


def pipeline(child, **kw: Any) -> Workflow:
    @node
    def docs(node_input):
        return ["a", "risky-b", "c", "risky-d"]

    return Workflow("wf", [(START, docs, ParallelWorker(child, name="review", **kw))])


async def test_parallel_worker_items_wait_independently_and_partial_answers_resume_only_their_items(calls):
    h = Harness(pipeline(reviewer(calls)))
    await h.start()
    p = await h.projection()
    (inv,) = p.invocations
    worker = p.get(inv, "wf@1/review@1")
    assert worker.status is NodeStatus.WAITING
    assert sorted(p.pending_ids(inv, worker.path)) == ["risky-b", "risky-d"]
    items = {r.path: r.status for r in p.children(inv, worker.path)}
    assert items == {
        "wf@1/review@1/doc@1": NodeStatus.COMPLETED,
        "wf@1/review@1/doc@2": NodeStatus.WAITING,
        "wf@1/review@1/doc@3": NodeStatus.COMPLETED,
        "wf@1/review@1/doc@4": NodeStatus.WAITING,
    }
    await h.answer({"risky-d": "approved"})  # one item: it auto-completes, nothing else runs
    assert calls == {"a": 1, "risky-b": 1, "c": 1, "risky-d": 1}
    assert await h.status("wf@1/review@1/doc@4") == "COMPLETED"
    assert await h.status("wf@1/review@1/doc@2") == "WAITING"
    assert await h.status("wf@1/review@1") == "WAITING"
    await h.answer({"risky-b": "rejected"})
    assert calls == {"a": 1, "risky-b": 1, "c": 1, "risky-d": 1}  # completed items never run again
    worker = await h.run("wf@1/review@1")
    assert worker.status is NodeStatus.COMPLETED
    assert worker.output == ["a: auto", "rejected", "c: auto", "approved"]  # input order
    assert await h.status("wf@1") == "COMPLETED"


async def test_parallel_worker_items_reexecute_by_their_own_rerun_on_resume(calls):
    h = Harness(pipeline(reviewer(calls, rerun=True)))
    await h.start()
    await h.answer({"risky-b": "ok"})
    assert calls == {"a": 1, "risky-b": 2, "c": 1, "risky-d": 1}  # only the answered item re-executed
    assert (await h.run("wf@1/review@1/doc@2")).run_id == "2"  # same run id as before the pause
    await h.answer({"risky-d": "no"})
    assert (await h.run("wf@1/review@1")).output == ["a: auto", "risky-b: ok", "c: auto", "risky-d: no"]


async def test_parallel_worker_sees_its_items_answers():
    saw: list[dict[str, Any]] = []

    class Recording(ParallelWorker):
        async def run(self, ctx, node_input):
            saw.append(dict(ctx.resume_inputs))
            async for item in super().run(ctx, node_input):
                yield item

    h = Harness(Workflow("wf", [(START, three_docs, Recording(reviewer({}), name="review"))]))
    await h.start()
    await h.answer({"risky-b": 1})
    assert saw == [{}, {"risky-b": 1}]


def three_docs(node_input):
    return ["a", "risky-b", "risky-c"]


async def test_parallel_worker_concurrency_limit_and_output_order():
    running = 0
    peak = 0

    @node
    async def work(node_input):
        nonlocal running, peak
        running += 1
        peak = max(peak, running)
        for _ in range(5 - node_input):  # later items finish first
            await asyncio.sleep(0)
        running -= 1
        return node_input * 10

    @node
    def items(node_input):
        return [0, 1, 2, 3, 4]

    h = Harness(Workflow("wf", [(START, items, ParallelWorker(work, name="map", max_concurrency=2))]))
    await h.start()
    assert (await h.run("wf@1/map@1")).output == [0, 10, 20, 30, 40]
    assert peak == 2
    p = await h.projection()
    (inv,) = p.invocations
    assert [c.path for c in p.children(inv, "wf@1/map@1")] == [f"wf@1/map@1/work@{i}" for i in range(1, 6)]


async def test_parallel_worker_failed_item_cancels_running_items_and_fails_the_worker():
    release = asyncio.Event()

    @node
    async def item(node_input):
        if node_input == "bad":
            raise ValueError("bad item")
        await release.wait()
        return node_input

    h = Harness(Workflow("wf", [(START, slow_and_bad, ParallelWorker(item, name="map"))]))
    with pytest.raises(WorkflowFailed) as info:
        await h.start()
    assert info.value.path == "wf@1/map@1/item@2"
    p = await h.projection()
    (inv,) = p.invocations
    assert {c.path: c.status for c in p.children(inv, "wf@1/map@1")} == {
        "wf@1/map@1/item@1": NodeStatus.CANCELLED,
        "wf@1/map@1/item@2": NodeStatus.FAILED,
    }
    assert p.get(inv, "wf@1/map@1").status is NodeStatus.FAILED


def slow_and_bad(node_input):
    return ["slow", "bad"]


def test_parallel_worker_rejects_rerun_on_resume_false_and_bad_limits():
    @node
    def f(node_input):
        return node_input

    with pytest.raises(ValueError, match="rerun_on_resume"):
        ParallelWorker(f, rerun_on_resume=False)
    with pytest.raises(ValueError, match="max_concurrency"):
        ParallelWorker(f, max_concurrency=0)
