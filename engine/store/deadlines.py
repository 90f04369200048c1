"""Deadline timers: one row per step of an interrupt's deadline rule, fired once.

The rule is stored in the interrupt's call (``args["deadline"]``,
:mod:`engine.deadlines`); the SQL stores expand it into timer rows *in the
same transaction* that writes the interrupt's index row (a trigger on the
``interrupts`` table: every write path -- appends, imports, bulk loads --
gets them, and no append statement changed). A row is keyed by the
interrupt's raising (session, invocation, interrupt id, raised seq) and the
step's index, with its due time (``raised_at + after``), and is --

* ``pending`` -- not fired; while a sweeper holds its claim (``claimed_by``
  until ``claimed_until``: compare-and-swap, like the notification ledger) no
  other sweeper tries it;
* ``fired`` -- done (``outcome`` says what it did), with its audit row written
  in the same transaction as this status (so a step is audited once);
* ``void`` -- the interrupt was answered, cancelled or asked again first.

A sweeper killed between a step's effect and its ``fired`` record leaves the
claim to lapse; the next sweeper sees what the effect left (an answered
interrupt is not answered again, an owner already assigned is not assigned
again) and records it. :func:`timers` gives the backend's implementation.
"""

from __future__ import annotations

import json
from typing import Any, Literal, Protocol

from pydantic import BaseModel

from .base import AuditRecord

TimerStatus = Literal["pending", "fired", "void"]


class Timer(BaseModel):
    """One step of one raising of an interrupt's deadline rule."""

    session_id: str
    invocation_id: str
    interrupt_id: str
    raised_seq: int
    step: int
    due_at: float
    app_name: str
    path: str
    timer: dict[str, Any]
    """The step as stored (``{"after", "do", ...}``, :func:`engine.deadlines.build`)."""
    status: TimerStatus = "pending"
    claimed_by: str | None = None
    claimed_until: float | None = None
    fired_at: float | None = None
    outcome: str | None = None
    open: bool = True
    """(read with the interrupt) it is still open at the raising this timer belongs to."""
    rule: dict[str, Any] | None = None
    """(read with the interrupt) the whole rule (its name, deadline), for the reason."""

    @property
    def key(self) -> tuple[str, str, str, int, int]:
        return (self.session_id, self.invocation_id, self.interrupt_id, self.raised_seq, self.step)

    @property
    def name(self) -> str:
        """``SESSION:INVOCATION:ID:SEQ:STEP``: the notification key's tail."""
        return ":".join(str(k) for k in self.key)


COLUMNS = ("session_id, invocation_id, interrupt_id, raised_seq, step, due_at, app_name, path, timer, status, "
           "claimed_by, claimed_until, fired_at, outcome")


def from_row(row: Any, with_interrupt: bool = False) -> Timer:
    r = tuple(row)
    names = [c.strip() for c in COLUMNS.split(",")]
    data = dict(zip(names, r[: len(names)], strict=True))
    data["timer"] = _json(data["timer"])
    if with_interrupt:
        status, raised_seq, args = r[len(names):len(names) + 3]
        data["open"] = status == "open" and raised_seq == data["raised_seq"]
        rule = _json(args).get("deadline")
        data["rule"] = rule if isinstance(rule, dict) else None
    return Timer.model_construct(**data)


def _json(text: Any) -> dict[str, Any]:
    try:
        out = json.loads(text) if isinstance(text, str) else text
    except ValueError:
        return {}
    return out if isinstance(out, dict) else {}


class Timers(Protocol):
    async def due(self, now: float, limit: int = 200) -> list[Timer]:
        """Pending timers due by ``now`` whose claim is free (or lapsed), soonest
        first, each with its interrupt's state (``open``) and rule."""
        ...

    async def claim(self, t: Timer, owner: str, ttl: float, now: float) -> bool:
        """Claim a pending timer for ``owner`` until ``now + ttl`` unless another holds it."""
        ...

    async def finish(self, t: Timer, owner: str, status: TimerStatus, outcome: str, now: float,
                     audit: AuditRecord | None = None) -> bool:
        """Record a claimed timer ``fired`` (with ``audit``, in the same transaction)
        or ``void``; False when ``owner`` no longer held the claim (nothing written)."""
        ...

    async def listing(self, *, session_id: str | None = None, status: str | None = None, since: float | None = None,
                      limit: int = 1000) -> list[Timer]:
        """Timers (of a session; of a status; fired at or after ``since``), due order."""
        ...

    async def due_of(self, session_ids: list[str]) -> dict[str, float]:
        """Session id -> when the soonest deadline of its open interrupts passes (those with one)."""
        ...


