"""Traces: OpenTelemetry spans for turns, node runs and operator actions.

The OpenTelemetry *API* is optional (the ``otel`` extra); the SDK and its
exporters are the user's choice -- ``opentelemetry-instrument hitl worker ...``,
or an application that sets a tracer provider and embeds the Runner. Tracing is
on when a real tracer provider is set (the API's default proxy records nothing);
otherwise every helper here returns at once, without importing OpenTelemetry:
nothing is paid when tracing is off.

Spans (names and attributes are this project's; values of answers and secrets
are never recorded):

* ``hitl.turn`` -- one Runner turn (``hitl.turn.kind`` start / resume / redrive / continue,
  ``hitl.app``, ``hitl.session``, ``hitl.invocation``, ``hitl.status`` at the end);
  a turn a worker runs for a request continues the trace of whoever queued it:
  the W3C ``traceparent`` is stored in the request's payload (:func:`trace_fields`)
  and restored by the worker (``Runner.run(trace_parent=...)``);
* ``hitl.node NAME`` -- one node run, a child of its parent node's run or of the
  turn (``hitl.node.path`` with run ids, ``hitl.node.status``,
  ``hitl.node.attempt``; a failure recorded as the span's error), current while
  the node's own code runs, so spans the user's code opens nest under it;
* ``hitl.action ACTION`` -- an operator's write on any surface (``hitl.operator``,
  ``hitl.surface``, ``hitl.ids`` answered, ``hitl.batch``);
* ``hitl.store CALL`` -- with ``HITL_TRACE_STORE=1`` only (the debug level): one
  store call, i.e. one transaction (``hitl.store.statements``, ``hitl.store.commits``).
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import inspect
import os
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import Any, ParamSpec, TypeVar

P = ParamSpec("P")
R = TypeVar("R")

_TRACER_NAME = "hitl-console"

_surface: contextvars.ContextVar[str] = contextvars.ContextVar("hitl_surface", default="library")
"""Which surface an operator action came from: ``cli``, ``console``, ``api``,
``link``, ``worker`` or ``library`` (code calling the engine directly)."""


def set_surface(name: str) -> contextvars.Token[str]:
    """Name the surface of what this context does next (each entry point sets its own)."""
    return _surface.set(name)


def surface() -> str:
    return _surface.get()


STORE_SPANS = os.environ.get("HITL_TRACE_STORE", "") == "1"
"""``HITL_TRACE_STORE=1``: also a ``hitl.store CALL`` span per store call (one
transaction each), with the statements it sent (and, on SQLite, its commits) --
the debug level of tracing, read once at import."""


def store_tracer() -> Any:
    """The tracer when store calls are traced too (:data:`STORE_SPANS`), else None."""
    return tracer() if STORE_SPANS else None


def call_name(fn: Any) -> str:
    """What a store's unit of work is called in its span: the method a nested
    ``fn`` belongs to, else the function's own name."""
    fn = getattr(fn, "func", fn)  # functools.partial
    parts = getattr(fn, "__qualname__", "call").split(".")
    if "<locals>" in parts:
        return parts[parts.index("<locals>") - 1]
    return parts[-1].strip("_") or "call"


@contextlib.contextmanager
def store_span(tr: Any, call: str, backend: str) -> Iterator[dict[str, int]]:
    """A ``hitl.store CALL`` span; the block fills the yielded counts
    (``statements``, ``commits``), set on the span when it ends."""
    from opentelemetry import trace

    counts = {"statements": 0, "commits": 0}
    ctx = None
    if not trace.get_current_span().get_span_context().is_valid:  # in a turn, outside its node runs
        parent = _node_span.get() or _turn_span.get()
        ctx = trace.set_span_in_context(parent) if parent is not None else None
    with tr.start_as_current_span(f"hitl.store {call}", context=ctx) as span:
        span.set_attribute("hitl.store.backend", backend)
        try:
            yield counts
        finally:
            span.set_attribute("hitl.store.statements", counts["statements"])
            span.set_attribute("hitl.store.commits", counts["commits"])


def tracer() -> Any:
    """The tracer when tracing is on, else None. On only when OpenTelemetry is
    already imported (whoever configured an SDK imported it) and a real tracer
    provider is set: a check per turn, never an import."""
    trace = sys.modules.get("opentelemetry.trace")
    if trace is None:
        return None
    provider = trace.get_tracer_provider()
    if type(provider).__name__ in ("ProxyTracerProvider", "NoOpTracerProvider"):
        return None
    return provider.get_tracer(_TRACER_NAME)


def _context_of(trace_parent: str | None) -> Any:
    """The OpenTelemetry context whose parent is the W3C ``traceparent`` (None: none)."""
    if not trace_parent:
        return None
    from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

    return TraceContextTextMapPropagator().extract({"traceparent": trace_parent})


def trace_fields() -> dict[str, str]:
    """``{"traceparent": ...}`` of the current span (empty when tracing is off or
    no span is current): what a turn request stores so that the worker's turn
    continues this trace."""
    if tracer() is None:
        return {}
    from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

    carrier: dict[str, str] = {}
    TraceContextTextMapPropagator().inject(carrier)
    return {"traceparent": carrier["traceparent"]} if "traceparent" in carrier else {}


def trace_id() -> str | None:
    """The current trace id (32 hex digits) for log lines, or None."""
    trace = sys.modules.get("opentelemetry.trace")
    if trace is None:
        return None
    ctx = trace.get_current_span().get_span_context()
    return f"{ctx.trace_id:032x}" if ctx.is_valid else None


