"""Unit tests of ``engine.adk``: ADK 2.x names and signatures over the engine.

Each test is written as ADK 2.x code would be (its imports changed to
``engine.adk``) and asserts the behaviour ADK documents, or, where this
project deliberately differs (DESIGN.md section 4), ours.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from pydantic import BaseModel, ConfigDict, ValidationError

from engine.adk import Context, Event, Workflow
from engine.adk.apps import App
from engine.adk.events import RequestInput, create_request_input_response, get_request_input_interrupt_ids
from engine.adk.genai import types
from engine.adk.runners import InMemoryRunner, Runner
from engine.adk.sessions import InMemorySessionService
from engine.adk.workflow import START, BaseNode, Edge, JoinNode, NodeRunner, ParallelWorker, RetryConfig, node
from engine.errors import ResumeRejected
from engine.store import MemoryStore


def _text(text: str) -> types.Content:
    return types.Content(role="user", parts=[types.Part(text=text)])


async def _run(runner: Runner, session_id: str, message: Any, **kw: Any) -> list[Event]:
    return [e async for e in runner.run_async(user_id="u1", session_id=session_id, new_message=message, **kw)]


async def _runner(root: Any, **kw: Any) -> tuple[Runner, str]:
    service = InMemorySessionService()
    session = await service.create_session(app_name="app", user_id="u1")
    return Runner(app_name="app", node=root, session_service=service, **kw), session.id


def _outputs(events: list[Event]) -> dict[str, Any]:
    return {e.node_name: e.output for e in events if e.output is not None}


# ------------------------------------------------------------------ Runner and sessions


async def test_runner_takes_an_app_or_app_name_and_node() -> None:
    def hello(node_input: str):
        return f"hello {node_input}"

    wf = Workflow(name="greet", edges=[(START, hello)])
    service = InMemorySessionService()
    s = await service.create_session(app_name="greeter", user_id="u1", session_id="s1")
    by_app = Runner(app=App(name="greeter", root_agent=wf), session_service=service)
    assert (await _run(by_app, "s1", _text("ann")))[-1].output == "hello ann"
    by_node = Runner(app_name="greeter", node=wf, session_service=service)
    assert (await _run(by_node, s.id, _text("bob")))[-1].output == "hello bob"
    with pytest.raises(TypeError):
        Runner("greeter", wf, service)  # type: ignore[misc]  # keyword-only, as ADK's
    with pytest.raises(ValueError, match="exactly one of app, agent or node"):
        Runner(app=App(name="greeter", root_agent=wf), node=wf, session_service=service)
    with pytest.raises(ValueError, match="app_name is required"):
        Runner(agent=wf, session_service=service)
    assert Runner(node=wf, session_service=service).app_name == "greet"  # defaults to the node's name
    echoed = await _run(by_node, s.id, _text("cy"), yield_user_message=True)
    assert (echoed[0].author, echoed[0].content.parts[0].text) == ("user", "cy")
    with pytest.raises(ValidationError, match="identifier"):
        Workflow(name="w", edges=[("START", lambda: 1)])._engine_node()  # ADK names a node after its function


async def test_run_async_needs_a_created_session_unless_auto_create() -> None:
    def one():
        return 1

    wf = Workflow(name="w", edges=[("START", one)])
    service = InMemorySessionService()
    runner = Runner(app_name="app", node=wf, session_service=service)
    with pytest.raises(ValueError, match="Session not found: nope"):
        await _run(runner, "nope", _text("x"))
    auto = Runner(app_name="app", node=wf, session_service=service, auto_create_session=True)
    assert (await _run(auto, "made", _text("x")))[-1].output == 1
    assert (await service.get_session(app_name="app", user_id="u1", session_id="made")) is not None


async def test_session_service_creates_names_and_reads_sessions() -> None:
    service = InMemorySessionService()
    s = await service.create_session(app_name="app", user_id="u1", state={"k": 1})
    assert s.id and s.app_name == "app" and s.user_id == "u1" and s.state == {"k": 1}
    named = await service.create_session(app_name="app", user_id="u1", session_id="mine")
    assert named.id == "mine"

    def remember(ctx: Context, node_input: str):
        ctx.state["seen"] = node_input
        return "ok"

    runner = Runner(app_name="app", node=Workflow(name="w", edges=[("START", remember)]), session_service=service)
    await _run(runner, "mine", _text("hi"))
    got = await service.get_session(app_name="app", user_id="u1", session_id="mine")
    assert got is not None and got.state["seen"] == "hi"
    assert [e.output for e in got.events if e.output is not None][-1] == "ok"
    assert await service.get_session(app_name="other", user_id="u1", session_id="mine") is None
    assert await service.get_session(app_name="app", user_id="u1", session_id="missing") is None
    listed = await service.list_sessions(app_name="app", user_id="u1")
    assert {x.id for x in listed.sessions} == {s.id, "mine"}


async def test_session_service_on_a_given_store_is_what_the_tools_read() -> None:
    store = MemoryStore()
    service = InMemorySessionService(store=store)
    await service.create_session(app_name="app", user_id="u1", session_id="s")
    def five():
        return 5

    runner = Runner(app_name="app", node=Workflow(name="w", edges=[("START", five)]), session_service=service)
    await _run(runner, "s", _text("go"))
    assert (await store.get_session("s")).app_name == "app"
    assert any(se.event.output == 5 for se in await store.events("s"))


def test_in_memory_runner_and_sync_run() -> None:
    def upper(node_input: str):
        return node_input.upper()

    runner = InMemoryRunner(node=Workflow(name="w", edges=[("START", upper)]), app_name="a")
    asyncio.run(runner.session_service.create_session(app_name="a", user_id="u1", session_id="s"))
    events = list(runner.run(user_id="u1", session_id="s", new_message=_text("abc")))
    assert events[-1].output == "ABC"


# ------------------------------------------------------------------ nodes and graphs


class _Say(BaseNode):
    """A pydantic node with a field of its own, as ADK's tests write them."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    message: str = ""
    route_to: str | None = None

    async def _run_impl(self, *, ctx: Context, node_input: Any):
        yield Event(output=f"{self.message}:{node_input}", route=self.route_to)


