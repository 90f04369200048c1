"""``[[answer]]`` rules of ``hitl.toml`` (:mod:`engine.permissions` has the file's
format): who may answer an interrupt, and how many approvers it needs.

Apart from :mod:`engine.permissions` (which still answers for these names and
parses the tables), so that an answer in a process without rules -- most
``hitl resume`` runs -- does not build their dataclasses: a policy imports this
module when it has rules.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .bulk_filter import Where
    from .permissions import Policy


def _every_interrupt() -> Where:
    from .bulk_filter import Where

    return Where()


@dataclass(frozen=True)
class AnswerRule:
    """One ``[[answer]]`` table."""

    where: Where = field(default_factory=_every_interrupt)
    allow: tuple[str, ...] = ()
    """Operators and ``@groups`` allowed to answer (empty: anyone)."""
    approvals: int = 1
    all_of: tuple[str, ...] = ()
    """Groups (without ``@``) each of which must have approved."""

    def __str__(self) -> str:
        return f"rule {self.where}" if not self.where.empty else "rule for every interrupt"

    def matches(self, app_name: str, path: str, args: Mapping[str, Any]) -> bool:
        w = self.where
        if w.app is not None and app_name != w.app:
            return False
        if w.node and f"/{w.node}@" not in f"/{path}":
            return False
        if w.text and w.text.lower() not in str(args.get("message", "")).lower():
            return False
        payload = args.get("payload")
        return all(f.matches(payload) for f in w.fields)


@dataclass(frozen=True)
class Approval:
    """What a multi-approver rule asks of one interrupt."""

    needed: int
    all_of: tuple[str, ...]

    def met(self, approvers: Iterable[str], policy: Policy) -> bool:
        who = set(approvers)
        return len(who) >= self.needed and all(any(policy.is_member(a, f"@{g}") for a in who) for g in self.all_of)

    def progress(self, approvers: Iterable[str], policy: Policy | None = None) -> str:
        """``1 of 2 approvals``; with ``policy``, the groups still to approve once
        the count is reached (``2 of 2 approvals, still needs legal``)."""
        who = set(approvers)
        total = max(self.needed, len(self.all_of))
        text = f"{len(who)} of {total} approval{'s' if total != 1 else ''}"
        if policy is not None and len(who) >= total:
            missing = [g for g in self.all_of if not any(policy.is_member(a, f"@{g}") for a in who)]
            if missing:
                text += f", still needs {' and '.join(missing)}"
        return text
