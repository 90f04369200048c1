"""Look-alikes of ``google.genai.types`` for ADK code run on this engine.

ADK workflow code builds messages with ``types.Content``, ``types.Part``,
``types.Part.from_text``, ``types.Part.from_function_response`` and
``types.Part.from_function_call``. These models have the same names, fields
and constructors (``FunctionCall.id`` is optional, as in google-genai), so
``from google.genai import types`` becomes ``from engine.adk.genai import
types``. When the real ``google-genai`` package is installed its objects are
accepted wherever these are (:func:`to_engine_content` reads any object with
their fields), so code that keeps the real import works too.

Conversion to and from the engine's own models (:mod:`engine.models`) lives
here, once: :func:`to_engine_content` and :func:`from_engine_content`.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from ..models import Content as EngineContent
from ..models import FunctionCall as EngineCall
from ..models import FunctionResponse as EngineResponse
from ..models import Part as EnginePart


class _Type(BaseModel):
    # extra="ignore": google-genai types have many optional fields (inline_data,
    # thought...) that this engine does not carry; passing them is not an error.
    model_config = ConfigDict(extra="ignore", populate_by_name=True)


class FunctionCall(_Type):
    """A function call; ``id`` is optional, as in google-genai."""

    id: str | None = None
    name: str | None = None
    args: dict[str, Any] | None = None


class FunctionResponse(_Type):
    """An answer to the function call with the same ``id``."""

    id: str | None = None
    name: str | None = None
    response: Any = None


class Part(_Type):
    """One part of a message: text, a function call or a function response."""

    text: str | None = None
    function_call: FunctionCall | None = None
    function_response: FunctionResponse | None = None

    @classmethod
    def from_text(cls, *, text: str) -> Part:
        return cls(text=text)

    @classmethod
    def from_function_call(cls, *, name: str, args: dict[str, Any]) -> Part:
        return cls(function_call=FunctionCall(name=name, args=args))

    @classmethod
    def from_function_response(cls, *, name: str, response: dict[str, Any]) -> Part:
        # google-genai's signature has no id; set ``part.function_response.id`` to
        # the interrupt id before sending (or use create_request_input_response).
        return cls(function_response=FunctionResponse(name=name, response=response))


class Content(_Type):
    """A message: ``role`` (``user`` or ``model``) and its ``parts``."""

    role: str | None = None
    parts: list[Part] | None = Field(default=None)


class UserContent(Content):
    """``types.UserContent(parts)``: a user message from parts, text or one part."""

    def __init__(self, parts: Any = None, **kw: Any) -> None:
        super().__init__(role="user", parts=_as_parts(parts), **kw)


class ModelContent(Content):
    """``types.ModelContent(parts)``: a model message."""

    def __init__(self, parts: Any = None, **kw: Any) -> None:
        super().__init__(role="model", parts=_as_parts(parts), **kw)


def _as_parts(parts: Any) -> list[Part]:
    if parts is None:
        return []
    if not isinstance(parts, (list, tuple)):
        parts = [parts]
    return [Part(text=p) if isinstance(p, str) else _part(p) for p in parts]


def _part(p: Any) -> Part:
    if isinstance(p, Part):
        return p
    return Part.model_validate(_fields(p))


def _fields(obj: Any) -> dict[str, Any]:
    """A google-genai (or any pydantic) object as a plain dict of its set fields."""
    if isinstance(obj, dict):
        return obj
    dump = getattr(obj, "model_dump", None)
    if dump is not None:
        return dict(dump(exclude_none=True))
    return {k: getattr(obj, k) for k in ("role", "parts", "text", "function_call", "function_response") if hasattr(obj, k)}


def to_engine_content(message: Any) -> EngineContent | None:
    """An ADK message (these types, google-genai's, a dict, a string) as the engine's ``Content``.

    A function response without an id is an error the engine reports (it names
    no interrupt); its ``{"result": v}`` wrapping is unwrapped by the engine."""
    if message is None or isinstance(message, EngineContent):
        return message
    if isinstance(message, str):
        return EngineContent.from_text(message)
    data = _fields(message)
    parts: list[EnginePart] = []
    for raw in data.get("parts") or []:
        p = _fields(raw)
        call, resp = p.get("function_call"), p.get("function_response")
        if resp is not None:
            r = _fields(resp)
            parts.append(EnginePart(function_response=EngineResponse(
                id=r.get("id") or "", name=r.get("name") or "", response=r.get("response"))))
        elif call is not None:
            c = _fields(call)
            parts.append(EnginePart(function_call=EngineCall(id=c.get("id") or "", name=c.get("name") or "", args=c.get("args") or {})))
        elif p.get("text") is not None:
            parts.append(EnginePart(text=p["text"]))
    return EngineContent(role="model" if data.get("role") == "model" else "user", parts=parts)


def from_engine_content(content: EngineContent | None) -> Content | None:
    """The engine's ``Content`` as a ``types.Content`` look-alike."""
    if content is None:
        return None
    parts = []
    for p in content.parts:
        if p.function_call is not None:
            c = p.function_call
            parts.append(Part(function_call=FunctionCall(id=c.id, name=c.name, args=dict(c.args))))
        elif p.function_response is not None:
            r = p.function_response
            parts.append(Part(function_response=FunctionResponse(id=r.id, name=r.name, response=r.response)))
        else:
            parts.append(Part(text=p.text))
    return Content(role=content.role, parts=parts)


def content_text(value: Any) -> str | None:
    """The text of a message-like value (these types, google-genai's, the engine's); None if it is not one."""
    if isinstance(value, EngineContent):
        return value.text
    if isinstance(value, Content) or type(value).__name__ in ("Content", "UserContent", "ModelContent"):
        data = _fields(value)
        return "".join(_fields(p).get("text") or "" for p in data.get("parts") or [])
    return None
