"""Run-time context of a node run, and ``NodeRunner`` which executes one run.

``InvocationContext`` (:mod:`engine.invocation`, re-exported here) is shared by
every node of one turn: it persists events, buffered to save commits.
``Context`` is per node run: path, run id, resume inputs, interrupt ids,
output, route and a state view that records deltas.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator, MutableMapping
from typing import Any

import pydantic_core

from . import telemetry
from .errors import HitlError, OutputAlreadySetError, OutputNotJSONError, StoreError
from .invocation import InvocationContext as InvocationContext  # re-exported: the Runner builds one
from .models import Event, NodeInfo, NodeStatus, join_path
from .nodes import BaseNode, RequestInput, as_node
from .projection import Projection

CANCEL_GRACE = 5.0
"""Seconds a cancelled child may take to stop (as ADK). One that ignores its
cancellation is then abandoned: its runs are recorded CANCELLED and whatever it
does later is not written (:meth:`Context.cancel_children`), so the turn ends."""


class NodeInterrupted(Exception):
    """Raised by ``ctx.run_node`` when the child ends WAITING: the caller cannot
    use its output yet. The ids are already on the caller's ``interrupt_ids``;
    ``NodeRunner`` treats this as a normal WAITING end, not a failure."""

    def __init__(self, ids: list[str]) -> None:
        super().__init__(f"waiting for {', '.join(ids)}")
        self.ids = ids


class NodeFailed(Exception):
    """A node failed after its retries; its FAILED end record is persisted."""

    def __init__(
        self, path: str, error_code: str, error_message: str, original: BaseException | None = None
    ) -> None:
        super().__init__(f"{path}: {error_code}: {error_message}")
        self.path = path
        self.error_code = error_code
        self.error_message = error_message
        self.original = original
        """The node body's own exception (what ``WorkflowFailed.exception`` exposes)."""
        self.failures: list[NodeFailed] = []
        """A parallel worker's failed items in item order, this one first (else empty)."""


class NodeTimeoutError(TimeoutError):
    """A node body ran longer than its ``timeout``; names the node and the limit."""

    status = "TimeoutError"
    """The error code stays the builtin's name, as before (``_error_code`` reads it)."""

    def __init__(self, path: str, limit: float) -> None:
        super().__init__(f"node {path} did not finish within its timeout of {limit:g}s")
        self.path = path
        self.limit = limit


class State(MutableMapping[str, Any]):
    """Session state seen by a node; writes are recorded as a delta that rides on
    the node's next persisted event. ``temp:`` keys are never stored."""

    def __init__(self, base: dict[str, Any]) -> None:
        self._base = base
        self._delta: dict[str, Any] = {}

    def __getitem__(self, key: str) -> Any:
        if key in self._delta:
            return self._delta[key]
        return self._base[key]

    def __setitem__(self, key: str, value: Any) -> None:
        self._delta[key] = value

    def __delitem__(self, key: str) -> None:
        raise TypeError("session state keys cannot be deleted; set them to None")

    def __iter__(self) -> Iterator[str]:
        return iter({**self._base, **self._delta})

    def __len__(self) -> int:
        return len({**self._base, **self._delta})

    def take_delta(self) -> dict[str, Any] | None:
        """The pending delta (``temp:`` keys applied in memory only), then cleared."""
        if not self._delta:
            return None
        delta, self._delta = self._delta, {}
        self._base.update(delta)
        stored = {k: v for k, v in delta.items() if not k.startswith("temp:")}
        return stored or None


