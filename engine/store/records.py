"""The rows a store returns (:mod:`engine.store.base` has the contract that returns
them): pages, open interrupts, leases, audit rows, invocation and session summaries,
and the home screen's overview. Their validators are built on first use
(:func:`build_records` builds them at once)."""

from __future__ import annotations

import time
from typing import Any, Generic, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field

T = TypeVar("T")

_DEFERRED = ConfigDict(defer_build=True)
"""The records' validators are built on first use, not at import: a read that
only prints (``hitl show``) builds none (store rows are made with
``model_construct``: the store's own, already valid)."""

InvocationState = Literal["running", "waiting", "completed", "failed", "cancelled"]
SessionOrder = Literal["updated", "oldest_open"]
SessionStatus = Literal["new", "running", "waiting", "completed", "failed", "cancelled"]


class Page(BaseModel, Generic[T]):
    """One page of a keyset-paginated listing; pass ``next_cursor`` back for more."""

    model_config = _DEFERRED

    items: list[T]
    """This page's rows, in the listing's order (at most ``limit``)."""
    next_cursor: str | None = None
    """Opaque keyset cursor after the last item (None: this is the last page).
    Rows written meanwhile never make a later page repeat or skip a row."""


class InterruptRecord(BaseModel):
    """A row of the interrupt index: interrupt id -> owner and call.

    Derived from the events (:func:`index_effects`): one row per (invocation,
    interrupt id), rewritten when the id is raised again after an answer.
    The inbox lists the open ones, oldest first."""

    model_config = _DEFERRED

    interrupt_id: str
    """The FunctionCall id the node raised; unique among the invocation's open ids."""
    session_id: str
    """The session whose log holds the raising event."""
    app_name: str
    """The session's app (copied, so that the inbox filters without a join)."""
    user_id: str
    """The session's user (copied, like ``app_name``)."""
    invocation_id: str
    """The invocation (turn series) whose run raised it."""
    path: str
    """The raising run's path (``wf@1/ask@1``)."""
    event_id: str
    """Id of the event that raised it (its function call part)."""
    name: str
    """The function call's name (``RequestInput``'s kind of question)."""
    args: dict[str, Any] = Field(default_factory=dict)
    """The function call's arguments: ``message``, ``response_schema``, payload."""
    raised_seq: int
    """Seq of the raising event in the session's log."""
    raised_at: float
    """Timestamp of the raising event (the inbox's triage order)."""
    status: Literal["open", "resolved", "cancelled"] = "open"
    """``open`` until an answer (``resolved``) or the invocation's cancel (``cancelled``)."""
    resolved_by: str | None = None
    """Event id of the answer (None while open, and for a cancel)."""
    resolved_seq: int | None = None
    """Seq of the answer or of the cancel (None while open)."""
    owner: str | None = None
    """Who works on it (an operator, or ``@group``; :mod:`engine.ownership`); None: unowned."""
    owned_at: float | None = None
    """When the current owner claimed it or was assigned it (stale claims are shown)."""

    @property
    def message(self) -> str:
        return str(self.args.get("message", ""))

    @property
    def response_schema(self) -> dict[str, Any] | None:
        return self.args.get("response_schema")


class Lease(BaseModel):
    """Who is running a turn of one invocation, until when (see the module docstring)."""

    model_config = _DEFERRED

    session_id: str
    """The session of the invocation."""
    invocation_id: str
    """The invocation whose turn the holder runs (one lease per invocation)."""
    owner: str
    """Opaque owner id; :func:`engine.liveness.new_owner` makes ``host:pid:...`` ones."""
    acquired_at: float
    """When the owner took it (kept across renewals and re-takes by the same owner)."""
    renewed_at: float
    """When the owner last renewed it (its lease keeper beats every ``ttl / 3``)."""
    expires_at: float
    """When it lapses unless renewed; a lapsed lease may be taken by another process.
    A row left after a turn ended uncleanly (its expiry set to then) marks the
    invocation as stopped mid-run: the projection alone cannot tell a RUNNING
    run that is live from a dead one, the lease row and its owner's liveness do."""

    def expired(self, now: float | None = None) -> bool:
        return self.expires_at <= (time.time() if now is None else now)

    @property
    def holder(self) -> str:
        """``host pid N`` for messages (the owner id itself when it is not ours)."""
        parts = self.owner.split(":")
        if len(parts) >= 2 and parts[1].isdigit():
            return f"{parts[0]} pid {parts[1]}"
        return self.owner


AuditAction = Literal["answer", "redrive", "cancel", "import", "claim", "assign", "release", "approve", "fail", "deadline"]


