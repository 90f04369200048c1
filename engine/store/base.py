"""The ``SessionStore`` contract and the row models it returns.

Every backend (in-memory, SQLite, later PostgreSQL) implements
:class:`SessionStore` and passes the one contract suite in
``tests/contract``. Guarantees stated here are what callers rely on:

* **Append-only, contiguous.** ``append_event`` assigns the next ``seq``
  (1, 2, 3, ...) per session atomically. Events are never rewritten.
* **One transaction per append.** The event, the session state delta, and the
  derived rows (interrupt index, invocation status, session summary) commit
  together or not at all.
* **Optimistic concurrency.** With ``expected_seq`` the append fails with
  :class:`~engine.errors.ConflictError` if the session's last seq differs. A
  FunctionResponse event is rejected atomically with
  :class:`~engine.errors.AlreadyResolvedError` if any id it answers is no
  longer open, so two writers answering one id: exactly one wins.
* **Derived rows are caches**: they can be rebuilt from the event log
  (:func:`index_effects` is the single definition of what an event does to them).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Generic, Literal, Protocol, TypeVar, runtime_checkable

from pydantic import BaseModel, Field

from ..models import Event, NodeStatus, Session, StoredEvent

T = TypeVar("T")

InvocationState = Literal["running", "waiting", "completed", "failed", "cancelled"]
SessionStatus = Literal["new", "running", "waiting", "completed", "failed", "cancelled"]


class Page(BaseModel, Generic[T]):
    """One page of a keyset-paginated listing; pass ``next_cursor`` back for more."""

    items: list[T]
    next_cursor: str | None = None


class InterruptRecord(BaseModel):
    """A row of the interrupt index: interrupt id -> owner and call."""

    interrupt_id: str
    session_id: str
    app_name: str
    user_id: str
    invocation_id: str
    path: str
    event_id: str
    name: str
    args: dict[str, Any] = Field(default_factory=dict)
    raised_seq: int
    raised_at: float
    status: Literal["open", "resolved", "cancelled"] = "open"
    resolved_by: str | None = None
    resolved_seq: int | None = None

    @property
    def message(self) -> str:
        return str(self.args.get("message", ""))

    @property
    def response_schema(self) -> dict[str, Any] | None:
        return self.args.get("response_schema")


class InvocationSummary(BaseModel):
    session_id: str
    invocation_id: str
    status: InvocationState
    started_seq: int
    started_at: float
    updated_at: float
    message: str = ""


class SessionSummary(BaseModel):
    """A session row as the sessions screen and ``hitl sessions`` show it."""

    id: str
    app_name: str
    user_id: str
    status: SessionStatus
    open_interrupts: int = 0
    oldest_open_at: float | None = None
    last_event_at: float | None = None
    event_count: int = 0
    invocation_count: int = 0
    created_at: float
    updated_at: float


@dataclass
class IndexEffects:
    """What one event does to the derived rows (shared by every backend)."""

    opened: list[tuple[str, str, str, dict[str, Any]]] = field(default_factory=list)
    """(interrupt_id, path, function name, args) raised by the event."""
    resolved: list[str] = field(default_factory=list)
    """Interrupt ids the event answers (must be open in ``invocation_id``)."""
    cancel_invocation: bool = False
    invocation_status: InvocationState | None = None
    new_invocation_message: str | None = None


_END_STATUS: dict[NodeStatus, InvocationState] = {
    NodeStatus.COMPLETED: "completed",
    NodeStatus.WAITING: "waiting",
    NodeStatus.FAILED: "failed",
    NodeStatus.CANCELLED: "cancelled",
}


def index_effects(event: Event) -> IndexEffects:
    """The one definition of how an event changes the interrupt index and the
    invocation status. Root lifecycle records decide the invocation status; an
    FR message does not (a partial answer to a leaf runs nothing)."""
    eff = IndexEffects()
    info = event.node_info
    if info is None:
        if event.author == "user":
            if event.function_responses:
                eff.resolved = [fr.id for fr in event.function_responses]
            elif event.action == "cancel":
                eff.cancel_invocation = True
                eff.invocation_status = "cancelled"
            elif event.action is None and event.content is not None:
                eff.new_invocation_message = event.content.text
                eff.invocation_status = "running"
        return eff
    if event.long_running_tool_ids:
        eff.opened = [(c.id, info.path, c.name, c.args) for c in event.interrupt_calls]
    if "/" not in info.path:
        if info.lifecycle == "start":
            eff.invocation_status = "running"
        elif info.lifecycle == "end" and info.status is not None:
            eff.invocation_status = _END_STATUS.get(info.status)
    return eff


def session_status(statuses: list[InvocationState]) -> SessionStatus:
    """A session's status from its invocations': running > waiting > failed >
    cancelled > completed; ``new`` when it has none."""
    for s in ("running", "waiting", "failed"):
        if s in statuses:
            return s  # type: ignore[return-value]
    if not statuses:
        return "new"
    return "completed" if "completed" in statuses else "cancelled"


@runtime_checkable
class SessionStore(Protocol):
    """Durable home of sessions and their event logs. See the module docstring."""

    read_only: bool

    async def create_session(
        self, app_name: str, user_id: str, session_id: str | None = None, state: dict[str, Any] | None = None
    ) -> Session:
        """Create a session; ``session_id`` must be new (ConflictError otherwise)."""
        ...

    async def get_session(self, session_id: str) -> Session:
        """The session with its current state; SessionNotFoundError if absent."""
        ...

    async def list_sessions(
        self,
        *,
        app_name: str | None = None,
        user_id: str | None = None,
        status: str | None = None,
        text: str | None = None,
        updated_before: float | None = None,
        updated_after: float | None = None,
        limit: int = 50,
        cursor: str | None = None,
    ) -> Page[SessionSummary]:
        """Sessions, most recently updated first, keyset-paginated."""
        ...

    async def append_event(self, session_id: str, event: Event, *, expected_seq: int | None = None) -> StoredEvent:
        """Append one event atomically (see module docstring). ``temp:`` keys of
        its state delta are dropped before storing."""
        ...

    async def events(self, session_id: str, *, after_seq: int = 0, limit: int | None = None) -> list[StoredEvent]:
        """Events with ``seq > after_seq`` in order (tailing and paging)."""
        ...

    async def event_at(self, session_id: str, seq: int) -> StoredEvent:
        """The event at position ``seq`` (1-based)."""
        ...

    async def invocation_events(
        self, session_id: str, invocation_id: str, *, after_seq: int = 0
    ) -> list[StoredEvent]:
        """Only one invocation's events, in order (no session scan)."""
        ...

    async def list_invocations(self, session_id: str) -> list[InvocationSummary]:
        """The session's invocations in start order with their status."""
        ...

    async def lookup_interrupts(self, session_id: str, interrupt_ids: list[str]) -> list[InterruptRecord]:
        """Every index row (open or not) for these ids in the session."""
        ...

    async def open_interrupts(
        self,
        *,
        session_id: str | None = None,
        app_name: str | None = None,
        limit: int = 50,
        cursor: str | None = None,
    ) -> Page[InterruptRecord]:
        """Open interrupts, oldest first: the operator's inbox."""
        ...

    async def get_snapshot(self, session_id: str, invocation_id: str) -> tuple[int, dict[str, Any]] | None:
        """A cached projection of one invocation at some seq, if one was saved."""
        ...

    async def put_snapshot(self, session_id: str, invocation_id: str, seq: int, data: dict[str, Any]) -> None:
        """Cache a projection of one invocation as of ``seq`` (derived data)."""
        ...

    async def close(self) -> None: ...