# ------------------------------------------------------------------ turns


async def traced_turn(
    turn: AsyncIterator[Any],
    tr: Any,
    *,
    kind: str,
    app: str,
    session_id: str,
    invocation_id: str | None,
    trace_parent: str | None,
) -> AsyncIterator[Any]:
    """``turn``'s events, inside a ``hitl.turn`` span (not made current: an async
    generator's context is its consumer's; node spans name it as their parent
    through the invocation context instead)."""
    from opentelemetry.trace import Status, StatusCode

    span = tr.start_span("hitl.turn", context=_context_of(trace_parent))
    span.set_attribute("hitl.turn.kind", kind)
    span.set_attribute("hitl.app", app)
    span.set_attribute("hitl.session", session_id)
    if invocation_id:
        span.set_attribute("hitl.invocation", invocation_id)
    token = _turn_span.set(span)
    status = None
    try:
        async for event in turn:
            if invocation_id is None and getattr(event, "invocation_id", None):
                invocation_id = event.invocation_id
                span.set_attribute("hitl.invocation", invocation_id)
            info = getattr(event, "node_info", None)
            if info is not None and info.lifecycle == "end" and info.path.count("/") == 0 and info.status:
                status = str(info.status.value if hasattr(info.status, "value") else info.status).lower()
            yield event
    except BaseException as exc:
        if not isinstance(exc, GeneratorExit):
            span.record_exception(exc)
            span.set_status(Status(StatusCode.ERROR, type(exc).__name__))
        raise
    finally:
        if status:
            span.set_attribute("hitl.status", status)
        span.end()
        with contextlib.suppress(ValueError):  # closed from another context (an abandoned generator)
            _turn_span.reset(token)


_turn_span: contextvars.ContextVar[Any] = contextvars.ContextVar("hitl_turn_span", default=None)
"""The turn span a root node run is a child of (set while the turn runs)."""

_node_span: contextvars.ContextVar[Any] = contextvars.ContextVar("hitl_node_span", default=None)
"""The span of the node run whose body runs now: a child run's parent."""


# ------------------------------------------------------------------ node runs


@contextlib.contextmanager
def node_span(tr: Any, path: str, name: str, run_id: str) -> Iterator[Any]:
    """A ``hitl.node NAME`` span for one node run (``tr``: :func:`tracer`), a
    child of the node run whose body runs now, else of the turn; current inside
    the block (the user's spans nest under it)."""
    from opentelemetry import trace

    parent = _node_span.get() or _turn_span.get()
    ctx = trace.set_span_in_context(parent) if parent is not None else None
    span = tr.start_span(f"hitl.node {name}", context=ctx)
    span.set_attribute("hitl.node.path", path)
    span.set_attribute("hitl.node.run_id", run_id)
    token = _node_span.set(span)
    try:
        with trace.use_span(span, end_on_exit=False, record_exception=False, set_status_on_exception=False):
            yield span
    finally:
        _node_span.reset(token)
        span.end()


def node_ended(span: Any, status: str, attempt: int, error: BaseException | None = None, message: str = "") -> None:
    """Record a node run's end on its span (no-op for None)."""
    if span is None:
        return
    from opentelemetry.trace import Status, StatusCode

    span.set_attribute("hitl.node.status", status)
    span.set_attribute("hitl.node.attempt", attempt)
    if error is not None:
        span.record_exception(error)
    if status == "failed":
        span.set_status(Status(StatusCode.ERROR, message[:200] or "failed"))


# ------------------------------------------------------------------ operator actions


def action(name: str, *, via: str = "here") -> Callable[[Callable[P, Awaitable[R]]], Callable[P, Awaitable[R]]]:
    """Decorate an operator write (:mod:`engine.operations`, :mod:`engine.handoff`)
    to run inside a ``hitl.action NAME`` span when tracing is on (current inside,
    so the turn it runs, or the request it queues, is its child). The span names
    the operator, the surface, the session, the ids answered (``answers``' keys)
    and the batch -- never an answer's value or a reason. ``via``: ``here`` (run
    in this process) or ``worker`` (queued)."""

    def wrap(fn: Callable[P, Awaitable[R]]) -> Callable[P, Awaitable[R]]:
        signature = inspect.signature(fn)

        @functools.wraps(fn)
        async def traced(*args: P.args, **kwargs: P.kwargs) -> R:
            tr = tracer()
            if tr is None:
                return _counted(await fn(*args, **kwargs))
            bound = signature.bind_partial(*args, **kwargs).arguments
            with tr.start_as_current_span(f"hitl.action {name}") as span:
                span.set_attribute("hitl.operator", bound.get("operator") or "")
                span.set_attribute("hitl.surface", surface())
                span.set_attribute("hitl.via", via)
                span.set_attribute("hitl.session", str(bound.get("session_id", "")))
                answers = bound.get("answers")
                if isinstance(answers, dict) and answers:
                    span.set_attribute("hitl.ids", [str(k) for k in answers])
                if bound.get("batch"):
                    span.set_attribute("hitl.batch", str(bound["batch"]))
                return _counted(await fn(*args, **kwargs))

        def _counted(result: R) -> R:
            """An answer written is counted by surface (``hitl_answers_total``)."""
            if name == "answer" and getattr(result, "error", True) is None and getattr(result, "written", None):
                from . import metrics

                metrics.ANSWERS.inc(surface=surface(), via=via)
            return result

        return traced

    return wrap
