"""The node API surface: function kinds, BaseNode subclasses, NodeRunner used
directly (DESIGN.md 3.4 shape), graph validation, and the README example."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from engine import START, BaseNode, Context, JoinNode, NodeRunner, RequestInput, Workflow, node
from engine.context import InvocationContext
from engine.models import Event, NodeStatus
from engine.projection import Projection
from engine.store import MemoryStore

from .conftest import Harness


@node
def sync_fn(node_input):
    return f"sync:{node_input}"


@node
def sync_gen(node_input):
    yield "partial"
    yield RequestInput("?", interrupt_id="sg")


class Doubler(BaseNode):
    async def run(self, ctx, node_input):
        yield node_input * 2


async def test_sync_functions_generators_and_subclasses():
    h = Harness(Workflow("wf", [(START, sync_fn, sync_gen)]))
    await h.start("x")
    assert (await h.run("wf@1/sync_fn@1")).output == "sync:x"
    run = await h.run("wf@1/sync_gen@1")
    assert (run.status, run.output) == (NodeStatus.WAITING, "partial")

    h2 = Harness(Workflow("wf", [(START, Doubler("double"))]))
    await h2.start("ab")
    assert (await h2.run("wf@1/double@1")).output == "abab"


async def test_join_input_is_keyed_by_predecessor_in_declaration_order():
    @node
    async def a(node_input):
        return 1

    @node
    async def b(node_input):
        return 2

    h = Harness(Workflow("wf", [(START, (b, a), JoinNode("j"))]))
    await h.start()
    assert list((await h.run("wf@1/j@1")).output.items()) == [("b", 2), ("a", 1)]


async def test_node_runner_used_directly_pre_populates_prior_state():
    store = MemoryStore()
    await store.create_session("app", "u", "s")
    await store.append_event("s", Event(invocation_id="inv", author="user"))
    inv = InvocationContext(
        store=store, app_name="app", user_id="u", session_id="s", invocation_id="inv", projection=Projection(), state={}
    )
    seen: dict[str, Any] = {}

    @node(rerun_on_resume=True)
    async def reviewer(ctx, node_input):
        seen.update(output=ctx.output, ids=list(ctx.interrupt_ids), inputs=dict(ctx.resume_inputs))
        return None

    runner = NodeRunner(
        node=reviewer, parent_ctx=Context.root(inv), run_id="4", prior_output="draft", prior_interrupt_ids=["b"]
    )
    ctx = await runner.run(node_input="doc", resume_inputs={"a": 1})
    assert seen == {"output": "draft", "ids": ["b"], "inputs": {"a": 1}}
    # no new output: the prior output stands; the still-open id keeps it WAITING
    assert (ctx.output, ctx.unresolved_ids, ctx.path, ctx.run_id) == ("draft", ["b"], "reviewer@4", "4")
    assert inv.projection.get("inv", "reviewer@4").status is NodeStatus.WAITING


def test_graph_validation_errors_are_clear():
    @node(name="x")
    async def x1(node_input):
        return 1

    @node(name="x")
    async def x2(node_input):
        return 2

    with pytest.raises(ValueError, match="two different nodes named 'x'"):
        Workflow("wf", [(START, x1, x2)])
    with pytest.raises(ValueError, match="no edge from START"):
        Workflow("wf", [(x1,)])
    with pytest.raises(ValueError, match="may not contain"):
        node(name="a/b")(lambda: 1)


async def test_interrupt_id_reused_while_open_elsewhere_fails_loudly():
    @node
    async def a(node_input):
        yield RequestInput("a", interrupt_id="dup")

    @node
    async def b(node_input):
        yield RequestInput("b", interrupt_id="dup")

    from engine import WorkflowFailed

    h2 = Harness(Workflow("wf", [(START, (a, b))]))
    with pytest.raises(WorkflowFailed, match="already open"):
        await h2.start()


def test_readme_example_runs(capsys, tmp_path, monkeypatch):
    text = (Path(__file__).parents[2] / "README.md").read_text()
    code = re.search(r"```python\n(.*?)```", text, re.S).group(1)
    monkeypatch.chdir(tmp_path)  # it writes refunds.sqlite where it runs
    exec(compile(code, "README.md", "exec"), {"__name__": "__main__"})
    out = capsys.readouterr().out
    assert "end refund@1/pay@1 paid: approved=True" in out
