"""``Workflow``: a node whose body is a graph of child nodes.

Edges are chains: ``(START, a, b)`` is START -> a -> b; a tuple fans out
``(a, (b, c))``; a dict routes ``(check, {"ok": done, "retry": a})`` on the
value the previous node set as its route; a ``JoinNode`` waits for all its
predecessors. A chain need not start at START, which is how loops and
cross-links are written.

A turn runs every branch it can; when nothing more can run, the workflow ends
WAITING with the union of its children's open interrupt ids (set directly on
its context -- no event of its own), or COMPLETED with the output of the last
terminal node (a node without successors) that completed.

A node has at most one active run (RUNNING, PENDING or WAITING) per run of
its workflow (DESIGN.md 3.12): an activation that arrives while one is active
queues, in order, and is dispatched -- a fresh run, with the next run id --
when the active run ends. A queue left when the turn ends WAITING is not
written anywhere: the completions that made it are (see below).

On re-execution after a resume (same run id) the scheduler is rebuilt from the
projection, not from replaying history: PENDING children are resumed with their
run id, prior output and answers; a completed child triggers each successor
that no run has started for since that completion (a run's start record names
the siblings whose completion dispatched it, ``after``) -- an auto-completion,
a crash in between, or an activation that was queued; WAITING children keep
waiting (and keep later activations queued).
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import AsyncIterator, Collection, Iterable
from typing import Any

from .context import Context, NodeFailed, NodeRunner
from .models import NodeStatus
from .nodes import START, BaseNode, JoinNode, as_node
from .projection import NodeRun


class _Any:
    def __repr__(self) -> str:
        return "ANY"


ANY_ROUTE: Any = _Any()


class Workflow(BaseNode):
    """A graph of nodes; itself a node (so workflows nest)."""

    rerun_on_resume = True
    is_container = True
    engine_body = True
    sees_children_answers = False

    def __init__(self, name: str, edges: Iterable[Any], **kwargs: Any) -> None:
        super().__init__(name, **kwargs)
        self.nodes: dict[str, BaseNode] = {}
        self.succ: dict[str, list[tuple[str, Any]]] = {START.name: []}
        self.preds: dict[str, list[str]] = {}
        for chain in edges:
            self._add_chain(chain)
        if not self.succ[START.name]:
            raise ValueError(f"workflow {name!r} has no edge from START")
        both = [n for n in self._unconditional_terminals() if self.nodes[n].always_outputs]
        if len(both) > 1:
            raise ValueError(
                f"workflow {name!r} has {len(both)} terminal nodes that always run and always have output: "
                f"{', '.join(both)}; a workflow has one output (DESIGN.md 3.9): join them (JoinNode) "
                "or route between them"
            )

    def _unconditional_terminals(self) -> list[str]:
        """Terminal nodes reached from START over unrouted edges only: the graph
        alone shows that each of them runs. With ``always_outputs`` (JoinNode, a
        parallel worker) it also shows their outputs would compete; for other
        nodes only the run can tell (``MultipleOutputsError``)."""
        seen: list[str] = []
        stack = [START.name]
        while stack:
            src = stack.pop()
            for dst, route in self.succ.get(src, []):
                if route is ANY_ROUTE and dst not in seen:
                    seen.append(dst)
                    stack.append(dst)
        return [n for n in self.nodes if n in seen and self.is_terminal(n)]

    # ------------------------------------------------------------ graph
    def _register(self, item: Any) -> list[str]:
        if item is START:
            return [START.name]
        if isinstance(item, (tuple, list)):
            return [n for sub in item for n in self._register(sub)]
        # As in ADK: a bare function (sync, async, generator) is wrapped as @node;
        # the same function in two chains is the same node.
        item = as_node(item, f"workflow {self.name!r}")
        known = self.nodes.get(item.name)
        if known is not None and known is not item:
            raise ValueError(f"workflow {self.name!r} has two different nodes named {item.name!r}")
        self.nodes[item.name] = item
        self.succ.setdefault(item.name, [])
        self.preds.setdefault(item.name, [])
        return [item.name]

    def _edge(self, src: str, dst: str, route: Any) -> None:
        if (dst, route) not in self.succ[src]:
            self.succ[src].append((dst, route))
        if src != START.name and src not in self.preds[dst]:
            self.preds[dst].append(src)

    def _add_chain(self, chain: Any) -> None:
        if not isinstance(chain, (tuple, list)):
            chain = (chain,)
        prev: list[str] = []
        for element in chain:
            if isinstance(element, dict):
                targets: list[str] = []
                for route, target in element.items():
                    names = self._register(target)
                    for p in prev:
                        for t in names:
                            self._edge(p, t, route)
                    targets.extend(names)
                prev = targets
            else:
                names = self._register(element)
                for p in prev:
                    for t in names:
                        self._edge(p, t, ANY_ROUTE)
                prev = names

    def is_terminal(self, name: str) -> bool:
        return not self.succ.get(name)

    # ------------------------------------------------------------ run
    async def run(self, ctx: Context, node_input: Any) -> AsyncIterator[Any]:
        sched = _Scheduler(self, ctx)
        await sched.execute(node_input)
        ctx.interrupt_ids = [*ctx.interrupt_ids, *sched.waiting_ids()]
        with_output = [n for n, out in sched.terminal_outputs.items() if out is not None]
        if len(with_output) > 1:
            raise MultipleOutputsError(ctx.path or self.name, with_output)
        if sched.has_terminal:
            yield sched.terminal_output


class MultipleOutputsError(Exception):
    """Two terminal nodes of one workflow completed with output (DESIGN.md 3.9)."""

    def __init__(self, path: str, names: list[str]) -> None:
        super().__init__(
            f"workflow {path} has one output, but terminal nodes {' and '.join(names)} both completed with "
            "output; join them (JoinNode) or route between them"
        )
        self.names = names


async def _first_end(tasks: Collection[asyncio.Task[Context]]) -> None:
    """Return when one of ``tasks`` has ended: ``asyncio.wait(FIRST_COMPLETED)``
    without its two coroutine frames and its done/pending sets (a workflow waits
    once per child run, on the path of every turn). Like it, a cancellation of
    the waiting task ends the wait and is not passed on to ``tasks`` (a collection,
    not an iterator: it is walked twice, to add the callbacks and to remove them)."""
    waiter = asyncio.get_running_loop().create_future()

    def ended(_task: asyncio.Task[Context]) -> None:
        if not waiter.done():
            waiter.set_result(None)

    for task in tasks:
        task.add_done_callback(ended)
    try:
        await waiter
    finally:
        for task in tasks:
            task.remove_done_callback(ended)


def _end_order(task: asyncio.Task[Context]) -> int:
    return 0 if task.cancelled() or task.exception() is not None else task.result().end_order


class _Scheduler:
    """One turn of a Workflow's graph (in memory; rebuilt from the projection)."""

    def __init__(self, wf: Workflow, ctx: Context) -> None:
        self.wf = wf
        self.ctx = ctx
        self.tasks: dict[asyncio.Task[Context], str] = {}
        self.join_inputs: dict[str, dict[str, Any]] = {}
        self.waiting: dict[str, list[str]] = {}
        self.active: set[str] = set()
        """Children with an active run (running, resumed or waiting): DESIGN.md 3.12."""
        self.queued: dict[str, deque[tuple[Any, list[str]]]] = {}
        """Activations (input, after) of an active child, dispatched in order as its runs end."""
        self.has_terminal = False
        self.terminal_output: Any = None
        self.terminal_outputs: dict[str, Any] = {}
        """Terminal node name -> its latest output (more than one non-None: an error)."""

    def waiting_ids(self) -> list[str]:
        return [i for ids in self.waiting.values() for i in ids]

    async def execute(self, node_input: Any) -> None:
        proj = self.ctx.projection
        me = proj.get(self.ctx.invocation_id, self.ctx.path or "")
        if me is None or not me.children:
            self._complete(START.name, node_input, None)
        else:
            self._reconstruct(me, node_input)
        failure: NodeFailed | None = None
        while self.tasks:
            try:
                await _first_end(self.tasks)
            except asyncio.CancelledError:
                # Cancelled from outside: the children go too (the wait does not pass
                # the cancellation on), and end before this run does.
                await self.ctx.cancel_children(list(self.tasks))
                raise
            done = [task for task in self.tasks if task.done()]
            for task in sorted(done, key=_end_order):  # as their ends are logged: the order activations queue in
                name = self.tasks.pop(task)
                exc = task.exception()
                if exc is not None or not task.result().unresolved_ids:
                    self.active.discard(name)
                if exc is not None:
                    if failure is None:
                        failure = exc if isinstance(exc, NodeFailed) else NodeFailed(name, type(exc).__name__, str(exc), exc)
                    continue
                child = task.result()
                ids = child.unresolved_ids
                if ids:
                    self.waiting[name] = ids
                else:
                    self.waiting.pop(name, None)
                    self._next_queued(name)
                    self._complete(name, child.output, child.route)
            if failure is not None:
                await self.ctx.cancel_children(list(self.tasks))
                raise failure

    def _reconstruct(self, me: NodeRun, node_input: Any) -> None:
        proj = self.ctx.projection
        inv = self.ctx.invocation_id
        latest = {name: proj.latest_run(inv, self.ctx.path, name) for name in self.wf.nodes}
        # (source, completed at, output, route) for every completion that may not
        # have triggered its successors yet.
        sources: list[tuple[str, int, Any, Any]] = [(START.name, me.started_pos, node_input, None)]
        terminals: list[tuple[int, str, Any]] = []
        for name, run in latest.items():
            if run is None:
                continue
            if run.status is NodeStatus.PENDING:
                self._dispatch(name, None, resume=run)
            elif run.status is NodeStatus.WAITING:
                self.waiting[name] = proj.pending_ids(inv, run.path)
                self.active.add(name)
            elif run.status is NodeStatus.COMPLETED and run.completed_pos is not None:
                sources.append((name, run.completed_pos, run.output, run.route))
                if self.wf.is_terminal(name):
                    terminals.append((run.completed_pos, name, run.output))
        for _, name, output in sorted(terminals):
            self._terminal(name, output)
        for src, pos, output, route in sorted(sources, key=lambda s: s[1]):
            for target, r in self.wf.succ[src]:
                if r is not ANY_ROUTE and r != route:
                    continue
                if self._consumed(latest, target, src, pos, me.started_pos):
                    continue  # a run was dispatched by this completion already
                self._trigger(target, src, output)

    @staticmethod
    def _consumed(latest: dict[str, NodeRun | None], target: str, src: str, pos: int, start_pos: int) -> bool:
        """Whether ``src``'s completion at ``pos`` has dispatched a run of ``target``
        already: the target's latest run started after it, and was dispatched by it
        or by a completion logged no earlier (activations queue in log order, 3.12;
        only the latest runs are known, earlier ones may be compacted away)."""
        run = latest[target]
        if run is None or run.started_pos <= pos:
            return False
        if run.after is None or src in run.after:
            return True
        by = start_pos  # after == []: START dispatched it
        for name in run.after:
            pred = latest.get(name)
            done_at = pred.completed_pos if pred is not None else None
            if done_at is None or done_at > run.started_pos:
                return True  # that completion's run was followed by another: unknown, as before queues
            by = max(by, done_at)
        return by >= pos

    def _complete(self, name: str, output: Any, route: Any) -> None:
        if name != START.name and self.wf.is_terminal(name):
            self._terminal(name, output)
        for target, r in self.wf.succ[name]:
            if r is ANY_ROUTE or r == route:
                self._trigger(target, name, output)

    def _terminal(self, name: str, output: Any) -> None:
        self.terminal_outputs[name] = output
        if output is not None or not self.has_terminal:
            self.has_terminal, self.terminal_output = True, output

    def _trigger(self, target: str, source: str, value: Any) -> None:
        node = self.wf.nodes[target]
        if isinstance(node, JoinNode):
            got = self.join_inputs.setdefault(target, {})
            got[source] = value
            if not set(self.wf.preds[target]) <= set(got):
                return
            value = {p: got[p] for p in self.wf.preds[target]}
            del self.join_inputs[target]
            after = list(value)
        else:
            after = [] if source == START.name else [source]
        self._dispatch(target, value, after=after)

    def _next_queued(self, name: str) -> None:
        """``name``'s active run ended: dispatch its next queued activation."""
        queue = self.queued.get(name)
        if queue:
            node_input, after = queue.popleft()
            self._dispatch(name, node_input, after=after)

    def _dispatch(
        self, name: str, node_input: Any, resume: NodeRun | None = None, *, after: list[str] | None = None
    ) -> None:
        if name in self.active:  # one active run per node: this activation waits its turn
            assert resume is None
            self.queued.setdefault(name, deque()).append((node_input, after or []))
            return
        self.active.add(name)
        node = self.wf.nodes[name]
        if resume is not None:
            runner = NodeRunner(
                node,
                self.ctx,
                resume.run_id,
                prior_output=resume.output,
                prior_interrupt_ids=resume.own_pending,
            )
            coro = runner.run(resume.input, resume_inputs=resume.resolved)
        else:
            run_id = self.ctx.invocation.reserve_run_id(self.ctx.path, name)
            coro = NodeRunner(node, self.ctx, run_id, after=after).run(node_input)
        self.tasks[asyncio.ensure_future(coro)] = name
