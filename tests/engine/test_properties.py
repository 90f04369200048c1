"""Property: answering interrupts in any order and any grouping gives the same
final outputs and run ids as answering each turn's open ids all at once.

Items cover leaves that ask (both ``rerun_on_resume`` values), nested
workflows, orchestration nodes whose output records what they read from
``ctx.resume_inputs`` (their dynamic children's answers; sequential and
gathered children), parallel workers, and nodes that re-ask an answered id
once (the first answer fails their check), where grouping could matter."""

from __future__ import annotations

import asyncio
import itertools
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine import START, JoinNode, ParallelWorker, RequestInput, Workflow, node
from engine.models import NodeStatus

from .conftest import Harness

# A spec is a list of stages; a stage is one item or a parallel group of items.
# An item is ("calc",), ("ask", n_ids, rerun), ("orch", n_children, gathered),
# ("par", n_items, rerun), ("reask",) or ("wf", spec).
leaf_item = st.one_of(
    st.tuples(st.just("calc")),
    st.tuples(st.just("ask"), st.integers(1, 3), st.booleans()),
    st.tuples(st.just("orch"), st.integers(1, 3), st.booleans()),
    st.tuples(st.just("par"), st.integers(1, 4), st.booleans()),
    st.tuples(st.just("reask")),
)
item = st.deferred(lambda: st.one_of(leaf_item, st.tuples(st.just("wf"), specs_shallow)))
stage_shallow = st.one_of(leaf_item, st.lists(leaf_item, min_size=2, max_size=3).map(tuple))
specs_shallow = st.lists(stage_shallow, min_size=1, max_size=3)
stage = st.one_of(item, st.lists(item, min_size=2, max_size=3).map(tuple))
specs = st.lists(stage, min_size=1, max_size=4)


def build(spec: list[Any], counter: itertools.count, name: str = "root") -> Workflow:
    chain: list[Any] = [START]
    for stg in spec:
        if isinstance(stg, tuple) and stg and isinstance(stg[0], tuple):
            members = tuple(make(it, counter) for it in stg)
            chain.append(members)
            chain.append(JoinNode(f"join{next(counter)}"))
        else:
            chain.append(make(stg, counter))
    return Workflow(name, [tuple(chain)])


def make(it: tuple[Any, ...], counter: itertools.count):
    n = next(counter)
    if it[0] == "calc":

        @node(name=f"calc{n}")
        async def calc(node_input):
            return [f"calc{n}", node_input]

        return calc
    if it[0] == "wf":
        return build(it[1], counter, name=f"wf{n}")
    if it[0] == "orch":
        return make_orch(n, it[1], it[2])
    if it[0] == "par":
        return make_par(n, it[1], it[2])
    if it[0] == "reask":
        iid = f"n{n}-re"

        @node(name=f"reask{n}", rerun_on_resume=True)
        async def reask(ctx, node_input):
            answer = ctx.resume_inputs.get(iid)
            if answer is None or answer.endswith("#1"):  # the first answer fails the check
                yield RequestInput(iid, interrupt_id=iid)
                return
            yield [f"reask{n}", node_input, answer]

        return reask
    _, k, rerun = it
    ids = [f"n{n}-i{j}" for j in range(k)]

    if rerun:

        @node(name=f"ask{n}", rerun_on_resume=True)
        async def ask_rerun(ctx, node_input):
            for iid in ids:
                if iid not in ctx.resume_inputs:
                    yield RequestInput(iid, interrupt_id=iid)
            if all(i in ctx.resume_inputs for i in ids):
                yield [f"ask{n}", node_input, [ctx.resume_inputs[i] for i in ids]]

        return ask_rerun

    @node(name=f"ask{n}")
    async def ask(node_input):
        for iid in ids:
            yield RequestInput(iid, interrupt_id=iid)

    return ask


def make_orch(n: int, k: int, gathered: bool):
    ids = [f"n{n}-c{j}" for j in range(k)]

    @node(name=f"child{n}")
    async def child(node_input):
        yield RequestInput(node_input, interrupt_id=node_input)

    @node(name=f"orch{n}", rerun_on_resume=True)
    async def orch(ctx, node_input):
        seen = {i: ctx.resume_inputs.get(i) for i in ids}
        if gathered:
            got = await asyncio.gather(*(ctx.run_node(child, i, key=i) for i in ids))
        else:
            got = [await ctx.run_node(child, i, key=i) for i in ids]
        yield [f"orch{n}", node_input, seen, list(got)]

    return orch


def make_par(n: int, k: int, rerun: bool):
    @node(name=f"item{n}", rerun_on_resume=rerun)
    async def item(ctx, node_input):
        iid = f"n{n}-p{node_input}"
        if node_input % 2 == 0 and iid not in ctx.resume_inputs:
            yield RequestInput(iid, interrupt_id=iid)
            return
        yield [node_input, ctx.resume_inputs.get(iid)]

    @node(name=f"items{n}")
    def items(node_input):
        return list(range(k))

    return Workflow(f"pw{n}", [(START, items, ParallelWorker(item, name=f"par{n}", max_concurrency=2))])


def final_state(p) -> dict[str, tuple[str, str, Any]]:
    return {r.path: (r.status.value, r.run_id, r.output) for r in p.nodes.values()}


async def play(spec: list[Any], choose) -> dict[str, Any]:
    h = Harness(build(spec, itertools.count()))
    await h.start("in")
    answered: dict[str, int] = {}
    for _ in range(100):
        p = await h.projection()
        open_ids = sorted(i.id for i in p.open_interrupts())
        if not open_ids:
            break
        group = choose(open_ids)
        for i in group:
            answered[i] = answered.get(i, 0) + 1
        await h.answer({i: f"v-{i}#{answered[i]}" for i in group})
    p = await h.projection()
    (inv,) = p.invocations
    assert p.invocation_status(inv) is NodeStatus.COMPLETED
    for run in p.nodes.values():
        if run.name.startswith("orch"):  # its last execution read every child's answer
            seen = run.output[2]
            assert seen == {i: f"v-{i}#1" for i in seen}, (run.path, seen)
    return final_state(p)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(spec=specs, data=st.data())
async def test_any_order_and_grouping_gives_the_same_result(spec, data):
    baseline = await play(spec, lambda ids: ids)

    def choose(ids: list[str]) -> list[str]:
        perm = data.draw(st.permutations(ids))
        k = data.draw(st.integers(1, len(ids)))
        return list(perm[:k])

    assert await play(spec, choose) == baseline
