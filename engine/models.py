"""Domain models: events, content parts, node lifecycle records, statuses.

Field names follow Google ADK's event JSON where they overlap (``invocation_id``,
``author``, ``content.parts[].function_call``, ``long_running_tool_ids``,
``error_code``...), so an ADK user recognises a dumped session. Every model is
pydantic v2 and survives a JSON round trip unchanged; the store keeps events as
``Event.model_dump_json(exclude_none=True)``.

Node lifecycle records (DESIGN.md 3.2) are ordinary events whose ``node_info``
carries ``lifecycle="start"`` or ``lifecycle="end"``. They are deliberately
compact: a start record holds the node's input (needed to re-execute it on
resume) and its ``rerun_on_resume`` flag (needed to project PENDING versus
WAITING without importing workflow code); an end record holds the final status
and the node's output.
"""

from __future__ import annotations

import enum
import os
import time
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from .event_kinds import ACTION_KINDS

REQUEST_INPUT_FUNCTION = "request_input"
"""Function-call name used for interrupts built by ``RequestInput``."""
REQUEST_INPUT_FUNCTIONS = (REQUEST_INPUT_FUNCTION, "adk_request_input")
"""Names of request-input calls: ours, and ADK's (``engine.adk.RequestInput``)."""


def new_id() -> str:
    """A fresh opaque id for events, sessions and invocations: a random (version 4)
    uuid's 32 hex digits, as ``uuid.uuid4().hex`` gives them -- built from the 16
    random bytes here, because ``uuid.UUID``'s constructor is Python code that a
    cold process runs unspecialised for each of a turn's ids."""
    b = bytearray(os.urandom(16))
    b[6] = (b[6] & 0x0F) | 0x40  # version 4
    b[8] = (b[8] & 0x3F) | 0x80  # RFC 4122 variant
    return b.hex()


class NodeStatus(enum.StrEnum):
    """Status of one node run (DESIGN.md 3.6)."""

    PENDING = "PENDING"
    RUNNING = "RUNNING"
    WAITING = "WAITING"
    COMPLETED = "COMPLETED"
    FAILED = "FAILED"
    CANCELLED = "CANCELLED"

    @property
    def is_final(self) -> bool:
        return self in (NodeStatus.COMPLETED, NodeStatus.FAILED, NodeStatus.CANCELLED)


REDRIVABLE = (NodeStatus.FAILED, NodeStatus.RUNNING, NodeStatus.PENDING, None)
"""Root statuses a re-drive accepts (None: a message and no root run yet): the rule
the console offers R by (engine.views.allowed_actions) and a re-drive's turn checks
(engine.operator_actions.check_redrivable) -- here, so that the turn's check does
not import the views (with their replay: ~15 ms of a worker's first turn)."""


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True, defer_build=True)


class FunctionCall(_Model):
    """A function call; long-running ones are interrupts and ``id`` is the interrupt id."""

    id: str
    """The call id; for an interrupt, the interrupt id an answer names."""
    name: str
    """The function name (``request_input`` for ``RequestInput``)."""
    args: dict[str, Any] = Field(default_factory=dict)
    """Arguments; a ``RequestInput`` stores ``message``, ``payload`` and ``response_schema`` here."""


class FunctionResponse(_Model):
    """An answer to a function call with the same ``id``."""

    id: str
    """The interrupt id answered."""
    name: str = ""
    """The function name (informational; ADK clients send it)."""
    response: Any = None
    """The answer as sent (``{"result": v}`` is unwrapped when folded, DESIGN 3.7)."""


class Part(_Model):
    """One part of a message: text, a function call or a function response."""

    text: str | None = None
    function_call: FunctionCall | None = None
    function_response: FunctionResponse | None = None


