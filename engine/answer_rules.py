"""``[[answer]]`` rules of ``hitl.toml`` (:mod:`engine.permissions` has the file's
format): who may answer an interrupt, and how many approvers it needs.

Apart from :mod:`engine.permissions` (which still answers for these names), so
that an answer in a process without rules -- most ``hitl resume`` runs -- does
not build their dataclasses: a policy imports this module when it has rules.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .errors import HitlError
from .permissions import Policy, PolicyError

if TYPE_CHECKING:
    from .bulk_filter import Where


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



def rule_from(raw: Any, n: int, groups: Mapping[str, frozenset[str]], where: str) -> AnswerRule:
    """The rule of the ``n``-th ``[[answer]]`` table (PolicyError naming the bad entry)."""
    if not isinstance(raw, dict):
        raise PolicyError(f"{where}: [[answer]] number {n} is not a table")
    unknown = set(raw) - {"app", "node", "where", "allow", "approvals", "all_of"}
    if unknown:
        raise PolicyError(f"{where}: [[answer]] number {n}: unknown key {sorted(unknown)[0]!r}")
    from .bulk_filter import parse_where

    terms = [f"{k}={raw[k]}" for k in ("app", "node") if k in raw]
    try:
        w = parse_where([*terms, *([str(raw["where"])] if raw.get("where") else [])])
    except HitlError as exc:
        raise PolicyError(f"{where}: [[answer]] number {n}: {exc}") from None
    allow = raw.get("allow", [])
    all_of = raw.get("all_of", [])
    approvals = raw.get("approvals", 1)
    if not isinstance(allow, list) or not all(isinstance(a, str) and a for a in allow):
        raise PolicyError(f"{where}: [[answer]] number {n}: allow must be a list of operators and @groups")
    if not isinstance(all_of, list) or not all(isinstance(g, str) and g for g in all_of):
        raise PolicyError(f"{where}: [[answer]] number {n}: all_of must be a list of group names")
    if not isinstance(approvals, int) or isinstance(approvals, bool) or not 1 <= approvals <= 100:
        raise PolicyError(f"{where}: [[answer]] number {n}: approvals must be a whole number from 1 to 100")
    for g in [a[1:] for a in allow if a.startswith("@")] + [g.lstrip("@") for g in all_of]:
        if g not in groups:
            raise PolicyError(f"{where}: [[answer]] number {n} names group {g!r}, which [groups] does not define")
    return AnswerRule(w, tuple(allow), approvals, tuple(g.lstrip("@") for g in all_of))
