"""One test per lifecycle rule of DESIGN.md section 3 that issue 13 names
(3.2 completion records, 3.3 rejections, 3.4 re-raised ids and orchestrators'
answers, 3.7 coercion, 3.9 one output, timeouts) and the ADK-familiar API."""

from __future__ import annotations

import asyncio
import math
from typing import Any

import pytest
from pydantic import BaseModel, TypeAdapter

from engine import START, Content, Event, JoinNode, Part, RequestInput, Runner, Workflow, WorkflowFailed, node
from engine.errors import (
    AlreadyResolvedError,
    EmptyMessageError,
    InvalidResponseError,
    WrongInvocationError,
)
from engine.models import NodeStatus
from engine.responses import MAX_RESPONSE_BYTES, coerce_response, to_json_schema
from engine.resume_plan import plan_resume
from engine.store import MemoryStore

from .conftest import Harness


def ask(iid: str, schema: Any = None, name: str | None = None):
    @node(name=name or f"ask_{iid}")
    async def asker(node_input):
        yield RequestInput(f"question {iid}", interrupt_id=iid, response_schema=schema)

    return asker


async def started_to_use(iid: str, schema: Any) -> tuple[Harness, list[Any]]:
    """``ask(iid, schema) -> use`` started (waiting on ``iid``); the list ``use``
    appends each input it gets to."""
    got: list[Any] = []

    @node
    async def use(node_input):
        got.append(node_input)

    h = Harness(Workflow("wf", [(START, ask(iid, schema), use)]))
    await h.start()
    return h, got


# --------------------------------------------------------------- 3.2 completion records
class CountingStore(MemoryStore):
    """Records every multi-event append (one transaction each)."""

    def __init__(self) -> None:
        super().__init__()
        self.batches: list[list[str]] = []

    async def append_events(self, session_id, events, **kw):
        self.batches.append([e.kind for e in events])
        return await super().append_events(session_id, events, **kw)


async def test_auto_completion_writes_its_completion_record_in_the_answers_transaction():
    @node
    async def two(node_input):
        yield RequestInput("a", interrupt_id="a")
        yield RequestInput("b", interrupt_id="b")

    h = Harness(Workflow("wf", [(START, two, ask("c"))]))
    h.store = CountingStore()
    h.runner = Runner("test", h.runner.workflow, h.store)
    await h.start()
    await h.answer({"a": 1})  # partial: the leaf keeps waiting, no record
    await h.answer({"b": 2})  # the last id: the leaf finishes
    stored = await h.store.events(h.session_id)
    ends = [s for s in stored if s.event.path == "wf@1/two@1" and s.event.kind == "end"]
    assert [e.event.node_info.status for e in ends] == [NodeStatus.WAITING, NodeStatus.COMPLETED]
    answer = next(s for s in stored if s.event.function_responses and s.event.function_responses[0].id == "b")
    assert ends[-1].seq == answer.seq + 1
    assert ends[-1].event.output == {"a": 1, "b": 2}
    # the answer and the record: one append, with the root's start record (which
    # re-executes) and the start of the node it runs next (ask_c); the partial
    # answer before it runs nothing: it is written alone
    assert [b for b in h.store.batches if "response" in b] == [["response"], ["response", "end", "start", "start"]]
    await h.answer({"c": "x"})
    stored = await h.store.events(h.session_id)
    last_end = [s.event for s in stored if s.event.path == "wf@1/ask_c@1" and s.event.kind == "end"][-1]
    assert (last_end.node_info.status, last_end.output) == (NodeStatus.COMPLETED, "x")
    assert await h.status("wf@1") == "COMPLETED"


async def test_auto_completion_record_in_sqlite_store(tmp_path):
    from engine.store.sqlite import SQLiteStore

    store = await SQLiteStore.open(tmp_path / "s.sqlite")
    try:
        runner = Runner("test", Workflow("wf", [(START, ask("q"))]), store)
        _ = [e async for e in runner.run("u", "s", Content.from_text("go"))]
        out = [e async for e in runner.run("u", "s", Content.from_responses({"q": 5}))]
        assert [e.kind for e in out[:2]] == ["response", "end"]
        assert (out[1].path, out[1].output) == ("wf@1/ask_q@1", 5)
    finally:
        await store.close()


# --------------------------------------------------------------- 3.7 coercion
class Refund(BaseModel):
    amount: int
    note: str | None = None


