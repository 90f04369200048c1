"""A refund-like app whose side effects are appends to a file, so that a
re-execution is detectable from outside the store.

``fetch -> (finance, risk) -> approvals (join) -> settle [pay -> notify] -> ship [label#1, label#2] -> archive``

* ``finance`` and ``risk`` are leaves asking for an :class:`Approval`;
* ``settle`` is a nested Workflow whose ``pay`` and ``notify`` have effects;
* ``ship`` is an orchestration node with two dynamic ``label`` children that
  have effects (``ctx.run_node``);
* ``archive`` has an effect and returns ``None`` (its completion record is what
  keeps it from running again).

Every effect appends ``<node path>\\n`` to ``$HITL_CRASH_EFFECTS`` with one
``write`` (durable across SIGKILL once it returned). ``$HITL_CRASH_KILL_AT``
names an effect (node name) after which the process SIGKILLs itself -- the
exact "side effect done, no end record" window; ``$HITL_CRASH_PAUSE`` names one
after which the node sleeps for a minute (for tests that stop a turn from
outside while it is in doubt), with ``$HITL_CRASH_THREAD`` set after starting a
thread of its own.
"""

from __future__ import annotations

import asyncio
import os
import signal
from typing import Any

from pydantic import BaseModel

from engine import START, JoinNode, RequestInput, Workflow, node

APP = "crash_refund"
EFFECT_NODES = ("pay", "notify", "label", "archive")


class Approval(BaseModel):
    approved: bool
    note: str = ""


def effect(ctx: Any, name: str) -> None:
    path = os.environ.get("HITL_CRASH_EFFECTS")
    if path:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, f"{ctx.path}\n".encode())
        finally:
            os.close(fd)
    if os.environ.get("HITL_CRASH_KILL_AT") == name:
        os.kill(os.getpid(), signal.SIGKILL)


def delay() -> float:
    """Seconds ``pay`` and ``label`` take (``$HITL_CRASH_DELAY``): the worker tests
    stretch turns so that kills land inside them."""
    return float(os.environ.get("HITL_CRASH_DELAY") or 0.001)


async def maybe_pause(name: str) -> None:
    if os.environ.get("HITL_CRASH_PAUSE") == name:
        if os.environ.get("HITL_CRASH_THREAD"):
            # App code with a thread of its own (a client library's, a to_thread): a
            # Ctrl-C the kernel hands to that thread must still stop the turn.
            import threading

            threading.Thread(target=threading.Event().wait, name="app-thread", daemon=True).start()
        await asyncio.sleep(60)


def read_effects(path: str | os.PathLike[str]) -> dict[str, int]:
    """Node path -> how many times its effect happened."""
    counts: dict[str, int] = {}
    try:
        with open(path, encoding="utf-8") as fh:
            for line in fh:
                if line.endswith("\n"):
                    counts[line[:-1]] = counts.get(line[:-1], 0) + 1
    except FileNotFoundError:
        pass
    return counts


@node
async def fetch(node_input: str) -> dict[str, Any]:
    return {"order": node_input, "amount": 42}


@node
async def finance(node_input: dict[str, Any]):
    yield RequestInput("finance ok?", payload=node_input, response_schema=Approval, interrupt_id="finance")


@node
async def risk(node_input: dict[str, Any]):
    yield RequestInput("risk ok?", payload=node_input, response_schema=Approval, interrupt_id="risk")


approvals = JoinNode("approvals")


@node
async def pay(ctx, node_input: dict[str, Any]) -> dict[str, Any]:
    effect(ctx, "pay")
    await maybe_pause("pay")
    await asyncio.sleep(delay())
    return {"paid": node_input["fetch"]["amount"]}


@node
async def notify(ctx, node_input: dict[str, Any]) -> str:
    effect(ctx, "notify")
    return "notified"


settle = Workflow("settle", [(START, pay, notify)])


@node
async def label(ctx, node_input: int) -> str:
    effect(ctx, "label")
    await asyncio.sleep(delay())
    return f"label-{node_input}"


@node(rerun_on_resume=True)
async def ship(ctx, node_input: Any) -> list[str]:
    first = await ctx.run_node(label, 1)
    second = await ctx.run_node(label, 2)
    return [first, second]


@node
async def archive(ctx, node_input: Any) -> None:
    effect(ctx, "archive")


workflow = Workflow(
    "refund",
    [(START, fetch, (finance, risk), approvals, settle, ship, archive), (fetch, approvals)],
)
