"""DESIGN.md 3.10, parallel worker failures: when several items fail in one
turn, the one raised is the lowest item index's, ``WorkflowFailed.exception``
is never None, and every item's failure is in ``WorkflowFailed.failures`` in
item order. Siblings are cancelled; an item that ignores its cancellation is
abandoned after a bounded grace period and recorded CANCELLED, so the turn
always ends."""

from __future__ import annotations

import asyncio

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine import START, ParallelWorker, Workflow, WorkflowFailed, node
from engine import context as engine_context
from engine.models import NodeStatus

from .conftest import Harness


class ItemError(Exception):
    pass


def worker(child) -> Workflow:
    @node
    def items(node_input):
        return [0, 1, 2, 3]

    return Workflow("wf", [(START, items, ParallelWorker(child, name="map"))])


async def test_the_lowest_failed_item_is_raised_with_every_failure_in_item_order():
    @node
    async def item(node_input):
        if node_input == 3:
            raise ItemError("item 3")  # fails first
        if node_input == 1:
            try:
                await asyncio.Event().wait()
            except asyncio.CancelledError:
                raise ItemError("item 1") from None  # fails too, while being cancelled
        if node_input == 2:
            await asyncio.Event().wait()  # cancelled
        return node_input

    h = Harness(worker(item))
    with pytest.raises(WorkflowFailed) as info:
        await h.start()
    failed = info.value
    assert failed.path == "wf@1/map@1/item@2"  # item index 1 (run ids count from 1)
    assert isinstance(failed.exception, ItemError) and str(failed.exception) == "item 1"
    assert [(f.path, str(f.exception)) for f in failed.failures] == [
        ("wf@1/map@1/item@2", "item 1"),
        ("wf@1/map@1/item@4", "item 3"),
    ]
    assert failed.failures[0] is failed
    assert await h.status("wf@1/map@1/item@1") == "COMPLETED"
    assert await h.status("wf@1/map@1/item@3") == "CANCELLED"
    assert await h.status("wf@1/map@1") == "FAILED"


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(fail=st.sets(st.integers(0, 4), min_size=1), delays=st.lists(st.integers(0, 3), min_size=5, max_size=5))
async def test_property_failure_is_the_lowest_index_and_exception_is_never_none(fail, delays):
    @node
    async def item(node_input):
        for _ in range(delays[node_input]):
            await asyncio.sleep(0)
        if node_input in fail:
            raise ItemError(f"item {node_input}")
        return node_input

    @node
    def items(node_input):
        return [0, 1, 2, 3, 4]

    h = Harness(Workflow("wf", [(START, items, ParallelWorker(item, name="map"))]))
    with pytest.raises(WorkflowFailed) as info:
        await h.start()
    failed = info.value
    assert failed.exception is not None
    indexes = [int(str(f.exception).split()[1]) for f in failed.failures]
    assert indexes == sorted(indexes) and set(indexes) <= fail
    assert failed.path == failed.failures[0].path
    assert str(failed.exception) == f"item {indexes[0]}"
    p = await h.projection()
    (inv,) = p.invocations
    statuses = {r.path: r.status for r in p.runs(inv)}
    assert NodeStatus.RUNNING not in statuses.values() and NodeStatus.PENDING not in statuses.values()
    for f in failed.failures:
        assert statuses[f.path] is NodeStatus.FAILED


async def test_an_item_that_ignores_cancellation_is_abandoned_and_recorded_cancelled(monkeypatch):
    monkeypatch.setattr(engine_context, "CANCEL_GRACE", 0.05)  # bounded, whatever the machine's pace
    release = asyncio.Event()
    swallowed = []

    @node
    async def item(node_input):
        if node_input == 0:
            await asyncio.sleep(0)
            raise ItemError("item 0")
        while not release.is_set():
            try:
                await release.wait()
            except asyncio.CancelledError:
                swallowed.append(node_input)  # ignores it and goes on
        return node_input

    h = Harness(worker(item))
    with pytest.raises(WorkflowFailed) as info:
        await h.start()  # the turn ends although three items never stop
    assert info.value.path == "wf@1/map@1/item@1"
    assert isinstance(info.value.exception, ItemError)
    assert swallowed
    for rid in (2, 3, 4):
        assert await h.status(f"wf@1/map@1/item@{rid}") == "CANCELLED"
    assert await h.status("wf@1/map@1") == "FAILED"
    assert await h.status("wf@1") == "FAILED"
    before = [s.event.to_json() for s in await h.store.events(h.session_id)]
    release.set()  # the abandoned bodies end now: nothing more of them is written
    for _ in range(10):
        await asyncio.sleep(0)
    assert [s.event.to_json() for s in await h.store.events(h.session_id)] == before
