"""Child processes for the worker tests (issue 18), started through a
forkserver that preloads the engine (see :mod:`tests.reliability.workers`):

* :func:`worker_child` -- a :class:`~engine.worker.Worker` of the crash app
  until SIGTERM (which drains it: exit 0), or until it is SIGKILLed;
* :func:`answer_child` -- answers a list of sessions through
  :func:`engine.handoff.queue_answer` (no workflow code used) and reports each.
"""

from __future__ import annotations

import asyncio
import json
import multiprocessing
import os
import signal
from typing import Any

from tests.reliability.workers import PRELOAD

APPROVE = {"finance": {"approved": True}, "risk": {"approved": True}}
ONE_NODE_APP = "one_node"
"""The app of ``spec["app"] == "one"``: ``prep -> ask -> after`` (an answer's turn runs one node)."""


def worker_apps(spec: dict[str, Any]) -> dict[str, Any]:
    """The apps a worker child serves: the crash app, or the one-node app (``spec["app"]``)."""
    if spec.get("app") == "one":
        from tests.engine.test_turn_cost import SIMPLE

        return {ONE_NODE_APP: SIMPLE}
    from tests.reliability import crash_app

    return {crash_app.APP: crash_app.workflow}


def context() -> multiprocessing.context.BaseContext:
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload([*PRELOAD, "engine.worker", "engine.handoff", "tests.reliability.worker_procs"])
    return ctx


def worker_child(spec: dict[str, Any]) -> None:
    os.environ["HITL_CRASH_EFFECTS"] = spec["effects"]
    os.environ["HITL_CRASH_DELAY"] = str(spec.get("delay", 0.001))
    os.environ.pop("HITL_CRASH_KILL_AT", None)
    asyncio.run(_worker_main(spec))


async def _worker_main(spec: dict[str, Any]) -> None:
    from engine.store import open_store
    from engine.worker import Worker
    store = await open_store(spec["db"], busy_timeout=30)
    try:
        worker = Worker(
            store, worker_apps(spec), concurrency=spec.get("concurrency", 2),
            heartbeat=spec.get("heartbeat", 0.5), drain_timeout=spec.get("drain_timeout", 30.0),
        )
        loop = asyncio.get_running_loop()
        loop.add_signal_handler(signal.SIGTERM, worker.stop)
        ready = spec.get("ready")
        if ready:
            with open(ready, "a", encoding="utf-8") as fh:
                fh.write(f"{os.getpid()}\n")
        if spec.get("go"):
            _hold_claims(store, spec["go"])
        await worker.run()
    finally:
        await store.close()


def _hold_claims(store: Any, go: str) -> None:
    """A benchmark's backlog: the worker starts (listens, beats, sweeps), but its
    first claim waits until the file ``go`` exists -- every worker idle and
    listening when the queued answers are let go at once."""
    for name in ("claim_next_turn", "claim_and_read"):  # whichever the worker claims with
        claim = getattr(store, name, None)
        if claim is not None:
            setattr(store, name, _held(store, name, claim, go))


def _held(store: Any, name: str, claim: Any, go: str) -> Any:
    async def held(*a: Any, **kw: Any) -> Any:
        while not os.path.exists(go):
            await asyncio.sleep(0.005)
        setattr(store, name, claim)
        return await claim(*a, **kw)

    return held


def answer_child(spec: dict[str, Any]) -> None:
    asyncio.run(_answer_main(spec))


async def _answer_main(spec: dict[str, Any]) -> None:
    from engine import handoff
    from engine.store import open_store

    store = await open_store(spec["db"], busy_timeout=30)
    report = []
    try:
        for sid in spec["sessions"]:
            for _ in range(200):  # busy: another answerer's write of the same session; try again
                done = await handoff.queue_answer(store, sid, APPROVE, operator=f"answerer-{os.getpid()}")
                if done.error is None or type(done.error).__name__ != "InvocationBusyError":
                    break
                await asyncio.sleep(0.01)
            report.append({"session": sid, "error": None if done.error is None else type(done.error).__name__,
                           "written": len(done.written)})
    finally:
        await store.close()
    with open(spec["report"], "w", encoding="utf-8") as fh:
        json.dump(report, fh)
