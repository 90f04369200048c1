"""DESIGN.md 3.5: one output per node run. A node that yields a second output,
or yields one and also sets the context's output, fails with an "output
already set" error naming the node (as ADK does) -- never a silent replacement."""

from __future__ import annotations

import pytest

from engine import START, Event, RequestInput, Workflow, WorkflowFailed, node
from engine.errors import OutputAlreadySetError
from engine.models import NodeStatus

from .conftest import Harness


@node
async def two_yields(node_input):
    yield "first"
    yield "second"


@node
async def two_events(node_input):
    yield Event(output="first")
    yield Event(output="second")


@node
async def sets_then_yields(ctx, node_input):
    ctx.output = "first"
    yield "second"


@node
async def yields_then_sets(ctx, node_input):
    yield "first"
    ctx.output = "second"


@node
def sync_generator(node_input):
    yield 1
    yield 2


@pytest.mark.parametrize("body", [two_yields, two_events, sets_then_yields, yields_then_sets, sync_generator])
async def test_a_second_output_fails_the_node_naming_it(body):
    h = Harness(Workflow("wf", [(START, body)]))
    with pytest.raises(WorkflowFailed) as info:
        await h.start()
    path = f"wf@1/{body.name}@1"
    assert info.value.path == path
    assert info.value.error_code == "OutputAlreadySetError"
    assert "output already set" in info.value.error_message and path in info.value.error_message
    assert isinstance(info.value.exception, OutputAlreadySetError)
    run = await h.run(path)
    assert run.status is NodeStatus.FAILED
    assert run.output != "second"  # never a silent replacement


async def test_one_output_with_events_and_routes_is_fine():
    @node
    async def one(ctx, node_input):
        yield Event(route="x")
        yield None
        yield "only"

    h = Harness(Workflow("wf", [(START, one)]))
    await h.start()
    assert (await h.run("wf@1")).output == "only"


async def test_a_re_execution_may_replace_the_prior_output_once():
    # The prior output carried over a resume is not this execution's: the re-run may emit its own (3.4).
    @node(rerun_on_resume=True)
    async def asks(ctx, node_input):
        if "ok" in ctx.resume_inputs:
            yield f"after:{ctx.resume_inputs['ok']}"
        else:
            yield "before"
            yield RequestInput("ok?", interrupt_id="ok")

    h = Harness(Workflow("wf", [(START, asks)]))
    await h.start()
    await h.answer({"ok": "yes"})
    assert (await h.run("wf@1/asks@1")).output == "after:yes"
