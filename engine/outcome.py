"""What one operator write did: :class:`Outcome` and its :class:`Step` s.

Below both :mod:`engine.operations` (a write run in this process) and
:mod:`engine.handoff` (a write left to a worker), which return the same
``Outcome``; ``engine.operations`` re-exports every name here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from .errors import AlreadyResolvedError, ConflictError, HitlError, InvocationBusyError, LeaseLostError

if TYPE_CHECKING:
    from collections.abc import Callable

    from .models import Event, NodeStatus, StoredEvent
    from .projection import Change, Projection
    from .replay import DiffRow

Kind = Literal["answer", "redrive", "cancel", "start"]
ErrorKind = Literal["rejected", "conflict", "failed", "interrupted"]

CONFLICTS = (AlreadyResolvedError, ConflictError, InvocationBusyError, LeaseLostError)
"""Refusals caused by another writer (reload and re-apply may succeed)."""

@dataclass
class Step:
    """One event a write persisted, as folded into :attr:`Outcome.after`."""

    event: Event
    change: Change
    """What the event changed (:meth:`engine.projection.Projection.apply`)."""
    projection: Projection
    """The invocation after the event (the same object for every step: read it now)."""
    seq: int | None = None
    """The event's position in the session's log (None where the write does not tell it: a cancel)."""


@dataclass
class Outcome:
    """What one write did, or why it did nothing."""

    kind: Kind
    session_id: str
    invocation_id: str | None
    """The invocation written to (for an answer without one: the Runner's choice;
    None when refused before it chose)."""
    operator: str | None = None
    reason: str | None = None
    answered: list[str] = field(default_factory=list)
    """The interrupt ids an answer sent (``[]`` for re-drive and cancel)."""
    written: list[Event] = field(default_factory=list)
    """The events this write appended, in order (``[]``: nothing was written)."""
    before: Projection | None = None
    """The invocation as the write found it (None: refused before it was loaded)."""
    after: Projection | None = None
    """``before`` with :attr:`written` folded in."""
    state_before: dict[str, Any] | None = None
    """The session state before the write (only with ``session_state=True``)."""
    state_after: dict[str, Any] | None = None
    rows: list[DiffRow] = field(default_factory=list)
    """Before/after rows (:func:`engine.replay.diff`, the session state included)
    when something was written and ``session_state=True``."""
    error: Exception | None = None
    """The refusal or failure, as raised by the engine."""
    error_kind: ErrorKind | None = None
    """``rejected`` / ``conflict`` (nothing written), ``failed`` (a node failed:
    written, the invocation is FAILED) or ``interrupted`` (stopped mid-run)."""
    approval: str | None = None
    """An answer under a multi-approver rule that did not meet it yet: its approval
    was recorded (``written`` holds the ``approve`` event), e.g. ``1 of 2 approvals``."""
    queued: str | None = None
    """The turn was left to a worker (:mod:`engine.routing`): the line saying so, or that
    no worker of the app is alive. None: it ran here (or nothing was left to run)."""
    followed: str | None = None
    """A turn left to a worker, followed: ``settled``, ``timeout`` (still queued or running:
    nothing failed) or why the turn is held. None: not followed (``wait=False``)."""
    notice: str | None = None
    """A turn left to a worker while no worker of its app is alive: the line saying the
    turn waits for one (also :attr:`queued`'s text then). None: a worker serves the app."""

    def fold(self, stored: StoredEvent, on_step: Callable[[Step], None] | None) -> None:
        """Fold one event this write persisted into :attr:`after` and :attr:`written`,
        handing the step to ``on_step``: a write's own events and a followed worker's alike."""
        assert self.after is not None
        change = self.after.apply(stored.event, stored.seq)
        self.written.append(stored.event)
        if on_step is not None:
            on_step(Step(stored.event, change, self.after, stored.seq))

    @property
    def wrote(self) -> bool:
        return bool(self.written)

    @property
    def ran(self) -> list[str]:
        """The node paths that started running in this write, in order."""
        return [e.path for e in self.written if e.kind == "start" and e.path]

    @property
    def status_before(self) -> NodeStatus | None:
        if self.before is None or self.invocation_id is None:
            return None
        return self.before.invocation_status(self.invocation_id)

    @property
    def status_after(self) -> NodeStatus | None:
        if not self.written or self.after is None or self.invocation_id is None:
            return None
        return self.after.invocation_status(self.invocation_id)

    @property
    def still_open(self) -> list[str]:
        """The invocation's open interrupt ids after the write."""
        proj = self.after if self.written else self.before
        if proj is None or self.invocation_id is None:
            return []
        return [i.id for i in proj.open_interrupts(self.invocation_id)]

    @property
    def refusal(self) -> str | None:
        """Why nothing was written (one line ending "nothing was written"), or None."""
        if self.error is None or self.written:
            return None
        return nothing_written(one_line(self.error))

    def raise_error(self) -> None:
        """Raise :attr:`error` if there is one (the CLI: exit 1 with its line)."""
        if self.error is not None:
            raise self.error


def one_line(exc: BaseException, limit: int | None = None) -> str:
    """What an operator sees for an error: its message on one line (whitespace folded),
    never a traceback; an exception that is not the engine's own is named by its type
    (``KeyError: 'x'``); cut at ``limit`` characters when given (a toast, a pane)."""
    text = str(exc) if isinstance(exc, HitlError) else f"{type(exc).__name__}: {exc}"
    text = " ".join(text.split())
    return text if limit is None or len(text) <= limit else text[: limit - 1] + "…"


def nothing_written(text: str) -> str:
    """A refusal's line, saying that nothing was written (once)."""
    return text if "nothing was written" in text else f"{text} -- nothing was written"


def refused(outcome: Outcome, exc: Exception) -> Outcome:
    """``outcome`` refused with ``exc`` (nothing written): a conflict when another writer caused it."""
    outcome.error = exc
    outcome.error_kind = "conflict" if isinstance(exc, CONFLICTS) else "rejected"
    return outcome
