"""The HTTP API's models: what each endpoint reads and returns, and the OpenAPI
document built from them.

Every request body and query string is parsed by one of the pydantic models
here (``extra="forbid"``: an unknown field is a 400 naming it), and every
response is built as one of them, so :func:`openapi` -- which turns the same
models into JSON Schema 2020-12 (OpenAPI 3.1's dialect) -- describes exactly
what the handlers accept and send. The routes themselves are the
:data:`ROUTES` table: method, path, the models, the summary; the app
(:mod:`console.serve.api`) registers handlers from it and nothing else.

Where the CLI already has a ``--json`` shape (a session's node rows, a dry
run's changes, a bulk answer's items) the API returns the same keys, so a
script can move from ``hitl ... --json`` to the API without a new reader.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from engine.store.base import AuditAction, AuditRecord, InterruptRecord, SessionSummary

Via = Literal["auto", "local", "worker"]
NAME = Field(min_length=1, max_length=64)
REASON = Field(default=None, max_length=2000)


class _In(BaseModel):
    model_config = ConfigDict(extra="forbid")


# ---------------------------------------------------------------- queries
class SessionsQuery(_In):
    app: str | None = Field(default=None, max_length=200, description="Only this app.")
    user: str | None = Field(default=None, max_length=200, description="Only this user.")
    status: Literal["new", "running", "waiting", "failed", "completed", "cancelled", "interrupted", "queued"] | None = (
        Field(default=None, description="Only sessions in this status (as `hitl sessions --status`).")
    )
    older_than: str | None = Field(default=None, max_length=40, description="Not updated for this long (2h, 3d).")
    text: str | None = Field(default=None, max_length=200, description="Session id, user, app or interrupt id contains it.")
    limit: int = Field(default=50, ge=1, le=1000)
    cursor: str | None = Field(default=None, max_length=400, description="`next_cursor` of the previous page.")


class InboxQuery(_In):
    filter: str | None = Field(
        default=None, max_length=2000,
        description="The inbox filter language (`app=refund_approval node=finance_approval age>2h amount<50`); "
                    "with a filter every match is listed (no paging).",
    )
    app: str | None = Field(default=None, max_length=200)
    session: str | None = Field(default=None, max_length=200)
    limit: int = Field(default=50, ge=1, le=1000)
    cursor: str | None = Field(default=None, max_length=400)


class EventsQuery(_In):
    after: int = Field(default=0, ge=0, le=2**63 - 1, description="Only events after this seq.")
    limit: int = Field(default=500, ge=1, le=5000)


class AuditQuery(_In):
    operator: str | None = Field(default=None, max_length=200)
    session: str | None = Field(default=None, max_length=200)
    action: AuditAction | None = None
    since: float | None = Field(default=None, description="Epoch seconds: at or after.")
    until: float | None = Field(default=None, description="Epoch seconds: before.")
    limit: int = Field(default=50, ge=1, le=1000)
    cursor: str | None = Field(default=None, max_length=400)


class InboxStreamQuery(_In):
    filter: str | None = Field(default=None, max_length=2000, description="The inbox filter language.")
    app: str | None = Field(default=None, max_length=200)
    session: str | None = Field(default=None, max_length=200)


class StreamQuery(_In):
    after: int = Field(default=0, ge=0, le=2**63 - 1, description="Send the events after this seq first.")


# ---------------------------------------------------------------- bodies
class AnswerRequest(_In):
    answers: dict[str, Any] = Field(min_length=1, max_length=1000, description="`{interrupt_id: value}`.")
    invocation_id: str | None = Field(default=None, max_length=200, description="Id or unique prefix.")
    reason: str | None = REASON
    operator: str | None = Field(
        default=None, min_length=1, max_length=64,
        description="Who the caller answers for; recorded as `NAME via TOKEN-NAME` (default: the caller's name).",
    )
    dry_run: bool = Field(default=False, description="Say what the answer would resolve and run; write nothing.")
    via: Via = Field(default="auto", description="Run the turn here, leave it to a worker, or auto (a worker when "
                                                 "the server has no code for the app).")
    force: bool = Field(default=False, description="Answer interrupts another operator has claimed "
                                                   "(refused with `claimed_by_other` without it).")


class OwnerRequest(_In):
    ids: list[str] = Field(default_factory=list, max_length=1000,
                           description="Interrupt ids of the session (or `invocation_id` for every open one).")
    invocation_id: str | None = Field(default=None, max_length=200, description="Id or unique prefix.")
    to: str | None = Field(default=None, min_length=1, max_length=200,
                           description="`assign`: the operator, or `@group` of hitl.toml [groups].")
    reason: str | None = REASON
    operator: str | None = Field(default=None, min_length=1, max_length=64,
                                 description="Who the caller acts for; recorded as `NAME via TOKEN-NAME`.")
    force: bool = Field(default=False, description="Take over interrupts another operator owns.")


class OwnerResult(BaseModel):
    action: Literal["claim", "assign", "release"]
    session_id: str
    ids: list[str] = Field(description="The interrupt ids changed (all of them already had that owner: none).")
    owner: str | None = Field(description="Their owner now (null: released).")
    previous: dict[str, str | None] = Field(description="Each id's owner before.")
    event_ids: list[str] = Field(description="The audited events written, one per invocation.")
    message: str = Field(description="The line `hitl claim|assign|release` prints.")


class BulkItem(_In):
    session_id: str = Field(min_length=1, max_length=200)
    invocation_id: str = Field(min_length=1, max_length=200)
    interrupt_id: str = Field(min_length=1, max_length=200)


class BulkAnswerRequest(_In):
    answer: Any = Field(description="The one answer every selected id gets.")
    filter: str | None = Field(default=None, max_length=2000, description="Inbox filter terms (as `hitl bulk-answer`).")
    items: list[BulkItem] = Field(default_factory=list, max_length=10_000)
    reason: str | None = REASON
    operator: str | None = Field(default=None, min_length=1, max_length=64)
    dry_run: bool = False
    via: Via = "auto"


class RedriveRequest(_In):
    reason: str | None = REASON
    operator: str | None = Field(default=None, min_length=1, max_length=64)
    ack_in_doubt: bool = Field(default=False, description="Re-execute nodes in doubt (recorded in the audit log).")
    via: Via = "auto"


class CancelRequest(_In):
    reason: str = Field(min_length=1, max_length=2000, description="Why (required, as in the CLI and the console).")
    operator: str | None = Field(default=None, min_length=1, max_length=64)


class StartRequest(_In):
    app_name: str = Field(min_length=1, max_length=200)
    text: str = Field(min_length=1, max_length=1_000_000, description="The start message.")
    session_id: str | None = Field(default=None, min_length=1, max_length=200, description="Default: a new id.")
    user_id: str | None = Field(default=None, min_length=1, max_length=200, description="Default: `api`.")
    via: Via = "auto"


# ---------------------------------------------------------------- responses
class ErrorBody(BaseModel):
    code: str = Field(description="Stable: what went wrong (`session_not_found`, `already_resolved`, ...).")
    message: str = Field(description="The one line the CLI prints for the same error.")


class ErrorResponse(BaseModel):
    error: ErrorBody


class SessionItem(SessionSummary):
    interrupted: list[str] = Field(default_factory=list, description="Invocations stopped mid-run.")
    queued: list[str] = Field(default_factory=list, description="Invocations whose turn waits for a worker.")


class SessionsPage(BaseModel):
    sessions: list[SessionItem]
    next_cursor: str | None = None


class InboxItem(InterruptRecord):
    due_at: float | None = Field(default=None, description="When its deadline passes (epoch seconds; None: it has "
                                 "none). The deadline's rule is in `args.deadline`.")


class InboxPage(BaseModel):
    interrupts: list[InboxItem]
    next_cursor: str | None = None


class OpenInterrupt(BaseModel):
    id: str
    path: str
    message: str
    payload: Any = None
    response_schema: dict[str, Any] | None = None
    form: dict[str, Any] | None = Field(default=None, description="The console's form for the schema (None: no form).")
    form_reason: str | None = Field(default=None, description="Why the schema has no form.")
    schema_lines: list[str] = Field(default_factory=list, description="The schema as `hitl show --schemas` reads it.")
    due_at: float | None = Field(default=None, description="When its deadline passes (epoch seconds; None: none).")
    on_deadline: str | None = Field(default=None, description="What happens then: answer, fail or escalate.")


class InvocationDetail(BaseModel):
    invocation_id: str
    status: str
    started_seq: int
    started_at: float
    updated_at: float
    message: str | None = None
    health: dict[str, Any]
    nodes: list[dict[str, Any]] = Field(description="The node tree rows (`hitl show --json`'s `nodes`).")
    open: list[OpenInterrupt]
    allowed: dict[str, Any] = Field(description="What the invocation allows now (answer, redrive, cancel) and why not.")


class SessionDetail(BaseModel):
    session: dict[str, Any]
    invocations: list[InvocationDetail]


class EventsPage(BaseModel):
    events: list[dict[str, Any]] = Field(description="`{seq, ...event}` as `hitl events --json` prints them.")
    next_after: int | None = Field(default=None, description="Pass as `after` for the next page (None: the end).")


class AuditPage(BaseModel):
    audit: list[AuditRecord]
    next_cursor: str | None = None


class WrittenEvent(BaseModel):
    seq: int | None = None
    event_id: str
    kind: str
    path: str | None = None
    status: str | None = None
    markers: list[str] = Field(default_factory=list)


class WriteResult(BaseModel):
    kind: Literal["answer", "redrive", "cancel", "start"]
    outcome: Literal["applied", "queued", "failed", "interrupted", "approval"] = Field(
        description="`applied`: written, and it ran what it unblocked here; `queued`: written (or requested), a "
                    "worker of the app runs the turn; `failed` / `interrupted`: written, then the turn failed or "
                    "stopped; `approval`: a multi-approver rule is not met yet -- this answer was recorded as one "
                    "approval (`approval` says how many)."
    )
    approval: str | None = Field(default=None, description="`1 of 2 approvals` when `outcome` is `approval`.")
    session_id: str
    invocation_id: str | None = None
    operator: str | None = None
    status: str | None = Field(default=None, description="The invocation's status after the write.")
    open: list[str] = Field(default_factory=list, description="Its open interrupt ids after the write.")
    ran: list[str] = Field(default_factory=list, description="Node paths that started running.")
    events: list[WrittenEvent] = Field(default_factory=list)
    message: str = Field(description="The line the CLI prints after the same write.")
    queued_for: str | None = Field(default=None, description="The app whose worker runs the turn.")
    notice: str | None = Field(default=None, description="Set when no worker of that app is alive.")
    error: ErrorBody | None = Field(default=None, description="Why a written turn failed or stopped.")


class DryRunResult(BaseModel):
    kind: Literal["dry_run"] = "dry_run"
    invocation_id: str
    resolves: list[str]
    still_open: list[str]
    runs_anything: bool
    changes: list[dict[str, Any]]
    side_effect_warnings: list[str]
    next: list[str] | None = None
    would_run: bool
    refusal: str | None = None
    worker: bool = Field(default=False, description="The real answer would be left to a worker of the app.")
    lines: list[str] = Field(description="What `hitl resume --dry-run` prints.")


class BulkPlanItem(BaseModel):
    session_id: str
    invocation_id: str
    interrupt_ids: list[str]
    paths: list[str]
    app_name: str | None = None
    verdict: str
    nodes: list[str]
    reason: str | None = None
    worker: bool = False


class BulkDryRun(BaseModel):
    kind: Literal["dry_run"] = "dry_run"
    summary: str
    filter: str
    counts: dict[str, int]
    answer: Any = None
    items: list[BulkPlanItem]


class BulkResultItem(BaseModel):
    session_id: str
    invocation_id: str
    interrupt_ids: list[str]
    paths: list[str]
    app_name: str | None = None
    status: str
    reason: str | None = None
    invocation_status: str | None = None
    ran: list[str]
    event_ids: list[str]


class BulkResult(BaseModel):
    kind: Literal["bulk"] = "bulk"
    batch: str
    summary: str
    counts: dict[str, int]
    ok: bool = Field(description="Every item applied or queued (the CLI's exit 0).")
    items: list[BulkResultItem]


# ---------------------------------------------------------------- routes
@dataclass(frozen=True)
class Route:
    """One endpoint: how it is served and how the document describes it."""

    method: str
    path: str
    """Under ``/api/v1``, with ``{name}`` path parameters."""
    handler: str
    """The name of the handler function in :mod:`console.serve.api_reads` / ``api_writes``."""
    summary: str
    response: type[BaseModel] | None
    query: type[BaseModel] | None = None
    body: type[BaseModel] | None = None
    write: bool = False
    stream: bool = False
    public: bool = False
    tags: tuple[str, ...] = field(default=())


ROUTES: tuple[Route, ...] = (
    Route("GET", "/sessions", "list_sessions", "Sessions, most recently updated first (as `hitl sessions`)",
          SessionsPage, SessionsQuery, tags=("read",)),
    Route("GET", "/inbox", "inbox", "Open interrupts, oldest first (as `hitl inbox`)", InboxPage, InboxQuery,
          tags=("read",)),
    Route("GET", "/sessions/{session_id}", "show_session",
          "A session: node tree per invocation, open interrupts with schema and form (as `hitl show`)",
          SessionDetail, tags=("read",)),
    Route("GET", "/sessions/{session_id}/events", "session_events", "A session's events, paged (as `hitl events`)",
          EventsPage, EventsQuery, tags=("read",)),
    Route("GET", "/audit", "audit", "Operator writes, newest first (as `hitl audit`)", AuditPage, AuditQuery,
          tags=("read",)),
    Route("POST", "/sessions/{session_id}/answer", "answer",
          "Answer interrupt ids (as `hitl resume`); `dry_run` says what it would do", WriteResult, body=AnswerRequest,
          write=True, tags=("write",)),
    *(Route("POST", f"/sessions/{{session_id}}/{action}", action, summary, OwnerResult, body=OwnerRequest,
            write=True, tags=("write",))
      for action, summary in (("claim", "Claim open interrupts for the caller (as `hitl claim`)"),
                              ("assign", "Assign open interrupts to an operator or @group (as `hitl assign`)"),
                              ("release", "Release open interrupts (as `hitl release`)"))),
    Route("POST", "/bulk-answer", "bulk_answer", "One answer for many open interrupts (as `hitl bulk-answer`)",
          BulkResult, body=BulkAnswerRequest, write=True, tags=("write",)),
    Route("POST", "/sessions/{session_id}/invocations/{invocation_id}/redrive", "redrive",
          "Continue a failed or interrupted invocation (as `hitl redrive`)", WriteResult, body=RedriveRequest,
          write=True, tags=("write",)),
    Route("POST", "/sessions/{session_id}/invocations/{invocation_id}/cancel", "cancel",
          "Cancel an invocation for good (as `hitl cancel`)", WriteResult, body=CancelRequest, write=True,
          tags=("write",)),
    Route("POST", "/sessions", "start", "Start a new invocation (as `hitl start`)", WriteResult, body=StartRequest,
          write=True, tags=("write",)),
    Route("GET", "/sessions/{session_id}/stream", "session_stream",
          "Server-sent events: the session's new events as they are appended", None, StreamQuery, stream=True,
          tags=("live",)),
    Route("GET", "/inbox/stream", "inbox_stream",
          "Server-sent events: interrupts opening and closing across sessions", None, InboxStreamQuery, stream=True,
          tags=("live",)),
    Route("GET", "/openapi.json", "openapi_doc", "This document", None, public=True, tags=("meta",)),
)

EXTRA_RESPONSES = (BulkDryRun, DryRunResult)
"""Bodies a route returns besides its ``response`` (a dry run's)."""
ALTERNATIVES = {"answer": DryRunResult, "bulk_answer": BulkDryRun}

ERROR_CODES = {
    400: "bad_request (a body or query that does not parse), json_input, blank_id, ...",
    401: "unauthorized: no credentials, or wrong ones",
    403: "forbidden (a viewer writes), read_only (the server runs --read-only)",
    404: "not_found, session_not_found, invocation_not_found",
    409: "already_resolved, conflict, invocation_busy, lease_lost, idempotency_key_in_use",
    413: "too_large",
    422: "unknown_interrupt, invalid_response, invocation_cancelled, not_redrivable, in_doubt, idempotency_key_reused, ...",
    429: "rate_limited (Retry-After says when to try again)",
}


def _schema_of(models: list[type[BaseModel]]) -> dict[str, Any]:
    from pydantic.json_schema import models_json_schema

    _, top = models_json_schema([(m, "serialization") for m in models], ref_template="#/components/schemas/{model}")
    return dict(top.get("$defs", {}))


def _params(route: Route) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for part in route.path.split("/"):
        if part.startswith("{"):
            out.append({"name": part[1:-1], "in": "path", "required": True,
                        "schema": {"type": "string", "minLength": 1, "maxLength": 200}})
    if route.query is not None:
        schema = route.query.model_json_schema()
        for name, prop in schema.get("properties", {}).items():
            prop = dict(prop)
            desc = prop.pop("description", None)
            prop.pop("title", None)
            param = {"name": name, "in": "query", "required": False, "schema": prop}
            if desc:
                param["description"] = desc
            out.append(param)
    return out


def openapi(version: str) -> dict[str, Any]:
    """The OpenAPI 3.1 document of :data:`ROUTES` (``/api/v1/openapi.json``)."""
    models: list[type[BaseModel]] = [ErrorResponse, *EXTRA_RESPONSES]
    for r in ROUTES:
        models += [m for m in (r.response, r.body) if m is not None]
    components = _schema_of(list(dict.fromkeys(models)))
    error = {"description": "An error: a stable code and the CLI's one-line message",
             "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorResponse"}}}}
    paths: dict[str, Any] = {}
    for r in ROUTES:
        op: dict[str, Any] = {"operationId": r.handler, "summary": r.summary, "tags": list(r.tags)}
        params = _params(r)
        if r.write:
            params.append({"name": "Idempotency-Key", "in": "header", "required": False,
                           "description": "A retried request with the same key gets the first response again "
                                          "(and never answers twice).",
                           "schema": {"type": "string", "minLength": 1, "maxLength": 200}})
        if params:
            op["parameters"] = params
        if r.body is not None:
            op["requestBody"] = {"required": True, "content": {"application/json": {
                "schema": {"$ref": f"#/components/schemas/{r.body.__name__}"}}}}
        if r.stream:
            ok: dict[str, Any] = {"description": "An event stream (`text/event-stream`)",
                                  "content": {"text/event-stream": {"schema": {"type": "string"}}}}
        elif r.response is None:
            ok = {"description": "The document", "content": {"application/json": {"schema": {"type": "object"}}}}
        else:
            ref: dict[str, Any] = {"$ref": f"#/components/schemas/{r.response.__name__}"}
            alt = ALTERNATIVES.get(r.handler)
            if alt is not None:
                ref = {"oneOf": [ref, {"$ref": f"#/components/schemas/{alt.__name__}"}]}
            ok = {"description": "OK", "content": {"application/json": {"schema": ref}}}
        op["responses"] = {"200": ok, "default": error}
        if not r.public:
            op["security"] = [{"token": []}, {"basic": []}, {"cookie": []}]
        paths.setdefault(f"/api/v1{r.path}", {})[r.method.lower()] = op
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "hitl-console API",
            "version": version,
            "description": "The operator's reads and writes over HTTP: the same operations as the CLI and the "
                           "console. Errors: " + "; ".join(f"{k}: {v}" for k, v in ERROR_CODES.items()),
        },
        "paths": paths,
        "components": {
            "schemas": components,
            "securitySchemes": {
                "token": {"type": "http", "scheme": "bearer",
                          "description": "`NAME:TOKEN` of a [serve.operators.NAME] entry with a token_hash"},
                "basic": {"type": "http", "scheme": "basic", "description": "NAME and TOKEN as user and password"},
                "cookie": {"type": "apiKey", "in": "cookie", "name": "hitl_session",
                           "description": "The browser's sign-in cookie"},
            },
        },
    }
