"""ADK 2.x ``Event`` and ``RequestInput``, and the response helpers, over the engine's models.

A node body may yield ``Event(output=..., route=..., state={...}, message="...")``
or ``RequestInput(message=..., payload=..., response_schema=...,
interrupt_id=...)``; :func:`to_engine_item` turns either into what the engine's
node runner takes. What ``Runner.run_async`` yields is the engine's event seen
through :func:`from_engine_event`: ``event.output``, ``event.node_name``,
``event.node_info.path``, ``event.actions.state_delta``, function calls with
their ids, ``long_running_tool_ids`` as a set.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from .. import models as em
from ..models import new_id
from ..nodes import RequestInput as EngineRequestInput
from ._types import Content, FunctionCall, FunctionResponse, Part, from_engine_content, to_engine_content

REQUEST_INPUT_FUNCTION_CALL_NAME = "adk_request_input"
"""The function-call name of a ``RequestInput`` interrupt (ADK's)."""


class EventActions(BaseModel):
    """What an event changes: ``state_delta`` (the session state keys it sets)."""

    model_config = ConfigDict(extra="allow")

    state_delta: dict[str, Any] = Field(default_factory=dict)


class NodeInfo(BaseModel):
    """Where an event comes from: the node path with run ids (``wf@1/review@2``)."""

    model_config = ConfigDict(extra="allow")

    path: str = ""
    run_id: str | None = None

    @property
    def name(self) -> str:
        return em.leaf_name(self.path) if self.path else ""


class Event(BaseModel):
    """ADK's ``Event``: yield it from a node body, read it from ``run_async``.

    ``Event(state={...})`` sets session state keys (``actions.state_delta``);
    ``Event(message="text")`` is a model message (``content``)."""

    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True, populate_by_name=True)

    id: str = Field(default_factory=lambda: new_id())
    invocation_id: str = ""
    author: str = ""
    timestamp: float | None = None
    branch: str | None = None
    content: Any = None
    output: Any = None
    route: Any = None
    actions: EventActions = Field(default_factory=EventActions)
    long_running_tool_ids: set[str] | None = None
    node_info: NodeInfo = Field(default_factory=NodeInfo)
    error_code: str | None = None
    error_message: str | None = None
    custom_metadata: dict[str, Any] | None = None
    partial: bool | None = None
    turn_complete: bool | None = None

    @model_validator(mode="before")
    @classmethod
    def _shorthands(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        data = dict(data)
        state = data.pop("state", None)
        if state is not None:
            actions = data.get("actions")
            if isinstance(actions, EventActions):
                actions.state_delta.update(state)
            else:
                delta = dict((actions or {}).get("state_delta") or {})
                delta.update(state)
                data["actions"] = {**(actions or {}), "state_delta": delta}
        message = data.pop("message", None)
        if message is not None:
            data["content"] = message if not isinstance(message, str) else Content(role="model", parts=[Part(text=message)])
        ids = data.get("long_running_tool_ids")
        if ids is not None and not isinstance(ids, set):
            data["long_running_tool_ids"] = set(ids)
        return data

    @property
    def node_name(self) -> str:
        """The name of the node that emitted it (the last segment of its path)."""
        return self.node_info.name

    @property
    def node_path(self) -> str:
        return self.node_info.path

    def get_function_calls(self) -> list[Any]:
        parts = getattr(self.content, "parts", None) or []
        return [p.function_call for p in parts if getattr(p, "function_call", None) is not None]

    def get_function_responses(self) -> list[Any]:
        parts = getattr(self.content, "parts", None) or []
        return [p.function_response for p in parts if getattr(p, "function_response", None) is not None]

    def is_final_response(self) -> bool:
        if self.long_running_tool_ids:
            return True
        return not self.get_function_calls() and not self.get_function_responses() and not self.partial


class RequestInput(BaseModel):
    """Ask a human for input (ADK's ``RequestInput``): one long-running function
    call named ``adk_request_input``. ``message`` is optional; ``interrupt_id``
    defaults to a fresh id; ``response_schema`` is a pydantic model, a type or a
    JSON Schema dict (stored as JSON Schema; answers are validated against it
    before they are stored)."""

    model_config = ConfigDict(arbitrary_types_allowed=True, populate_by_name=True)

    interrupt_id: str = Field(default_factory=lambda: new_id(), alias="interruptId")
    message: str | None = None
    payload: Any = None
    response_schema: Any = None
    deadline: Any = None
    """Not ADK's: how long a human has (``timedelta``, seconds, ``"4h"``); see :mod:`engine.deadlines`."""
    on_deadline: Any = None
    """Not ADK's: ``engine.deadlines.answer(...)``, ``fail(...)`` or ``escalate(...)``, checked when built."""

    def model_post_init(self, _context: Any) -> None:
        if self.deadline is not None or self.on_deadline is not None:
            to_engine_request(self)  # a bad default answer is refused here, not when the deadline passes


def create_request_input_response(interrupt_id: str, response: Mapping[str, Any] | Any) -> Part:
    """A ``types.Part`` answering the ``RequestInput`` with ``interrupt_id``."""
    return Part(function_response=FunctionResponse(id=interrupt_id, name=REQUEST_INPUT_FUNCTION_CALL_NAME, response=response))


def get_request_input_interrupt_ids(event: Any) -> list[str]:
    """The interrupt ids of the ``adk_request_input`` calls an event carries."""
    return [
        c.id for c in _calls(event) if getattr(c, "name", None) == REQUEST_INPUT_FUNCTION_CALL_NAME and getattr(c, "id", None)
    ]


def has_request_input_function_call(event: Any) -> bool:
    return any(getattr(c, "name", None) == REQUEST_INPUT_FUNCTION_CALL_NAME for c in _calls(event))


def _calls(event: Any) -> list[Any]:
    parts = getattr(getattr(event, "content", None), "parts", None) or []
    return [p.function_call for p in parts if getattr(p, "function_call", None) is not None]


def _plain(value: Any) -> Any:
    """Pydantic values as plain data (the engine stores JSON)."""
    if isinstance(value, BaseModel):
        return value.model_dump()
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


class Routes(list):
    """Several routes at once (``Event(route=["a", "b"])``): the engine follows an
    edge whose route equals the emitted one, and this list equals each of its
    members, so every edge named in it is followed. Stored as a plain JSON list."""

    def __eq__(self, other: object) -> bool:
        if isinstance(other, list):
            return list.__eq__(self, other)
        return any(other == r for r in self)

    def __ne__(self, other: object) -> bool:
        return not self.__eq__(other)

    # list declares __hash__ = None; a route is hashed as a tuple of its members
    def __hash__(self) -> int:  # type: ignore[override]
        return hash(tuple(self))


def engine_route(route: Any) -> Any:
    """A route as the engine follows it: a list, tuple or set of routes as :class:`Routes`."""
    if isinstance(route, (list, tuple, set, frozenset)) and not isinstance(route, Routes):
        return Routes(route)
    return route


def to_engine_request(req: RequestInput) -> EngineRequestInput:
    return EngineRequestInput(
        req.message or "",
        payload=_plain(req.payload),
        response_schema=req.response_schema,
        interrupt_id=req.interrupt_id,
        name=REQUEST_INPUT_FUNCTION_CALL_NAME,
        deadline=req.deadline,
        on_deadline=req.on_deadline,
    )


def to_engine_event(event: Event) -> tuple[em.Event, dict[str, Any]]:
    """A yielded ADK event as the engine's, and the state delta it sets (the
    caller writes it to the run's state, so that it rides on the event)."""
    content = to_engine_content(event.content) if event.content is not None else None
    if content is not None and content.role == "user" and event.content is not None and getattr(event.content, "role", None) is None:
        content = content.model_copy(update={"role": "model"})
    ids = list(event.long_running_tool_ids) if event.long_running_tool_ids else None
    if ids and content is not None:
        # A call the node marks long-running needs an id (it is the interrupt id).
        parts = [p for p in content.parts]
        missing = [p for p in parts if p.function_call is not None and not p.function_call.id]
        if missing:
            raise ValueError("a long-running function call needs an id: it is the interrupt id an answer names")
    out = em.Event(
        content=content,
        output=_plain(event.output),
        route=engine_route(event.route),
        long_running_tool_ids=ids,
        error_code=event.error_code,
        error_message=event.error_message,
        custom_metadata=event.custom_metadata,
    )
    return out, dict(event.actions.state_delta)


def from_engine_event(e: em.Event) -> Event:
    """The engine's event as ADK's (``node_info.path``, ``node_name``, ``actions.state_delta``)."""
    info = NodeInfo(path=e.node_info.path, run_id=e.node_info.run_id) if e.node_info else NodeInfo()
    return Event(
        id=e.id,
        invocation_id=e.invocation_id,
        author=e.author,
        timestamp=e.timestamp,
        content=from_engine_content(e.content),
        output=e.output,
        route=e.route,
        actions=EventActions(state_delta=dict(e.state_delta or {})),
        long_running_tool_ids=set(e.long_running_tool_ids) if e.long_running_tool_ids else None,
        node_info=info,
        error_code=e.error_code,
        error_message=e.error_message,
        custom_metadata=e.custom_metadata,
    )


__all__ = [
    "REQUEST_INPUT_FUNCTION_CALL_NAME",
    "Content",
    "Event",
    "EventActions",
    "FunctionCall",
    "FunctionResponse",
    "NodeInfo",
    "Part",
    "RequestInput",
    "create_request_input_response",
    "get_request_input_interrupt_ids",
    "has_request_input_function_call",
]
