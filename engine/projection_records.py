"""The projection's records: node runs, interrupts, invocations, and what one
``apply`` changed (:mod:`engine.projection` folds events into them).

Records are mutable and belong to the projection that owns them -- renderers
read them, never change them. They are copy-on-write: each carries the
generation (``_gen``) of the projection that may mutate it in place, and
``clone`` gives the copy a fork changes instead.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field, fields
from typing import Any, TypeVar

from .models import NodeStatus

T = TypeVar("T")


@dataclass
class NodeRun:
    """The projected state of one node run (one ``name@run_id`` path).

    Positions (``*_pos``) are event positions of the fold (the store's ``seq``)."""

    invocation_id: str
    """The invocation the run belongs to (paths are unique within one)."""
    path: str
    """``wf@1/review@2``: every ancestor's ``name@run_id`` and this run's."""
    name: str
    """The node's name (the last segment without ``@run_id``)."""
    run_id: str
    """The run's id, a decimal counter per (parent path, name): a loop re-run gets
    the next one, a resumed run keeps its id (DESIGN 3.4)."""
    parent: str | None
    """The parent run's path; None for the invocation's root run."""
    status: NodeStatus = NodeStatus.PENDING
    """DESIGN 3.6. RUNNING means a start record without an end record: live or
    dead, this cannot tell (``engine.liveness`` can)."""
    rerun_on_resume: bool = False
    """From the start record: an answer re-executes it (PENDING) rather than
    auto-completing it once every id is answered."""
    is_container: bool = False
    """From the start record: a Workflow or an orchestration node (its children are runs too)."""
    input: Any = None
    """The input of its first start record (what a resume re-executes it with)."""
    output: Any = None
    """The output of its end record (or the latest output event; the aggregated
    answers for an auto-completion). ``None`` is a valid output."""
    route: Any = None
    """The latest route it emitted (which edge a Workflow follows)."""
    call_key: str | None = None
    """For a dynamic child (``ctx.run_node``): the caller's key, which tells
    children of the same name apart (the folding rule groups runs by it)."""
    after: list[str] | None = None
    """From its first start record: the sibling names whose completion dispatched
    it (``[]``: START); None when not recorded (a dynamic child, a root, events
    written before the field existed)."""
    interrupt_ids: list[str] = field(default_factory=list)
    """Interrupt ids this run raised itself (not its descendants'), in order."""
    resolved: dict[str, Any] = field(default_factory=dict)
    """Answers (unwrapped) to this run's own interrupt ids."""
    children: list[str] = field(default_factory=list)
    """Child run paths in the order they first appeared (the order they ran)."""
    starts: int = 0
    """Number of start records: more than one means the run was re-executed."""
    started_pos: int = 0
    """Position of its first start record (0: none seen, e.g. only an interrupt)."""
    last_start_pos: int = 0
    """Position of its latest start record (a re-execution moves it)."""
    completed_pos: int | None = None
    """Position at which the run became COMPLETED (end record or auto-completion)."""
    updated_pos: int = 0
    """Position of the last event that changed the run."""
    auto_completed: bool = False
    """COMPLETED by the answers to all its ids, without running again (DESIGN 3.4)."""
    error_code: str | None = None
    """The latest error event's code (exception class name or its ``status``)."""
    error_message: str | None = None
    """The latest error event's message."""
    errors: int = 0
    """Failed attempts recorded (error events outside start/end records; retries keep the run id)."""
    has_end: bool = False
    """True once an end record for the run's latest execution was seen."""
    _gen: int = field(default=0, repr=False, compare=False)

    def clone(self, gen: int) -> NodeRun:
        c = _shallow(self)
        c.interrupt_ids = list(self.interrupt_ids)
        c.resolved = dict(self.resolved)
        c.children = list(self.children)
        c._gen = gen
        return c

    @property
    def resumed(self) -> bool:
        return self.starts > 1

    @property
    def own_pending(self) -> list[str]:
        return [i for i in self.interrupt_ids if i not in self.resolved]

    @property
    def unfinished(self) -> bool:
        """A leaf that started and has recorded no end yet. That is normal while a
        process runs it; it is *in doubt* only when none does any more, which the
        events alone cannot tell (``engine.liveness`` asks the store's leases)."""
        return self.status is NodeStatus.RUNNING and not self.is_container


@dataclass
class Interrupt:
    """One interrupt (long-running function call) of an invocation."""

    id: str
    """The interrupt id (the function call's id): what an answer names."""
    invocation_id: str
    """The invocation that owns it."""
    path: str
    """The run that raised it."""
    name: str
    """The function name (``request_input`` for ``RequestInput``)."""
    args: dict[str, Any]
    """The call's arguments: ``message``, ``payload`` and the ``response_schema`` (JSON Schema)."""
    event_id: str
    """The id of the event that raised it."""
    raised_pos: int
    """Position of that event (a re-raise of the same id replaces the record)."""
    timestamp: float
    """When it was raised (the event's timestamp)."""
    resolved: bool = False
    """Answered (the answer stands until the id is raised again)."""
    cancelled: bool = False
    """Closed unanswered by a cancel of its invocation (final)."""
    response: Any = None
    """The answer, unwrapped (``{"result": v}`` -> ``v``, DESIGN 3.7)."""
    resolved_pos: int | None = None
    """Position of the answer, or of the cancel that closed it."""
    resolved_by: str | None = None
    """Id of the FR event that answered it."""
    operator: str | None = None
    """Who answered (the answer event's ``custom_metadata.operator``), when recorded."""
    owner: str | None = None
    """Who works on it while it is open (an operator, or ``@group``): the last claim,
    assignment or release (:mod:`engine.ownership`); an answer ends it."""
    owned_at: float | None = None
    """When ``owner`` claimed it or was assigned it."""
    approvals: list[dict[str, Any]] = field(default_factory=list)
    """Approvals recorded so far under a multi-approver rule (``operator``, ``value``,
    ``pos``, ``at``), in order; the answer is written when the rule is met."""
    _gen: int = field(default=0, repr=False, compare=False)

    def clone(self, gen: int) -> Interrupt:
        c = _shallow(self)
        c.approvals = list(self.approvals)
        c._gen = gen
        return c

    @property
    def open(self) -> bool:
        return not self.resolved and not self.cancelled

    @property
    def message(self) -> str:
        return str(self.args.get("message", "")) if isinstance(self.args, dict) else ""

    @property
    def response_schema(self) -> dict[str, Any] | None:
        return self.args.get("response_schema") if isinstance(self.args, dict) else None


@dataclass
class Invocation:
    """One invocation as the fold saw it: its message, its root runs, operator actions."""

    id: str
    """The invocation id (every event of it, answers included, carries it)."""
    started_pos: int
    """Position of its first event (normally the user message that started it)."""
    timestamp: float
    """Time of that first event."""
    message: str = ""
    """The text of the message that started it."""
    roots: list[str] = field(default_factory=list)
    """Root run paths in order; the last is the current root (``Projection.root``)."""
    last_pos: int = 0
    """Position of its latest event."""
    last_timestamp: float = 0.0
    """Time of its latest event."""
    actions: list[int] = field(default_factory=list)
    """Positions of operator actions (FR messages, re-drives, cancels)."""
    cancel: dict[str, Any] | None = None
    """The operator's cancel, once one was recorded (DESIGN 3.11: final):
    ``{"pos", "timestamp", "operator", "reason"}``."""
    _gen: int = field(default=0, repr=False, compare=False)

    def clone(self, gen: int) -> Invocation:
        c = _shallow(self)
        c.roots = list(self.roots)
        c.actions = list(self.actions)
        c._gen = gen
        return c


@dataclass(slots=True)  # one per event folded: slots make it cheaper to build
class Change:
    """What one ``apply`` touched; the console redraws only these
    (:func:`engine.views.change_paths` adds interrupt owners and ancestors)."""

    pos: int
    """The event's position."""
    invocation_id: str
    """The event's invocation."""
    paths: set[str] = field(default_factory=set)
    """Runs whose record changed (status, output, interrupts, answers)."""
    interrupts: set[str] = field(default_factory=set)
    """Interrupt ids raised, answered or closed."""
    auto_completed: list[str] = field(default_factory=list)
    """Runs the event's answers auto-completed (the runner writes their end records)."""
    state_keys: set[str] = field(default_factory=set)
    """Session state keys the event's ``state_delta`` set (``temp:`` keys excluded)."""


def _record(obj: object) -> dict[str, Any]:
    """A record as JSON-safe fields, without the copy-on-write generation."""
    values = obj.__dict__
    # a class is hashable: mypy checks type[object] against Hashable's instance __hash__
    return {name: values[name] for name in _field_names(type(obj))}  # type: ignore[arg-type]


@functools.cache
def _field_names(cls: type) -> tuple[str, ...]:
    # dataclasses.fields() builds its tuple on every call: once per record of every snapshot written
    return tuple(f.name for f in fields(cls) if f.name != "_gen")


@functools.cache
def _field_set(cls: type) -> frozenset[str]:
    return frozenset(_field_names(cls))


def _revive(cls: type[T], values: dict[str, Any]) -> T:
    """A record from a snapshot's fields (what :func:`_record` wrote) without the
    dataclass ``__init__``'s keyword binding: a worker's turn reads one snapshot,
    every record of it. A snapshot of another layout (a field added or dropped
    since it was written) goes through ``__init__``: its defaults, its errors."""
    if values.keys() != _field_set(cls):  # type: ignore[arg-type]  # as in _record: a class is hashable
        return cls(**values)
    obj = object.__new__(cls)
    obj.__dict__.update(values)
    obj._gen = 0  # type: ignore[attr-defined]
    return obj


def _shallow(obj: T) -> T:
    """``copy.copy`` of a plain dataclass record without its reduce protocol
    (about 5x cheaper; a fork clones every record it changes)."""
    c = object.__new__(type(obj))
    c.__dict__.update(obj.__dict__)
    return c


def _run_no(run_id: str) -> int:
    try:
        return int(run_id)
    except ValueError:
        return 0
