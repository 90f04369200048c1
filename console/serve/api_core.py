"""What every part of the HTTP API shares (:mod:`console.serve.api` builds the app from
the handlers of :mod:`~console.serve.api_reads`, :mod:`~console.serve.api_writes` and
:mod:`~console.serve.api_stream`, which import from here, below it): the prefix and
version, the request keys, :class:`ApiContext`, the errors as JSON with their stable
codes, and the parsers and responders of the handlers."""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from aiohttp import web
from pydantic import BaseModel, ValidationError

from engine.answer_gate import ClaimedByOtherError
from engine.errors import (
    BlankIdError,
    InvocationNotFoundError,
    ReadOnlyError,
    SessionNotFoundError,
)
from engine.jsonin import JSONInputError
from engine.ownership import OwnedByOtherError
from engine.permissions import NotAllowedError

from . import api_models
from .api_auth import IdempotencyBook, TokenBook
from .auth import Identity

if TYPE_CHECKING:
    from engine.apps import AppRegistry
    from engine.redact import Redactor
    from engine.store.base import SessionStore

log = logging.getLogger("hitl.serve.api")

PREFIX = "/api/v1"
VERSION = "1.0.0"
MAX_BODY = 4 * 1024 * 1024
"""Largest request body read (an answer is at most ~1 MB of JSON; a bulk item list more)."""
CONTEXT: web.AppKey[ApiContext] = web.AppKey("hitl_api")
ROUTE_TABLE: web.AppKey[dict[tuple[str, str], api_models.Route]] = web.AppKey("hitl_api_routes", dict)
IDENTITY: web.RequestKey[Identity] = web.RequestKey("hitl_identity")
REDACTOR: web.RequestKey[Redactor] = web.RequestKey("hitl_redactor")


class ApiError(Exception):
    """An error a handler answers with: HTTP status, stable code, one line."""

    def __init__(self, status: int, code: str, message: str, headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.status, self.code, self.message, self.headers = status, code, message, headers or {}


@dataclass
class ApiContext:
    """What every handler reads: the store, the app code, the masking, who may write."""

    target: Path | str
    """The store (a SQLite path or a URL), opened when the server starts."""
    apps: list[str] = field(default_factory=list)
    config: str | None = None
    read_only: bool = False
    show_secrets: bool = False
    secret_patterns: tuple[str, ...] = ()
    identify: Callable[[web.Request], Identity | None] | None = None
    """The console server's identity for a request without a token (cookie, proxy, loopback)."""
    tokens: TokenBook | None = None
    idempotency: IdempotencyBook = field(default_factory=IdempotencyBook)
    store: SessionStore | None = None
    store_options: dict[str, Any] = field(default_factory=dict)
    closing: bool = False
    """The server is shutting down: the live streams end (they would hold the shutdown up)."""
    wakers: set[Any] = field(default_factory=set)
    """The live streams' wakers: poked after each write here (SQLite's change counter misses our own)."""
    _registry: AppRegistry | None = None

    def registry(self) -> AppRegistry:
        if self._registry is None:
            from engine.apps import AppRegistry

            self._registry = AppRegistry.from_options(self.apps, self.config)
        return self._registry

    def redactor(self, request: web.Request | None = None) -> Redactor:
        """The request's one Redactor (it learns the secrets the request reads or
        sends, so that an error line repeating one is masked too)."""
        from engine.redact import Redactor

        if request is not None and REDACTOR in request:
            return request[REDACTOR]
        red = Redactor(self.secret_patterns, show=self.show_secrets)
        if request is not None:
            request[REDACTOR] = red
        return red

    @property
    def db(self) -> SessionStore:
        assert self.store is not None, "the API's store opens with the server"
        return self.store


# ------------------------------------------------------------------ errors
_CODES: list[tuple[type[BaseException], int]] = [
    (NotAllowedError, 403),  # an [[answer]] rule: this operator may not answer it
    (ClaimedByOtherError, 409),  # someone else's claim: `force` answers anyway
    (OwnedByOtherError, 409),
    (SessionNotFoundError, 404),
    (InvocationNotFoundError, 404),
    (ReadOnlyError, 403),
    (JSONInputError, 400),
    (BlankIdError, 400),
]


def error_code(exc: BaseException) -> str:
    """``AlreadyResolvedError`` -> ``already_resolved`` (stable: the class names are the engine's API)."""
    name = type(exc).__name__.removesuffix("Error")
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower() or "error"


def status_of(exc: BaseException) -> int:
    from engine.operations import CONFLICTS, SessionBusyError

    for cls, status in _CODES:
        if isinstance(exc, cls):
            return status
    if isinstance(exc, (*CONFLICTS, SessionBusyError)):
        return 409
    return 422


def one_line(red: Redactor | None, text: str) -> str:
    from engine.redact import DEFAULT_SECRET_PATTERNS, Redactor

    line = " ".join(str(text).split())
    masked = red.text(line) if red is not None else line
    return Redactor(DEFAULT_SECRET_PATTERNS).text(masked)  # as the CLI's error lines: the defaults always


def hitl_error(exc: BaseException, red: Redactor | None = None) -> ApiError:
    return ApiError(status_of(exc), error_code(exc), one_line(red, str(exc)))


def error_body(code: str, message: str) -> dict[str, Any]:
    return {"error": {"code": code, "message": message}}


def _json(status: int, obj: Any, headers: dict[str, str] | None = None) -> web.Response:
    body = json.dumps(obj, default=str, ensure_ascii=False, allow_nan=False)
    return web.Response(status=status, text=body, content_type="application/json", headers=headers)


def respond(model: BaseModel, red: Redactor | None = None) -> web.Response:
    """A response model as JSON; its free text passes ``red`` (values were masked when built)."""
    text = model.model_dump_json()
    if red is not None:
        text = red.text(text)
    return web.Response(text=text, content_type="application/json")


def validation_line(exc: ValidationError, what: str) -> str:
    first = exc.errors()[0]
    where = ".".join(str(p) for p in first.get("loc", ())) or "(root)"
    more = f" (and {exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
    return f"{what}: {where}: {first.get('msg', 'invalid')}{more}"


def parse_query(request: web.Request, model: type[BaseModel]) -> Any:
    raw: dict[str, Any] = {}
    for key in request.query:
        values = request.query.getall(key)
        if len(values) > 1:
            raise ApiError(400, "bad_request", f"query parameter {key!r} is given {len(values)} times")
        raw[key] = values[0]
    try:
        return model.model_validate(raw)
    except ValidationError as exc:
        raise ApiError(400, "bad_request", validation_line(exc, "the query")) from None


async def parse_body(request: web.Request, model: type[BaseModel]) -> Any:
    from engine.jsonin import loads

    if request.content_type != "application/json":
        raise ApiError(415, "unsupported_media_type", "send the body as application/json")
    data = await request.read()
    try:
        value = loads(data.decode("utf-8"), "the request body")
    except UnicodeDecodeError:
        raise ApiError(400, "bad_request", "the request body is not UTF-8") from None
    except json.JSONDecodeError as exc:
        from engine.jsonin import where_invalid

        raise ApiError(400, "bad_request", f"the request body is not valid JSON: {where_invalid(exc)}") from None
    if not isinstance(value, dict):
        raise ApiError(400, "bad_request", "the request body must be a JSON object")
    try:
        return model.model_validate(value)
    except ValidationError as exc:
        raise ApiError(400, "bad_request", validation_line(exc, "the request body")) from None