async def test_base_node_subclasses_route_with_edge_objects() -> None:
    check = _Say(name="check", message="checked", route_to="big")
    big = _Say(name="big", message="big")
    small = _Say(name="small", message="small")
    wf = Workflow(
        name="router",
        edges=[
            Edge(from_node=START, to_node=check),
            Edge(from_node=check, to_node=big, route="big"),
            Edge(from_node=check, to_node=small, route="small"),
        ],
    )
    runner, sid = await _runner(wf)
    events = await _run(runner, sid, _text("x"))
    outs = _outputs(events)
    assert outs["check"] == "checked:x" and outs["big"] == "big:checked:x" and "small" not in outs
    assert [e.node_info.path for e in events if e.node_name == "big"][0] == "router@1/big@1"


async def test_base_node_name_must_be_an_identifier() -> None:
    with pytest.raises(ValidationError):
        _Say(name="not a name")


async def test_join_node_and_route_maps() -> None:
    def a():
        return 1

    def b():
        return 2

    join = JoinNode(name="join")

    def total(node_input: dict):
        return node_input["a"] + node_input["b"]

    wf = Workflow(name="w", edges=[("START", a, join), ("START", b, join), (join, total)])
    runner, sid = await _runner(wf)
    assert (await _run(runner, sid, _text("x")))[-1].output == 3


class Order(BaseModel):
    id: str
    amount: int


class Decision(BaseModel):
    approved: bool
    note: str | None = None


async def test_function_parameters_bind_ctx_node_input_and_state() -> None:
    def intake(ctx: Context, node_input: str):
        ctx.state["order"] = {"id": node_input, "amount": "42"}
        return node_input

    def price(order: Order, node_input: str, currency: str = "EUR"):
        return f"{order.id}={order.amount + 1} {currency} ({node_input})"

    runner, sid = await _runner(Workflow(name="w", edges=[("START", intake, price)]))
    assert (await _run(runner, sid, _text("o-7")))[-1].output == "o-7=43 EUR (o-7)"


async def test_event_state_and_session_state() -> None:
    def first():
        return Event(state={"step": 1}, output="one")

    def second(ctx: Context, step: int):
        assert ctx.state.to_dict()["step"] == 1 and ctx.session.id
        return f"{ctx.session.state['step']}/{step}/{ctx.session.id == ctx.session.id}"

    runner, sid = await _runner(Workflow(name="w", edges=[("START", first, second)]))
    events = await _run(runner, sid, _text("x"))
    assert [e.actions.state_delta for e in events if e.node_name == "first"][0] == {"step": 1}
    assert events[-1].output == "1/1/True"