REFUND_DICT = {
    "type": "object",
    "properties": {"amount": {"type": "integer"}, "note": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": None}},
    "required": ["amount"],
}


@pytest.mark.parametrize("schema", [Refund, REFUND_DICT], ids=["pydantic-model", "json-schema-dict"])
async def test_answers_are_validated_and_coerced_before_persisting(schema):
    h, got = await started_to_use("r", schema)
    plan = await plan_resume(h.store, h.session_id, Content.from_responses({"r": {"amount": "42"}}))
    (change,) = [c for c in plan.changes if c.effect == "auto-complete"]
    assert change.output == {"amount": 42, "note": None}  # the dry run shows the coerced value
    await h.answer({"r": {"amount": "42"}})
    assert got == [{"amount": 42, "note": None}]
    stored = await h.store.events(h.session_id)
    fr = next(s.event for s in stored if s.event.function_responses)
    assert fr.function_responses[0].response == {"amount": 42, "note": None}  # persisted coerced


@pytest.mark.parametrize(
    ("schema", "answer", "expected"),
    [
        (int, "7", 7),
        (int, {"result": 7.0}, 7),
        ({"type": "integer"}, {"result": "7"}, 7),
        (bool, "true", True),
        ({"type": "boolean"}, "false", False),
        (float, "1.5", 1.5),
        (list[int], ["1", 2.0], [1, 2]),
    ],
)
async def test_answers_are_coerced_for_python_types_and_json_schema(schema, answer, expected):
    h, got = await started_to_use("x", schema)
    await h.answer({"x": answer})
    assert got == [expected] and type(got[0]) is type(expected)


class Inner(BaseModel):
    ok: bool
    score: float = 0.5


class Order(BaseModel):
    amount: int
    note: str | None = None
    flags: list[bool] = []
    inner: Inner | None = None
    tags: dict[str, int] = {}
    either: int | str = 0


@pytest.mark.parametrize(
    "value",
    [
        {"amount": "42"},
        {"amount": 7.0, "flags": ["true", "no", 1, "off"]},
        {"amount": 1, "inner": {"ok": "yes"}},
        {"amount": 1, "tags": {"a": "3"}},
        {"amount": 1, "either": "12"},
        {"amount": 1, "either": 3.0},
        {"amount": "x"},
        {"amount": 1.5},
        {"note": "no amount"},
        {"amount": 1, "inner": {"score": 1}},
    ],
)
def test_coercion_agrees_with_pydantic_lax_mode(value):
    """The one function needs only the stored JSON Schema and agrees with pydantic."""
    try:
        expected: Any = TypeAdapter(Order).validate_python(value).model_dump(mode="json")
    except ValueError:
        expected = "rejected"
    coerced, errors = coerce_response(to_json_schema(Order), value)
    assert (coerced if not errors else "rejected") == expected


def test_the_console_checks_answers_with_the_same_function():
    from console.widgets.answer_editor import check_answer

    schema = to_json_schema(Refund)
    assert check_answer('{"amount": "42"}', schema).ok
    assert not check_answer('{"amount": "4x"}', schema).ok


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf, {"amount": math.nan}, [1, math.inf]])
async def test_nan_and_infinity_are_rejected_writing_nothing(bad):
    h = Harness(Workflow("wf", [(START, ask("x"))]))
    await h.start()
    before = await h.snapshot()
    with pytest.raises(InvalidResponseError, match="NaN and infinities are not JSON"):
        await h.answer({"x": bad})
    assert await h.snapshot() == before


