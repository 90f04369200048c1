"""Stores for the response-editor tests: the sample apps' demo sessions, written
by the real Runner (``sample_sessions.demo.build_demo``) into a MemoryStore with
a fixed clock, so ids and times are the same on every run; plus a small
fan-out app whose branches each have a downstream node."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

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
    reg.register("shipping", shipping_wf)
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


async def label_ids(store: MemoryStore) -> tuple[str, list[str]]:
    """labels-partial-1's invocation and its open label ids in the order raised."""
    inv, proj = await invocation(store, "labels-partial-1")
    return inv, [i.id for i in sorted(proj.open_interrupts(inv), key=lambda i: (i.raised_pos, i.id))]


async def new_incident(store: MemoryStore, session_id: str, text: str) -> tuple[str, Projection]:
    """An incident session ``oncall`` started with ``text`` (it waits on its two
    choose_mitigation ids): its invocation and projection."""
    async for _ in Runner("incident", AppRegistry().get("incident"), store).run(
        "oncall", session_id, Content.from_text(text)
    ):
        pass
    return await invocation(store, session_id)


# ------------------------------------------------------------------ a form with sections and lists
class Address(BaseModel):
    city: str = Field(min_length=1, description="Where the parcel goes")
    zip: int = Field(ge=1000, le=99999)


class Shipment(BaseModel):
    """A shipping clerk's decision."""

    approve: bool
    address: Address
    tags: list[Literal["fragile", "gift", "express"]] = Field(default_factory=list, max_length=2)
    boxes: int = Field(default=1, ge=1, le=9)


@node
async def ask_shipping(node_input: Any) -> Any:
    yield RequestInput("Ship order S-1?", payload={"order": node_input}, response_schema=Shipment,
                       interrupt_id="ship-S-1")
    yield RequestInput("Anything to note (a count or a text)?", payload=None, response_schema=int | str,
                       interrupt_id="note-S-1")


shipping_wf = Workflow("shipping", [(START, ask_shipping)])
"""One node asking two ids: a form with a section and a list (``ship-S-1``), and a
union (``note-S-1``: ``int | str``, an anyOf a form cannot ask)."""


async def shipping_store() -> MemoryStore:
    """The demo store plus ``shipping-1`` (written at a fixed time, like the rest)."""
    store = await demo_store()
    with frozen_engine(EPOCH + 7.7 * 86400, seed="shipping"):
        async for _ in Runner("shipping", shipping_wf, store).run("sam", "shipping-1", Content.from_text("S-1")):
            pass
    return store
