"""Helpers for engine tests: run a workflow turn, project the stored session."""

from __future__ import annotations

from typing import Any

import pytest

from engine import Content, Event, RequestInput, Runner, node
from engine.projection import Projection, project
from engine.store import MemoryStore


class Harness:
    """One app on one in-memory session; counts node executions."""

    def __init__(self, workflow: Any, session_id: str = "s1") -> None:
        self.store = MemoryStore()
        self.runner = Runner("test", workflow, self.store)
        self.session_id = session_id

    async def start(self, text: str = "go", **kw: Any) -> list[Event]:
        return [e async for e in self.runner.run("u", self.session_id, Content.from_text(text), **kw)]

    async def answer(self, answers: dict[str, Any], **kw: Any) -> list[Event]:
        msg = Content.from_responses(answers)
        return [e async for e in self.runner.run("u", self.session_id, msg, **kw)]

    async def redrive(self, invocation_id: str, **kw: Any) -> list[Event]:
        return [e async for e in self.runner.run("u", self.session_id, invocation_id=invocation_id, **kw)]

    async def projection(self) -> Projection:
        stored = await self.store.events(self.session_id)
        return project([(s.seq, s.event) for s in stored])

    async def status(self, path: str) -> str:
        p = await self.projection()
        (inv,) = p.invocations if len(p.invocations) == 1 else [list(p.invocations)[-1]]
        run = p.get(inv, path)
        assert run is not None, f"no run at {path}; have {[r.path for r in p.nodes.values()]}"
        return run.status.value

    async def run(self, path: str, invocation_id: str | None = None):
        p = await self.projection()
        inv = invocation_id or list(p.invocations)[-1]
        run = p.get(inv, path)
        assert run is not None, f"no run at {path}; have {sorted(r.path for r in p.nodes.values())}"
        return run

    async def snapshot(self) -> tuple[list[str], dict[str, Any]]:
        """Byte-level view of the store for 'nothing was written' checks."""
        stored = await self.store.events(self.session_id)
        session = await self.store.get_session(self.session_id)
        return [s.event.to_json() for s in stored], session.model_dump()


def starts(events: list[Event], path: str) -> int:
    return sum(1 for e in events if e.path == path and e.node_info and e.node_info.lifecycle == "start")


def asking(
    name: str, interrupt_id: str, message: str, calls: dict[str, int] | None = None, *, first: str | None = None
) -> Any:
    """A leaf ``name`` that asks ``message`` once (``interrupt_id``) and completes with
    the answer; each execution bumps ``calls[name]`` when ``calls`` is given; ``first``,
    when given, is an output it yields before asking."""

    @node(name=name)
    async def ask(node_input: Any) -> Any:
        if calls is not None:
            calls[name] = calls.get(name, 0) + 1
        if first is not None:
            yield first
        yield RequestInput(message, interrupt_id=interrupt_id)

    return ask


@pytest.fixture
def calls() -> dict[str, int]:
    """Execution counter nodes can bump: calls[name] += 1."""
    return {}