async def test_answer_size_limit_counts_utf8_bytes_not_escapes():
    h = Harness(Workflow("wf", [(START, ask("x"), ask("y"))]))
    await h.start()
    fits = "é" * (MAX_RESPONSE_BYTES // 2 - 10)  # ~1 MB as \u00e9 escapes, half that in UTF-8
    await h.answer({"x": fits})
    assert await h.status("wf@1/ask_x@1") == "COMPLETED"
    with pytest.raises(InvalidResponseError, match="bytes; the limit is"):
        await h.answer({"y": "é" * (MAX_RESPONSE_BYTES // 2 + 10)})


# --------------------------------------------------------------- 3.4 re-raised ids
async def test_reraising_an_answered_id_asks_again():
    seen: list[dict[str, Any]] = []

    @node(rerun_on_resume=True)
    async def amount(ctx, node_input):
        seen.append(dict(ctx.resume_inputs))
        value = ctx.resume_inputs.get("amt")
        if value is None or value < 0:  # a business check failed: ask again
            yield RequestInput("amount (>= 0)", interrupt_id="amt")
            return
        yield value

    h = Harness(Workflow("wf", [(START, amount)]))
    await h.start()
    await h.answer({"amt": -1})
    assert await h.status("wf@1/amount@1") == "WAITING"
    p = await h.projection()
    assert [i.id for i in p.open_interrupts()] == ["amt"]
    assert [r.status for r in await h.store.lookup_interrupts(h.session_id, ["amt"])] == ["open"]
    await h.answer({"amt": 5})  # a fresh answer to the re-asked id is accepted
    assert seen == [{}, {"amt": -1}, {"amt": 5}]
    run = await h.run("wf@1/amount@1")
    assert (run.status, run.output) == (NodeStatus.COMPLETED, 5)
    with pytest.raises(AlreadyResolvedError):
        await h.answer({"amt": 6})


async def test_reraising_an_answered_id_in_a_dynamic_child_asks_again():
    orch_saw: list[dict[str, Any]] = []

    @node(rerun_on_resume=True)
    async def check(ctx, node_input):
        v = ctx.resume_inputs.get("v")
        if v != "good":
            yield RequestInput("value", interrupt_id="v")
            return
        yield v

    @node(rerun_on_resume=True)
    async def orch(ctx, node_input):
        orch_saw.append(dict(ctx.resume_inputs))
        return await ctx.run_node(check, node_input)

    h = Harness(Workflow("wf", [(START, orch)]))
    await h.start()
    await h.answer({"v": "bad"})
    assert await h.status("wf@1/orch@1") == "WAITING"
    assert await h.status("wf@1") == "WAITING"
    await h.answer({"v": "good"})
    assert (await h.run("wf@1/orch@1")).output == "good"
    assert orch_saw == [{}, {"v": "bad"}, {"v": "good"}]


# --------------------------------------------------------------- 3.4 orchestrators
async def test_an_orchestration_node_sees_its_dynamic_childrens_answers_sequential():
    saw: list[dict[str, Any]] = []

    @node(rerun_on_resume=True)
    async def orch(ctx, node_input):
        saw.append(dict(ctx.resume_inputs))
        a = await ctx.run_node(ask("a", name="first"))
        b = await ctx.run_node(ask("b", name="second"))
        return [a, b]

    h = Harness(Workflow("wf", [(START, orch)]))
    await h.start()
    await h.answer({"a": 1})
    await h.answer({"b": 2})
    assert saw == [{}, {"a": 1}, {"a": 1, "b": 2}]
    assert (await h.run("wf@1/orch@1")).output == [1, 2]


async def test_an_orchestration_node_sees_its_dynamic_childrens_answers_gather():
    saw: list[dict[str, Any]] = []

    @node(rerun_on_resume=True)
    async def orch(ctx, node_input):
        saw.append(dict(ctx.resume_inputs))
        ids = ["p", "q", "r"]

        @node(name="item")
        async def item(node_input):
            yield RequestInput(node_input, interrupt_id=node_input)

        return await asyncio.gather(*(ctx.run_node(item, i, key=i) for i in ids))

    h = Harness(Workflow("wf", [(START, orch)]))
    await h.start()
    await h.answer({"q": 2})
    await h.answer({"p": 1, "r": 3})
    assert saw == [{}, {"q": 2}, {"p": 1, "q": 2, "r": 3}]
    assert (await h.run("wf@1/orch@1")).output == [1, 2, 3]


# --------------------------------------------------------------- 3.9 one output
def test_one_output_per_workflow_is_checked_when_the_graph_shows_it():
    with pytest.raises(ValueError, match=r"j1, j2.*one output"):
        Workflow("wf", [(START, (ask("a"), ask("b")), JoinNode("j1")), (START, ask("c"), JoinNode("j2"))])


async def test_one_output_per_workflow_fails_the_workflow_naming_both_nodes():
    @node
    def left(node_input):
        return "L"

    @node
    def right(node_input):
        return "R"

    @node
    def side_effect(node_input):
        return None

    h = Harness(Workflow("wf", [(START, (left, right, side_effect))]))
    with pytest.raises(WorkflowFailed) as info:
        await h.start()
    assert info.value.path == "wf@1"
    assert "left" in str(info.value) and "right" in str(info.value) and "side_effect" not in str(info.value)
    run = await h.run("wf@1")
    assert run.status is NodeStatus.FAILED and run.error_code == "MultipleOutputsError"

    h2 = Harness(Workflow("wf", [(START, (left, side_effect))]))  # one terminal with output: fine
    await h2.start()
    assert (await h2.run("wf@1")).output == "L"


async def test_one_output_per_workflow_across_turns():
    @node
    def left(node_input):
        return "L"

    h = Harness(Workflow("wf", [(START, (left, ask("q")))]))
    await h.start()
    with pytest.raises(WorkflowFailed, match="ask_q and left|left and ask_q"):
        await h.answer({"q": "R"})


# --------------------------------------------------------------- 3.3 rejections
@pytest.mark.parametrize(
    "message",
    [Content(parts=[]), Content(parts=[Part()]), Content(parts=[Part(text="")])],
    ids=["no-parts", "empty-part", "empty-text"],
)
async def test_an_empty_message_is_an_error_writing_nothing(message):
    h = Harness(Workflow("wf", [(START, ask("x"))]))
    await h.start()
    before = await h.snapshot()
    with pytest.raises(EmptyMessageError):
        _ = [e async for e in h.runner.run("u", h.session_id, message)]
    assert await h.snapshot() == before
    fresh = Harness(Workflow("wf", [(START, ask("x"))]), session_id="new")
    with pytest.raises(EmptyMessageError):
        _ = [e async for e in fresh.runner.run("u", "new", message)]
    assert await fresh.store.list_sessions() is not None
    assert [s.id for s in (await fresh.store.list_sessions()).items] == []


async def test_naming_the_wrong_invocation_names_the_one_that_owns_the_id():
    @node
    async def asker(ctx, node_input):
        yield RequestInput("?", interrupt_id=f"id-{node_input}")

    h = Harness(Workflow("wf", [(START, asker)]))
    first = await h.start("one")
    second = await h.start("two")
    inv_one, inv_two = first[0].invocation_id, second[0].invocation_id
    before = await h.snapshot()
    with pytest.raises(WrongInvocationError) as info:
        await h.answer({"id-one": 1}, invocation_id=inv_two)
    assert inv_one in str(info.value) and inv_two in str(info.value)
    assert info.value.owners == [inv_one]
    assert await h.snapshot() == before


# --------------------------------------------------------------- timeouts
async def test_timeouts_name_the_node_and_the_limit():
    @node(timeout=0.05)
    async def stuck(node_input):
        await asyncio.Event().wait()

    h = Harness(Workflow("wf", [(START, stuck)]))
    with pytest.raises(WorkflowFailed) as info:
        await h.start()
    assert info.value.path == "wf@1/stuck@1"
    assert info.value.error_code == "TimeoutError"
    assert "wf@1/stuck@1" in info.value.error_message and "0.05s" in info.value.error_message
    assert isinstance(info.value.exception, TimeoutError)


# --------------------------------------------------------------- familiar to an ADK user
async def test_bare_functions_in_edges_are_wrapped_as_nodes():
    def double(node_input):
        return node_input * 2

    async def plus_one(node_input):
        return node_input + 1

    async def as_text(node_input):
        yield f"={node_input}"

    def three(node_input):
        return 3

    wf = Workflow("wf", [(START, three, double, plus_one, as_text), (double, plus_one)])
    assert wf.nodes["double"] is wf.nodes["double"] and len(wf.nodes) == 4  # one node per function
    h = Harness(wf)
    await h.start()
    assert (await h.run("wf@1")).output == "=7"


async def test_node_bodies_yield_events_without_runner_owned_fields():
    @node
    async def decide(node_input):
        yield Event(output="checked", route="ok")

    @node
    def done(node_input):
        return f"done after {node_input}"

    h = Harness(Workflow("wf", [(START, decide, {"ok": done})]))
    await h.start()
    assert (await h.run("wf@1")).output == "done after checked"
    stored = await h.store.events(h.session_id)
    out = next(s.event for s in stored if s.event.kind == "output")
    assert (out.invocation_id, out.author) == (stored[0].event.invocation_id, "decide")


async def test_the_failing_nodes_path_and_exception_are_on_the_error():
    class PaymentDeclined(Exception):
        pass

    @node
    def pay(node_input):
        raise PaymentDeclined("card expired")

    inner = Workflow("inner", [(START, pay)])
    h = Harness(Workflow("wf", [(START, inner)]))
    with pytest.raises(WorkflowFailed) as info:
        await h.start()
    assert info.value.path == "wf@1/inner@1/pay@1"
    assert isinstance(info.value.exception, PaymentDeclined)
    assert str(info.value.exception) == "card expired"


async def test_timeouts_leave_the_bodys_own_timeout_error_alone():
    @node(timeout=60)
    async def own(node_input):
        raise TimeoutError("upstream API timed out")

    h = Harness(Workflow("wf", [(START, own)]))
    with pytest.raises(WorkflowFailed) as info:
        await h.start()
    assert info.value.error_message == "upstream API timed out"
