"""Every message the console's screens exchange: store results from workers,
the answer editor's loads and dry runs, and the writes they start.

Workers (``@work``) do every store read and run every write; they never touch
widgets. What they read or write comes back as one of these messages, handled on
the UI side, so the event loop never waits on the store and each handler sees a
consistent result. Each is a small dataclass (toolong's ``messages.py`` is the
model); a high-rate one defines ``can_replace`` so a burst still queued
collapses to the latest (Textual drops the replaced one).
"""

from __future__ import annotations

from dataclasses import KW_ONLY, dataclass, field
from typing import TYPE_CHECKING

from textual.message import Message

from engine.models import Session, StoredEvent
from engine.projection import Projection
from engine.store.base import AuditRecord, InterruptRecord, InvocationSummary, SessionSummary

from .widgets.event_log import LogLine

if TYPE_CHECKING:
    from engine import Event
    from engine.bulk import BulkPlan, BulkResult, ItemResult
    from engine.home import HomeSummary
    from engine.liveness import InvocationHealth
    from engine.outcome import Outcome
    from engine.replay import Replay

    from .answering.jobs import WriteJob
    from .answering.selection import AnswerDraft
    from .screens.audit import AuditQuery
    from .widgets.answer_views import Preview


@dataclass
class StoreFailed(Message):
    """A store read failed; ``text`` is the one-line reason shown to the operator."""

    text: str
    _: KW_ONLY
    fatal: bool = False
    """The screen cannot show anything (e.g. the session does not exist)."""


@dataclass
class SessionQuery:
    """The filters of the sessions list."""

    status: str | None = None
    text: str | None = None
    app_name: str | None = None
    user_id: str | None = None

    def describe(self) -> str:
        parts = [f"{k}={v}" for k, v in (("status", self.status), ("app", self.app_name), ("user", self.user_id)) if v]
        if self.text:
            parts.append(f'text="{self.text}"')
        return " ".join(parts) or "all"


@dataclass
class SessionsLoaded(Message):
    """A page of the sessions list (``append``: after the rows already shown)."""

    query: SessionQuery
    rows: list[SessionSummary]
    next_cursor: str | None
    _: KW_ONLY
    append: bool
    stopped: dict[str, tuple[bool, bool]] = field(default_factory=dict)
    """Session id -> (an invocation stopped mid-run, some node of it is in doubt) (engine.liveness);
    for the ids of ``judge`` a first verdict, from the page's lease rows."""
    queued: set[str] = field(default_factory=set)
    """Sessions with a turn queued for a worker and none stopped mid-run (engine.liveness)."""
    judge: dict[str, str] = field(default_factory=dict)
    """Session id -> its listed status: the rows whose liveness is judged in full after the paint."""
    dues: dict[str, float] = field(default_factory=dict)
    """Session id -> when its soonest deadline passes (engine.deadlines; triage order only)."""
    generation: int = 0


@dataclass
class LivenessJudged(Message):
    """The full liveness verdict (engine.liveness) on rows of the sessions list, read after its paint."""

    query: SessionQuery
    generation: int
    judged: tuple[str, ...]
    stopped: dict[str, tuple[bool, bool]]
    """Of ``judged``, the ones stopped mid-run: (True, a node in doubt). The others are not."""
    queued: set[str] = field(default_factory=set)
    """Of ``judged``, the ones queued for a worker (none of theirs stopped mid-run)."""


@dataclass
class InboxLoaded(Message):
    """A page of open interrupts, oldest first."""

    rows: list[InterruptRecord]
    next_cursor: str | None
    _: KW_ONLY
    append: bool
    stopped: dict[tuple[str, str], tuple[bool, bool]] = field(default_factory=dict)
    """(session, invocation) -> (stopped mid-run, a node in doubt), from engine.liveness."""
    approvals: dict[tuple[str, str], str] = field(default_factory=dict)
    """(session, interrupt id) -> ``1 of 2 approvals`` (engine.views.approvals_of_rows)."""


@dataclass
class InvocationView:
    """What the session screen needs to draw one invocation."""

    session: Session
    invocations: list[InvocationSummary]
    invocation_id: str | None
    projection: Projection
    tree_seq: int
    """Every event of the invocation with seq <= tree_seq is in the projection."""
    complete: bool
    """False: built from a compact snapshot (earlier loop runs not included yet)."""
    corrupt: list[int] = field(default_factory=list)


