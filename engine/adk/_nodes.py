"""ADK 2.x nodes -- ``BaseNode``, ``FunctionNode``, ``@node``, ``JoinNode``,
``ParallelWorker``, ``RetryConfig``, ``Edge``, ``START`` -- adapted to the engine.

These are pydantic models with ADK's fields and signatures. None of them runs
anything itself: :func:`to_engine` gives each one its engine node (built once,
kept on the model), an :class:`AdaptedNode` whose body calls the ADK node's
``_run_impl(ctx=..., node_input=...)`` with an ADK :class:`~engine.adk._context.Context`
and hands what it yields to the engine's node runner (an ``Event`` or a
``RequestInput`` converted, a pydantic value dumped, anything else is the
output). Run ids, interrupts, resume, retries and persistence are the engine's.

``RetryConfig`` has ADK's defaults (5 attempts, 1 s initial delay doubling up to
60 s, jitter 1.0) and matches exceptions by class name, as ADK does.
"""

from __future__ import annotations

import contextlib
import inspect
import json
import random
import typing
import weakref
from collections.abc import AsyncGenerator, Callable
from dataclasses import dataclass
from typing import Any, Literal, cast

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, TypeAdapter, field_validator

from .. import nodes as en
from ..parallel import ParallelWorker as EngineParallelWorker
from ._context import Context
from ._events import Event, RequestInput, _plain, to_engine_event, to_engine_request
from ._types import Content, Part, content_text, to_engine_content

# ---------------------------------------------------------------- retry


class RetryConfig(BaseModel):
    """ADK's retry policy. Unset fields take ADK's defaults: ``max_attempts`` 5
    (0 or 1: no retry), ``initial_delay`` 1.0 s, ``max_delay`` 60.0 s,
    ``backoff_factor`` 2.0, ``jitter`` 1.0 (the delay varies by up to that
    fraction either way; 0.0: none). ``exceptions``: class names or classes to
    retry on (None: every exception); anything else is refused here."""

    max_attempts: int | None = None
    initial_delay: float | None = None
    max_delay: float | None = None
    backoff_factor: float | None = None
    jitter: float | None = None
    exceptions: list[str] | None = None

    @field_validator("exceptions", mode="before")
    @classmethod
    def _names(cls, v: Any) -> list[str] | None:
        if v is None:
            return None
        out = []
        for item in v:
            if isinstance(item, str):
                out.append(item)
            elif isinstance(item, type) and issubclass(item, BaseException):
                out.append(item.__name__)
            else:
                raise ValueError(f"exceptions takes exception classes or their names, not {type(item).__name__} {item!r}")
        return out


class _ByNameMeta(type):
    """``isinstance(exc, cls)`` when a class in ``exc``'s MRO has one of ``cls.names``."""

    names: tuple[str, ...] = ()

    def __instancecheck__(cls, obj: Any) -> bool:
        return any(k.__name__ in cls.names for k in type(obj).__mro__)


@dataclass
class _EngineRetry(en.RetryConfig):
    """The engine's retry with ADK's delay (exponential, capped, jittered)."""

    jitter: float = 1.0

    def delay(self, attempt: int) -> float:
        base = min(self.initial_delay * (self.backoff ** (attempt - 1)), self.max_delay)
        return max(0.0, base * (1 + random.uniform(-self.jitter, self.jitter))) if self.jitter else base


def engine_retry(cfg: RetryConfig | None) -> en.RetryConfig | None:
    if cfg is None:
        return None
    attempts = 5 if cfg.max_attempts is None else max(cfg.max_attempts, 1)
    retry_on: tuple[type[BaseException], ...] = (Exception,)
    if cfg.exceptions is not None:
        # a subclass of Exception whose isinstance matches by class name
        retry_on = (cast("type[Exception]", _ByNameMeta("RetryOn", (Exception,), {"names": tuple(cfg.exceptions)})),)
    return _EngineRetry(
        max_attempts=attempts,
        initial_delay=1.0 if cfg.initial_delay is None else cfg.initial_delay,
        backoff=2.0 if cfg.backoff_factor is None else cfg.backoff_factor,
        max_delay=60.0 if cfg.max_delay is None else cfg.max_delay,
        retry_on=retry_on,
        jitter=1.0 if cfg.jitter is None else cfg.jitter,
    )


# ---------------------------------------------------------------- nodes


