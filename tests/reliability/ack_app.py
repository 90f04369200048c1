"""A charge-then-ledger app for the in-doubt acknowledgement kill loop (issue 42.1),
and the worker process that serves it.

``approve (human) -> charge -> ledger -> notify``: the last three have a side
effect each, an append of ``<session> <node path>`` to ``$HITL_ACK_DIR/effects``
(one ``write``: durable across SIGKILL once it returned). Before it, each appends
the same line to ``$HITL_ACK_DIR/begins``.

``$HITL_ACK_DIR/plan.json`` (``{session: {node name: "begin"|"after"}}``) says
where the worker SIGKILLs itself, the first time only: ``begin`` -- the node
started (its start record is stored), no effect yet; ``after`` -- right after
the effect, the exact "effect done, no end record" window.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
from typing import Any

from pydantic import BaseModel

from engine import START, RequestInput, Workflow, node
from tests.reliability.crash_app import read_effects as count_lines  # the same file shape: a line per append

APP = "ack_ledger"
EFFECT_NODES = ("charge", "ledger", "notify")


class Approval(BaseModel):
    approved: bool


def _dir() -> str:
    return os.environ["HITL_ACK_DIR"]


def _append(name: str, line: str) -> None:
    fd = os.open(os.path.join(_dir(), name), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, f"{line}\n".encode())
    finally:
        os.close(fd)


def _plan(session_id: str) -> dict[str, str]:
    try:
        with open(os.path.join(_dir(), "plan.json"), encoding="utf-8") as fh:
            return dict(json.load(fh).get(session_id, {}))
    except FileNotFoundError:
        return {}


async def _step(ctx: Any, name: str) -> str:
    key = f"{ctx.invocation.session_id} {ctx.path}"
    where = _plan(ctx.invocation.session_id).get(name)
    _append("begins", key)
    if where == "begin" and count_lines(os.path.join(_dir(), "begins")).get(key) == 1:
        os.kill(os.getpid(), signal.SIGKILL)
    await asyncio.sleep(float(os.environ.get("HITL_ACK_DELAY") or 0.005))
    _append("effects", key)
    if where == "after" and count_lines(os.path.join(_dir(), "effects")).get(key) == 1:
        os.kill(os.getpid(), signal.SIGKILL)
    return f"{name} done"


@node
async def approve(node_input: str):
    yield RequestInput("charge it?", payload={"order": node_input}, response_schema=Approval, interrupt_id="approve")


@node
async def charge(ctx, node_input: Any) -> str:
    return await _step(ctx, "charge")


@node
async def ledger(ctx, node_input: Any) -> str:
    return await _step(ctx, "ledger")


@node
async def notify(ctx, node_input: Any) -> str:
    return await _step(ctx, "notify")


workflow = Workflow("ledger_flow", [(START, approve, charge, ledger, notify)])


# --------------------------------------------------------------------- worker process
def worker_child(spec: dict[str, Any]) -> None:
    """A Worker of this app on ``spec["db"]`` until SIGTERM (drains: exit 0) or SIGKILL."""
    os.environ["HITL_ACK_DIR"] = spec["dir"]
    asyncio.run(_worker_main(spec))


async def _worker_main(spec: dict[str, Any]) -> None:
    from engine.store import open_store
    from engine.worker import Worker

    store = await open_store(spec["db"], busy_timeout=30)
    try:
        worker = Worker(store, {APP: workflow}, concurrency=2, heartbeat=spec.get("heartbeat", 0.2))
        asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, worker.stop)
        await worker.run()
    finally:
        await store.close()
