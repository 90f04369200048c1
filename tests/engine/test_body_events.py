"""Events a node body yields ride on the run's next record (engine/invocation.py).

A body that yields an interrupt and ends (the common ``yield RequestInput``)
costs one commit for both; a body that yields and goes on working has its
event written within ``BODY_EVENT_DELAY``, while it still runs, so a console
in another process sees it. Until it is written, the turn treats a held
interrupt as open: the run ends WAITING on it, a second raise of the same id
elsewhere is refused, and an id answered earlier and raised again is asked again.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from engine import START, Content, RequestInput, Runner, Workflow, invocation, node
from engine.errors import WorkflowFailed
from engine.models import Event, StoredEvent
from engine.store import MemoryStore
from engine.store.sqlite import SQLiteStore

from .test_turn_cost import Traced, drain


class Appends(MemoryStore):
    """Records each append's events: one append is one transaction."""

    def __init__(self) -> None:
        super().__init__()
        self.batches: list[list[str]] = []

    def _label(self, ev: Event) -> str:
        info = ev.node_info
        if info is None:
            return "user"
        if info.lifecycle:
            return f"{info.lifecycle} {info.path}"
        return f"event {info.path}"

    async def append_event(self, session_id: str, event: Event, **kw: Any) -> StoredEvent:
        self.batches.append([self._label(event)])
        return await super().append_event(session_id, event, **kw)

    async def append_events(self, session_id: str, events: list[Event], **kw: Any) -> list[StoredEvent]:
        self.batches.append([self._label(e) for e in events])
        return await super().append_events(session_id, events, **kw)


@node
async def ask(node_input: Any):
    yield RequestInput("ok?", interrupt_id="q-1")


async def test_an_interrupt_and_the_end_of_its_run_are_one_commit(tmp_path: Path) -> None:
    store = await SQLiteStore.open(tmp_path / "s.sqlite", inline=True)
    try:
        runner = Runner("app", Workflow("one", [(START, ask)]), store)
        with Traced(store) as t:
            events = await drain(runner.run("u", "s", Content.from_text("go")))
        assert [e.kind for e in events] == ["message", "start", "start", "interrupt", "end", "end"]
        # the first write (message, root start, ask's start, lease), then the
        # interrupt with both end records, the snapshot and the release
        assert t.commits == 2, t.sql
        last_tx = t.sql[t.sql.index("COMMIT") + 1 :]
        assert sum(s.startswith("INSERT INTO events") for s in last_tx) == 1  # one multi-row insert
        assert any("INSERT OR REPLACE INTO interrupts" in s for s in last_tx)
        assert any(s.startswith("DELETE FROM leases") for s in last_tx)
        page = await store.open_interrupts(session_id="s", limit=5)
        assert [i.interrupt_id for i in page.items] == ["q-1"]
        assert (await store.list_invocations("s"))[0].status == "waiting"
    finally:
        await store.close()


async def test_a_body_that_goes_on_working_has_its_event_written_while_it_runs() -> None:
    gate = asyncio.Event()

    @node
    async def slow(node_input: Any):
        yield Event(author="slow", custom_metadata={"step": "halfway"})  # one output per run: these are progress events
        await gate.wait()
        yield Event(author="slow", custom_metadata={"step": "done"})

    store = Appends()
    runner = Runner("app", Workflow("w", [(START, slow)]), store)
    turn = asyncio.ensure_future(drain(runner.run("u", "s", Content.from_text("go"))))
    # wait for the store's state, not for a time: the first event is written
    # on its own while the body still waits on the gate
    while ["event w@1/slow@1"] not in store.batches:
        assert not turn.done(), store.batches
        await asyncio.sleep(0.001)
    assert not any("end w@1/slow@1" in b for b in store.batches)
    gate.set()
    events = await turn
    assert [e.custom_metadata["step"] for e in events if e.node_info and not e.node_info.lifecycle] == ["halfway", "done"]
    # the second event rides on the end records (with the release, or just before it)
    assert any(b[:2] == ["event w@1/slow@1", "end w@1/slow@1"] for b in store.batches), store.batches


async def test_events_are_written_in_the_order_they_were_made() -> None:
    @node
    async def chatty(node_input: Any):
        for i in range(5):
            yield Event(author="chatty", custom_metadata={"i": i})
            await asyncio.sleep(0)

    @node
    async def after(node_input: Any) -> Any:
        return node_input

    store = Appends()
    runner = Runner("app", Workflow("w", [(START, chatty, after)]), store)
    await drain(runner.run("u", "s", Content.from_text("go")))
    stored = await store.events("s")
    chatty_outputs = [s.event.custom_metadata["i"] for s in stored if s.event.node_info and not s.event.node_info.lifecycle]
    assert chatty_outputs == [0, 1, 2, 3, 4]
    kinds = [(s.event.node_info.lifecycle or "event", s.event.node_info.path) for s in stored if s.event.node_info]
    assert kinds.index(("end", "w@1/chatty@1")) > max(i for i, k in enumerate(kinds) if k == ("event", "w@1/chatty@1"))
    assert kinds.index(("start", "w@1/after@1")) > kinds.index(("end", "w@1/chatty@1"))
    # none of the five events cost a write of its own
    assert all(b != ["event w@1/chatty@1"] for b in store.batches), store.batches


async def test_an_id_raised_by_a_held_event_cannot_be_raised_again_elsewhere(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(invocation, "BODY_EVENT_DELAY", 60.0)  # held until the next record, whatever the machine's pace
    running, raised = asyncio.Event(), asyncio.Event()

    @node
    async def first(node_input: Any):
        await running.wait()  # both starts are written: from here on nothing else is
        yield RequestInput("a?", interrupt_id="dup")
        raised.set()  # this event is held
        await asyncio.sleep(0.05)

    @node
    async def second(node_input: Any):
        running.set()
        await raised.wait()
        yield RequestInput("b?", interrupt_id="dup")

    store = MemoryStore()
    runner = Runner("app", Workflow("w", [(START, (first, second))]), store)
    with pytest.raises(WorkflowFailed, match="already open at w@1/first@1"):
        await drain(runner.run("u", "s", Content.from_text("go")))


async def test_an_answered_id_raised_again_is_asked_again_while_its_event_is_held() -> None:
    """DESIGN 3.4: re-raising an id the node holds an answer for opens it again.
    The re-raise is held when the run ends: the run must still end WAITING."""

    @node(rerun_on_resume=True)
    async def twice(ctx: Any, node_input: Any):
        if ctx.resume_inputs.get("again") == "first":
            yield RequestInput("once more?", interrupt_id="again")
            return
        if "again" not in ctx.resume_inputs:
            yield RequestInput("first?", interrupt_id="again")

    store = MemoryStore()
    runner = Runner("app", Workflow("w", [(START, twice)]), store)
    await drain(runner.run("u", "s", Content.from_text("go")))
    events = await drain(runner.run("u", "s", Content.from_responses({"again": "first"})))
    assert [e.node_info.status.value for e in events if e.kind == "end"] == ["WAITING", "WAITING"]
    page = await store.open_interrupts(session_id="s", limit=5)
    assert [i.interrupt_id for i in page.items] == ["again"]
    assert (await store.list_invocations("s"))[0].status == "waiting"
