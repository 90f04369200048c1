"""The store the replay tests and snapshots use: every sample app's demo
sessions (operators, reasons, loops, failures, a re-drive), run by the real
Runner into a MemoryStore with the fixture clock -- byte-identical on every run
(ids are seeded per session, time is the demo's simulated clock)."""

from __future__ import annotations

import asyncio

from engine.store import MemoryStore
from sample_sessions.demo import FIXTURE_EPOCH, build_demo


def build_replay_store() -> MemoryStore:
    async def build() -> MemoryStore:
        store = MemoryStore()
        await build_demo(store, epoch=FIXTURE_EPOCH, long_iterations=3)
        return store

    return asyncio.run(build())
