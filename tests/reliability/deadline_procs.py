"""Worker processes for the deadline kill test: a :class:`~engine.worker.Worker` of
the one-node deadline app whose deadline sweep runs on a clock ``offset`` seconds
ahead (every deadline has passed for it), until SIGTERM or SIGKILL."""

from __future__ import annotations

import asyncio
import multiprocessing
import os
import signal
import time
from typing import Any

from tests.reliability.workers import PRELOAD


def context() -> multiprocessing.context.BaseContext:
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload([*PRELOAD, "engine.worker", "engine.deadline_sweep", "tests.engine.deadline_app",
                                "tests.reliability.deadline_procs"])
    return ctx


def worker_child(spec: dict[str, Any]) -> None:
    asyncio.run(_main(spec))


async def _main(spec: dict[str, Any]) -> None:
    from engine.deadline_sweep import DeadlineSweep
    from engine.store import open_store
    from engine.worker import Worker
    from tests.engine import deadline_app as app

    store = await open_store(spec["db"], busy_timeout=30)
    offset = float(spec["offset"])
    try:
        sweep = DeadlineSweep(store, clock=lambda: time.time() + offset, claim_ttl=float(spec["claim_ttl"]),
                              batch=int(spec.get("batch", 50)))
        worker = Worker(store, {app.APP: app.single}, concurrency=4, heartbeat=float(spec["heartbeat"]),
                        deadlines=sweep)
        asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, worker.stop)
        with open(spec["ready"], "a", encoding="utf-8") as fh:
            fh.write(f"{os.getpid()}\n")
        await worker.run()
    finally:
        await store.close()