class Content(_Model):
    """A message: who speaks and its parts (ADK's ``types.Content``)."""

    role: Literal["user", "model"] = "user"
    """``user`` for messages and answers, ``model`` for what nodes emit."""
    parts: list[Part] = Field(default_factory=list)

    @classmethod
    def from_text(cls, text: str, role: Literal["user", "model"] = "user") -> Content:
        return cls(role=role, parts=[Part(text=text)])

    @classmethod
    def from_responses(cls, responses: dict[str, Any], names: dict[str, str] | None = None) -> Content:
        """A user message answering interrupts: ``{interrupt_id: value}``."""
        names = names or {}
        return cls(
            role="user",
            parts=[
                Part(function_response=FunctionResponse(id=i, name=names.get(i, ""), response=v))
                for i, v in responses.items()
            ],
        )

    @property
    def function_calls(self) -> list[FunctionCall]:
        return [p.function_call for p in self.parts if p.function_call is not None]

    @property
    def function_responses(self) -> list[FunctionResponse]:
        return [p.function_response for p in self.parts if p.function_response is not None]

    @property
    def text(self) -> str:
        return "".join(p.text for p in self.parts if p.text)

    @property
    def is_empty(self) -> bool:
        """No part carries text or a FunctionResponse (DESIGN.md 3.3: an error)."""
        return not any(p.text or p.function_response is not None for p in self.parts)


class NodeInfo(_Model):
    """Where an event comes from in the node tree, plus lifecycle-record fields."""

    path: str
    """Full node path with run ids, e.g. ``wf@1/review@2``."""
    run_id: str
    """The run id of the path's last segment."""
    lifecycle: Literal["start", "end"] | None = None
    """``start``: a node run (re-)begins. ``end``: it finished with ``status``."""
    status: NodeStatus | None = None
    """On end records: COMPLETED, WAITING, FAILED or CANCELLED."""
    rerun_on_resume: bool | None = None
    """On start records: decides PENDING versus WAITING after a partial answer."""
    input: Any = None
    """On start records: the node input, so a resumed node re-executes with it."""
    call_key: str | None = None
    """On start records of dynamic children: the caller's key for this child."""
    is_container: bool | None = None
    """On start records: True for Workflows and orchestration nodes."""
    after: list[str] | None = None
    """On start records of a Workflow's child dispatched by an edge: the names of
    the sibling nodes whose completion triggered it (``[]``: the edge from START;
    every predecessor for a join). The graph view draws the edges from it."""
    attempt: int | None = None
    """On error events: which attempt (1-based) failed."""


class Event(_Model):
    """One entry of a session's append-only log."""

    # Lambdas, so that tests and fixture generators can patch engine.models.new_id
    # and time.time (a captured function reference could not be patched).
    id: str = Field(default_factory=lambda: new_id())
    """Unique event id (an FR event's id is what ``Interrupt.resolved_by`` names)."""
    invocation_id: str = ""
    """Filled in by the runner for events a node body yields (as in ADK, a node
    need not know it)."""
    author: str = ""
    """``user`` for operator/user messages, else the node name (filled in by the runner)."""
    timestamp: float = Field(default_factory=lambda: time.time())
    """Epoch seconds when the event was created."""
    node_info: NodeInfo | None = None
    """Where in the node tree it comes from; None for user/operator events."""
    content: Content | None = None
    """Text, function calls (interrupts) or function responses (answers)."""
    long_running_tool_ids: list[str] | None = None
    """Ids of ``content``'s function calls that are interrupts (the run waits on them)."""
    output: Any = None
    """A node's output (on output events and end records)."""
    route: Any = None
    """A node's route: which outgoing edge(s) a Workflow follows."""
    state_delta: dict[str, Any] | None = None
    """Session state changes riding on the event (DESIGN 3.8; ``temp:`` keys never stored)."""
    error_code: str | None = None
    """On error events: the exception class name or its ``status`` (DESIGN 3.5)."""
    error_message: str | None = None
    """On error events: the exception's message."""
    custom_metadata: dict[str, Any] | None = None
    """Operator actions: ``{"action": "resume"|"redrive"|"cancel", "operator": ..., "reason": ...}``."""

    def to_json(self) -> str:
        # model_dump_json(exclude_none=True) without its Python wrapper: once per event written
        return self.__pydantic_serializer__.to_json(self, exclude_none=True).decode()

    @classmethod
    def from_json(cls, data: str | bytes) -> Event:
        return cls.model_validate_json(data)

    # -- classification helpers (used by projection, store indexes and UI) --
    @property
    def path(self) -> str | None:
        return self.node_info.path if self.node_info else None

    @property
    def action(self) -> str | None:
        """Operator action carried by a user event, if any."""
        if self.custom_metadata:
            return self.custom_metadata.get("action")
        return None

    @property
    def function_calls(self) -> list[FunctionCall]:
        return self.content.function_calls if self.content else []

    @property
    def function_responses(self) -> list[FunctionResponse]:
        return self.content.function_responses if self.content else []

    @property
    def interrupt_calls(self) -> list[FunctionCall]:
        """The long-running function calls this event raises (its interrupts)."""
        ids = set(self.long_running_tool_ids or ())
        return [c for c in self.function_calls if c.id in ids]

    @property
    def kind(self) -> str:
        """A one-word classification for logs: message, response, redrive, cancel, fail,
        claim, assign, release, approve, start, end, interrupt, error, output, state, event."""
        if self.author == "user" and self.node_info is None:
            if self.function_responses:
                return "response"
            if self.action in ACTION_KINDS:
                return self.action
            return "message"
        if self.node_info and self.node_info.lifecycle:
            return self.node_info.lifecycle
        if self.long_running_tool_ids:
            return "interrupt"
        if self.error_code:
            return "error"
        if self.output is not None:
            return "output"
        if self.state_delta:
            return "state"
        return "event"


