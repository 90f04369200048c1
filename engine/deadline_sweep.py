"""The deadline sweep: fire every due timer of every interrupt, exactly once.

Run by every ``hitl worker`` (whatever apps it serves: at start, then every
heartbeat) and by ``hitl notify`` (every pass), so a deadline fires within one
sweep interval after it passes, and, when no process ran at that time, as soon
as one starts. One pass (:meth:`DeadlineSweep.run_once`):

1. read the pending timers due by now (:meth:`engine.store.deadlines.Timers.due`,
   one indexed query, each with its interrupt's state);
2. claim each (compare-and-swap: of racing sweepers exactly one gets it; a
   sweeper killed holding one loses it after ``claim_ttl``);
3. do what it says through the operations every surface uses --
   ``answer``: :func:`engine.handoff.queue_answer` (validated like any answer,
   appended under the invocation's lease with its completion records and audit
   row, the turn left to a worker of the app: its in-doubt checks apply), as
   operator ``deadline`` with a reason naming the rule; ``fail``:
   :func:`engine.operator_actions.fail_waiting` (the waiting node FAILED with
   the named error, under the lease); ``assign``: :func:`engine.ownership.assign`
   to the group; ``remind``/``notify``: nothing to write but the record;
4. record it ``fired`` with its audit row in one transaction (or ``void`` when
   the interrupt was answered, cancelled or asked again first).

Exactly once: the claim keeps two sweepers apart; a sweeper killed after the
effect and before the record leaves a claim that lapses, and the next one finds
the effect done (the interrupt answered: nothing is answered twice -- the
store refuses a second answer -- and the owner already the group) and records
it without doing it again. Notifications of ``remind``/``notify``/``assign``
steps are derived from the fired rows by :mod:`engine.notify.facts` and sent
by the notification sender, once per channel, with its retries.

Time is the sweep's ``clock`` (tests pass one; nothing sleeps to wait).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .deadlines import OPERATOR, describe
from .errors import AlreadyResolvedError, HitlError
from .permissions import Policy, current_policy
from .store.base import AuditRecord
from .store.capabilities import WorkerQueue, capability
from .store.deadlines import Timer, timers

if TYPE_CHECKING:
    from .store.base import SessionStore

log = logging.getLogger(__name__)

_RULE_DECIDES = Policy()
"""The policy a default answer is checked under: none. Whoever owns the interrupt,
whoever ``[[answer]]`` allows and however many approvals it asks for, the rule
that set the deadline decided the outcome (so the answer is forced, and is one
answer, not one approval)."""

VOID = "the interrupt was answered, cancelled or asked again before it was due"
"""The outcome of a timer whose interrupt closed before it fired."""

CLAIM_TTL = 60.0
"""Seconds a claimed timer stays a sweeper's: one killed mid-step is replaced after it."""


@dataclass
class SweepPass:
    """What one pass did: (timer name, outcome) per timer it settled."""

    fired: list[tuple[str, str]] = field(default_factory=list)
    void: list[tuple[str, str]] = field(default_factory=list)
    retry: list[tuple[str, str]] = field(default_factory=list)
    """Timers whose step was refused for now (a busy invocation): tried again after their claim lapses."""