class AuditRecord(BaseModel):
    """One operator write: who did what to which session, when and why."""

    model_config = _DEFERRED

    at: float
    """When: the action's event timestamp (an import: when it was written)."""
    action: AuditAction
    """``answer``, ``redrive``, ``cancel``, ... (derived from their events), ``import``, ``deadline`` (a rule's step)."""
    operator: str | None = None
    """Who (``--operator`` / the configured operator); None when not given."""
    reason: str | None = None
    """Why, as the operator wrote it; None when not given."""
    session_id: str
    """The session acted on."""
    invocation_id: str | None = None
    """The invocation acted on (None for an import: a whole session)."""
    seq: int | None = None
    """The event the action wrote (None for an import)."""
    event_id: str | None = None
    """Id of that event (None for an import)."""
    details: dict[str, Any] = Field(default_factory=dict)
    """``{"ids": [...]}`` for answers (with ``"batch": id`` for a bulk answer's), ``{"in_doubt": [...]}`` for a re-drive that
    acknowledged nodes in doubt, ``{"events": n, "source": ...}`` for an import."""


class InvocationSummary(BaseModel):
    """A row of the invocation index: one per invocation of a session, derived
    from its events (:func:`index_effects`); what listings show without
    projecting the log. The node tree comes from :mod:`engine.projection`."""

    model_config = _DEFERRED

    session_id: str
    """The session it belongs to."""
    invocation_id: str
    """The invocation id (every event of the invocation carries it)."""
    status: InvocationState
    """From the root run's lifecycle records: ``running`` from the first message or a
    root start, then the root's end status; ``cancelled`` by an operator's cancel.
    An answer alone does not change it. ``running`` cannot tell a live turn from
    one that stopped mid-run: :mod:`engine.liveness` does (the lease rows)."""
    started_seq: int
    """Seq of its first event (invocations are listed in this order)."""
    started_at: float
    """Timestamp of its first event."""
    updated_at: float
    """Timestamp of its last event."""
    message: str = ""
    """The text of the message that started it ("" when it had none)."""


class SessionSummary(BaseModel):
    """A session row as the sessions screen and ``hitl sessions`` show it."""

    model_config = _DEFERRED

    id: str
    """The session id."""
    app_name: str
    """The app it runs."""
    user_id: str
    """The user it belongs to."""
    status: SessionStatus
    """From its invocations' (:func:`session_status`): running > waiting > failed >
    completed > cancelled; ``new`` with no invocation yet."""
    open_interrupts: int = 0
    """How many interrupts of the session are open (waiting for an answer)."""
    oldest_open_at: float | None = None
    """When the oldest open interrupt was raised (None: none open): the triage order."""
    last_event_at: float | None = None
    """Timestamp of the last event (None: no event yet); an imported session keeps its events' times."""
    event_count: int = 0
    """Events in the log (the last seq: seqs are contiguous)."""
    invocation_count: int = 0
    """Invocations of the session (maintained with the appends: no count query)."""
    created_at: float
    """When the session was created (an imported one: when it was imported)."""
    updated_at: float
    """When the row last changed: moves with a status change, else at most once a
    second while the session only appends (precise enough to sort by activity)."""
    owners: list[str] = Field(default_factory=list)
    """The owners (operators, ``@group``) of its open interrupts, sorted (the owner index)."""


class StoreOverview(BaseModel):
    """What the home screen's summary line needs, read in one store call
    (:meth:`SessionStore.overview`); :mod:`engine.home` turns it into the summary."""

    model_config = _DEFERRED

    status_counts: dict[str, int] = Field(default_factory=dict)
    """Sessions by stored status (``waiting``, ``running``, ``failed``...)."""
    open_by_app: dict[str, int] = Field(default_factory=dict)
    """Open interrupts by app name."""
    oldest_open_at: float | None = None
    """When the oldest open interrupt of the store was raised (None: none open)."""
    raised: list[int] = Field(default_factory=list)
    """Interrupts raised (open or since resolved) per bucket, oldest bucket first:
    bucket ``i`` covers ``[since + i * bucket, since + (i + 1) * bucket)``."""
    running: list[tuple[str, str, str | None, float | None]] = Field(default_factory=list)
    """The ``running`` invocations as ``(session_id, invocation_id, lease owner, lease
    expiry)`` (owner/expiry None: no lease row), at most ``running_limit``: liveness
    (:mod:`engine.liveness`) tells the interrupted ones from those a process runs."""
    open_by_owner: dict[str, int] = Field(default_factory=dict)  # owner (name, @group) -> open interrupts


def build_records(models: tuple[type[BaseModel], ...]) -> None:
    """Build these store records' validators now (they are deferred: a read that
    only prints builds none). The runner calls this at import for the one record
    a turn validates (its lease), with :func:`engine.models.build_models`, so a
    turn's first lease does not pay for a build; the rest are built on first use."""
    for model in models:
        if not model.__pydantic_complete__:
            model.model_rebuild(force=True)