async def test_parallel_worker_maps_items_under_adk_names() -> None:
    def items():
        return ["a", "b", "c"]

    def shout(node_input: str):
        return node_input.upper()

    worker = ParallelWorker(node=shout, max_parallel_workers=2)
    assert worker.name == "shout" and worker.max_parallel_workers == 2
    runner, sid = await _runner(Workflow(name="w", edges=[("START", items, worker)]))
    events = await _run(runner, sid, _text("x"))
    assert events[-1].output == ["A", "B", "C"]
    paths = sorted(e.node_info.path for e in events if e.output in ("A", "B", "C"))
    assert paths == ["w@1/shout@1/shout@1", "w@1/shout@1/shout@2", "w@1/shout@1/shout@3"]

    decorated = node(shout, parallel_worker=True)
    assert isinstance(decorated, ParallelWorker)
    with pytest.raises(ValueError, match="max_parallel_workers"):
        ParallelWorker(node=shout, max_parallel_workers=0)


async def test_node_runner_runs_a_child_from_an_orchestrator() -> None:
    class Double(BaseNode):
        async def _run_impl(self, *, ctx: Context, node_input: Any):
            yield node_input * 2

    @node(rerun_on_resume=True)
    async def orchestrate(ctx: Context, node_input: Any):
        child = await NodeRunner(node=Double(name="double"), parent_ctx=ctx).run(node_input=21)
        return child.output

    runner, sid = await _runner(Workflow(name="w", edges=[("START", orchestrate)]))
    events = await _run(runner, sid, _text("x"))
    assert events[-1].output == 42
    assert [e.node_info.path for e in events if e.output == 42][0] == "w@1/orchestrate@1/double@1"


# ------------------------------------------------------------------ retries and failures


def test_retry_config_has_adk_defaults_and_validates_exceptions() -> None:
    from engine.adk._nodes import engine_retry

    eng = engine_retry(RetryConfig())
    assert (eng.max_attempts, eng.initial_delay, eng.max_delay, eng.backoff, eng.jitter) == (5, 1.0, 60.0, 2.0, 1.0)
    assert engine_retry(RetryConfig(max_attempts=0)).max_attempts == 1  # 0 or 1: no retry
    cfg = RetryConfig(exceptions=[ValueError, "KeyError"], initial_delay=2.0, backoff_factor=2.0, jitter=0.0)
    assert cfg.exceptions == ["ValueError", "KeyError"]
    assert engine_retry(cfg).delay(2) == 4.0
    with pytest.raises(ValidationError, match="exception classes"):
        RetryConfig(exceptions=[42])


async def test_retry_config_retries_the_listed_exceptions_by_name() -> None:
    calls: list[int] = []

    @node(retry_config=RetryConfig(max_attempts=3, initial_delay=0, jitter=0, exceptions=["ValueError"]))
    def flaky():
        calls.append(1)
        if len(calls) < 3:
            raise ValueError("not yet")
        return "third time"

    runner, sid = await _runner(Workflow(name="w", edges=[("START", flaky)]))
    assert (await _run(runner, sid, _text("x")))[-1].output == "third time"
    assert len(calls) == 3

    @node(retry_config=RetryConfig(max_attempts=3, initial_delay=0, exceptions=[ValueError]))
    def wrong_kind():
        calls.append(2)
        raise KeyError("no")

    runner, sid = await _runner(Workflow(name="w", edges=[("START", wrong_kind)]))
    with pytest.raises(KeyError):
        await _run(runner, sid, _text("x"))
    assert calls.count(2) == 1


async def test_run_async_raises_the_nodes_own_exception_after_its_events() -> None:
    class Boom(Exception):
        pass

    def explode():
        raise Boom("kaput")

    runner, sid = await _runner(Workflow(name="w", edges=[("START", explode)]))
    seen: list[Event] = []
    with pytest.raises(Boom, match="kaput"):
        async for e in runner.run_async(user_id="u1", session_id=sid, new_message=_text("x")):
            seen.append(e)
    assert [(e.node_name, e.error_code) for e in seen if e.error_code] == [("explode", "Boom")]


# ------------------------------------------------------------------ human input


