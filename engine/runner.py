"""``Runner``: start invocations, resume them from FunctionResponses, re-drive them.

``Runner.run`` is an async iterator over the events it persists, in order. A
turn that ends WAITING is a normal return; a failed node raises
:class:`~engine.errors.WorkflowFailed` after every event is persisted.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

from .context import Context, InvocationContext, NodeFailed, NodeRunner
from .errors import (
    InvocationBusyError,
    NotRedrivableError,
    ResumeRejected,
    SessionNotFoundError,
    TextToWaitingInvocationError,
    WorkflowFailed,
)
from .models import Content, Event, NodeStatus, Session, new_id
from .nodes import BaseNode
from .projection import Projection
from .resume import load_invocation, validate_responses
from .store.base import SessionStore


def operator_metadata(action: str, operator: str | None, reason: str | None) -> dict[str, Any]:
    meta: dict[str, Any] = {"action": action}
    if operator:
        meta["operator"] = operator
    if reason:
        meta["reason"] = reason
    return meta


async def cancel_invocation(
    store: SessionStore, session_id: str, invocation_id: str, *, operator: str | None = None, reason: str | None = None
) -> Event:
    """Cancel a waiting or failed invocation: every unfinished node becomes
    CANCELLED and its open interrupts close. Needs no workflow code."""
    proj = await load_invocation(store, session_id, invocation_id)
    status = proj.invocation_status(invocation_id)
    if status is not None and status.is_final and status is not NodeStatus.FAILED:
        raise NotRedrivableError(f"invocation {invocation_id} is {status.value}; there is nothing to cancel")
    session = await store.get_session(session_id)
    event = Event(
        invocation_id=invocation_id,
        author="user",
        custom_metadata=operator_metadata("cancel", operator, reason),
    )
    stored = await store.append_event(session_id, event, expected_seq=session.last_seq)
    return stored.event


class Runner:
    """Runs one app's root workflow against a session store."""

    def __init__(self, app_name: str, workflow: BaseNode, store: SessionStore) -> None:
        self.app_name = app_name
        self.workflow = workflow
        self.store = store

    async def _session(self, user_id: str, session_id: str, create: bool) -> Session:
        try:
            return await self.store.get_session(session_id)
        except SessionNotFoundError:
            if not create:
                raise
            return await self.store.create_session(self.app_name, user_id, session_id)

    async def run(
        self,
        user_id: str,
        session_id: str,
        new_message: Content | None = None,
        invocation_id: str | None = None,
        *,
        state_delta: dict[str, Any] | None = None,
        operator: str | None = None,
        reason: str | None = None,
    ) -> AsyncIterator[Event]:
        """Start (text message), resume (FunctionResponse message) or re-drive
        (``invocation_id`` without a message) an invocation; yield its events."""
        if new_message is None:
            if invocation_id is None:
                raise ValueError("pass new_message, or invocation_id to re-drive a failed invocation")
            inv_ctx, first = await self._prepare_redrive(session_id, invocation_id, operator, reason, state_delta)
        elif new_message.function_responses:
            inv_ctx, first = await self._prepare_resume(
                session_id, new_message, invocation_id, operator, reason, state_delta
            )
        else:
            inv_ctx, first = await self._prepare_new(user_id, session_id, new_message, invocation_id, state_delta)
        yield first
        async for event in self._drive(inv_ctx):
            yield event

    # -------------------------------------------------------------- prepare
    async def _prepare_new(
        self,
        user_id: str,
        session_id: str,
        message: Content,
        invocation_id: str | None,
        state_delta: dict[str, Any] | None,
    ) -> tuple[InvocationContext, Event]:
        session = await self._session(user_id, session_id, create=True)
        if invocation_id is not None:
            proj = await load_invocation(self.store, session_id, invocation_id)
            if proj.invocation_status(invocation_id) is NodeStatus.WAITING:
                raise TextToWaitingInvocationError(invocation_id)
            raise ResumeRejected("a text message starts a new invocation; do not pass invocation_id")
        inv_id = new_id()
        event = Event(invocation_id=inv_id, author="user", content=message, state_delta=state_delta)
        return await self._begin(session, inv_id, Projection(), event)

    async def _prepare_resume(
        self,
        session_id: str,
        message: Content,
        invocation_id: str | None,
        operator: str | None,
        reason: str | None,
        state_delta: dict[str, Any] | None,
    ) -> tuple[InvocationContext, Event]:
        session = await self.store.get_session(session_id)
        target = await validate_responses(self.store, session_id, message, invocation_id)
        proj = await load_invocation(self.store, session_id, target.invocation_id)
        if proj.invocation_status(target.invocation_id) in (NodeStatus.RUNNING, NodeStatus.PENDING):
            raise InvocationBusyError(target.invocation_id)
        event = Event(
            invocation_id=target.invocation_id,
            author="user",
            content=target.content,
            state_delta=state_delta,
            custom_metadata=operator_metadata("resume", operator, reason),
        )
        return await self._begin(session, target.invocation_id, proj, event)

    async def _prepare_redrive(
        self,
        session_id: str,
        invocation_id: str,
        operator: str | None,
        reason: str | None,
        state_delta: dict[str, Any] | None,
    ) -> tuple[InvocationContext, Event]:
        session = await self.store.get_session(session_id)
        proj = await load_invocation(self.store, session_id, invocation_id)
        status = proj.invocation_status(invocation_id)
        if status not in (NodeStatus.FAILED, NodeStatus.RUNNING, NodeStatus.PENDING, None):
            raise NotRedrivableError(
                f"invocation {invocation_id} is {status.value if status else 'empty'}; "
                "only a failed or interrupted invocation can be re-driven"
            )
        event = Event(
            invocation_id=invocation_id,
            author="user",
            state_delta=state_delta,
            custom_metadata=operator_metadata("redrive", operator, reason),
        )
        return await self._begin(session, invocation_id, proj, event)

    async def _begin(
        self, session: Session, invocation_id: str, proj: Projection, event: Event
    ) -> tuple[InvocationContext, Event]:
        stored = await self.store.append_event(session.id, event, expected_seq=session.last_seq)
        proj.apply(stored.event, stored.seq)
        state = dict(session.state)
        state.update(stored.event.state_delta or {})
        inv_ctx = InvocationContext(
            store=self.store,
            app_name=self.app_name,
            user_id=session.user_id,
            session_id=session.id,
            invocation_id=invocation_id,
            projection=proj,
            state=state,
        )
        return inv_ctx, stored.event

    # ---------------------------------------------------------------- drive
    async def _drive(self, inv_ctx: InvocationContext) -> AsyncIterator[Event]:
        proj = inv_ctx.projection
        inv = inv_ctx.invocation_id
        root = proj.root(inv)
        root_ctx = Context.root(inv_ctx)
        if root is None:
            message = proj.invocations[inv].message
            run_id = str(await self._next_root_run_id(inv_ctx))
            runner = NodeRunner(self.workflow, root_ctx, run_id)
            coro = runner.run(message)
        elif root.status is NodeStatus.PENDING:
            runner = NodeRunner(self.workflow, root_ctx, root.run_id, prior_output=root.output)
            coro = runner.run(root.input, resume_inputs=root.resolved)
        else:
            return  # e.g. a partial answer to a leaf: nothing runs
        done = object()
        task = asyncio.ensure_future(coro)
        task.add_done_callback(lambda _: inv_ctx.queue.put_nowait(done))  # type: ignore[arg-type]
        try:
            while (item := await inv_ctx.queue.get()) is not done:
                yield item.event
            exc = task.exception()
        finally:
            if not task.done():
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)
        await self.store.put_snapshot(inv_ctx.session_id, inv, proj.position, proj.compact(inv).to_dict())
        if exc is not None:
            if isinstance(exc, NodeFailed):
                leaf = _failed_leaf(proj, inv) or (exc.path, exc.error_code, exc.error_message)
                raise WorkflowFailed(*leaf) from exc
            raise exc

    async def _next_root_run_id(self, inv_ctx: InvocationContext) -> int:
        invocations = await self.store.list_invocations(inv_ctx.session_id)
        return sum(1 for i in invocations if i.invocation_id != inv_ctx.invocation_id) + 1


def _failed_leaf(proj: Projection, invocation_id: str) -> tuple[str, str, str] | None:
    """The deepest FAILED run (the original failure, not its ancestors)."""
    failed = [r for r in proj.runs(invocation_id) if r.status is NodeStatus.FAILED]
    if not failed:
        return None
    leaf = max(failed, key=lambda r: (r.path.count("/"), r.updated_pos))
    return leaf.path, leaf.error_code or "Error", leaf.error_message or ""