class Session(_Model):
    """A session's identity and current state (events are read separately)."""

    id: str
    """The session id, unique in the store."""
    app_name: str
    """The app (workflow) it runs; the registry maps it to code."""
    user_id: str
    """The user it belongs to."""
    state: dict[str, Any] = Field(default_factory=dict)
    """Session state: every stored ``state_delta`` applied in order."""
    created_at: float = Field(default_factory=lambda: time.time())
    """When the session was created (for an imported one: when it was imported)."""
    updated_at: float = Field(default_factory=lambda: time.time())
    """When the session row last changed (an append, an import)."""
    last_seq: int = 0
    """Sequence number of the last appended event (0: none)."""


class StoredEvent(_Model):
    """An event with its position in the session's log (1-based, contiguous)."""

    seq: int
    """1-based position in the session's log; contiguous, never reused."""
    session_id: str
    """The session the event belongs to."""
    event: Event
    """The event as appended."""


def split_path(path: str) -> list[tuple[str, str]]:
    """``"wf@1/a@2"`` -> ``[("wf", "1"), ("a", "2")]``."""
    out: list[tuple[str, str]] = []
    for seg in path.split("/"):
        name, _, run_id = seg.rpartition("@")
        out.append((name, run_id))
    return out


def path_parts(path: str) -> tuple[str | None, str, str]:
    """``"wf@1/a@2"`` -> ``("wf@1", "a", "2")``: :func:`parent_path`, :func:`leaf_name`
    and :func:`leaf_run_id` at once, in two splits (a long fold's every new run)."""
    head, sep, seg = path.rpartition("/")
    name, _, run_id = seg.rpartition("@")
    return (head if sep else None), name, run_id


def parent_path(path: str) -> str | None:
    head, sep, _ = path.rpartition("/")
    return head if sep else None


def leaf_name(path: str) -> str:
    return path.rsplit("/", 1)[-1].rpartition("@")[0]


def leaf_run_id(path: str) -> str:
    return path.rsplit("/", 1)[-1].rpartition("@")[2]


def join_path(parent: str | None, name: str, run_id: str) -> str:
    seg = f"{name}@{run_id}"
    return f"{parent}/{seg}" if parent else seg


TURN_MODELS: tuple[type[BaseModel], ...] = (FunctionCall, FunctionResponse, Part, Content, NodeInfo, Event, StoredEvent)
"""The models a turn validates: the events it writes and reads back. Not
:class:`Session`: the stores make its rows without validation, and an
in-memory store's first session builds it then."""


def build_models(models: tuple[type[BaseModel], ...] = TURN_MODELS) -> None:
    """Build these models' validators now. They are deferred (``defer_build``) so
    that a command that never validates an event -- ``hitl sessions`` -- does
    not pay for them; a module that runs turns (engine.runner) calls this at
    import, so a turn's first event does not pay for it either -- and builds
    only what a turn validates (each build costs ~0.5 ms of a cold ``hitl resume``)."""
    for model in models:
        if not model.__pydantic_complete__:
            model.model_rebuild(force=True)