async def test_request_input_call_name_optional_message_and_response() -> None:
    def ask():
        yield RequestInput(interrupt_id="ok-1", response_schema=Decision)

    def after(node_input: Decision):
        return node_input.approved

    runner, sid = await _runner(Workflow(name="w", edges=[("START", ask, after)]))
    events = await _run(runner, sid, _text("x"))
    (asking,) = [e for e in events if get_request_input_interrupt_ids(e)]
    call = asking.get_function_calls()[0]
    assert (call.id, call.name) == ("ok-1", "adk_request_input")
    assert call.args["response_schema"]["required"] == ["approved"]
    assert asking.long_running_tool_ids == {"ok-1"}
    assert RequestInput().interrupt_id  # a fresh id when none is given; message is optional

    # Different from ADK on purpose: an invalid answer is refused before it is stored.
    bad = types.Content(role="user", parts=[create_request_input_response("ok-1", {"approved": "maybe"})])
    with pytest.raises(ResumeRejected):
        await _run(runner, sid, bad, invocation_id=asking.invocation_id)
    good = types.Content(role="user", parts=[create_request_input_response("ok-1", {"approved": "true"})])
    done = await _run(runner, sid, good, invocation_id=asking.invocation_id)
    assert _outputs(done)["ask"] == {"approved": True, "note": None}
    assert done[-1].output is True


async def test_an_event_with_a_long_running_function_call_interrupts() -> None:
    class Tool(BaseNode):
        async def _run_impl(self, *, ctx: Context, node_input: Any):
            part = types.Part(function_call=types.FunctionCall(name="pay", args={"eur": 5}, id="fc-1"))
            yield Event(content=types.Content(parts=[part]), long_running_tool_ids={"fc-1"})

    runner, sid = await _runner(Workflow(name="w", edges=[("START", Tool(name="tool"))]))
    events = await _run(runner, sid, _text("x"))
    (asking,) = [e for e in events if e.long_running_tool_ids]
    assert asking.long_running_tool_ids == {"fc-1"} and asking.get_function_calls()[0].args == {"eur": 5}
    answer = types.Part.from_function_response(name="pay", response={"result": "paid"})
    answer.function_response.id = "fc-1"
    done = await _run(runner, sid, types.Content(role="user", parts=[answer]), invocation_id=asking.invocation_id)
    assert done[-1].output == "paid"


def test_genai_look_alike_types() -> None:
    call = types.Part.from_function_call(name="f", args={"x": 1})
    assert call.function_call.id is None and call.function_call.args == {"x": 1}
    resp = types.Part.from_function_response(name="f", response={"result": 2})
    assert resp.function_response.response == {"result": 2}
    assert types.Part.from_text(text="hi").text == "hi"
    assert types.UserContent("hi").parts[0].text == "hi"


async def test_google_genai_objects_are_accepted_as_messages() -> None:
    # google-genai's types are pydantic models with these field names; any such
    # object is read by its fields, so code keeping `from google.genai import types` works.
    class FunctionResponse(BaseModel):
        id: str | None = None
        name: str | None = None
        response: dict | None = None

    class Part(BaseModel):
        text: str | None = None
        function_response: FunctionResponse | None = None
        inline_data: Any = None

    class Content(BaseModel):
        role: str | None = None
        parts: list[Part] | None = None

    def ask():
        yield RequestInput(interrupt_id="q", message="?")

    runner, sid = await _runner(Workflow(name="w", edges=[("START", ask)]))
    events = await _run(runner, sid, Content(role="user", parts=[Part(text="go")]))
    inv = events[-1].invocation_id
    reply = Content(role="user", parts=[Part(function_response=FunctionResponse(id="q", name="adk_request_input", response={"result": 7}))])
    assert (await _run(runner, sid, reply, invocation_id=inv))[-1].output == 7


async def test_custom_run_id_is_the_childs_key_and_its_path_is_numeric() -> None:
    def label(node_input: str):
        return f"<{node_input}>"

    @node(rerun_on_resume=True)
    async def orch(ctx: Context, node_input: Any):
        a = await ctx.run_node(label, "a", run_id="order-a")
        b = await ctx.run_node(label, "b", run_id="order-b")
        return a + b

    runner, sid = await _runner(Workflow(name="w", edges=[("START", orch)]))
    events = await _run(runner, sid, _text("x"))
    assert events[-1].output == "<a><b>"
    assert sorted(e.node_info.path for e in events if e.node_name == "label") == ["w@1/orch@1/label@1", "w@1/orch@1/label@2"]