def soonest(rows: list[tuple[str, float, Any]]) -> dict[str, float]:
    """(session id, raised_at, call args) of open raisings with a rule -> each session's soonest deadline."""
    from ..deadlines import due_at

    out: dict[str, float] = {}
    for sid, raised_at, args in rows:
        due = due_at(_json(args), raised_at)
        if due is not None and (sid not in out or due < out[sid]):
            out[sid] = due
    return out


def expand(session_id: str, invocation_id: str, interrupt_id: str, raised_seq: int, raised_at: float, app_name: str,
           path: str, args: dict[str, Any]) -> list[Timer]:
    """The timer rows of one raising (what the SQL triggers insert; the in-memory store's rows)."""
    rule = args.get("deadline") if isinstance(args, dict) else None
    steps = rule.get("timers") if isinstance(rule, dict) else None
    if not isinstance(steps, list):
        return []
    out = []
    for i, step in enumerate(steps):
        if not isinstance(step, dict):
            continue
        try:
            after = float(step.get("after", 0) or 0)
        except (TypeError, ValueError):
            after = 0.0
        out.append(Timer(session_id=session_id, invocation_id=invocation_id, interrupt_id=interrupt_id,
                         raised_seq=raised_seq, step=i, due_at=raised_at + after, app_name=app_name, path=path,
                         timer=step))
    return out


class MemoryTimers:
    """The in-memory store's timers: expanded from its interrupt index on read."""

    def __init__(self, store: Any) -> None:
        self.store = store
        self.rows: dict[tuple[str, str, str, int, int], Timer] = store._deadline_rows

    def _refresh(self) -> dict[tuple[str, str, str], Any]:
        current = {}
        for sid, d in self.store._sessions.items():
            for r in d.interrupts.values():
                current[(sid, r.invocation_id, r.interrupt_id)] = r
                for t in expand(sid, r.invocation_id, r.interrupt_id, r.raised_seq, r.raised_at, r.app_name,
                                r.path, r.args):  # each raising's rows, as the SQL stores write them when it opens
                    self.rows.setdefault(t.key, t)
        return current

    def _with(self, t: Timer, current: dict[tuple[str, str, str], Any]) -> Timer:
        r = current.get(t.key[:3])
        rule = r.args.get("deadline") if r is not None else None
        return t.model_copy(update={"open": r is not None and r.status == "open" and r.raised_seq == t.raised_seq,
                                    "rule": rule if isinstance(rule, dict) else None})

    async def due(self, now: float, limit: int = 200) -> list[Timer]:
        current = self._refresh()
        rows = [t for t in self.rows.values() if t.status == "pending" and t.due_at <= now
                and (t.claimed_by is None or (t.claimed_until or 0) <= now)]
        return [self._with(t, current) for t in sorted(rows, key=lambda t: (t.due_at, t.key))[:limit]]

    async def claim(self, t: Timer, owner: str, ttl: float, now: float) -> bool:
        row = self.rows.get(t.key)
        if row is None or row.status != "pending" or (row.claimed_by is not None and (row.claimed_until or 0) > now):
            return False
        row.claimed_by, row.claimed_until = owner, now + ttl
        return True

    async def finish(self, t: Timer, owner: str, status: TimerStatus, outcome: str, now: float,
                     audit: AuditRecord | None = None) -> bool:
        row = self.rows.get(t.key)
        if row is None or row.claimed_by != owner or row.status != "pending":
            return False
        row.status, row.outcome, row.fired_at = status, outcome, now
        row.claimed_by = row.claimed_until = None
        if audit is not None:
            self.store._add_audit(audit)
        return True

    async def due_of(self, session_ids: list[str]) -> dict[str, float]:
        wanted = set(session_ids)
        return soonest([(sid, r.raised_at, r.args) for sid, d in self.store._sessions.items() if sid in wanted
                        for r in d.interrupts.values() if r.status == "open"])

    async def listing(self, *, session_id: str | None = None, status: str | None = None, since: float | None = None,
                      limit: int = 1000) -> list[Timer]:
        self._refresh()
        rows = [t for t in self.rows.values() if (session_id is None or t.session_id == session_id)
                and (status is None or t.status == status) and (since is None or (t.fired_at or 0) >= since)]
        return sorted(rows, key=lambda t: (t.due_at, t.key))[:limit]


def timers(store: Any) -> Timers:
    """The timers of ``store``'s backend (each store builds its own: no backend is imported here)."""
    timers_of: Timers = store.deadline_timers()
    return timers_of