class Context:
    """The context of one node run."""

    def __init__(
        self,
        invocation: InvocationContext,
        node: BaseNode | None,
        path: str | None,
        run_id: str | None,
        parent: Context | None,
        *,
        resume_inputs: dict[str, Any] | None = None,
        interrupt_ids: list[str] | None = None,
        output: Any = None,
    ) -> None:
        self.invocation = invocation
        self.node = node
        self.path = path
        """``wf@1/a@2``; None for the invocation's root context."""
        self.run_id = run_id
        self.parent = parent
        self.resume_inputs: dict[str, Any] = dict(resume_inputs or {})
        """Answers to this run's interrupt ids received so far (unwrapped)."""
        self.interrupt_ids: list[str] = list(interrupt_ids or [])
        """Ids this run waits on: its own, or (containers) its children's."""
        self._raised: set[str] = set()
        """Ids this execution raised itself (a second raise of one in the same execution is dropped)."""
        self._output = output
        self._output_set = False
        """This execution produced its output (a second one is an error, DESIGN.md 3.5)."""
        self.route: Any = None
        self.state = State(invocation.state)
        self.attempt_count = 0
        self.after: list[str] | None = None
        """The sibling names whose completion dispatched this run (``[]``: START; None:
        not a graph child), from its first start record when it is resumed."""
        self.end_order = 0
        """The ticket of the run's end record (:meth:`InvocationContext.persist`):
        sibling runs that ended together are handled in the order their ends are logged."""
        self._call_counts: dict[str, int] = {}
        self._child_tasks: list[asyncio.Task[Any]] = []

    @property
    def output(self) -> Any:
        """The run's output; pre-populated with the prior output on resume. Set
        once per execution (yielding a value sets it): a second time fails the node."""
        return self._output

    @output.setter
    def output(self, value: Any) -> None:
        self._set_output(value, "set ctx.output after it had an output")

    def _set_output(self, value: Any, how: str) -> None:
        if self._output_set:
            raise OutputAlreadySetError(self.path or "the root", how)
        if value is not None:
            try:  # checked here, where it fails the node, not when its end record is written
                pydantic_core.to_json(value)
            except (pydantic_core.PydanticSerializationError, ValueError, TypeError) as exc:
                raise OutputNotJSONError(self.path or "the root", str(exc).splitlines()[0]) from None
        self._output, self._output_set = value, value is not None  # as ADK: None is no output yet

    def _reset_output(self, prior: Any) -> None:
        """A new execution (attempt) starts from the prior output, not yet replaced."""
        self._output, self._output_set = prior, False

    @classmethod
    def root(cls, invocation: InvocationContext) -> Context:
        return cls(invocation, None, None, None, None)

    @property
    def invocation_id(self) -> str:
        return self.invocation.invocation_id

    @property
    def projection(self) -> Projection:
        return self.invocation.projection

    @property
    def unresolved_ids(self) -> list[str]:
        """Ids this run still waits on. The projection decides (an id answered
        earlier and raised again is open again, DESIGN.md 3.4); an id it does not
        know yet counts as unresolved unless this run holds an answer for it."""
        proj, inv = self.projection, self.invocation_id
        out = []
        for i in dict.fromkeys(self.interrupt_ids):
            itr = proj.interrupts.get((inv, i))
            if (itr.open if itr is not None else i not in self.resume_inputs) or self.invocation.held_raise(i):
                out.append(i)
        return out

    async def run_node(
        self, node: BaseNode | Callable[..., Any], node_input: Any = None, *, key: str | None = None
    ) -> Any:
        """Run a dynamic child under this node and return its output. ``node`` is a
        node or a plain function (sync, async, generator), wrapped as ``@node`` would.

        A child is identified by its name and call order (or ``key``). When this
        node re-executes on resume: a completed child returns its recorded output
        without running; an answered child completes or re-executes by its own
        ``rerun_on_resume``; an unanswered child does not run. If the child ends
        WAITING, its ids join this node's and :class:`NodeInterrupted` is raised.
        """
        if self.node is None or not self.node.rerun_on_resume:
            name = self.node.name if self.node else "the root"
            raise HitlError(
                f"{name} calls ctx.run_node but has rerun_on_resume=False; "
                "orchestration nodes must be declared with rerun_on_resume=True"
            )
        node = as_node(node, f"{self.path or 'the root'}: ctx.run_node")
        n = self._call_counts.get(node.name, 0) + 1
        self._call_counts[node.name] = n
        call_key = key if key is not None else f"{node.name}#{n}"
        proj = self.projection
        inv = self.invocation_id
        existing = next(
            (c for c in proj.children(inv, self.path or "") if c.call_key == call_key and c.name == node.name),
            None,
        )
        if existing is not None and existing.status is NodeStatus.COMPLETED:
            return existing.output
        if existing is not None and existing.status is not NodeStatus.PENDING:
            ids = proj.pending_ids(inv, existing.path)
            self.interrupt_ids.extend(ids)
            raise NodeInterrupted(ids)
        if existing is not None:
            runner = NodeRunner(
                node,
                self,
                existing.run_id,
                prior_output=existing.output,
                prior_interrupt_ids=existing.own_pending,
            )
            coro = runner.run(existing.input, resume_inputs=existing.resolved)
        else:
            run_id = self.invocation.reserve_run_id(self.path, node.name)
            runner = NodeRunner(node, self, run_id, call_key=call_key)
            coro = runner.run(node_input)

        async def child() -> Context:
            child_ctx = await coro
            for i in child_ctx.unresolved_ids:
                self.interrupt_ids.append(i)
                self.resume_inputs.pop(i, None)  # the child asks again: its old answer no longer stands
            return child_ctx

        task = asyncio.ensure_future(child())
        self._child_tasks.append(task)
        child_ctx = await task
        if child_ctx.unresolved_ids:
            raise NodeInterrupted(child_ctx.unresolved_ids)
        return child_ctx.output

    async def _settle_children(self) -> None:
        """Wait for dynamic children still running (e.g. after a gather raised)."""
        pending = [t for t in self._child_tasks if not t.done() and t not in self.invocation.abandoned]
        if pending:
            await asyncio.gather(*pending, return_exceptions=True)

    async def cancel_children(self, tasks: list[asyncio.Future[Any]]) -> None:
        """Cancel ``tasks`` (running this run's children) and wait until they end --
        at most :data:`CANCEL_GRACE` seconds: the runs under this one that are still
        going then are abandoned, recorded CANCELLED (DESIGN.md 3.10), so that a
        child that ignores its cancellation cannot hold the turn forever."""
        for task in tasks:
            task.cancel()
        if not tasks:
            return
        done, pending = await asyncio.wait(tasks, timeout=CANCEL_GRACE)
        for task in done:
            if not task.cancelled():
                task.exception()  # retrieved: the caller reads what it needs from the task
        if not pending:
            return
        inv = self.invocation
        for task in pending:
            task.add_done_callback(_retrieve)  # if it ever ends, nobody is waiting to read how
        inv.abandoned.update(pending)
        inv.abandoned.update(t for t in self._child_tasks if not t.done())
        prefix = f"{self.path}/" if self.path else ""
        for path in sorted((p for p in inv.running if p.startswith(prefix)), key=lambda p: -p.count("/")):
            runner, ctx = inv.running[path]
            await runner.abandon(ctx)


