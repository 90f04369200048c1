"""DESIGN.md 3.4 (dynamic children): ``ctx.run_node`` accepts plain functions
-- sync, async, generators -- as edges do (ADK), wrapped as ``@node`` would."""

from __future__ import annotations

import asyncio

import pytest

from engine import START, RequestInput, Workflow, WorkflowFailed, node
from engine.models import NodeStatus

from .conftest import Harness


def double(node_input):
    return node_input * 2


async def add_one(node_input):
    return node_input + 1


def gen_square(node_input):
    yield node_input * node_input


async def agen_neg(node_input):
    yield -node_input


def ask_human(node_input):
    yield RequestInput(f"ok {node_input}?", interrupt_id=f"ok{node_input}")


async def test_run_node_runs_sync_async_and_generator_functions():
    @node(rerun_on_resume=True)
    async def orch(ctx, node_input):
        a = await ctx.run_node(double, 3)
        b = await ctx.run_node(add_one, a)
        c = await ctx.run_node(gen_square, b)
        d = await ctx.run_node(agen_neg, c)
        e, f = await asyncio.gather(ctx.run_node(double, 1), ctx.run_node(double, 2))
        return [a, b, c, d, e, f]

    h = Harness(Workflow("wf", [(START, orch)]))
    await h.start()
    assert (await h.run("wf@1/orch@1")).output == [6, 7, 49, -49, 2, 4]
    p = await h.projection()
    (inv,) = p.invocations
    kids = sorted(r.path for r in p.runs(inv) if r.parent == "wf@1/orch@1")
    assert kids == [
        "wf@1/orch@1/add_one@1",
        "wf@1/orch@1/agen_neg@1",
        "wf@1/orch@1/double@1",
        "wf@1/orch@1/double@2",
        "wf@1/orch@1/double@3",
        "wf@1/orch@1/gen_square@1",
    ]


async def test_a_function_child_that_asks_resumes_like_a_node(calls):
    @node(rerun_on_resume=True)
    async def orch(ctx, node_input):
        calls["orch"] = calls.get("orch", 0) + 1
        answer = await ctx.run_node(ask_human, 1)
        return f"got {answer}"

    h = Harness(Workflow("wf", [(START, orch)]))
    await h.start()
    assert await h.status("wf@1/orch@1/ask_human@1") == "WAITING"
    await h.answer({"ok1": "yes"})
    run = await h.run("wf@1/orch@1")
    assert (run.status, run.output) == (NodeStatus.COMPLETED, "got yes")


async def test_run_node_with_something_else_is_a_clear_error():
    @node(rerun_on_resume=True)
    async def orch(ctx, node_input):
        return await ctx.run_node(42, 1)

    h = Harness(Workflow("wf", [(START, orch)]))
    with pytest.raises(WorkflowFailed) as info:
        await h.start()
    assert info.value.path == "wf@1/orch@1"
    assert "42 is not a node or a function" in info.value.error_message