async def test_first_node_gets_the_message_text_or_content_by_annotation() -> None:
    def as_text(node_input):
        return node_input

    def as_content(node_input: types.Content):
        return node_input.parts[0].text.upper()

    runner, sid = await _runner(Workflow(name="w", edges=[("START", as_text)]))
    assert (await _run(runner, sid, _text("hello")))[-1].output == "hello"
    runner, sid = await _runner(Workflow(name="w", edges=[("START", as_content)]))
    assert (await _run(runner, sid, _text("hello")))[-1].output == "HELLO"


async def test_store_session_service_on_sqlite(tmp_path) -> None:
    from engine.adk.sessions import StoreSessionService
    from engine.store import SQLiteStore

    def ask():
        yield RequestInput(interrupt_id="go", message="go?", response_schema=bool)

    async with SQLiteStore.open(str(tmp_path / "adk.sqlite")) as store:
        service = StoreSessionService(store)
        session = await service.create_session(app_name="app", user_id="u1")
        runner = Runner(app_name="app", node=Workflow(name="w", edges=[("START", ask)]), session_service=service)
        events = await _run(runner, session.id, _text("x"))
        answer = types.Content(role="user", parts=[create_request_input_response("go", {"result": True})])
        done = await _run(runner, session.id, answer, invocation_id=events[-1].invocation_id)
        assert done[-1].output is True
    async with SQLiteStore.open(str(tmp_path / "adk.sqlite")) as store:
        assert any(se.event.output is True for se in await store.events(session.id))


async def test_nested_workflow_waits_and_resumes_with_adk_paths() -> None:
    def ask(node_input: str):
        yield RequestInput(message=f"ship {node_input}?", interrupt_id="ship")

    def ship(node_input: bool):
        return "shipped" if node_input else "held"

    inner = Workflow(name="inner", edges=[("START", ask, ship)])

    def report(node_input: str):
        return f"report: {node_input}"

    runner, sid = await _runner(Workflow(name="outer", edges=[("START", inner, report)]))
    events = await _run(runner, sid, _text("box-1"))
    (asking,) = [e for e in events if get_request_input_interrupt_ids(e)]
    assert asking.node_info.path == "outer@1/inner@1/ask@1" and asking.node_name == "ask"
    assert "report" not in _outputs(events)
    answer = types.Content(role="user", parts=[create_request_input_response("ship", {"result": True})])
    done = await _run(runner, sid, answer, invocation_id=asking.invocation_id)
    assert _outputs(done)["ship"] == "shipped" and done[-1].output == "report: shipped"


# ------------------------------------------------------------------ Graph


def test_graph_from_edge_items_and_adk_validation_messages() -> None:
    from engine.adk.workflow import DEFAULT_ROUTE, FunctionNode, Graph

    def my_func():
        return None

    b = _Say(name="NodeB")
    graph = Graph.from_edge_items([(START, my_func), (my_func, {"x": b})])
    graph.validate_graph()
    assert {n.name for n in graph.nodes} == {"__START__", "my_func", "NodeB"}
    assert isinstance(next(n for n in graph.nodes if n.name == "my_func"), FunctionNode)
    assert [(e.from_node.name, e.to_node.name, e.route) for e in graph.edges] == [
        ("__START__", "my_func", None),
        ("my_func", "NodeB", "x"),
    ]

    a, c = _Say(name="NodeA"), _Say(name="NodeC")
    cases = [
        ([Edge(from_node=a, to_node=b)], r"START node \(name: '__START__'\) not found"),
        ([Edge(from_node=START, to_node=a), Edge(from_node=b, to_node=a)], r"unreachable from START: \['NodeB'\]"),
        ([Edge(from_node=START, to_node=a), Edge(from_node=START, to_node=a, route="r")], "Duplicate edge found"),
        ([Edge(from_node=START, to_node=a), Edge(from_node=a, to_node=_Say(name="NodeA"))], "Duplicate node names"),
        ([Edge(from_node=START, to_node=a), Edge(from_node=a, to_node=b), Edge(from_node=b, to_node=a)], "Unconditional cycle"),
        (
            [Edge(from_node=START, to_node=a), Edge(from_node=a, to_node=b, route=DEFAULT_ROUTE),
             Edge(from_node=a, to_node=c, route=DEFAULT_ROUTE)],
            "Multiple DEFAULT_ROUTE edges found from node NodeA to NodeB and NodeC",
        ),
    ]
    for edges, message in cases:
        with pytest.raises(ValueError, match=message):
            Graph(edges=edges).validate_graph()
    with pytest.raises(ValueError, match="Graph validation failed"):
        Workflow(name="w", edges=[(a, b)])  # validated when the workflow is built
    with pytest.raises(ValueError, match="Routing map must not be empty"):
        Graph.from_edge_items([(START, a), (a, {})])


