"""A turn's writes reach the store in the order they were made (engine/invocation.py).

An end record is held and written with the next start. When one completion
starts two parallel branches, the second branch's start must not commit before
the write that carries the end that triggered it: on a store with a connection
pool (PostgreSQL) the two appends would otherwise race, the start would get the
lower seq, and the next turn, rebuilt from the log, would see the branch as
started *before* its trigger completed and run it a second time (observed as
``risk_approval@2`` raising an id still open at ``risk_approval@1``).
"""

from __future__ import annotations

import asyncio
from typing import Any

from engine import Content
from engine.apps import AppRegistry
from engine.models import Event, StoredEvent
from engine.projection import project
from engine.store import MemoryStore


class SlowBatchStore(MemoryStore):
    """Appends of several events (those carrying held end records) let every
    other task run before they commit, as a second pooled connection would."""

    async def append_events(self, session_id: str, events: list[Event], **kw: Any) -> list[StoredEvent]:
        if len(events) > 1:
            for _ in range(20):
                await asyncio.sleep(0)
        return await super().append_events(session_id, events, **kw)


async def test_every_start_commits_after_the_end_that_triggered_it() -> None:
    store = SlowBatchStore()
    runner = AppRegistry().runner("refund_approval", store)
    await store.create_session("refund_approval", "u", "s")
    [e async for e in runner.run("u", "s", Content.from_text("order-1001"))]
    stored = await store.events("s")
    seq_of = {
        (s.event.node_info.path, s.event.node_info.lifecycle): s.seq
        for s in stored
        if s.event.node_info is not None and s.event.node_info.lifecycle
    }
    fetched = seq_of[("refund@1/fetch_order@1", "end")]
    for branch in ("refund@1/finance_approval@1", "refund@1/risk_approval@1"):
        assert seq_of[(branch, "start")] > fetched, sorted(seq_of.items(), key=lambda kv: kv[1])
    # and the next turn, rebuilt from the log, answers without running a branch twice
    proj = project([(s.seq, s.event) for s in stored])
    (inv,) = proj.invocations
    ids = sorted(proj.pending_ids(inv, "refund@1"))
    answers = {i: {"approved": True} for i in ids}
    [e async for e in runner.run("u", "s", Content.from_responses(answers))]
    paths = [s.event.node_info.path for s in await store.events("s") if s.event.node_info is not None]
    assert not any(p.endswith("_approval@2") for p in paths), paths
