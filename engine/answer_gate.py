"""The checks an answer passes before it is written: owner, who may answer, approvals.

Called by the two answer writes of the operations layer
(:func:`engine.operations.answer` and :func:`engine.handoff.queue_answer`), so
the console, the CLI, the HTTP API, signed links and bulk answers (one of
those per item) all refuse the same way, with one line:

* an interrupt owned by someone else (:mod:`engine.ownership`) is refused
  unless the answer is forced (the console asks first and then forces);
* an ``[[answer]]`` rule of ``hitl.toml`` that does not allow the operator
  refuses (:class:`engine.permissions.NotAllowedError`);
* under a multi-approver rule the answer is an *approval*: an audited
  ``approve`` event is written instead of the answer until the rule is met
  (distinct approvers of the same value, one from each ``all_of`` group);
  the approval that meets it writes the answer.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .errors import ResumeRejected
from .models import Event
from .operator_actions import operator_metadata
from .permissions import Policy, current_policy

if TYPE_CHECKING:
    from .outcome import Outcome
    from .store.base import InterruptRecord, SessionStore


class ClaimedByOtherError(ResumeRejected):
    """An answer to an interrupt someone else owns, not forced."""

    def __init__(self, interrupt_id: str, owner: str) -> None:
        self.interrupt_id, self.owner = interrupt_id, owner
        super().__init__(
            f"interrupt {interrupt_id} is claimed by {owner}; nothing was written "
            "(answer with force to answer it anyway, or ask them)"
        )


class ApprovalError(ResumeRejected):
    """An approval that cannot count (the same approver twice, or mixed with other ids)."""


@dataclass
class Gate:
    """What the checks found: the approvals an answer records instead of answering."""

    pending: dict[str, str] = field(default_factory=dict)
    """id -> progress after this approval (``1 of 2 approvals``): the rule is not met yet."""
    invocation_id: str | None = None


def _same(a: Any, b: Any) -> bool:
    return json.dumps(a, sort_keys=True, default=str) == json.dumps(b, sort_keys=True, default=str)


async def check(
    store: SessionStore,
    session_id: str,
    answers: dict[str, Any],
    invocation_id: str | None,
    *,
    operator: str | None,
    force: bool = False,
    policy: Policy | None = None,
    found: list[InterruptRecord] | None = None,
) -> Gate:
    """Raise the refusal, or say which approvals to record (nothing is written here).
    Ids that are not open are left to the engine's own refusal. ``found``: the
    interrupt rows of ``answers``' ids as the caller read them (``lookup_interrupts``,
    or the rows of :func:`~engine.store.base.answer_reads`), else read here."""
    pol = policy if policy is not None else current_policy()
    if found is None:
        found = await store.lookup_interrupts(session_id, list(answers))
    rows = [r for r in found if r.status == "open" and (invocation_id is None or r.invocation_id == invocation_id)]
    for r in rows:
        if r.owner and not force and not pol.is_member(operator, r.owner):
            raise ClaimedByOtherError(r.interrupt_id, r.owner)
        pol.check_answer(operator, r.app_name, r.interrupt_id, r.path, r.args)
    needing = [(r, a) for r in rows if (a := pol.approval(r.app_name, r.path, r.args)) is not None]
    if not needing:
        return Gate()
    inv = needing[0][0].invocation_id
    gate = Gate(invocation_id=inv)
    from .loading import load_invocation

    proj = await load_invocation(store, session_id, inv)
    for r, rule in needing:
        itr = proj.interrupts.get((r.invocation_id, r.interrupt_id))
        value = answers[r.interrupt_id]
        before = [a["operator"] for a in (itr.approvals if itr else []) if _same(a.get("value"), value)]
        if operator in before:
            raise ApprovalError(
                f"{operator} has approved interrupt {r.interrupt_id} already ({rule.progress(before, pol)}); "
                "another approver is needed; nothing was written"
            )
        if not operator:
            raise ApprovalError(f"interrupt {r.interrupt_id} needs approvals by name: give an operator; "
                                "nothing was written")
        if not rule.met([*before, operator], pol):
            gate.pending[r.interrupt_id] = rule.progress([*before, operator], pol)
    if gate.pending and len(gate.pending) != len(answers):
        raise ApprovalError(
            f"interrupt {', '.join(gate.pending)} needs more approvals: answer it on its own; nothing was written"
        )
    return gate


async def gated(
    outcome: Outcome,
    store: SessionStore,
    answers: dict[str, Any],
    *,
    force: bool,
    policy: Policy | None,
    batch: str | None = None,
    found: list[InterruptRecord] | None = None,
) -> Outcome | None:
    """Run :func:`check` for an answer's ``outcome``: the refused outcome, the
    outcome of the approvals recorded instead, or None (go on and answer).
    ``found``: the interrupt rows as the caller read them (see :func:`check`)."""
    from .errors import HitlError
    from .outcome import refused as _refused

    try:
        gate = await check(
            store, outcome.session_id, answers, outcome.invocation_id, operator=outcome.operator, force=force,
            policy=policy, found=found,
        )
        if not gate.pending:
            return None
        meta = operator_metadata("approve", outcome.operator, outcome.reason, batch)
        meta["interrupts"] = {i: answers[i] for i in gate.pending}
        inv = gate.invocation_id
        assert inv is not None
        stored = await store.append_event(outcome.session_id, Event(invocation_id=inv, author="user",
                                                                    custom_metadata=meta))
    except HitlError as exc:
        return _refused(outcome, exc)
    outcome.invocation_id = inv
    outcome.written = [stored.event]
    outcome.approval = "; ".join(f"{i}: {p}" for i, p in gate.pending.items()) if len(gate.pending) > 1 \
        else next(iter(gate.pending.values()))
    return outcome
