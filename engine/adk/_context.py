"""ADK 2.x ``Context`` over the engine's per-run :class:`engine.context.Context`.

What an ADK node body uses: ``ctx.state`` (and ``ctx.session.state``),
``ctx.resume_inputs``, ``ctx.run_node(node, node_input=..., run_id=...)``,
``ctx.node_path``, ``ctx.run_id``, ``ctx.invocation_id``, ``ctx.session.id``,
``ctx.output``/``ctx.route``, ``ctx.actions.state_delta``. Every call goes to
the engine's context: nothing is kept here.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, MutableMapping
from typing import Any

from ..context import Context as EngineContext


class State(MutableMapping[str, Any]):
    """ADK's ``State`` view of the run's session state (the engine's, which records
    writes as the delta that rides on the run's next event): ``to_dict()``,
    ``has_delta()``, and the mapping methods. ``temp:`` keys are never stored."""

    def __init__(self, state: MutableMapping[str, Any]) -> None:
        self._state = state

    def __getitem__(self, key: str) -> Any:
        return self._state[key]

    def __setitem__(self, key: str, value: Any) -> None:
        self._state[key] = value

    def __delitem__(self, key: str) -> None:
        del self._state[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._state)

    def __len__(self) -> int:
        return len(self._state)

    def to_dict(self) -> dict[str, Any]:
        return dict(self._state)

    def has_delta(self) -> bool:
        return bool(getattr(self._state, "_delta", None))


class _Session:
    """``ctx.session``: the session's id, app, user and state (the same state as ``ctx.state``)."""

    def __init__(self, ctx: EngineContext) -> None:
        self._ctx = ctx

    @property
    def id(self) -> str:
        return self._ctx.invocation.session_id

    @property
    def app_name(self) -> str:
        return self._ctx.invocation.app_name

    @property
    def user_id(self) -> str:
        return self._ctx.invocation.user_id

    @property
    def state(self) -> State:
        return State(self._ctx.state)


class _Actions:
    """``ctx.actions.state_delta``: the state keys this run set and not yet written."""

    def __init__(self, ctx: EngineContext) -> None:
        self._ctx = ctx

    @property
    def state_delta(self) -> dict[str, Any]:
        return dict(self._ctx.state._delta)


class Context:
    """The context an ADK node body receives."""

    def __init__(self, engine_ctx: EngineContext, to_engine: Callable[[Any], Any]) -> None:
        self._ctx = engine_ctx
        self._to_engine = to_engine
        """Makes an ADK node (or a function) an engine node for :meth:`run_node`: given by
        the node wrappers (engine.adk._nodes), which also build this context."""

    @property
    def state(self) -> State:
        """Session state; writes ride on the run's next event."""
        return State(self._ctx.state)

    @property
    def session(self) -> _Session:
        return _Session(self._ctx)

    @property
    def actions(self) -> _Actions:
        return _Actions(self._ctx)

    @property
    def resume_inputs(self) -> dict[str, Any]:
        """Answers to this run's interrupt ids (and, for orchestrators, its dynamic children's)."""
        return self._ctx.resume_inputs

    @property
    def node_path(self) -> str:
        return self._ctx.path or ""

    @property
    def run_id(self) -> str | None:
        return self._ctx.run_id

    @property
    def invocation_id(self) -> str:
        return self._ctx.invocation_id

    @property
    def app_name(self) -> str:
        return self._ctx.invocation.app_name

    @property
    def user_id(self) -> str:
        return self._ctx.invocation.user_id

    @property
    def node_name(self) -> str:
        return self._ctx.node.name if self._ctx.node is not None else ""

    @property
    def attempt_count(self) -> int:
        return self._ctx.attempt_count

    @property
    def interrupt_ids(self) -> set[str]:
        return set(self._ctx.interrupt_ids)

    @property
    def output(self) -> Any:
        return self._ctx.output

    @output.setter
    def output(self, value: Any) -> None:
        self._ctx.output = value

    @property
    def route(self) -> Any:
        return self._ctx.route

    @route.setter
    def route(self, value: Any) -> None:
        from ._events import engine_route

        self._ctx.route = engine_route(value)

    async def run_node(self, node: Any, node_input: Any = None, *, run_id: str | None = None, **_: Any) -> Any:
        """Run ``node`` (an ADK node or a function) as a dynamic child and return its
        output. ``run_id`` is the caller's stable key for the child (ADK's custom run
        id); the child's path still gets the engine's next numeric run id, since run
        ids are unique stored facts here. While the child waits for a human this
        raises the engine's interrupt, which ends the caller WAITING."""
        return await self._ctx.run_node(self._to_engine(node), node_input, key=run_id)

    def __repr__(self) -> str:
        return f"<adk Context {self.node_path}>"
