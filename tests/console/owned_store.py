"""A store for the owner and deadline screens, at the console's clock of the
answer tests (``answer_store.NOW``): ``due-1`` asks ``refund-1`` with a 4h deadline raised 3h before NOW
(1h left), claimed by ann; ``fanout-1`` (raised a day before) has ``fan-a``
assigned to bob and ``fan-b`` nobody's; ``quiet-1`` waits with nobody's."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any

from engine import START, Content, RequestInput, Runner, Workflow, node, ownership
from engine.apps import AppRegistry
from engine.deadlines import fail
from engine.store import MemoryStore
from sample_sessions.clock import frozen_engine

from .answer_store import NOW, fanout_wf, registry

RAISED = NOW - 3 * 3600


@node
async def approve_refund(node_input: Any) -> Any:
    yield RequestInput("Refund 120 EUR to Ada?", payload={"amount": 120}, response_schema=bool,
                       interrupt_id="refund-1", deadline=timedelta(hours=4), on_deadline=fail("no_answer"))


due_wf = Workflow("due", [(START, approve_refund)])


def owned_registry() -> AppRegistry:
    reg = registry()
    reg.register("due", due_wf)
    return reg


async def _run(store: MemoryStore, app: str, wf: Workflow, user: str, sid: str) -> None:
    async for _ in Runner(app, wf, store).run(user, sid, Content.from_text("go")):
        pass


async def build_owned_store() -> MemoryStore:
    store = MemoryStore()
    with frozen_engine(RAISED - 86400, seed="owned-fanout") as f:
        await _run(store, "fanout", fanout_wf, "zoe", "fanout-1")
        await _run(store, "fanout", fanout_wf, "yves", "quiet-1")
        f.clock.advance(minutes=5)
        assert (await ownership.assign(store, "fanout-1", ["fan-a"], to="bob", operator="lead")).error is None
    with frozen_engine(RAISED, seed="owned-due") as f:
        await _run(store, "due", due_wf, "ada", "due-1")
        f.clock.advance(minutes=10)
        assert (await ownership.claim(store, "due-1", ["refund-1"], operator="ann", reason="calling")).error is None
    return store


def owned_store() -> MemoryStore:
    return asyncio.run(build_owned_store())
