"""Nodes: ``BaseNode``, ``@node`` functions, ``JoinNode``, ``RequestInput``.

A node body is an async generator ``run(ctx, node_input)``. What it yields:

* an :class:`~engine.models.Event` -- persisted at the node's path and run id
  (with ``long_running_tool_ids`` it raises interrupts);
* a :class:`RequestInput` -- becomes one long-running function call (an interrupt);
* any other value -- the node's output (one per run: a second one, or one
  besides setting ``ctx.output``, fails the node, DESIGN.md 3.5);
* ``None`` -- ignored.

Defaults for ``rerun_on_resume`` (DESIGN.md 3.4): ``False`` for leaf nodes,
``True`` for Workflows and orchestration nodes (those that call
``ctx.run_node``, which requires it).
"""

from __future__ import annotations

import inspect
import weakref
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .models import REQUEST_INPUT_FUNCTION, Content, Event, FunctionCall, Part, new_id
from .responses import to_json_schema

if TYPE_CHECKING:
    from .context import Context


@dataclass
class RetryConfig:
    """Retry a failing node body; every attempt keeps the run id and writes its error event."""

    max_attempts: int = 3
    """Total attempts, including the first."""
    initial_delay: float = 0.0
    backoff: float = 2.0
    max_delay: float = 30.0
    retry_on: tuple[type[BaseException], ...] = (Exception,)
    """Exception classes worth another attempt (one class, or a tuple or list of them)."""

    def __post_init__(self) -> None:
        # Checked here, not at the first failure (DESIGN.md 3.5).
        on = self.retry_on
        classes = (on,) if isinstance(on, type) else tuple(on) if isinstance(on, (tuple, list, set, frozenset)) else None
        if classes is None:
            raise TypeError(f"RetryConfig.retry_on takes exception classes, not {on!r} ({type(on).__name__})")
        for c in classes:
            if not (isinstance(c, type) and issubclass(c, BaseException)):
                raise TypeError(f"RetryConfig.retry_on takes exception classes, not {c!r} ({type(c).__name__})")
        self.retry_on = classes
        if isinstance(self.max_attempts, bool) or not isinstance(self.max_attempts, int) or self.max_attempts < 1:
            raise ValueError(f"RetryConfig.max_attempts must be a whole number of at least 1, not {self.max_attempts!r}")
        for field_name in ("initial_delay", "backoff", "max_delay"):
            value = getattr(self, field_name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= 0:
                raise ValueError(f"RetryConfig.{field_name} must be a number of at least 0, not {value!r}")

    def delay(self, attempt: int) -> float:
        """Seconds to wait after failed attempt number ``attempt`` (1-based)."""
        return min(self.initial_delay * (self.backoff ** (attempt - 1)), self.max_delay)


@dataclass
class RequestInput:
    """Ask a human for input: one long-running function call (an interrupt)."""

    message: str
    payload: Any = None
    response_schema: Any = None
    """A pydantic model, a Python type or a JSON Schema dict; stored as JSON Schema."""
    interrupt_id: str | None = None
    """Default: a fresh uuid."""
    name: str = REQUEST_INPUT_FUNCTION
    deadline: Any = None
    """How long a human has (``timedelta``, seconds or text such as ``"4h"``); needs ``on_deadline``."""
    on_deadline: Any = None
    """What happens then: :func:`engine.deadlines.answer`, :func:`~engine.deadlines.fail` or
    :func:`~engine.deadlines.escalate` (checked here: a default answer must fit ``response_schema``)."""
    id: str = field(init=False)
    _rule: dict[str, Any] | None = field(init=False, default=None, repr=False)

    def __post_init__(self) -> None:
        self.id = self.interrupt_id or new_id()
        if self.deadline is not None or self.on_deadline is not None:
            from .deadlines import DeadlineConfigError, build

            if self.deadline is None:
                raise DeadlineConfigError(f"RequestInput {self.id}: on_deadline needs deadline= (how long to wait)")
            self._rule = build(self.deadline, self.on_deadline, to_json_schema(self.response_schema),
                               rule=f"RequestInput {self.id}", where=f"RequestInput {self.id}")

    def to_call(self) -> FunctionCall:
        args: dict[str, Any] = {"message": self.message}
        if self.payload is not None:
            args["payload"] = self.payload
        schema = to_json_schema(self.response_schema)
        if schema is not None:
            args["response_schema"] = schema
        if self._rule is not None:
            args["deadline"] = self._rule
        return FunctionCall(id=self.id, name=self.name, args=args)

    def to_event(self, invocation_id: str, author: str) -> Event:
        call = self.to_call()
        return Event(
            invocation_id=invocation_id,
            author=author,
            content=Content(role="model", parts=[Part(function_call=call)]),
            long_running_tool_ids=[call.id],
        )


class BaseNode:
    """A unit of work. Subclass and implement ``run`` as an async generator."""

    rerun_on_resume: bool = False
    """Re-execute on resume (PENDING) instead of waiting for every answer and
    auto-completing with them (WAITING/COMPLETED)."""
    is_container: bool = False
    """True for nodes with children (Workflow, orchestration nodes)."""
    always_outputs: bool = False
    """True when every completed run has an output (JoinNode, ParallelWorker):
    the graph then shows two such terminal nodes compete (DESIGN.md 3.9)."""
    engine_body: bool = False
    """True when the body is engine code, not user code (Workflow, ParallelWorker):
    its start record may wait for its first child's (see engine.invocation)."""

    def __init__(
        self,
        name: str | None = None,
        *,
        rerun_on_resume: bool | None = None,
        retry: RetryConfig | None = None,
        timeout: float | None = None,
    ) -> None:
        self.name = name or type(self).__name__
        if "/" in self.name or "@" in self.name:
            raise ValueError(f"node name {self.name!r} may not contain '/' or '@'")
        if rerun_on_resume is not None:
            self.rerun_on_resume = rerun_on_resume
        self.retry = retry
        self.timeout = timeout

    @property
    def sees_children_answers(self) -> bool:
        """Orchestration nodes (``ctx.run_node`` callers, parallel workers) find
        their dynamic children's answers in ``ctx.resume_inputs`` when they
        re-execute (DESIGN.md 3.4). A Workflow's children read their own."""
        return self.is_container and self.rerun_on_resume

    def run(self, ctx: Context, node_input: Any) -> AsyncIterator[Any]:
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name}>"


