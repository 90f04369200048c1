"""Replay: a cursor over a session's history with the projected state at every
position, markers that explain each event, and diffs between positions.

Positions count applied events: position 0 is before the first event, position
``k`` is the state after event ``k``. The state is computed by the one
projection (``engine.projection``), incrementally: stepping forward applies one
event; stepping back or jumping restarts from the nearest checkpoint (a cheap
copy-on-write fork kept every ``checkpoint_every`` events) and applies at most
that many events. Nothing here writes: replay is read-only by construction.
"""

from __future__ import annotations

import bisect
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from .markers import Marker, markers_for  # noqa: F401 (re-exported: the replay's markers, defined apart)
from .models import Event, StoredEvent
from .projection import Change, Projection
from .projection_records import Interrupt, NodeRun
from .status import status_word


@dataclass
class DiffRow:
    area: str
    """node · interrupt · state"""
    key: str
    before: Any
    after: Any


@dataclass
class Step:
    """The event at a position and what it did."""

    position: int
    seq: int
    event: Event
    change: Change
    markers: list[Marker] = field(default_factory=list)


OPERATOR_ACTIONS = ("response", "redrive", "cancel")
RECENT = 12
"""States :meth:`Replay.keep` holds (each shares its records with the cursor's)."""
KEEP_BEHIND = 4
"""States a jump keeps just before where it lands (the first steps back from it)."""


class Replay:
    """Cursor over ``events`` (``StoredEvent`` or ``(seq, Event)`` pairs)."""

    def __init__(self, events: Sequence[StoredEvent] | Sequence[tuple[int, Event]], *, checkpoint_every: int = 1024):
        self.seqs: list[int] = []
        self.events: list[Event] = []
        for item in events:
            seq, ev = (item.seq, item.event) if isinstance(item, StoredEvent) else item
            self.seqs.append(seq)
            self.events.append(ev)
        self.checkpoint_every = max(1, checkpoint_every)
        self._checkpoints: dict[int, Projection] = {0: Projection()}
        self._recent: dict[int, Projection] = {}
        """States kept around where the cursor stood (:meth:`keep`): a step back
        starts from one of them rather than from the checkpoint before it."""
        self._checkpoint_positions: list[int] = [0]
        self.actions: list[int] = [i + 1 for i, e in enumerate(self.events) if e.kind in OPERATOR_ACTIONS]
        """Positions of operator actions (FR messages, re-drives, cancels)."""
        self.position = 0
        self.projection = Projection()
        self.last_step: Step | None = None

    def __len__(self) -> int:
        return len(self.events)

    def extend(self, events: Iterable[StoredEvent]) -> None:
        """Append newly stored events (a live session)."""
        for se in events:
            self.seqs.append(se.seq)
            self.events.append(se.event)
            if se.event.kind in OPERATOR_ACTIONS:
                self.actions.append(len(self.events))

    # ----------------------------------------------------------- movement
    def _advance(self) -> Change:
        """Apply the next event; keep a checkpoint every ``checkpoint_every``."""
        i = self.position
        change = self.projection.apply(self.events[i], self.seqs[i])
        self.position = i + 1
        if self.position % self.checkpoint_every == 0 and self.position not in self._checkpoints:
            self._checkpoints[self.position] = self.projection.fork()
            bisect.insort(self._checkpoint_positions, self.position)
        return change

    def _apply_next(self) -> Step:
        change = self._advance()
        ev = self.events[self.position - 1]
        step = Step(self.position, self.seqs[self.position - 1], ev, change, markers_for(ev, change, self.projection))
        self.last_step = step
        return step

    def seek(self, position: int) -> Step | None:
        """Move to ``position`` (clamped to 0..len). Returns the step that led there."""
        position = max(0, min(position, len(self.events)))
        if position == self.position:
            return self.last_step
        if position == 0:
            self.projection = Projection()
            self.position = 0
            self.last_step = None
            return None
        target_base = position - 1
        if not (self.position <= target_base and target_base - self.position < self.checkpoint_every):
            i = bisect.bisect_right(self._checkpoint_positions, target_base) - 1
            base = self._checkpoint_positions[i]
            near = max((p for p in self._recent if base < p <= target_base), default=base)
            self.projection = (self._recent[near] if near != base else self._checkpoints[base]).fork()
            self.position = near
            behind = max(near + 1, target_base - KEEP_BEHIND + 1)
            while self.position < target_base:
                self._advance()
                if self.position >= behind:  # a jump folded its way here: steps back from it start there
                    self.keep(self.position, self.projection.fork())
        while self.position < position - 1:
            self._advance()
        return self._apply_next()

    def keep(self, position: int, projection: Projection) -> None:
        """``projection`` is the state after ``position`` events, never to be changed
        (a fork the caller made): keep it, with the ``RECENT - 1`` nearest kept."""
        self._recent[position] = projection
        while len(self._recent) > RECENT:  # the one farthest from here goes
            del self._recent[max(self._recent, key=lambda p: abs(p - position))]

    def restore(self, position: int) -> bool:
        """Stand at ``position`` from the state kept there, without applying (so
        without a step to return); False when none is kept (:meth:`seek` then)."""
        kept = self._recent.get(position)
        if position == self.position:
            return True
        if kept is None:
            return False
        self.projection, self.position, self.last_step = kept.fork(), position, None
        return True

    def step(self, delta: int = 1) -> Step | None:
        return self.seek(self.position + delta)

    def next_action(self) -> Step | None:
        i = bisect.bisect_right(self.actions, self.position)
        return self.seek(self.actions[i]) if i < len(self.actions) else self.last_step

    def prev_action(self) -> Step | None:
        i = bisect.bisect_left(self.actions, self.position) - 1
        return self.seek(self.actions[i]) if i >= 0 else self.last_step

    def projection_at(self, position: int) -> Projection:
        """A copy of the state after ``position`` events (the cursor stays put)."""
        here = self.position
        self.seek(position)
        snap = self.projection.fork()
        self.seek(here)
        return snap


