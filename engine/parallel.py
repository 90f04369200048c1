"""``ParallelWorker``: map one child node over the items of the input (DESIGN.md 3.10).

Each item is a dynamic child run under the worker's path
(``wf@1/review@1/doc@3``), keyed by its index in the input, so on resume the
worker behaves like any orchestration node (3.4): a completed item returns its
recorded output without running, an answered item completes or re-executes by
its own ``rerun_on_resume``, an item still waiting does not run. Items that
interrupt wait independently while the others complete; the worker is WAITING
on the union of its items' ids until every item is done, then completes with
the items' outputs in input order. ``max_concurrency`` bounds how many items
are started and not finished (None: all) -- waiting ones included: an item that
interrupted keeps its slot until it completes, as in ADK. A failed item cancels the items still running and
fails the worker, like a failed child in a Workflow: the failure raised is the
lowest failed item's, with every item's failure in item order on its
``failures`` (``WorkflowFailed.failures``); an item that ignores its
cancellation is abandoned after a grace period, recorded CANCELLED.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable, Iterable
from typing import Any

from .context import Context, NodeFailed, NodeInterrupted
from .nodes import BaseNode, FunctionNode


class ParallelWorker(BaseNode):
    """Runs ``child`` once per item of its input; output: the items' outputs in order."""

    rerun_on_resume = True
    is_container = True
    always_outputs = True
    engine_body = True

    def __init__(
        self,
        child: BaseNode | Callable[..., Any],
        name: str | None = None,
        *,
        max_concurrency: int | None = None,
        **kwargs: Any,
    ) -> None:
        if kwargs.get("rerun_on_resume") is False:
            raise ValueError("a parallel worker re-executes on resume (rerun_on_resume=True); it cannot be False")
        kwargs.pop("rerun_on_resume", None)
        self.child = child if isinstance(child, BaseNode) else FunctionNode(child)
        super().__init__(name or f"{self.child.name}_worker", **kwargs)
        if max_concurrency is not None and max_concurrency < 1:
            raise ValueError(f"max_concurrency must be at least 1, not {max_concurrency}")
        self.max_concurrency = max_concurrency

    async def run(self, ctx: Context, node_input: Any) -> AsyncIterator[Any]:
        items = worker_items(node_input, from_start=_gets_the_message(ctx))
        limit = self.max_concurrency or max(len(items), 1)
        started: list[asyncio.Task[Any]] = []
        """One task per item started, in item order (items start in that order)."""
        in_flight: set[asyncio.Task[Any]] = set()
        held = 0
        """Items waiting on a human: each keeps its slot (DESIGN.md 3.10)."""

        def fill() -> None:
            while len(started) < len(items) and len(in_flight) + held < limit:
                i = len(started)
                task = asyncio.ensure_future(ctx.run_node(self.child, items[i], key=str(i)))
                started.append(task)
                in_flight.add(task)

        try:
            fill()
            while in_flight:
                done, _ = await asyncio.wait(in_flight, return_when=asyncio.FIRST_COMPLETED)
                in_flight.difference_update(done)
                if any(_failure(t) for t in done):
                    break
                held += sum(1 for t in done if isinstance(t.exception(), NodeInterrupted))
                fill()
        finally:
            # Cancelled from outside, or an item failed: the others stop and record it
            # (one that ignores its cancellation is abandoned after a grace period).
            await ctx.cancel_children([t for t in started if not t.done()])
        failed = [e for t in started if t.done() and _failure(t) and (e := t.exception()) is not None]
        if failed:
            # Every item that failed in this turn, in item order; the lowest index's is raised.
            first = failed[0]
            if isinstance(first, NodeFailed):
                first.failures = [f for f in failed if isinstance(f, NodeFailed)]
            raise first
        waiting = [e for t in started if isinstance(e := t.exception(), NodeInterrupted)]
        if waiting:
            # The items' ids are on ctx.interrupt_ids already: the worker ends WAITING
            # (items not started yet wait for a slot a waiting item holds).
            raise NodeInterrupted([i for exc in waiting for i in exc.ids])
        yield [t.result() for t in started]


def _gets_the_message(ctx: Context) -> bool:
    """The worker's input is the start message's text: it is the root, or directly
    after START in the root workflow (a nested workflow's START carries its input)."""
    parent = ctx.parent
    if parent is None or parent.node is None:
        return True
    return ctx.after == [] and parent.parent is not None and parent.parent.node is None


def worker_items(node_input: Any, *, from_start: bool = False) -> list[Any]:
    """The items a parallel worker maps over (DESIGN.md 3.10): a list, or any other
    iterable but a string, bytes or a dict, is the items; anything else is one item
    (a dict is one item, not its keys). ``from_start``: the input is the start
    message's text, whose JSON array is the items (other text is one item)."""
    if isinstance(node_input, str) and from_start:
        try:
            parsed = json.loads(node_input)
        except ValueError:
            parsed = None
        if isinstance(parsed, list):
            return parsed
    if isinstance(node_input, (str, bytes, bytearray, dict)) or not isinstance(node_input, Iterable):
        return [node_input]
    return list(node_input)


def _failure(task: asyncio.Task[Any]) -> bool:
    if task.cancelled():
        return False
    exc = task.exception()
    return exc is not None and not isinstance(exc, NodeInterrupted)
