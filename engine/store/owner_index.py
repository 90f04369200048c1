"""What an ownership event (claim, assign, release) does to the interrupt index.

Ownership is recorded as audited user events in the invocation's log (their
``custom_metadata``: ``action``, ``operator``, ``reason``, ``owner``,
``interrupts`` and ``previous``); the stores keep the current owner of each
open interrupt in its index row (``owner``, ``owned_at``), derived in the same
transaction as the event, like the interrupt's status.

``previous`` is the owner each id had when the operator decided: the store
refuses the event (ConflictError, nothing written) when an id's owner changed
since, so that of two racing claims exactly one wins, and an assignment never
silently overrides a claim made meanwhile. Replaying a consistent log (an
import) always passes the check.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal, TypeGuard

from ..errors import ConflictError, HitlError

OWNER_ACTIONS = frozenset({"claim", "assign", "release"})
"""The user-event actions that change who owns interrupts."""


@dataclass(frozen=True, slots=True)
class OwnerChange:
    """One ownership event's effect: ``ids`` get ``owner`` (None: released)."""

    ids: list[str]
    owner: str | None
    previous: dict[str, str | None]
    """id -> the owner the writer saw (checked by the store)."""

    def details(self) -> dict[str, Any]:
        """The audit row's details."""
        return {"ids": list(self.ids), "owner": self.owner, "previous": dict(self.previous)}


def owner_change(meta: Mapping[str, Any]) -> OwnerChange:
    """The change an ownership event's metadata records (malformed parts read as none)."""
    raw_ids = meta.get("interrupts")
    ids = [str(i) for i in raw_ids] if isinstance(raw_ids, list) else []
    owner = meta.get("owner")
    raw_prev = meta.get("previous")
    prev = raw_prev if isinstance(raw_prev, dict) else {}
    return OwnerChange(
        ids,
        None if owner is None or meta.get("action") == "release" else str(owner),
        {i: (None if prev.get(i) is None else str(prev.get(i))) for i in ids},
    )


AUDITED_ACTIONS = OWNER_ACTIONS | {"approve"}
"""User-event actions with an audit row of their own beside answer, re-drive and cancel."""


def audited(action: str | None) -> TypeGuard[Literal["claim", "assign", "release", "approve"]]:
    """Whether ``action`` is one of :data:`AUDITED_ACTIONS` (and so an audit row's action)."""
    return action in AUDITED_ACTIONS


def owner_effects(meta: Mapping[str, Any]) -> tuple[OwnerChange | None, dict[str, Any]]:
    """An audited action's effect on owners (None: an approval, which changes none)
    and its audit row's details."""
    if meta.get("action") == "approve":
        values = meta.get("interrupts")
        ids = list(values) if isinstance(values, dict) else []
        details: dict[str, Any] = {"ids": [str(i) for i in ids]}
        if meta.get("batch"):
            details["batch"] = str(meta["batch"])
        return None, details
    change = owner_change(meta)
    return change, change.details()


class NotOpenError(HitlError):
    """An ownership change names an interrupt that is not open (answered, cancelled, unknown)."""

    def __init__(self, ids: list[str]) -> None:
        self.ids = ids
        super().__init__(
            f"interrupt {', '.join(ids)} is not open (answered, cancelled or unknown); nothing was written"
        )


class OwnerChangedError(ConflictError):
    """The owner of an interrupt changed since the writer looked (a racing claim)."""

    def __init__(self, interrupt_id: str, now: str | None, seen: str | None) -> None:
        self.interrupt_id, self.owner, self.seen = interrupt_id, now, seen
        who = f"owned by {now}" if now else "unowned"
        super().__init__(
            f"interrupt {interrupt_id} is {who} now (it was {seen or 'unowned'} when you looked); "
            "nothing was written; reload and try again"
        )


def check_owner_change(change: OwnerChange, current: Mapping[str, tuple[str, str | None]]) -> None:
    """Raise unless every id of ``change`` is open with the owner it expects.
    ``current``: id -> (status, owner) as the index holds it (missing: unknown)."""
    closed = [i for i in change.ids if current.get(i, ("missing", None))[0] != "open"]
    if closed:
        raise NotOpenError(closed)
    for i in change.ids:
        if current[i][1] != change.previous.get(i):
            raise OwnerChangedError(i, current[i][1], change.previous.get(i))
