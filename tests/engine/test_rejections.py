"""DESIGN.md 3.3: an FR message is validated before anything is persisted;
each rejection names the offending id(s) and leaves the store byte-for-byte
unchanged. Also 4.5/4.6 (duplicate/unknown/ambiguous ids; text to a waiting
invocation)."""

from __future__ import annotations

import pytest
from pydantic import BaseModel

from engine import START, Content, JoinNode, Part, RequestInput, Runner, Workflow, node
from engine.errors import (
    AlreadyResolvedError,
    AmbiguousInterruptError,
    InvalidResponseError,
    InvocationBusyError,
    MixedInvocationsError,
    ResumeRejected,
    TextToWaitingInvocationError,
    TextWithResponsesError,
    UnknownInterruptError,
)
from engine.models import FunctionResponse

from .conftest import Harness


class Approval(BaseModel):
    approved: bool
    amount: int


@node
async def ask(node_input):
    yield RequestInput("approve?", response_schema=Approval, interrupt_id=f"ap-{node_input}")


@node
async def ask_fixed(node_input):
    yield RequestInput("approve?", interrupt_id="same-id")


def harness() -> Harness:
    return Harness(Workflow("wf", [(START, ask)]))


async def rejected(h: Harness, exc_type, answers=None, content=None, **kw):
    before = await h.snapshot()
    msg = content or Content.from_responses(answers)
    with pytest.raises(exc_type) as info:
        [e async for e in h.runner.run("u", h.session_id, msg, **kw)]
    assert await h.snapshot() == before, "a rejected FR must leave the store unchanged"
    return info.value


async def test_unknown_id_is_rejected_and_named():
    h = harness()
    await h.start("1")
    err = await rejected(h, UnknownInterruptError, {"nope": {"approved": True, "amount": 1}})
    assert "nope" in str(err) and err.ids == ["nope"]


async def test_already_resolved_id_is_rejected():
    h = harness()
    await h.start("1")
    await h.answer({"ap-1": {"approved": True, "amount": 3}})
    err = await rejected(h, AlreadyResolvedError, {"ap-1": {"approved": False, "amount": 3}})
    assert "ap-1" in str(err)


async def test_ids_of_different_invocations_are_rejected():
    h = harness()
    await h.start("1")
    await h.start("2")
    err = await rejected(
        h, MixedInvocationsError, {"ap-1": {"approved": True, "amount": 1}, "ap-2": {"approved": True, "amount": 1}}
    )
    assert "ap-1" in str(err) and "ap-2" in str(err)


async def test_text_mixed_with_responses_is_rejected():
    h = harness()
    await h.start("1")
    content = Content(
        parts=[
            Part(text="also this"),
            Part(function_response=FunctionResponse(id="ap-1", response={"approved": True, "amount": 1})),
        ]
    )
    await rejected(h, TextWithResponsesError, content=content)


async def test_schema_invalid_response_is_rejected_with_the_field_path():
    h = harness()
    await h.start("1")
    err = await rejected(h, InvalidResponseError, {"ap-1": {"approved": True, "amount": "lots"}})
    assert "ap-1" in str(err) and "amount: expected integer" in str(err)
    err = await rejected(h, InvalidResponseError, {"ap-1": {"approved": True}})
    assert "'amount' is a required property" in str(err)


async def test_id_open_in_two_invocations_needs_the_invocation_named():
    h = Harness(Workflow("wf", [(START, ask_fixed)]))
    first = await h.start("1")
    await h.start("2")
    err = await rejected(h, AmbiguousInterruptError, {"same-id": 1})
    assert "same-id" in str(err) and "--invocation" in str(err)
    await h.answer({"same-id": 1}, invocation_id=first[0].invocation_id)
    p = await h.projection()
    assert p.get(first[0].invocation_id, "wf@1/ask_fixed@1").output == 1


async def test_duplicate_id_in_one_message_is_rejected():
    h = harness()
    await h.start("1")
    content = Content(
        parts=[Part(function_response=FunctionResponse(id="ap-1", response={"approved": True, "amount": 1}))] * 2
    )
    await rejected(h, ResumeRejected, content=content)


async def test_text_to_a_waiting_invocation_is_an_error_not_dropped():
    h = harness()
    first = await h.start("1")
    err = await rejected(
        h, TextToWaitingInvocationError, content=Content.from_text("hello?"), invocation_id=first[0].invocation_id
    )
    assert first[0].invocation_id in str(err)


async def test_resume_does_not_scan_the_session():
    """The owning invocation is found through the interrupt index (3.3)."""
    h = harness()
    await h.start("1")
    for i in range(5):
        await h.start(f"other-{i}")
    store = h.store

    class NoScan:
        def __getattr__(self, name):
            if name == "events":
                raise AssertionError("resume must not read the whole session")
            return getattr(store, name)

    h.runner = Runner("test", h.runner.workflow, NoScan())  # type: ignore[arg-type]
    events = await h.answer({"ap-1": {"approved": True, "amount": 2}})
    assert events[0].kind == "response"
    assert all(e.invocation_id == events[0].invocation_id for e in events)


async def test_a_running_invocation_rejects_answers_until_it_settles():
    import asyncio

    release = asyncio.Event()

    @node
    async def a(node_input):
        yield RequestInput("a", interrupt_id="a")

    @node
    async def slow(node_input):
        await release.wait()
        return 1

    h = Harness(Workflow("wf", [(START, (a, slow), JoinNode("j"))]))  # one output (3.9)
    task = asyncio.ensure_future(h.start())
    for _ in range(50):
        await asyncio.sleep(0)
        p = await h.projection()
        if p.open_interrupts():
            break
    await rejected(h, InvocationBusyError, {"a": 1})
    release.set()
    await task
    await h.answer({"a": 1})
    assert await h.status("wf@1") == "COMPLETED"


async def test_concurrent_answers_to_the_same_id_exactly_one_wins():
    import asyncio

    h = harness()
    await h.start("1")
    results = await asyncio.gather(
        h.answer({"ap-1": {"approved": True, "amount": 1}}),
        h.answer({"ap-1": {"approved": False, "amount": 2}}),
        return_exceptions=True,
    )
    errors = [r for r in results if isinstance(r, Exception)]
    assert len(errors) == 1
    from engine.errors import ConflictError

    assert isinstance(errors[0], (ConflictError, AlreadyResolvedError))
    stored = await h.store.events("s1")
    assert sum(1 for s in stored if s.event.kind == "response") == 1
