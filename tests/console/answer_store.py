"""Stores for the response-editor tests: the sample apps' demo sessions, written
by the real Runner (``sample_sessions.demo.build_demo``) into a MemoryStore with
a fixed clock, so ids and times are the same on every run; plus a small
fan-out app whose branches each have a downstream node."""

from __future__ import annotations

from typing import Any

from engine import START, Content, RequestInput, Runner, Workflow, node
from engine.apps import AppRegistry
from engine.projection import Projection
from engine.resume import load_invocation
from engine.store import MemoryStore
from sample_sessions.clock import frozen_engine
from sample_sessions.demo import FIXTURE_EPOCH, build_demo

EPOCH = FIXTURE_EPOCH
NOW = EPOCH + 8 * 86400
"""The console's clock: after every demo session."""


@node
async def intake(node_input: Any) -> dict[str, Any]:
    return {"ticket": node_input}


@node
async def ask_a(node_input: Any) -> Any:
    yield RequestInput("Approve branch A?", payload=node_input, response_schema=bool, interrupt_id="fan-a")


@node
async def ask_b(node_input: Any) -> Any:
    yield RequestInput("Approve branch B?", payload=node_input, response_schema=bool, interrupt_id="fan-b")


@node
async def ship_a(ctx: Any, node_input: Any) -> str:
    ctx.state["shipped_a"] = node_input
    return f"A shipped ({node_input})"


@node
async def ship_b(node_input: Any) -> str:
    return f"B shipped ({node_input})"


fanout_wf = Workflow("fanout", [(START, intake, (ask_a, ask_b)), (ask_a, ship_a), (ask_b, ship_b)])
"""intake -> (ask_a -> ship_a, ask_b -> ship_b): two independent branches."""


def registry() -> AppRegistry:
    reg = AppRegistry()
    reg.register("fanout", fanout_wf)
    return reg


async def demo_store() -> MemoryStore:
    store = MemoryStore()
    await build_demo(store, epoch=EPOCH, long_iterations=2)
    with frozen_engine(EPOCH + 7.5 * 86400, seed="fanout"):
        async for _ in Runner("fanout", fanout_wf, store).run("zoe", "fanout-1", Content.from_text("T-7")):
            pass
    return store


async def invocation(store: MemoryStore, session_id: str) -> tuple[str, Projection]:
    (inv,) = [i.invocation_id for i in await store.list_invocations(session_id)][-1:]
    return inv, await load_invocation(store, session_id, inv)
