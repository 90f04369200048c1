"""DESIGN.md 3.13: the events a turn yields are enough to know its outcome. A
``rerun_on_resume=True`` node that re-executes on a partial answer and yields
its request again for an id that is still open emits the function call again
(the same id; no second interrupt), as ADK does -- so after a turn that ends
WAITING, a caller of ``Runner.run`` lists the open ids from that turn's events
without reading the store."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine import START, Event, RequestInput, Workflow, node
from engine.models import NodeStatus

from .conftest import Harness


def asks_all(ids: list[str]):
    @node(name="form", rerun_on_resume=True)
    async def form(ctx, node_input):
        missing = [i for i in ids if i not in ctx.resume_inputs]
        for iid in missing:
            yield RequestInput(f"{iid}?", interrupt_id=iid)
        if not missing:
            yield {i: ctx.resume_inputs[i] for i in ids}

    return form


def announced(events: list[Event]) -> list[str]:
    """The ids a turn's events ask (its long-running calls), in order."""
    return [c.id for e in events for c in e.interrupt_calls]


def answered(events: list[Event]) -> set[str]:
    return {fr.id for e in events for fr in e.function_responses}


async def test_a_partial_answer_re_announces_the_id_still_open():
    h = Harness(Workflow("wf", [(START, asks_all(["a", "b"]))]))
    first = await h.start()
    assert announced(first) == ["a", "b"]
    second = await h.answer({"a": 1})
    assert announced(second) == ["b"]  # the same id again ...
    p = await h.projection()
    (inv,) = p.invocations
    opened = p.open_interrupts(inv)
    assert [(i.id, i.path) for i in opened] == [("b", "wf@1/form@1")]  # ... not a second interrupt
    assert p.get(inv, "wf@1/form@1").interrupt_ids == ["a", "b"]
    await h.answer({"b": 2})
    run = await h.run("wf@1/form@1")
    assert (run.status, run.output) == (NodeStatus.COMPLETED, {"a": 1, "b": 2})


async def test_the_same_id_twice_in_one_execution_is_still_one_call():
    @node(rerun_on_resume=True)
    async def twice(ctx, node_input):
        yield RequestInput("x?", interrupt_id="x")
        yield RequestInput("x?", interrupt_id="x")

    h = Harness(Workflow("wf", [(START, twice)]))
    assert announced(await h.start()) == ["x"]


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(n=st.integers(1, 4), data=st.data())
async def test_property_every_waiting_turn_lists_its_open_ids(n, data):
    ids = [f"q{i}" for i in range(n)]
    h = Harness(Workflow("wf", [(START, asks_all(ids))]))
    events = await h.start()
    for _ in range(n + 1):
        p = await h.projection()
        (inv,) = p.invocations
        open_now = sorted(i.id for i in p.open_interrupts(inv))
        if p.root(inv).status is not NodeStatus.WAITING:
            break
        # from the turn's events alone: what it asked, minus what it answered
        assert sorted(set(announced(events)) - answered(events)) == open_now
        group = data.draw(st.lists(st.sampled_from(open_now), min_size=1, unique=True))
        events = await h.answer({i: i for i in group})
    run = await h.run("wf@1/form@1")
    assert (run.status, run.output) == (NodeStatus.COMPLETED, {i: i for i in ids})
