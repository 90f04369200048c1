"""A heartbeat never stops in silence: an error that is not the store's own (a
driver's RuntimeError, an OSError) is logged, and the worker's heartbeat and a
turn's lease renewal keep beating -- a stopped worker heartbeat reads as a dead
worker, a stopped renewal lets the lease lapse under a running turn."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest

from engine.liveness import LeaseKeeper, acquire_invocation_lease
from engine.store import MemoryStore
from engine.worker import Worker
from tests.reliability import crash_app

ROUNDS = 2000
"""Polls of 5 ms at most while waiting for beats (a bound, not a timed assertion)."""


class Flaky(MemoryStore):
    """Fails the ``n``-th call of ``method`` with a RuntimeError (not a HitlError)."""

    def __init__(self, method: str, n: int) -> None:
        super().__init__(workers=True)
        self.calls = 0
        real = getattr(self, method)

        async def flaky(*args: Any, **kwargs: Any) -> Any:
            self.calls += 1
            if self.calls == n:
                raise RuntimeError("the driver's connection broke")
            return await real(*args, **kwargs)

        setattr(self, method, flaky)


async def wait_calls(store: Flaky, n: int) -> None:
    for _ in range(ROUNDS):
        if store.calls >= n:
            return
        await asyncio.sleep(0.005)


async def test_a_worker_heartbeat_survives_an_unexpected_error(caplog: pytest.LogCaptureFixture) -> None:
    store = Flaky("put_worker", 2)  # 1: the first beat, before the loop; 2: the loop's first
    worker = Worker(store, {crash_app.APP: crash_app.workflow}, heartbeat=0.01)
    caplog.set_level(logging.WARNING, logger="engine.worker")
    task = asyncio.ensure_future(worker.run())
    try:
        await wait_calls(store, 5)
    finally:
        worker.stop()
        await asyncio.wait_for(task, 30)
    assert store.calls >= 5, "the heartbeat stopped after the error"
    assert "worker heartbeat failed (RuntimeError: the driver's connection broke); beating on" in caplog.text


async def test_a_lease_renewal_survives_an_unexpected_error(caplog: pytest.LogCaptureFixture) -> None:
    store = Flaky("renew_lease", 1)
    await store.create_session("app", "u", "s")
    lease = await acquire_invocation_lease(store, "s", "i", wait=0)
    caplog.set_level(logging.WARNING, logger="engine.liveness")
    keeper = LeaseKeeper(store, lease, 0.03)
    keeper.start()
    try:
        await wait_calls(store, 3)
    finally:
        await keeper.stop()
    assert store.calls >= 3, "the renewal stopped after the error"
    assert keeper.lost is None
    assert "renewing the lease of invocation i failed (RuntimeError: the driver's connection broke)" in caplog.text