@dataclass
class InvocationLoaded(Message):
    """The invocation the session screen draws (``token``: the load it answers)."""

    view: InvocationView
    _: KW_ONLY
    token: int


@dataclass
class HistoryLoaded(Message):
    """The full projection of the shown invocation (all loop iterations)."""

    invocation_id: str
    projection: Projection
    tree_seq: int
    corrupt: list[int]
    _: KW_ONLY
    token: int


@dataclass
class LiveEvents(Message):
    """Events appended since the last poll (possibly by another process)."""

    after_seq: int
    events: list[StoredEvent]
    corrupt: list[int]
    last_seq: int
    _: KW_ONLY
    token: int


@dataclass
class LogPage(Message):
    """Lines of the event log fetched on demand."""

    start_seq: int
    end_seq: int
    lines: list[LogLine]
    corrupt: list[int]
    _: KW_ONLY
    token: int


@dataclass
class EventLoaded(Message):
    """The full event behind the selected log line."""

    event: StoredEvent | None
    seq: int
    error: str | None = None


@dataclass
class InvocationsChanged(Message):
    """The session's invocations, re-read after an event started or ended one."""

    invocations: list[InvocationSummary]
    _: KW_ONLY
    token: int


@dataclass
class LivenessChecked(Message):
    """Whether an invocation that looks mid-run really stopped (engine.liveness)."""

    invocation_id: str
    interrupted: bool
    in_doubt: tuple[str, ...]
    _: KW_ONLY
    token: int
    queued_for: str | None = None
    """The app whose worker will run its turn (a turn request waits), or None."""
    held: str | None = None
    """Why the workers hold its stranded turn (nodes in doubt wait for an acknowledged re-drive), or None."""


# ------------------------------------------------------------------ replay
@dataclass
class HistoryRead(Message):
    """The whole history, read by a worker, and its replay already at ``position``
    (the fold to there, which lays the checkpoints, ran off the UI thread)."""

    session: Session
    events: list[StoredEvent]
    corrupt: list[int]
    replay: Replay
    position: int


@dataclass
class HistoryProgress(Message):
    """``done`` of ``total`` events read so far (high-rate: the latest replaces a queued one)."""

    done: int
    total: int

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, HistoryProgress)


@dataclass
class HistoryFailed(Message):
    """The replay's history could not be read; ``text`` is the one-line reason."""

    text: str


# ------------------------------------------------------------------ answering
@dataclass
class AnswerLoaded(Message):
    """The answer editor's invocation, read from the store (None: ``error`` says why)."""

    proj: Projection | None
    error: str | None = None


@dataclass
class PreviewReady(Message):
    """A dry run of the editor's answers (``generation``: the text it was computed for)."""

    generation: int
    preview: Preview


@dataclass
class HealthChecked(Message):
    """An invocation's health, read before a re-drive or cancel is confirmed."""

    kind: str
    health: InvocationHealth | None
    proj: Projection | None
    error: str | None


@dataclass
class WriteEvent(Message):
    """A write started here appended ``event`` (its ``count``-th, at ``seq``): the
    tree can move. The session screen applies it when it directly follows what it
    shows; else it reads what is new from the store. Never replaced by a newer one:
    each carries an event the screen would otherwise have to read back."""

    job: WriteJob
    event: Event
    count: int
    seq: int | None = None


@dataclass
class WriteDone(Message):
    """A write settled: what it did (``draft``: the editor's text, for a refusal)."""

    job: WriteJob
    outcome: Outcome
    draft: AnswerDraft | None


# ------------------------------------------------------------------ bulk answers (console/screens/bulk_answer.py)
@dataclass
class BulkPlanned(Message):
    """The dry run of the answer written (``text``) is done."""

    text: str
    plan: BulkPlan


@dataclass
class BulkPlanFailed(Message):
    """The dry run could not be made (a store error)."""

    text: str
    error: str


@dataclass
class BulkItemDone(Message):
    """One invocation of a running bulk answer settled."""

    result: ItemResult
    done: int
    total: int


@dataclass
class BulkFinished(Message):
    """The bulk answer is over: every item's result."""

    result: BulkResult
@dataclass
class SummaryLoaded(Message):
    """The home summary line's counts (engine.home), read in a worker."""

    summary: HomeSummary


@dataclass
class AuditLoaded(Message):
    """A page of audit records for the audit view (``append``: after the rows already shown)."""

    query: AuditQuery
    rows: list[AuditRecord]
    next_cursor: str | None
    append: bool