class BaseNode(BaseModel):
    """ADK's ``BaseNode``: subclass it (a pydantic model) and implement
    ``async def _run_impl(self, *, ctx, node_input)`` as an async generator."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    name: str = Field(...)
    description: str = ""
    rerun_on_resume: bool = False
    wait_for_output: bool = False
    retry_config: RetryConfig | None = None
    timeout: float | None = None
    input_schema: Any = None
    output_schema: Any = None
    state_schema: Any = None

    _engine: en.BaseNode | None = PrivateAttr(default=None)

    @field_validator("name")
    @classmethod
    def _identifier(cls, v: str) -> str:
        if not v.isidentifier():
            raise ValueError(f"node name {v!r} must be a valid Python identifier")
        return v

    def get_name(self) -> str:
        return self.name

    async def run(self, *, ctx: Any, node_input: Any) -> AsyncGenerator[Any, None]:
        """Runs ``_run_impl`` (the engine converts what it yields)."""
        node_input = _validate(self.input_schema, node_input)
        async for item in self._run_impl(ctx=ctx, node_input=node_input):
            yield item

    async def _run_impl(self, *, ctx: Any, node_input: Any) -> AsyncGenerator[Any, None]:
        raise NotImplementedError(f"_run_impl for {type(self).__name__} is not implemented")
        yield  # an async generator

    def _engine_node(self) -> en.BaseNode:
        """This node as the engine runs it (built once)."""
        if self._engine is None:
            self._engine = self._build_engine()
        return self._engine

    def _build_engine(self) -> en.BaseNode:
        return AdaptedNode(self)


def _validate(schema: Any, value: Any) -> Any:
    if schema is None or isinstance(schema, dict):
        return value
    return TypeAdapter(schema).validate_python(value)


_CTX_NAMES = ("ctx", "context")


def _is_context_param(name: str, annotation: Any) -> bool:
    if name in _CTX_NAMES:
        return True
    return getattr(annotation, "__name__", "") in ("Context", "CallbackContext", "ToolContext")


class FunctionNode(BaseNode):
    """A node wrapping a function (sync, async, generator). Parameters bind as in
    ADK: ``ctx`` (or a parameter annotated ``Context``) gets the context,
    ``node_input`` the input, every other parameter the session state key of its
    name (or its default); values are coerced to their annotations (a dict to a
    pydantic model, message text to ``str``)."""

    auth_config: Any = None
    parameter_binding: Literal["state", "node_input"] = "state"

    _func: Callable[..., Any] = PrivateAttr()
    _spec: Any = PrivateAttr(default=None)

    def __init__(self, func: Callable[..., Any] | None = None, *, name: str | None = None, **kw: Any) -> None:
        if func is None:
            func = kw.pop("func")
        if not callable(func):
            raise TypeError("FunctionNode wraps a callable")
        super().__init__(name=name or func.__name__, description=inspect.getdoc(func) or "", **kw)
        self._func = func

    async def _run_impl(self, *, ctx: Any, node_input: Any) -> AsyncGenerator[Any, None]:
        kwargs = self._bind(ctx, node_input)
        fn = self._func
        if inspect.isasyncgenfunction(fn):
            async for item in fn(**kwargs):
                yield _returned(item)
        elif inspect.isgeneratorfunction(fn):
            for item in fn(**kwargs):
                yield _returned(item)
        elif inspect.iscoroutinefunction(fn):
            yield _returned(await fn(**kwargs))
        else:
            yield _returned(fn(**kwargs))

    def _bind(self, ctx: Any, node_input: Any) -> dict[str, Any]:
        if self._spec is None:  # the signature and annotations, read once
            self._spec = (inspect.signature(self._func), _hints(self._func))
        sig, hints = self._spec
        kwargs: dict[str, Any] = {}
        for pname, param in sig.parameters.items():
            hint = hints.get(pname, inspect.Parameter.empty)
            if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
                continue
            if _is_context_param(pname, hint):
                kwargs[pname] = ctx
                continue
            if pname == "node_input" or self.parameter_binding == "node_input":
                source_has, value = (True, node_input) if pname == "node_input" else _lookup(node_input, pname)
            else:
                source_has, value = _lookup(ctx.state, pname)
            if source_has:
                kwargs[pname] = _coerce(value, hint)
            elif param.default is not param.empty:
                kwargs[pname] = param.default
            else:
                raise ValueError(
                    f'missing value for parameter "{pname}" of function "{self.name}": not in the session state '
                    "and no default (only ctx and node_input are bound otherwise)"
                )
        return kwargs


def _hints(fn: Callable[..., Any]) -> dict[str, Any]:
    """The parameters' annotations, each evaluated on its own (``from __future__
    import annotations`` makes them strings): one that names what the function
    cannot see is left out (no coercion for it), not an error for all."""
    raw = inspect.get_annotations(fn)
    scope = dict(getattr(fn, "__globals__", {}))
    code = getattr(fn, "__code__", None)
    for name, cell in zip(code.co_freevars if code else (), getattr(fn, "__closure__", None) or (), strict=False):
        with contextlib.suppress(ValueError):  # an empty cell
            scope[name] = cell.cell_contents
    out: dict[str, Any] = {}
    for name, hint in raw.items():
        if isinstance(hint, str):
            try:
                hint = _evaluated(hint, scope)
            except Exception:  # noqa: BLE001 -- a name the function cannot see: no coercion for it
                continue
        out[name] = hint
    return out


class _Probe:
    """One annotation to resolve (``typing.get_type_hints`` reads ``__annotations__``)."""


def _evaluated(hint: str, scope: dict[str, Any]) -> Any:
    """A string annotation of the user's own function resolved in its scope, as
    ``typing.get_type_hints`` resolves any (never stored data: code the app wrote)."""
    probe = _Probe()
    probe.__annotations__ = {"x": hint}
    return typing.get_type_hints(probe, globalns=scope, localns=scope)["x"]


def _lookup(source: Any, key: str) -> tuple[bool, Any]:
    try:
        if key in source:
            return True, source[key]
    except TypeError:
        pass
    return False, None


def _coerce(value: Any, hint: Any) -> Any:
    if hint is inspect.Parameter.empty or hint is Any:
        return value
    text = content_text(value)
    if text is not None:
        if hint is str or hint == (str | None):
            return text
        if hint is Content or getattr(hint, "__name__", "") == "Content":
            return value
        try:
            value = json.loads(text)
        except ValueError:
            value = text
    elif isinstance(value, str) and getattr(hint, "__name__", "") == "Content":
        return Content(role="user", parts=[Part(text=value)])
    try:
        return _adapter(hint).validate_python(value)
    except Exception:
        if isinstance(value, str):
            try:
                return _adapter(hint).validate_json(value)
            except Exception:
                pass
        raise


_ADAPTERS: dict[Any, TypeAdapter[Any]] = {}


def _adapter(hint: Any) -> TypeAdapter[Any]:
    """One TypeAdapter per annotation (building one is the costly part)."""
    try:
        adapter = _ADAPTERS.get(hint)
    except TypeError:  # an unhashable annotation
        return TypeAdapter(hint)
    if adapter is None:
        adapter = _ADAPTERS[hint] = TypeAdapter(hint)
    return adapter


def _returned(value: Any) -> Any:
    if isinstance(value, BaseModel) and not isinstance(value, (Event, RequestInput, Content)):
        return value.model_dump()
    return value


def node(
    func: Callable[..., Any] | None = None,
    *,
    name: str | None = None,
    rerun_on_resume: bool = False,
    retry_config: RetryConfig | None = None,
    timeout: float | None = None,
    parallel_worker: bool = False,
    max_parallel_workers: int | None = None,
    **kw: Any,
) -> Any:
    """``@node``, ``@node(...)`` or ``node(f, ...)``: a :class:`FunctionNode`
    (``parallel_worker=True``: a :class:`ParallelWorker` mapping it over its input)."""

    def wrap(f: Callable[..., Any]) -> BaseNode:
        if isinstance(f, BaseNode):
            inner = f
        else:
            inner = FunctionNode(f, name=name, rerun_on_resume=rerun_on_resume, retry_config=retry_config, timeout=timeout, **kw)
        if parallel_worker:
            return ParallelWorker(node=inner, max_parallel_workers=max_parallel_workers)
        return inner

    return wrap(func) if func is not None else wrap


class JoinNode(BaseNode):
    """Fan-in: runs once every predecessor has an output; its output is ``{name: output}``."""

    def _build_engine(self) -> en.BaseNode:
        return en.JoinNode(self.name)


class ParallelWorker(BaseNode):
    """``ParallelWorker(node=..., max_parallel_workers=N)``: runs ``node`` once per
    item of its input (its items' runs are ``worker@1/node@1``, ``node@2``...);
    output: the items' outputs in order. It has the wrapped node's name, as in ADK."""

    max_parallel_workers: int | None = None

    _node: Any = PrivateAttr()

    def __init__(
        self,
        *,
        node: Any,
        max_parallel_workers: int | None = None,
        retry_config: RetryConfig | None = None,
        timeout: float | None = None,
    ) -> None:
        if node == "START" or node is START:
            raise ValueError("a ParallelWorker cannot wrap START")
        built = build_node(node)
        if max_parallel_workers is not None and max_parallel_workers < 1:
            raise ValueError("max_parallel_workers must be greater than or equal to 1")
        # BaseModel's: the signature generated for BaseNode lacks this model's own field
        BaseModel.__init__(
            self, name=built.name, rerun_on_resume=True, retry_config=retry_config, timeout=timeout,
            max_parallel_workers=max_parallel_workers,
        )
        self._node = built

    def _build_engine(self) -> en.BaseNode:
        return EngineParallelWorker(
            to_engine(self._node),
            self.name,
            max_concurrency=self.max_parallel_workers,
            retry=engine_retry(self.retry_config),
            timeout=self.timeout,
        )


START = BaseNode(name="__START__")
"""The entry of a workflow's edges (the string ``"START"`` is the same)."""


class Edge(BaseModel):
    """One edge: ``Edge(from_node=a, to_node=b, route=None)``."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    from_node: Any
    to_node: Any
    route: Any = None


# ---------------------------------------------------------------- the adapter

_FUNCTIONS: weakref.WeakKeyDictionary[Any, FunctionNode] = weakref.WeakKeyDictionary()


def build_node(item: Any) -> BaseNode:
    """An ADK node for a node-like value: a node, or a function (one node per function)."""
    if isinstance(item, BaseNode):
        return item
    if callable(item):
        try:
            known = _FUNCTIONS.get(item)
        except TypeError:
            known = None
        if known is None:
            known = FunctionNode(item)
            with contextlib.suppress(TypeError):  # not weak-referenceable: built again next time
                _FUNCTIONS[item] = known
        return known
    raise TypeError(f"{item!r} is not a node or a function")


def to_engine(item: Any) -> Any:
    """The engine node for an ADK node-like value (``START``/"START" -> the engine's START).
    Engine nodes pass through unchanged."""
    if item is START or item == "START":
        return en.START
    if isinstance(item, en.BaseNode):
        return item
    return build_node(item)._engine_node()


class AdaptedNode(en.BaseNode):
    """An ADK node as the engine runs it."""

    def __init__(self, adk: BaseNode) -> None:
        super().__init__(
            adk.name, rerun_on_resume=adk.rerun_on_resume, retry=engine_retry(adk.retry_config), timeout=adk.timeout
        )
        self.adk = adk
        if adk.rerun_on_resume:
            self.is_container = True  # it may call ctx.run_node
        self.default_route: tuple[Any, frozenset[Any]] | None = None
        """(DEFAULT_ROUTE, the routes of the node's other edges), set by a Workflow with such an edge."""

    async def run(self, ctx: Any, node_input: Any) -> Any:
        actx = Context(ctx, to_engine)
        async for item in self.adk.run(ctx=actx, node_input=node_input):
            out = _to_engine_item(item, ctx)
            if out is not None:
                yield out
        if self.default_route is not None:
            default, routes = self.default_route
            emitted = ctx.route if isinstance(ctx.route, list) else [ctx.route]
            try:
                matched = any(r in routes for r in emitted)
            except TypeError:  # an unhashable route matches no edge
                matched = False
            if not matched:
                ctx.route = default  # no other edge matches: the DEFAULT_ROUTE edge does


def _to_engine_item(item: Any, ctx: Any) -> Any:
    if item is None:
        return None
    if isinstance(item, Event):
        event, delta = to_engine_event(item)
        for k, v in delta.items():
            ctx.state[k] = v  # rides on this event (the engine attaches the run's delta)
        if event.content is None and event.output is None and event.route is None and not event.error_code and not delta:
            return None
        return event
    if isinstance(item, RequestInput):
        return to_engine_request(item)
    if isinstance(item, Content) or type(item).__name__ == "Content":
        from ..models import Event as EngineEvent

        content = to_engine_content(item)
        if content is not None and getattr(item, "role", None) is None:
            content = content.model_copy(update={"role": "model"})
        return EngineEvent(content=content)
    return _plain(item)