async def test_default_route_is_taken_when_no_other_route_matches() -> None:
    from engine.adk.workflow import DEFAULT_ROUTE

    def classify(node_input: str):
        return Event(output=node_input, route=node_input)

    def vip(node_input: str):
        return "vip desk"

    def anyone(node_input: str):
        return "front desk"

    wf = Workflow(name="desk", edges=[("START", classify, {"vip": vip, DEFAULT_ROUTE: anyone})])
    for text, desk in (("vip", "vip desk"), ("walk-in", "front desk")):
        runner, sid = await _runner(wf)
        events = await _run(runner, sid, _text(text))
        assert events[-1].output == desk
        assert ("anyone" in _outputs(events)) is (desk == "front desk")


async def test_answer_with_the_wrong_invocation_id_names_the_right_one() -> None:
    from engine.adk.workflow._graph import Graph
    from engine.adk.workflow.utils._workflow_hitl_utils import create_request_input_response as helper

    assert Graph is not None and helper is create_request_input_response  # ADK's private import paths exist too

    def ask():
        yield RequestInput(interrupt_id="only", message="?")

    runner, sid = await _runner(Workflow(name="w", edges=[("START", ask)]))
    first = await _run(runner, sid, _text("one"))
    answer = types.Content(role="user", parts=[create_request_input_response("only", {"result": 1})])
    with pytest.raises(ResumeRejected, match=first[-1].invocation_id) as refused:
        await _run(runner, sid, answer, invocation_id="not-it")
    assert "nothing was written" in str(refused.value)


async def test_the_inbox_shows_an_adk_request_by_its_message() -> None:
    from console.screens.inbox import asks

    def ask():
        yield RequestInput(interrupt_id="q1", message="Approve order 7?", response_schema=bool)

    store = MemoryStore()
    service = InMemorySessionService(store=store)
    await service.create_session(app_name="app", user_id="u1", session_id="s")
    runner = Runner(app_name="app", node=Workflow(name="w", edges=[("START", ask)]), session_service=service)
    await _run(runner, "s", _text("x"))
    (rec,) = (await store.open_interrupts(session_id="s")).items
    assert (rec.interrupt_id, rec.name) == ("q1", "adk_request_input")
    assert asks(rec) == "Approve order 7?"  # as for the engine's own RequestInput
    assert rec.response_schema == {"type": "boolean"}


def test_the_app_registry_takes_an_adk_workflow_or_app() -> None:
    from engine.apps import AppRegistry
    from engine.nodes import BaseNode as EngineNode

    def hello():
        return "hi"

    wf = Workflow(name="hello_wf", edges=[("START", hello)])
    reg = AppRegistry()
    reg.register("by_workflow", wf)
    reg.register("by_app", App(name="by_app", root_agent=wf))
    for name in ("by_workflow", "by_app"):
        got = reg.get(name)
        assert isinstance(got, EngineNode) and got.name == "hello_wf"
    assert reg.get("by_app") is reg.get("by_workflow")  # one engine node per ADK node


async def test_messages_and_contents_a_node_yields_reach_the_caller() -> None:
    def talk():
        yield Event(message="working on it")
        yield types.Content(parts=[types.Part(text="still working")])
        yield Event(output="done", state={"talked": True})

    runner, sid = await _runner(Workflow(name="w", edges=[("START", talk)]))
    events = await _run(runner, sid, _text("x"))
    texts = [p.text for e in events if e.content is not None for p in e.content.parts if p.text]
    assert texts == ["working on it", "still working"]
    assert all(e.content.role == "model" for e in events if e.content is not None)
    assert [e.actions.state_delta for e in events if e.output == "done"][0] == {"talked": True}