class Rows(Protocol):
    """What :func:`diff` reads of a projection (or of a slice of one: engine.views)."""

    @property
    def nodes(self) -> Mapping[tuple[str, str], NodeRun]: ...

    @property
    def interrupts(self) -> Mapping[tuple[str, str], Interrupt]: ...

    @property
    def state(self) -> Mapping[str, Any]: ...


def diff(before: Rows, after: Rows) -> list[DiffRow]:
    """What changed between two projections: node runs (status, output, new
    runs), interrupts (opened, answered, cancelled) and session state keys."""
    rows: list[DiffRow] = []
    # (keys are (invocation, path) pairs: sorted as they are)
    word = status_word
    for key in sorted(set(before.nodes) | set(after.nodes)):
        a, b = before.nodes.get(key), after.nodes.get(key)
        label = key[1]
        if a is None and b is not None:
            rows.append(DiffRow("node", label, None, f"new run {word(b.status)}"))
            continue
        if b is None and a is not None:
            rows.append(DiffRow("node", label, word(a.status), None))
            continue
        assert a is not None and b is not None
        if a.status is not b.status:
            rows.append(DiffRow("node", f"{label} status", word(a.status), word(b.status)))
        if a.output != b.output:
            rows.append(DiffRow("node", f"{label} output", a.output, b.output))
        if a.starts != b.starts:
            rows.append(DiffRow("node", f"{label} executions", a.starts, b.starts))
    for key in sorted(set(before.interrupts) | set(after.interrupts)):
        ia, ib = before.interrupts.get(key), after.interrupts.get(key)
        sa = _itr_state(ia)
        sb = _itr_state(ib)
        if sa != sb:
            rows.append(DiffRow("interrupt", key[1], sa, sb))
    for k in sorted(set(before.state) | set(after.state)):
        if before.state.get(k) != after.state.get(k):
            rows.append(DiffRow("state", k, before.state.get(k), after.state.get(k)))
    return rows


_ANSWER_JSON = json.JSONEncoder(default=str, ensure_ascii=False).encode
"""``json.dumps(value, default=str, ensure_ascii=False)`` without an encoder built per answer."""


def _itr_state(itr: Any) -> str | None:
    if itr is None:
        return None
    if itr.resolved:
        return f"answered: {_ANSWER_JSON(itr.response)}"
    if itr.cancelled:
        return "cancelled"
    return "open"
