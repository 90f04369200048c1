"""Messages that carry store results from workers back to screens.

Workers (``@work``) do every store read; they never touch widgets. What they
read comes back as one of these messages, handled on the UI side, so the event
loop never waits on the store and each handler sees a consistent result.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from textual.message import Message

from engine.models import Session, StoredEvent
from engine.projection import Projection
from engine.store.base import InterruptRecord, InvocationSummary, SessionSummary

from .widgets.event_log import LogLine


class StoreFailed(Message):
    """A store read failed; ``text`` is the one-line reason shown to the operator."""

    def __init__(self, text: str, *, fatal: bool = False) -> None:
        super().__init__()
        self.text = text
        self.fatal = fatal
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


class SessionsLoaded(Message):
    """A page of the sessions list (``append``: after the rows already shown)."""

    def __init__(
        self,
        query: SessionQuery,
        rows: list[SessionSummary],
        next_cursor: str | None,
        *,
        append: bool,
        stopped: dict[str, tuple[bool, bool]] | None = None,
    ) -> None:
        super().__init__()
        self.stopped = stopped or {}
        """Session id -> (an invocation stopped mid-run, some node of it is in doubt) (engine.liveness)."""
        self.query = query
        self.rows = rows
        self.next_cursor = next_cursor
        self.append = append


class InboxLoaded(Message):
    """A page of open interrupts, oldest first."""

    def __init__(
        self,
        rows: list[InterruptRecord],
        next_cursor: str | None,
        *,
        append: bool,
        stopped: dict[tuple[str, str], tuple[bool, bool]] | None = None,
    ) -> None:
        super().__init__()
        self.rows = rows
        self.next_cursor = next_cursor
        self.append = append
        self.stopped = stopped or {}
        """(session, invocation) -> (stopped mid-run, a node in doubt), from engine.liveness."""


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


class InvocationLoaded(Message):
    def __init__(self, view: InvocationView, *, token: int) -> None:
        super().__init__()
        self.view = view
        self.token = token


class HistoryLoaded(Message):
    """The full projection of the shown invocation (all loop iterations)."""

    def __init__(self, invocation_id: str, projection: Projection, tree_seq: int, corrupt: list[int], *, token: int) -> None:
        super().__init__()
        self.invocation_id = invocation_id
        self.projection = projection
        self.tree_seq = tree_seq
        self.corrupt = corrupt
        self.token = token


class LiveEvents(Message):
    """Events appended since the last poll (possibly by another process)."""

    def __init__(self, after_seq: int, events: list[StoredEvent], corrupt: list[int], last_seq: int, *, token: int) -> None:
        super().__init__()
        self.after_seq = after_seq
        self.events = events
        self.corrupt = corrupt
        self.last_seq = last_seq
        self.token = token


class LogPage(Message):
    """Lines of the event log fetched on demand."""

    def __init__(self, start_seq: int, end_seq: int, lines: list[LogLine], corrupt: list[int], *, token: int) -> None:
        super().__init__()
        self.start_seq = start_seq
        self.end_seq = end_seq
        self.lines = lines
        self.corrupt = corrupt
        self.token = token


class EventLoaded(Message):
    """The full event behind the selected log line."""

    def __init__(self, event: StoredEvent | None, seq: int, error: str | None = None) -> None:
        super().__init__()
        self.event = event
        self.seq = seq
        self.error = error


class InvocationsChanged(Message):
    def __init__(self, invocations: list[InvocationSummary], *, token: int) -> None:
        super().__init__()
        self.invocations = invocations
        self.token = token


class LivenessChecked(Message):
    """Whether an invocation that looks mid-run really stopped (engine.liveness)."""

    def __init__(self, invocation_id: str, interrupted: bool, in_doubt: tuple[str, ...], *, token: int) -> None:
        super().__init__()
        self.invocation_id = invocation_id
        self.interrupted = interrupted
        self.in_doubt = in_doubt
        self.token = token
