"""Property: answering interrupts in any order and any grouping gives the same
final outputs and run ids as answering each turn's open ids all at once."""

from __future__ import annotations

import itertools
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine import START, JoinNode, RequestInput, Workflow, node
from engine.models import NodeStatus

from .conftest import Harness

# A spec is a list of stages; a stage is one item or a parallel group of items.
# An item is ("calc",), ("ask", n_ids, rerun) or ("wf", spec).
item = st.deferred(
    lambda: st.one_of(
        st.tuples(st.just("calc")),
        st.tuples(st.just("ask"), st.integers(1, 3), st.booleans()),
        st.tuples(st.just("wf"), specs_shallow),
    )
)
leaf_item = st.one_of(st.tuples(st.just("calc")), st.tuples(st.just("ask"), st.integers(1, 3), st.booleans()))
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


def final_state(p) -> dict[str, tuple[str, str, Any]]:
    return {r.path: (r.status.value, r.run_id, r.output) for r in p.nodes.values()}


async def play(spec: list[Any], choose) -> dict[str, Any]:
    h = Harness(build(spec, itertools.count()))
    await h.start("in")
    for _ in range(100):
        p = await h.projection()
        open_ids = sorted(i.id for i in p.open_interrupts())
        if not open_ids:
            break
        group = choose(open_ids)
        await h.answer({i: f"v-{i}" for i in group})
    p = await h.projection()
    (inv,) = p.invocations
    assert p.invocation_status(inv) is NodeStatus.COMPLETED
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
