"""A worker of the crash app runs a queued turn in-process, for the tests that
look at what a worker's turn reports (metrics, traces)."""

from __future__ import annotations

import asyncio
from typing import Any

from engine import handoff
from engine.worker import Worker
from tests.reliability import crash_app


async def worker_settles(store: Any, session_id: str, invocation_id: str) -> None:
    """Start a worker, follow the queued turn of ``session_id`` until it is
    ``settled`` (asserted), then stop the worker."""
    worker = Worker(store, {crash_app.APP: crash_app.workflow}, heartbeat=0.2)
    task = asyncio.ensure_future(worker.run())
    try:
        assert await handoff.follow(store, session_id, invocation_id, timeout=60) == "settled"
    finally:
        worker.stop()
        await task