class DeadlineSweep:
    """Fires due deadline timers of ``store`` (see the module docstring)."""

    def __init__(self, store: SessionStore, *, owner: str | None = None, claim_ttl: float = CLAIM_TTL,
                 clock: Callable[[], float] = time.time, policy: Any = None, batch: int = 200, registry: Any = None,
                 on_fired: Callable[[Timer, str, str], None] | None = None) -> None:
        from .owners import new_owner

        self.store = store
        self.owner = owner or new_owner()
        self.claim_ttl = claim_ttl
        self.clock = clock
        self.policy = policy
        """Groups (:mod:`engine.permissions`) an ``assign`` step checks its group against."""
        self.batch = batch
        self.registry = registry
        """App code (:class:`engine.apps.AppRegistry`) to run a default answer's turn here on a
        store that keeps no turn requests (the in-memory one); elsewhere a worker runs it."""
        self.timers = timers(store)
        self.on_fired = on_fired

    async def run_once(self) -> SweepPass:
        """Fire what is due now, in due order, until nothing due is left."""
        done = SweepPass()
        while True:
            now = self.clock()
            due = await self.timers.due(now, self.batch)
            progressed = False
            for t in due:
                if not await self.timers.claim(t, self.owner, self.claim_ttl, now):
                    continue  # another sweeper has it
                progressed = True
                await self._one(t, done)
            if len(due) < self.batch or not progressed:
                return done

    async def _one(self, t: Timer, done: SweepPass) -> None:
        rule = t.rule or {}
        reason = describe(t.timer, rule)
        try:
            status, outcome, audit = await self._fire(t, reason)
        except HitlError as exc:  # the store failed mid-step: the claim lapses and the next pass tries again
            log.warning("deadline %s: %s", t.name, exc)
            done.retry.append((t.name, str(exc)))
            return
        if status is None:
            done.retry.append((t.name, outcome))
            return
        if await self.timers.finish(t, self.owner, status, outcome, self.clock(), audit):
            (done.fired if status == "fired" else done.void).append((t.name, outcome))
            if self.on_fired is not None:
                self.on_fired(t, status, outcome)

    async def _fire(self, t: Timer, reason: str) -> tuple[Any, str, AuditRecord | None]:
        """(status, outcome, audit row) -- status None: refused for now, try again later."""
        if not t.open:
            return "void", VOID, None
        do = t.timer.get("do")
        if do == "answer":
            return await self._answer(t, reason)
        if do == "fail":
            return await self._fail(t, reason)
        if do in ("remind", "notify", "assign"):
            return await self._step(t, str(do), reason)
        return "void", f"unknown deadline step {do!r}", None

    async def _answer(self, t: Timer, reason: str) -> tuple[Any, str, AuditRecord | None]:
        answers = {t.interrupt_id: t.timer.get("value")}
        if capability(self.store, WorkerQueue) is not None:  # the answer stored, its turn left to a worker of the app
            from .handoff import queue_answer

            done = await queue_answer(self.store, t.session_id, answers, t.invocation_id, operator=OPERATOR,
                                      reason=reason, force=True, policy=_RULE_DECIDES)
        elif self.registry is not None and t.app_name in self.registry:
            from .operations import answer

            done = await answer(self.store, t.session_id, answers, t.invocation_id, registry=self.registry,
                                operator=OPERATOR, reason=reason, force=True, policy=_RULE_DECIDES)
        else:
            return None, f"no worker queue in this store and no code for {t.app_name} here", None
        if done.error is None or done.error_kind in ("failed", "interrupted"):
            return "fired", "answered", None  # its audit row is the answer's own
        return await self._refused(t, done.refusal or str(done.error))

    async def _fail(self, t: Timer, reason: str) -> tuple[Any, str, AuditRecord | None]:
        from .operations import CONFLICTS
        from .operator_actions import fail_waiting

        try:
            await fail_waiting(self.store, t.session_id, t.invocation_id, t.interrupt_id, t.raised_seq,
                               error=str(t.timer.get("error") or "DeadlinePassed"),
                               message=str(t.timer.get("message") or ""), operator=OPERATOR, reason=reason)
        except (AlreadyResolvedError, *CONFLICTS) as exc:
            return await self._refused(t, str(exc))
        return "fired", f"failed with {t.timer.get('error')}", None  # audited with its event

    async def _refused(self, t: Timer, why: str) -> tuple[Any, str, AuditRecord | None]:
        """A refused answer or fail: void when the interrupt closed meanwhile (an answer
        -- perhaps this very timer's, by a sweeper whose claim lapsed mid-write -- or a
        cancel); else tried again once the claim lapses (a busy invocation, a turn
        interrupted mid-run that a worker or an operator continues first)."""
        rows = await self.store.lookup_interrupts(t.session_id, [t.interrupt_id])
        if not any(r.invocation_id == t.invocation_id and r.status == "open" and r.raised_seq == t.raised_seq
                   for r in rows):
            return "void", VOID, None
        return None, why, None

    async def _step(self, t: Timer, do: str, reason: str) -> tuple[Any, str, AuditRecord | None]:
        details: dict[str, Any] = {"interrupt_id": t.interrupt_id, "step": do, "path": t.path}
        channels = t.timer.get("channels") or []
        if channels:
            details["channels"] = list(channels)
        owner = await self._owner(t)
        if owner:
            details["owner"] = owner
        outcome = f"{do}: " + (", ".join(channels) if channels else "no channel")
        if do == "assign":
            group = str(t.timer.get("group") or "")
            to = group if group.startswith("@") else f"@{group}"
            details["group"] = to
            told = f"; told {', '.join(channels)}" if channels else ""
            if owner == to:  # assigned already (by this step before its sweeper died, or by a person)
                return "fired", f"already assigned to {to}{told}", None
            from .ownership import assign

            moved = await assign(self.store, t.session_id, [t.interrupt_id], to=to, operator=OPERATOR,
                                 reason=reason, force=True, policy=self.policy or current_policy())
            if moved.error is None:
                return "fired", f"assigned to {to}{told}", None  # audited with its own event
            if moved.error_kind == "conflict":
                return None, moved.refusal or str(moved.error), None
            return "fired", f"assign to {to} refused: {moved.refusal}", self._audit(t, do, reason, details,
                                                                                    moved.refusal)
        return "fired", outcome, self._audit(t, do, reason, details)

    async def _owner(self, t: Timer) -> str | None:
        rows = await self.store.lookup_interrupts(t.session_id, [t.interrupt_id])
        for r in rows:
            if r.invocation_id == t.invocation_id:
                return getattr(r, "owner", None)
        return None

    def _audit(self, t: Timer, do: str, reason: str, details: dict[str, Any], refused: str | None = None) -> AuditRecord:
        if refused:
            details = {**details, "refused": refused}
        return AuditRecord(at=self.clock(), action="deadline", operator=OPERATOR, reason=reason,
                           session_id=t.session_id, invocation_id=t.invocation_id, details=details)