class FunctionNode(BaseNode):
    """Wraps a plain function: sync or async, returning or generating.

    Parameters are bound by name: ``ctx`` receives the context; ``node_input``
    (or else the first other parameter) receives the input.
    """

    def __init__(self, fn: Callable[..., Any], **kwargs: Any) -> None:
        kwargs.setdefault("name", fn.__name__)
        super().__init__(**kwargs)
        self.fn = fn
        params = list(inspect.signature(fn).parameters)
        self._wants_ctx = "ctx" in params
        others = [p for p in params if p != "ctx"]
        self._input_param = "node_input" if "node_input" in others else (others[0] if others else None)
        if self.rerun_on_resume:
            self.is_container = True  # it may call ctx.run_node

    def _kwargs(self, ctx: Context, node_input: Any) -> dict[str, Any]:
        kw: dict[str, Any] = {}
        if self._wants_ctx:
            kw["ctx"] = ctx
        if self._input_param:
            kw[self._input_param] = node_input
        return kw

    async def run(self, ctx: Context, node_input: Any) -> AsyncIterator[Any]:
        kw = self._kwargs(ctx, node_input)
        fn = self.fn
        if inspect.isasyncgenfunction(fn):
            async for item in fn(**kw):
                yield item
        elif inspect.isgeneratorfunction(fn):
            for item in fn(**kw):
                yield item
        elif inspect.iscoroutinefunction(fn):
            yield await fn(**kw)
        else:
            yield fn(**kw)


_AS_NODE: weakref.WeakKeyDictionary[Any, FunctionNode] = weakref.WeakKeyDictionary()


def as_node(item: Any, where: str) -> BaseNode:
    """A node as is; a plain function (sync, async, generator) wrapped as ``@node``
    would, the same node every time for the same function (as in ADK)."""
    if isinstance(item, BaseNode):
        return item
    if callable(item) and hasattr(item, "__name__"):
        try:
            return _AS_NODE.setdefault(item, FunctionNode(item))
        except TypeError:  # not weak-referenceable (a builtin): wrapped each time
            return FunctionNode(item)
    raise TypeError(f"{where}: {item!r} is not a node or a function")


def node(
    fn: Callable[..., Any] | None = None,
    *,
    name: str | None = None,
    rerun_on_resume: bool | None = None,
    retry: RetryConfig | None = None,
    timeout: float | None = None,
) -> Any:
    """Turn a function into a node: ``@node`` or ``@node(rerun_on_resume=True, ...)``."""

    def wrap(f: Callable[..., Any]) -> FunctionNode:
        return FunctionNode(f, name=name or f.__name__, rerun_on_resume=rerun_on_resume, retry=retry, timeout=timeout)

    return wrap(fn) if fn is not None else wrap


class JoinNode(BaseNode):
    """Fan-in: runs once every predecessor has produced output since its last run.
    Its input and output are ``{predecessor name: output}``."""

    always_outputs = True

    async def run(self, ctx: Context, node_input: Any) -> AsyncIterator[Any]:
        yield node_input


class _Start:
    name = "__START__"

    def __repr__(self) -> str:
        return "START"


START: Any = _Start()
"""The entry point of a Workflow's edges: ``(START, first_node, ...)``."""
