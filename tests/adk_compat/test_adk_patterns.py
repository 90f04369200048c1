"""Patterns ADK 2.x's own workflow tests rely on, checked on ``engine.adk``.

Written here (not copied) from what ADK's test suite expects of a parallel
worker and of hand-written nodes: the event sequence a caller of
``run_async`` sees (node path, output), and the ways its tests define nodes
(overriding ``run``, ``object.__setattr__`` in ``__init__``, private import
paths).
"""

from __future__ import annotations

from typing import Any

from pydantic import ConfigDict, Field

from engine.adk.agents.context import Context
from engine.adk.apps.app import App, ResumabilityConfig
from engine.adk.events.event import Event
from engine.adk.events.request_input import RequestInput
from engine.adk.genai import types
from engine.adk.runners import Runner
from engine.adk.sessions.in_memory_session_service import InMemorySessionService
from engine.adk.workflow import START, BaseNode
from engine.adk.workflow._parallel_worker import _ParallelWorker as ParallelWorker
from engine.adk.workflow._workflow import Workflow
from engine.adk.workflow.utils._workflow_hitl_utils import (
    create_request_input_response,
    get_request_input_interrupt_ids,
    has_request_input_function_call,
)


class _Emit(BaseNode):
    """Overrides ``run`` itself and sets its fields with object.__setattr__, as ADK's tests do."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    value: Any = None
    name: str = Field(default="Producer")

    def __init__(self, value: Any, name: str = "Producer") -> None:
        super().__init__()
        object.__setattr__(self, "value", value)
        object.__setattr__(self, "name", name)

    async def run(self, *, ctx: Context, node_input: Any):
        yield Event(output=self.value)


class _AskSome(BaseNode):
    """Re-executes on resume: answers its own request from ctx.resume_inputs."""

    rerun_on_resume: bool = True

    async def _run_impl(self, *, ctx: Context, node_input: Any):
        if not node_input["ask"]:
            yield Event(output=f"{node_input['val']}_done")
            return
        iid = f"req_{node_input['val']}"
        if (answer := ctx.resume_inputs.get(iid)) is not None:
            yield Event(output=f"{node_input['val']}_{answer['text']}")
        else:
            yield RequestInput(interrupt_id=iid, message=f"Input for {node_input['val']}")


async def _run(root: Any, message: Any, session: list[str], **kw: Any) -> list[tuple[str, Any]]:
    if not session:
        service = InMemorySessionService()
        s = await service.create_session(app_name="t", user_id="u")
        session += [s.id]
        _RUNNERS[s.id] = Runner(app=App(name="t", root_agent=root, resumability_config=ResumabilityConfig()), session_service=service)
    runner = _RUNNERS[session[0]]
    events = [e async for e in runner.run_async(user_id="u", session_id=session[0], new_message=message, **kw)]
    _LAST[session[0]] = events
    return [(e.node_info.path, e.output) for e in events if e.output is not None]


_RUNNERS: dict[str, Runner] = {}
_LAST: dict[str, list[Event]] = {}


def _start() -> types.Content:
    return types.Content(role="user", parts=[types.Part(text="start")])


async def test_parallel_worker_outputs_in_item_order_under_the_workers_path() -> None:
    async def process(node_input: dict):  # a plain async generator function as the worker's node
        yield f"{node_input['val']}_processed"

    items = [{"val": "item1"}, {"val": "item2"}]
    producer = _Emit(items, name="NodeA")
    wf = Workflow(name="agent", edges=[(START, producer), (producer, ParallelWorker(node=process))])
    got = await _run(wf, _start(), [])
    assert got == [
        ("agent@1/NodeA@1", items),
        ("agent@1/process@1/process@1", "item1_processed"),
        ("agent@1/process@1/process@2", "item2_processed"),
        ("agent@1/process@1", ["item1_processed", "item2_processed"]),
    ]


async def test_parallel_worker_on_an_empty_list_outputs_an_empty_list() -> None:
    producer = _Emit([], name="NodeA")
    wf = Workflow(name="empty", edges=[(START, producer), (producer, ParallelWorker(node=_Emit(None, name="Worker")))])
    assert await _run(wf, _start(), []) == [("empty@1/NodeA@1", []), ("empty@1/Worker@1", [])]


async def test_parallel_worker_item_waits_for_a_human_while_the_others_complete() -> None:
    items = [{"val": "item1", "ask": False}, {"val": "item2", "ask": True}]
    producer = _Emit(items, name="NodeA")
    wf = Workflow(name="hitl", edges=[(START, producer), (producer, ParallelWorker(node=_AskSome(name="Worker")))])
    session: list[str] = []
    first = await _run(wf, _start(), session)
    assert first == [("hitl@1/NodeA@1", items), ("hitl@1/Worker@1/Worker@1", "item1_done")]
    asks = [e for e in _LAST[session[0]] if has_request_input_function_call(e)]
    assert [get_request_input_interrupt_ids(e) for e in asks] == [["req_item2"]]
    assert asks[0].node_info.path == "hitl@1/Worker@1/Worker@2"

    answer = types.Content(role="user", parts=[create_request_input_response("req_item2", {"text": "ok"})])
    second = await _run(wf, answer, session, invocation_id=asks[0].invocation_id)
    assert second == [
        ("hitl@1/Worker@1/Worker@2", "item2_ok"),
        ("hitl@1/Worker@1", ["item1_done", "item2_ok"]),
    ]
