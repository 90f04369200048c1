"""ADK's own documentation snippets with human input, run by changing their imports only.

Each test drives a snippet the way an ADK 2.x client does -- ``Runner`` on an
``InMemorySessionService``, ``run_async`` with a ``types.Content`` message, an
answer built with ``create_request_input_response`` -- using only
``engine.adk`` names, and asserts the outcome the page describes. The
snippets are in ``samples/`` (each names its page and what, if anything,
changed).
"""

from __future__ import annotations

from typing import Any

from engine.adk import Workflow
from engine.adk.events import (
    REQUEST_INPUT_FUNCTION_CALL_NAME,
    create_request_input_response,
    get_request_input_interrupt_ids,
)
from engine.adk.genai import types
from engine.adk.runners import Runner
from engine.adk.sessions import InMemorySessionService

from .samples import (
    dynamic_get_started,
    dynamic_human_input,
    graphs_dynamic_human_input,
    graphs_dynamic_parallel,
    human_input_get_started,
    human_input_payload,
    human_input_response_schema,
)


async def _start(node: Any, text: str = "start") -> tuple[Runner, str, list[Any]]:
    service = InMemorySessionService()
    session = await service.create_session(app_name="docs", user_id="u1")
    runner = Runner(app_name="docs", node=node, session_service=service)
    message = types.Content(role="user", parts=[types.Part(text=text)])
    events = [e async for e in runner.run_async(user_id="u1", session_id=session.id, new_message=message)]
    return runner, session.id, events


async def _answer(runner: Runner, session_id: str, ask: Any, response: Any) -> list[Any]:
    (interrupt_id,) = get_request_input_interrupt_ids(ask)
    message = types.Content(role="user", parts=[create_request_input_response(interrupt_id, response)])
    return [
        e
        async for e in runner.run_async(
            user_id="u1", session_id=session_id, invocation_id=ask.invocation_id, new_message=message
        )
    ]


def _asks(events: list[Any]) -> list[Any]:
    return [e for e in events if get_request_input_interrupt_ids(e)]


def _outputs(events: list[Any]) -> dict[str, Any]:
    return {e.node_name: e.output for e in events if e.output is not None}


async def test_human_input_get_started_doubles_the_number_entered() -> None:
    # "step1 pauses the execution of the agent until the system receives an input
    # from a user. Once [it does], that input is passed to the next node."
    runner, sid, events = await _start(human_input_get_started.root_agent)
    (ask,) = _asks(events)
    call = ask.get_function_calls()[0]
    assert call.name == REQUEST_INPUT_FUNCTION_CALL_NAME == "adk_request_input"
    assert call.args["message"] == "Enter a number:"
    assert ask.long_running_tool_ids == {call.id}
    assert ask.node_name == "step1"
    assert "step2" not in _outputs(events)

    done = await _answer(runner, sid, ask, {"result": 21})
    outputs = _outputs(done)
    assert outputs["step1"] == 21  # the answer is step1's output...
    assert outputs["step2"] == 42  # ...passed to step2
    assert done[-1].output == 42


async def test_human_input_with_response_schema_asks_for_a_string() -> None:
    wf = Workflow(name="concierge", edges=[("START", human_input_response_schema.initial_prompt)])
    runner, sid, events = await _start(wf)
    (ask,) = _asks(events)
    args = ask.get_function_calls()[0].args
    assert "City (Required)" in args["message"]
    assert args["response_schema"] == {"type": "string"}

    done = await _answer(runner, sid, ask, {"result": "Lisbon, 34, surfing"})
    assert _outputs(done)["initial_prompt"] == "Lisbon, 34, surfing"


async def test_human_input_with_payload_shows_the_itinerary_and_takes_feedback() -> None:
    itinerary = {"itinerary": [{"name": "Museum", "description": "art"}, {"name": "Harbour", "description": "walk"}]}

    def plan():  # stands for the page's agent node that composes the ActivitiesList
        return human_input_payload.ActivitiesList(**itinerary)

    def summary(node_input: human_input_payload.UserFeedback):
        return f"liked: {node_input.user_response}"

    wf = Workflow(name="itinerary", edges=[("START", plan, human_input_payload.get_user_feedback, summary)])
    runner, sid, events = await _start(wf)
    (ask,) = _asks(events)
    args = ask.get_function_calls()[0].args
    assert args["payload"] == itinerary  # the ActivitiesList, as data
    assert "Which of these items appeal to you" in args["message"]
    assert args["response_schema"]["required"] == ["user_response"]

    done = await _answer(runner, sid, ask, {"user_response": "the museum"})
    assert _outputs(done)["summary"] == "liked: the museum"


async def _asked_yes_no(wf: Workflow, path: str) -> tuple[Runner, str, list[Any], Any]:
    """``wf`` started: it waits on one question, at ``path``, asking for Yes/No."""
    runner, sid, events = await _start(wf)
    (ask,) = _asks(events)
    assert ask.node_info.path == path
    assert ask.get_function_calls()[0].args["message"] == "Please approve this request (Yes/No)"
    return runner, sid, events, ask


async def test_dynamic_human_input_approves_on_yes_and_denies_otherwise() -> None:
    # "Invoke the HITL node dynamically. The workflow pauses here." -> "Request Approved" on yes.
    for reply, outcome in (("Yes", "Request Approved"), ("no", "Request Denied")):
        wf = Workflow(name="approval", edges=[("START", dynamic_human_input.approval_process_node)])
        runner, sid, events, ask = await _asked_yes_no(wf, "approval@1/approval_process_node@1/approval_step@1")
        assert "approval_process_node" not in _outputs(events)

        done = await _answer(runner, sid, ask, {"result": reply})
        assert _outputs(done)["approval_process_node"] == outcome
        assert done[-1].output == outcome


async def test_dynamic_get_started_returns_the_child_output() -> None:
    _, _, events = await _start(dynamic_get_started.root_agent)
    assert _outputs(events)["hello_node"] == "Hello World"
    assert events[-1].output == "Hello World"


async def test_graphs_dynamic_human_input_answer_decides_the_orchestrators_output() -> None:
    # docs/graphs/dynamic.md: the orchestrator waits on get_user_approval, then
    # returns "Approved" for "yes" and "Denied" otherwise.
    for reply, outcome in (("yes", "Approved"), ("No", "Denied")):
        wf = Workflow(name="process", edges=[("START", graphs_dynamic_human_input.handle_process)])
        runner, sid, events, ask = await _asked_yes_no(wf, "process@1/handle_process@1/get_user_approval@1")
        done = await _answer(runner, sid, ask, {"result": reply})
        assert _outputs(done)["get_user_approval"] == reply  # rerun_on_resume=False: the answer is its output
        assert _outputs(done)["handle_process"] == outcome


async def test_graphs_dynamic_parallel_gathers_the_workers_in_order() -> None:
    wf = Workflow(name="batch", edges=[("START", graphs_dynamic_parallel.parallel_supervisor)])
    _, _, events = await _start(wf, text='["a", "b", "c"]')
    assert events[-1].output == ["done a", "done b", "done c"]
    paths = sorted(e.node_info.path for e in events if e.node_name == "worker_node")
    assert paths == [f"batch@1/parallel_supervisor@1/worker_node@{i}" for i in (1, 2, 3)]