async def test_real_google_genai_types_are_accepted() -> None:
    # Runs where the optional extra is installed (pip install 'hitl-console[adk]').
    genai_types = pytest.importorskip("google.genai.types")

    def ask(node_input: str):
        yield RequestInput(message=f"ok {node_input}?", interrupt_id="q")

    def after(node_input: str):
        yield Event(content=genai_types.Content(role="model", parts=[genai_types.Part.from_text(text=node_input)]))
        yield Event(output=f"got {node_input}")

    runner, sid = await _runner(Workflow(name="w", edges=[("START", ask, after)]))
    start = genai_types.Content(role="user", parts=[genai_types.Part.from_text(text="go")])
    events = await _run(runner, sid, start)
    assert [e.get_function_calls()[0].args["message"] for e in events if e.long_running_tool_ids] == ["ok go?"]
    part = genai_types.Part.from_function_response(name="adk_request_input", response={"result": "yes"})
    part.function_response.id = "q"
    done = await _run(runner, sid, genai_types.Content(role="user", parts=[part]), invocation_id=events[-1].invocation_id)
    assert [p.text for e in done if e.content for p in e.content.parts] == ["yes"]
    assert done[-1].output == "got yes"


async def test_database_and_sqlite_session_services_write_a_store_hitl_opens(tmp_path, monkeypatch) -> None:
    from engine.adk.sessions import DatabaseSessionService, SqliteSessionService
    from engine.store import SQLiteStore

    def ask():
        yield RequestInput(interrupt_id="go", message="go?", response_schema=bool)

    monkeypatch.chdir(tmp_path)
    for service, path in (
        (DatabaseSessionService(db_url="sqlite+aiosqlite:///rel.db"), tmp_path / "rel.db"),
        (DatabaseSessionService(db_url=f"sqlite:///{tmp_path}/abs.db"), tmp_path / "abs.db"),
        (SqliteSessionService(db_path=str(tmp_path / "lite.db")), tmp_path / "lite.db"),
    ):
        session = await service.create_session(app_name="app", user_id="u1")
        runner = Runner(app_name="app", node=Workflow(name="w", edges=[("START", ask)]), session_service=service)
        events = await _run(runner, session.id, _text("x"))
        assert [e.long_running_tool_ids for e in events if e.long_running_tool_ids] == [{"go"}]
        await service.close()
        async with SQLiteStore.open(str(path), read_only=True) as store:  # what `hitl --db FILE` reads
            assert [r.interrupt_id for r in (await store.open_interrupts(session_id=session.id)).items] == ["go"]
    import sqlite3

    from engine.errors import StoreError

    adk_db = sqlite3.connect(tmp_path / "adk_sessions.db")  # an ADK session database: another schema
    adk_db.execute("create table sessions (app_name text, user_id text, id text, state text)")
    adk_db.commit()
    adk_db.close()
    with pytest.raises(StoreError, match="adk_sessions.db is a SQLite database of another application"):
        await DatabaseSessionService(db_url="sqlite:///adk_sessions.db").create_session(app_name="app", user_id="u1")
    from engine.adk._runner import _store_target

    assert _store_target("postgresql+asyncpg://ann@db/hitl") == "postgresql://ann@db/hitl"
    with pytest.raises(ValueError, match="only sqlite and postgresql"):
        DatabaseSessionService(db_url="mysql://x/y")
    with pytest.raises(ValueError, match="names a file"):
        DatabaseSessionService(db_url="sqlite://")


async def test_a_list_route_follows_every_edge_it_names() -> None:
    # docs/graphs/index.md's router: Event(route=[...]) for a message in several categories.
    def router(node_input: str):
        routes = node_input.split(",")
        routes = [route.strip() for route in routes]
        return Event(route=routes)

    def response_1_bug():
        return Event(message="Handling bug...")

    def response_2_support():
        return Event(message="Handling customer support...")

    def response_3_logistics():
        return Event(message="Handling logistics...")

    wf = Workflow(
        name="routing_workflow",
        edges=[
            ("START", router),
            (router, {"BUG": response_1_bug, "CUSTOMER_SUPPORT": response_2_support, "LOGISTICS": response_3_logistics}),
        ],
    )
    runner, sid = await _runner(wf)
    events = await _run(runner, sid, _text("BUG, LOGISTICS"))
    said = sorted(p.text for e in events if e.content is not None for p in e.content.parts if p.text)
    assert said == ["Handling bug...", "Handling logistics..."]
