"""Who may answer what, groups of operators, approvals and stale claims (``hitl.toml``).

::

    [groups]                      # named lists of operators ([serve] groups works too)
    finance = ["ann", "bob"]
    legal = ["lee"]

    [owners]
    stale_after = "4h"            # a claim older than this is shown stale (default 4h)

    [[answer]]                    # who may answer; every matching rule applies
    app = "refunds"               # optional: the session's app
    node = "approve"              # optional: a node of this name is on the interrupt's path
    where = "amount>10000"        # optional: filter terms (engine/bulk_filter.py)
    allow = ["@finance", "carol"] # operators and @groups (absent: anyone)
    approvals = 2                 # optional: distinct approvers needed
    all_of = ["finance", "legal"] # optional: one approver from each of these groups

Every surface checks through the operations layer (:func:`engine.operations.answer`,
the worker hand-off, bulk answers): :meth:`Policy.check_answer` raises
:class:`NotAllowedError` with one line naming the rule. A file without these
tables allows everyone, as before.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .ages import readable_age
from .errors import HitlError, ResumeRejected

if TYPE_CHECKING:  # the rules (and their filter grammar) are imported when a hitl.toml has rules
    from .answer_rules import AnswerRule, Approval


def __getattr__(name: str) -> Any:
    # A policy's rules live in engine.answer_rules, loaded when a hitl.toml has
    # [[answer]] tables: an answer without them does not build their dataclasses.
    if name in ("AnswerRule", "Approval"):
        from . import answer_rules

        return getattr(answer_rules, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


DEFAULT_STALE_AFTER = 4 * 3600.0
"""Seconds after which a claim is shown stale when ``[owners] stale_after`` is not set."""


class PolicyError(HitlError):
    """``hitl.toml``'s groups or answer rules are malformed."""


class NotAllowedError(ResumeRejected):
    """The operator may not answer this interrupt (an ``[[answer]]`` rule)."""

    def __init__(self, operator: str | None, interrupt_id: str, rule: AnswerRule) -> None:
        self.operator, self.interrupt_id, self.rule = operator, interrupt_id, rule
        who = operator or "an operator without a name"
        super().__init__(
            f"{who} may not answer interrupt {interrupt_id}: only {', '.join(rule.allow)} may ({rule}); "
            "nothing was written"
        )


@dataclass(frozen=True)
class Policy:
    """Groups, answer rules and the stale-claim age of one ``hitl.toml``."""

    groups: Mapping[str, frozenset[str]] = field(default_factory=dict)
    rules: tuple[AnswerRule, ...] = ()
    stale_after: float = DEFAULT_STALE_AFTER

    def is_member(self, operator: str | None, owner: str | None) -> bool:
        """``operator`` is ``owner``, or a member of the group ``owner`` names (``@g``)."""
        if not operator or not owner:
            return False
        if owner.startswith("@"):
            return operator in self.groups.get(owner[1:], frozenset())
        return operator == owner

    def matching(self, app_name: str, path: str, args: Mapping[str, Any]) -> list[AnswerRule]:
        return [r for r in self.rules if r.matches(app_name, path, args)]

    def check_answer(
        self, operator: str | None, app_name: str, interrupt_id: str, path: str, args: Mapping[str, Any]
    ) -> None:
        """NotAllowedError unless every matching rule allows ``operator``."""
        for rule in self.matching(app_name, path, args):
            if rule.allow and not any(self.is_member(operator, a) for a in rule.allow):
                raise NotAllowedError(operator, interrupt_id, rule)

    def approval(self, app_name: str, path: str, args: Mapping[str, Any]) -> Approval | None:
        """The multi-approver requirement of an interrupt (None: one answer suffices)."""
        rules = self.matching(app_name, path, args)
        needed = max((r.approvals for r in rules), default=1)
        all_of = tuple(dict.fromkeys(g for r in rules for g in r.all_of))
        if needed <= 1 and not all_of:
            return None
        from .answer_rules import Approval

        return Approval(needed, all_of)

    def is_stale(self, owned_at: float | None, now: float | None = None) -> bool:
        return owned_at is not None and (now if now is not None else time.time()) - owned_at >= self.stale_after

    def owner_label(self, owner: str | None, owned_at: float | None, now: float | None = None) -> str:
        """The OWNER cell: ``ann``, ``@finance``, ``ann (stale 5h00m)``, or ``""``."""
        if not owner:
            return ""
        if self.is_stale(owned_at, now):
            assert owned_at is not None
            return f"{owner} (stale {readable_age((now or time.time()) - owned_at)})"
        return owner


def policy_from(data: Mapping[str, Any], where: str = "hitl.toml") -> Policy:
    """The policy of a parsed ``hitl.toml`` (PolicyError naming the bad entry)."""
    groups: dict[str, frozenset[str]] = {}
    serve = data.get("serve")
    for table in (serve.get("groups") if isinstance(serve, dict) else None, data.get("groups")):
        if table is None:
            continue
        if not isinstance(table, dict):
            raise PolicyError(f"{where}: [groups] must be a table of name = [operators]")
        for name, members in table.items():
            if not isinstance(members, list) or not all(isinstance(m, str) and m for m in members):
                raise PolicyError(f"{where}: group {name!r} must be a list of operator names")
            groups[str(name)] = groups.get(str(name), frozenset()) | frozenset(members)
    rules = []
    raw_rules = data.get("answer", [])
    if not isinstance(raw_rules, list):
        raise PolicyError(f"{where}: [[answer]] must be an array of tables")
    for n, raw in enumerate(raw_rules, start=1):
        rules.append(_rule(raw, n, groups, where))
    owners = data.get("owners", {})
    stale = DEFAULT_STALE_AFTER
    if isinstance(owners, dict) and "stale_after" in owners:
        from .bulk_filter import parse_age

        try:
            stale = parse_age(str(owners["stale_after"]))
        except HitlError as exc:
            raise PolicyError(f"{where}: [owners] stale_after: {exc}") from None
    return Policy(groups, tuple(rules), stale)


def _rule(raw: Any, n: int, groups: Mapping[str, frozenset[str]], where: str) -> AnswerRule:
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
    from .answer_rules import AnswerRule

    return AnswerRule(w, tuple(allow), approvals, tuple(g.lstrip("@") for g in all_of))


_CURRENT: list[Policy | str | None] = []


def use_policy(policy: Policy | str | os.PathLike[str] | None) -> None:
    """Make ``policy`` the process's: a Policy, or the ``hitl.toml`` to read it from
    when first needed (a surface that took ``--config`` says so once; None: no
    file). :func:`reset_policy` goes back to the file found in the usual places."""
    _CURRENT[:] = [policy if policy is None or isinstance(policy, Policy) else os.fspath(policy)]


def reset_policy() -> None:
    _CURRENT.clear()


def current_policy() -> Policy:
    """The process's policy: the one :func:`use_policy` set, else that of the
    ``hitl.toml`` :func:`engine.configfile.find_config` finds (parsed once per change)."""
    if _CURRENT:
        got = _CURRENT[0]
        return got if isinstance(got, Policy) else load_policy(got)
    from .configfile import find_config

    return load_policy(find_config())


def load_policy(path: str | os.PathLike[str] | None) -> Policy:
    """The policy of ``path`` (None, or no such tables: everyone may answer)."""
    if path is None:
        return Policy()
    from .configfile import read_toml

    try:
        data = read_toml(path)
    except FileNotFoundError:
        return Policy()
    except (OSError, ValueError) as exc:
        raise PolicyError(f"cannot read {path}: {exc}") from None
    return policy_from(data, str(Path(path)))