def _retrieve(task: asyncio.Future[Any]) -> None:
    if not task.cancelled():
        task.exception()


def _error_message(exc: BaseException) -> str:
    """``str(exc)`` (the class name when empty); an exception that cannot be
    printed is recorded as such rather than failing its own recording."""
    try:
        return str(exc) or type(exc).__name__
    except Exception as err:
        return f"{type(exc).__name__} (its message could not be read: {type(err).__name__})"


def _error_code(exc: BaseException) -> str:
    status = getattr(exc, "status", None)
    return status if isinstance(status, str) else type(exc).__name__


class NodeRunner:
    """Executes one run of one node (DESIGN.md 3.4).

    ``run_id`` is the run being started or resumed; on resume pass the cached
    ``prior_output`` and the ``prior_interrupt_ids`` still open, then
    ``await runner.run(node_input=..., resume_inputs={id: answer})``. Returns the
    child context (output, route, interrupt ids). Persists a start record, every
    event the body yields, an error event per failed attempt, and an end record.
    """

    def __init__(
        self,
        node: BaseNode,
        parent_ctx: Context,
        run_id: str,
        prior_output: Any = None,
        prior_interrupt_ids: list[str] | None = None,
        *,
        call_key: str | None = None,
        after: list[str] | None = None,
    ) -> None:
        self.node = node
        self.parent_ctx = parent_ctx
        self.run_id = run_id
        self.prior_output = prior_output
        self.prior_interrupt_ids = list(prior_interrupt_ids or [])
        self.call_key = call_key
        self.after = after
        """The sibling names whose completion dispatched this run (its start record's ``after``)."""
        self.path = join_path(parent_ctx.path, node.name, run_id)

    def _info(self, **kw: Any) -> NodeInfo:
        return NodeInfo(**self._info_fields(**kw))

    def _info_fields(self, **kw: Any) -> dict[str, Any]:
        """The fields of this run's ``NodeInfo``, for an ``Event`` to validate as its
        ``node_info`` (one validation: a ``NodeInfo`` built first costs a second
        one; the fields set, hence the stored bytes, are the same)."""
        return {"path": self.path, "run_id": self.run_id, **kw}

    _abandoned = False
    """The run ignored its cancellation and was recorded CANCELLED: nothing more of it is written."""

    async def abandon(self, ctx: Context) -> None:
        """Record this run CANCELLED now, while its body may still be going (it ignored
        its cancellation); what it does afterwards is not written."""
        if self._abandoned:
            return
        await self._end(ctx, NodeStatus.CANCELLED)
        self._abandoned = True

    async def _persist(self, ctx: Context, event: Event, *, hold: bool = False, body: bool = False) -> int:
        if self._abandoned:
            return 0
        event.invocation_id = ctx.invocation_id
        event.author = self.node.name
        event.node_info = event.node_info or self._info()
        delta = ctx.state.take_delta()
        if delta:
            event.state_delta = {**(event.state_delta or {}), **delta}
        return await ctx.invocation.persist(event, hold=hold, body=body)

    def _body_started(self, inv: InvocationContext) -> None:
        self._user_body = not self.node.engine_body
        inv.user_bodies += self._user_body

    def _body_ended(self, inv: InvocationContext) -> None:
        inv.user_bodies -= self._user_body
        self._user_body = False

    _user_body = False
    """This run's body runs user code and is counted in ``InvocationContext.user_bodies``."""

    def start_record(self, node_input: Any, *, resumed: bool) -> Event:
        """The run's start record (``input`` only on its first start)."""
        inv = self.parent_ctx.invocation
        return Event(
            invocation_id=inv.invocation_id,
            author=self.node.name,
            node_info=self._info_fields(  # type: ignore[arg-type]  # validated into a NodeInfo
                lifecycle="start",
                rerun_on_resume=self.node.rerun_on_resume,
                is_container=self.node.is_container or None,
                input=None if resumed else node_input,
                call_key=self.call_key,
                after=None if resumed else self.after,
            ),
        )

    async def run(
        self, node_input: Any = None, resume_inputs: dict[str, Any] | None = None, *, start_written: bool = False
    ) -> Context:
        """Run the node. ``start_written``: its :meth:`start_record` is already
        persisted (the Runner writes the root's with the turn's first events).
        Inside a ``hitl.node`` span when tracing is on (:mod:`engine.telemetry`)."""
        tr = telemetry.tracer()
        if tr is None:
            return await self._run(node_input, resume_inputs, start_written)
        with telemetry.node_span(tr, self.path, self.node.name, self.run_id) as span:
            try:
                ctx = await self._run(node_input, resume_inputs, start_written)
            except NodeFailed as exc:
                telemetry.node_ended(span, "failed", 0, exc.original, f"{exc.error_code}: {exc.error_message}")
                raise
            except asyncio.CancelledError:
                telemetry.node_ended(span, "cancelled", 0)
                raise
            telemetry.node_ended(span, "waiting" if ctx.unresolved_ids else "completed", ctx.attempt_count)
            return ctx

    async def _run(self, node_input: Any, resume_inputs: dict[str, Any] | None, start_written: bool) -> Context:
        inv = self.parent_ctx.invocation
        existing = inv.projection.get(inv.invocation_id, self.path)
        resumed = existing is not None and existing.starts > int(start_written)
        if resumed and resume_inputs is not None and self.node.sees_children_answers:
            resume_inputs = {**inv.projection.descendant_answers(inv.invocation_id, self.path), **resume_inputs}
        ctx = Context(
            inv,
            self.node,
            self.path,
            self.run_id,
            self.parent_ctx,
            resume_inputs=resume_inputs,
            interrupt_ids=self.prior_interrupt_ids,
            output=self.prior_output,
        )
        ctx.after = self.after if self.after is not None else existing.after if existing is not None else None
        inv.running[self.path] = (self, ctx)
        if not start_written:
            # A body of engine code (a nested Workflow, a parallel worker) needs its start
            # durable only before its first child runs user code: that child's start carries it.
            engine = self.node.engine_body
            await self._persist(ctx, self.start_record(node_input, resumed=resumed), hold=engine)
        self._body_started(inv)
        retry = self.node.retry
        attempts = retry.max_attempts if retry else 1
        try:
            for attempt in range(1, attempts + 1):
                ctx.attempt_count = attempt
                ctx._reset_output(self.prior_output)
                ctx.interrupt_ids = list(self.prior_interrupt_ids)
                ctx._raised = set()
                try:
                    await self._attempt(ctx, node_input)
                    break
                except NodeInterrupted:
                    await ctx._settle_children()
                    break
                except NodeFailed as exc:
                    # A child already failed and wrote its error; this run fails too.
                    await ctx._settle_children()
                    await self._end(ctx, NodeStatus.FAILED, exc.error_code, exc.error_message)
                    raise
                except Exception as exc:
                    code, msg = _error_code(exc), _error_message(exc)
                    try:
                        await ctx._settle_children()
                        await self._persist(
                            ctx,
                            Event(
                                invocation_id=inv.invocation_id,
                                author=self.node.name,
                                node_info=self._info(attempt=attempt),
                                error_code=code,
                                error_message=msg,
                            ),
                        )
                        if attempt < attempts and retry and isinstance(exc, retry.retry_on):
                            await asyncio.sleep(retry.delay(attempt))
                            continue
                    except StoreError:
                        raise  # the store failed, not the node: the turn is left mid-run, for a re-drive
                    except Exception as handling:
                        # The engine's own handling of the failure raised (a retry, recording
                        # the error): the run still ends, FAILED with that error (DESIGN.md 3.5).
                        code, msg = _error_code(handling), _error_message(handling)
                        await self._end(ctx, NodeStatus.FAILED, code, msg)
                        raise NodeFailed(self.path, code, msg, handling) from handling
                    await self._end(ctx, NodeStatus.FAILED, code, msg)
                    raise NodeFailed(self.path, code, msg, exc) from exc
        except asyncio.CancelledError:
            await asyncio.shield(self._end(ctx, NodeStatus.CANCELLED))
            raise
        status = NodeStatus.WAITING if ctx.unresolved_ids else NodeStatus.COMPLETED
        await self._end(ctx, status)
        return ctx

    async def _attempt(self, ctx: Context, node_input: Any) -> None:
        async def body() -> None:
            async for item in self.node.run(ctx, node_input):
                await self._handle(ctx, item)
            await ctx._settle_children()

        if self.node.timeout is not None:
            limit = asyncio.timeout(self.node.timeout)
            try:
                async with limit:
                    await body()
            except TimeoutError as exc:
                if not limit.expired():
                    raise  # the body's own TimeoutError, not the limit
                raise NodeTimeoutError(self.path, self.node.timeout) from exc
        else:
            await body()

    async def _handle(self, ctx: Context, item: Any) -> None:
        if item is None:
            return
        if isinstance(item, RequestInput):
            item = item.to_event(ctx.invocation_id, self.node.name)
        if not isinstance(item, Event):
            ctx._set_output(item, "yielded a second output")
            return
        if item.long_running_tool_ids:
            item = self._new_interrupts_only(ctx, item)
            if item is None:
                return
            if ctx.invocation.deadline_rules:
                item = self._with_deadlines(ctx, item)
        if item.route is not None:
            ctx.route = item.route
        if item.output is not None:
            ctx._set_output(item.output, "yielded a second output")
        await self._persist(ctx, item, body=True)

    def _new_interrupts_only(self, ctx: Context, event: Event) -> Event | None:
        """On re-execution a node may raise the same ids again. An id still open
        here is announced again (DESIGN.md 3.13): its call is emitted once more,
        the same id, not a second interrupt, so the turn's events show what is
        pending. An id it already holds an answer for is asked again (3.4): it
        opens again and its old answer leaves ``resume_inputs``. An id this
        execution raised already is not raised twice."""
        proj = ctx.projection
        fresh = []
        for iid in event.long_running_tool_ids or []:
            if iid in ctx._raised:
                continue
            if iid in ctx.resume_inputs:
                del ctx.resume_inputs[iid]
            other = proj.interrupts.get((ctx.invocation_id, iid))
            where = other.path if other is not None and other.open else ctx.invocation.held_raise(iid)
            if where is not None and where != self.path:
                raise HitlError(f"interrupt id {iid} is already open at {where}; interrupt ids must be unique")
            fresh.append(iid)
            ctx._raised.add(iid)
        ctx.interrupt_ids.extend(i for i in fresh if i not in ctx.interrupt_ids)
        if not fresh:
            return None
        if len(fresh) == len(event.long_running_tool_ids or []):
            return event
        keep = set(fresh)
        parts = [p for p in (event.content.parts if event.content else []) if not p.function_call or p.function_call.id in keep]
        content = event.content.model_copy(update={"parts": parts}) if event.content else None
        return event.model_copy(update={"long_running_tool_ids": fresh, "content": content})

    def _with_deadlines(self, ctx: Context, event: Event) -> Event:
        """``event`` with hitl.toml's deadline rules stored in the calls it raises
        (:func:`engine.deadlines.stamp`; a rule whose default answer does not fit a
        call's schema raises DeadlineConfigError, and the node fails naming it)."""
        from .deadlines import stamp

        inv = ctx.invocation
        if event.content is None:
            return event
        parts = []
        changed = False
        for p in event.content.parts:
            call = p.function_call
            if call is not None and call.id in (event.long_running_tool_ids or []):
                args = stamp(call.args, inv.app_name, self.path, inv.deadline_rules)
                if args is not call.args:
                    p = p.model_copy(update={"function_call": call.model_copy(update={"args": args})})
                    changed = True
            parts.append(p)
        if not changed:
            return event
        return event.model_copy(update={"content": event.content.model_copy(update={"parts": parts})})

    async def _end(
        self, ctx: Context, status: NodeStatus, error_code: str | None = None, error_message: str | None = None
    ) -> None:
        self._body_ended(ctx.invocation)
        ctx.invocation.running.pop(self.path, None)
        ctx.end_order = await self._persist(
            ctx,
            Event(
                invocation_id=ctx.invocation_id,
                author=self.node.name,
                node_info=self._info_fields(lifecycle="end", status=status),  # type: ignore[arg-type]
                output=ctx.output,
                route=ctx.route,
                error_code=error_code,
                error_message=error_message,
            ),
            hold=True,
        )
