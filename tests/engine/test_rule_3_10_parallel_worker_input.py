"""DESIGN.md 3.10, a parallel worker's input: a list (or any iterable but a
string, bytes or dict) is the items; anything else is one item (a dict is one
item, not its keys). Placed directly after START it receives the start
message's items: a JSON array in the message text is the items, other text is
one item (as ADK)."""

from __future__ import annotations

from typing import Any

import pytest

from engine import START, ParallelWorker, RequestInput, Workflow, node
from engine.models import NodeStatus
from engine.parallel import worker_items

from .conftest import Harness


@node
def echo(node_input):
    return ["item", node_input]


def after(value: Any) -> Workflow:
    @node
    def source(node_input):
        return value

    return Workflow("wf", [(START, source, ParallelWorker(echo, name="map"))])


@pytest.mark.parametrize(
    "value, items",
    [
        ({"a": 1, "b": 2}, [{"a": 1, "b": 2}]),  # a dict is one item, not its keys
        (7, [7]),
        ("text", ["text"]),
        ('["x", "y"]', ['["x", "y"]']),  # a string from a node is one item, JSON or not
        (None, [None]),
        ([1, 2], [1, 2]),
        ((1, 2), [1, 2]),
        ([], []),
    ],
)
async def test_a_single_non_list_input_is_one_item(value, items):
    h = Harness(after(value))
    await h.start()
    root = await h.run("wf@1")
    assert root.status is NodeStatus.COMPLETED
    assert root.output == [["item", i] for i in items]


@pytest.mark.parametrize(
    "text, items",
    [
        ('["a", "b", 3]', ["a", "b", 3]),
        ("[]", []),
        ("plain text", ["plain text"]),
        ('{"k": 1}', ['{"k": 1}']),
        ("[not json", ["[not json"]),
    ],
)
async def test_directly_after_start_the_message_text_gives_the_items(text, items):
    h = Harness(Workflow("wf", [(START, ParallelWorker(echo, name="map"))]))
    await h.start(text)
    root = await h.run("wf@1")
    assert (root.status, root.output) == (NodeStatus.COMPLETED, [["item", i] for i in items])


async def test_after_start_the_items_survive_a_resume():
    @node
    async def ask(node_input):
        yield RequestInput(f"ok {node_input}?", interrupt_id=f"ok-{node_input}")

    h = Harness(Workflow("wf", [(START, ParallelWorker(ask, name="map"))]))
    await h.start('["a", "b"]')
    await h.answer({"ok-a": 1})
    await h.answer({"ok-b": 2})
    root = await h.run("wf@1")
    assert (root.status, root.output) == (NodeStatus.COMPLETED, [1, 2])


def test_worker_items_rule():
    assert worker_items({"a": 1}) == [{"a": 1}]
    assert worker_items(b"xy") == [b"xy"]
    assert worker_items(iter([1, 2])) == [1, 2]
    assert worker_items('["a"]') == ['["a"]']
    assert worker_items('["a"]', from_start=True) == ["a"]


async def test_in_a_nested_workflow_a_string_input_after_start_is_one_item():
    @node
    def text(node_input):
        return '["x", "y"]'

    inner = Workflow("inner", [(START, ParallelWorker(echo, name="map"))])
    h = Harness(Workflow("wf", [(START, text, inner)]))
    await h.start()
    assert (await h.run("wf@1")).output == [["item", '["x", "y"]']]


async def test_a_worker_as_the_root_gets_the_message_items():
    from engine import Runner

    h = Harness(Workflow("unused", [(START, echo)]))
    h.runner = Runner("test", ParallelWorker(echo, name="map"), h.store)
    await h.start('[1, 2]')
    assert (await h.run("map@1")).output == [["item", 1], ["item", 2]]
