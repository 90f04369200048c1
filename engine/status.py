"""The status vocabulary: one enum per kind of status, beside :class:`NodeStatus`.

* :class:`~engine.models.NodeStatus` -- one node run, computed by
  :mod:`engine.projection` (upper case: ``WAITING``);
* :class:`InvocationState` -- one invocation as the store's index keeps it
  (lower case: ``waiting``; :data:`engine.store.base.InvocationState` is the
  same set as a ``Literal`` for the store rows);
* :class:`SessionStatus` -- one session as the store's summary keeps it (an
  invocation state, or ``new`` before the first invocation);
* :class:`DisplayStatus` -- what a surface shows: a node status, ``NEW``, and
  the two states only :mod:`engine.liveness` can tell, ``INTERRUPTED`` (the
  projection says RUNNING or PENDING, no live process holds the lease) and
  ``IN DOUBT`` (a leaf of an interrupted invocation that started and recorded
  no end: its side effects may have happened), and ``QUEUED`` (the
  projection says RUNNING or PENDING, no live process holds it, and a turn
  request waits for a worker of the app);
* :data:`SESSION_FILTERS` -- the values a session list can be filtered by
  (every session status, ``interrupted`` and ``queued``, which are not stored).

Icons, colours (``status--<word>`` component classes), filter cycles and
command suggestions derive from these; nothing else spells a status.
"""

from __future__ import annotations

import enum
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the CLI declares its options with these enums: no pydantic for that
    from .models import NodeStatus


class InvocationState(enum.StrEnum):
    """An invocation's state in the store's index (lower case, as stored)."""

    RUNNING = "running"
    """A turn started and has not recorded how it ended (live or interrupted: liveness tells)."""
    WAITING = "waiting"
    """The root ended WAITING: open interrupts wait for an answer."""
    COMPLETED = "completed"
    FAILED = "failed"
    CANCELLED = "cancelled"


class SessionStatus(enum.StrEnum):
    """A session's status in the store's summary: its latest invocation's state, or ``new``."""

    NEW = "new"
    """No invocation yet."""
    RUNNING = "running"
    WAITING = "waiting"
    COMPLETED = "completed"
    FAILED = "failed"
    CANCELLED = "cancelled"


class DisplayStatus(enum.StrEnum):
    """The word a surface shows for a run, an invocation or a session (upper case)."""

    PENDING = "PENDING"
    """Node status: scheduled (or re-executing after answers), not started."""
    RUNNING = "RUNNING"
    """Node status, or a running invocation/session whose process liveness has not judged dead."""
    WAITING = "WAITING"
    """Open interrupts wait for an answer."""
    COMPLETED = "COMPLETED"
    FAILED = "FAILED"
    CANCELLED = "CANCELLED"
    NEW = "NEW"
    """A session without an invocation yet."""
    INTERRUPTED = "INTERRUPTED"
    """Stopped mid-run: the projection says RUNNING/PENDING, no live process holds it."""
    IN_DOUBT = "IN DOUBT"
    """A leaf of an interrupted invocation with a start record and no end record."""
    QUEUED = "QUEUED"
    """Mid-run by the projection, no live process, and a turn request waits for a worker of its app."""

    @classmethod
    def of(cls, status: NodeStatus | InvocationState | SessionStatus | str) -> DisplayStatus:
        """The display word of a stored or projected status (``waiting`` -> ``WAITING``)."""
        return cls(str(status).upper())

    @property
    def css_class(self) -> str:
        """The component class that colours it (``status--waiting``); IN DOUBT
        shares INTERRUPTED's colour (it is a part of an interrupted invocation)."""
        word = DisplayStatus.INTERRUPTED if self is DisplayStatus.IN_DOUBT else self
        return "status--" + word.value.lower()



status_word = str.__str__
"""The word of a status (``NodeStatus.WAITING`` -> ``"WAITING"``; any str enum's
member, or a plain str): what ``.value`` gives, without the enum's descriptor
call -- a long tree's rows and a long session's diff ask it once per run."""


INTERRUPTED_FILTER = "interrupted"
"""The session filter for interrupted sessions (stored as ``running``; liveness decides)."""

QUEUED_FILTER = "queued"
"""The session filter for sessions with a turn queued for a worker (stored as ``running`` too)."""

LIVENESS_FILTERS: tuple[str, ...] = (INTERRUPTED_FILTER, QUEUED_FILTER)
"""The filters liveness decides: the store lists ``running`` sessions, liveness keeps the matching ones."""

SESSION_FILTERS: tuple[str, ...] = (*(s.value for s in SessionStatus), *LIVENESS_FILTERS)
"""Every value ``--status`` / ``status=`` accepts (plain strings: click shows an enum member's name);
``queued`` has no key in the sessions list's cycle (``:sessions status=queued``)."""

def stored_filter(status: str | None) -> str | None:
    """The stored status a session list asks the store for, for a filter value:
    ``running`` for ``interrupted``; none for ``queued`` (an answer left to a worker
    leaves its session ``waiting`` in the index: liveness keeps the queued rows of
    the page); the value itself otherwise."""
    if status == INTERRUPTED_FILTER:
        return SessionStatus.RUNNING.value
    return None if status == QUEUED_FILTER else status


STATUS_CYCLE: tuple[str | None, ...] = (
    None,
    SessionStatus.WAITING.value,
    SessionStatus.RUNNING.value,
    SessionStatus.FAILED.value,
    SessionStatus.COMPLETED.value,
    SessionStatus.CANCELLED.value,
    INTERRUPTED_FILTER,
)
"""The sessions list's status filter keys and cycle, in this order (None: all)."""
