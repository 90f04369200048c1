"""Owners of open interrupts: claim, assign and release, for every surface.

Who works on an open interrupt is recorded as audited user events in the
invocation's log -- never by editing history -- with the action ``claim``
(the operator takes it), ``assign`` (to another operator, or to a group
written ``@name``) or ``release``; each names the ids, the new owner, the
operator who acted, the reason, and the owner each id had when the operator
decided (``previous``). The stores derive the current owner of each open
interrupt in its index row in the same transaction, and refuse an event whose
``previous`` no longer holds (:mod:`engine.store.owner_index`): of two racing
claims exactly one wins, the other is refused naming the winner. The
projection (:class:`engine.projection_records.Interrupt` ``owner``) folds the
same events, so the session screen and the answer checks read it there.

An answer ends ownership (the interrupt is no longer open). Who may answer an
owned interrupt and the stale-claim age are :mod:`engine.permissions`'.

The console, ``hitl claim|assign|release``, the HTTP API and the workers
(escalation reassigns to a group with :func:`assign`) all call these three
functions; like :mod:`engine.operations`, they never raise for an operator
error: the refusal is kept in :attr:`OwnerOutcome.error`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from .ages import readable_age
from .errors import HitlError, ReadOnlyError, require_id
from .models import Event
from .operator_actions import operator_metadata
from .outcome import CONFLICTS, nothing_written, one_line

if TYPE_CHECKING:
    from .permissions import Policy
    from .store.base import SessionStore

OwnerAction = Literal["claim", "assign", "release"]


class OwnershipInputError(HitlError):
    """A claim, assignment or release that names nothing it can change, or a bad owner."""


class OwnedByOtherError(HitlError):
    """The interrupt is owned by someone else, and the write was not forced."""

    def __init__(self, interrupt_id: str, owner: str, since: float | None, what: str) -> None:
        self.interrupt_id, self.owner, self.since = interrupt_id, owner, since
        super().__init__(f"{what}: interrupt {interrupt_id} is claimed by {owner}{_since(since)}; "
                         "nothing was written (--force to take it over)")


def _since(at: float | None) -> str:
    if at is None:
        return ""
    return f" (for {readable_age(time.time() - at)})"


@dataclass
class OwnerOutcome:
    """What a claim, assignment or release did, or why it did nothing."""

    action: OwnerAction
    session_id: str
    operator: str | None
    owner: str | None = None
    """The owner the ids now have (None: released)."""
    reason: str | None = None
    ids: list[str] = field(default_factory=list)
    """The interrupt ids changed (or that would have been)."""
    previous: dict[str, str | None] = field(default_factory=dict)
    """id -> its owner before."""
    written: list[Event] = field(default_factory=list)
    """The events appended (one per invocation); [] when refused or nothing to change."""
    error: Exception | None = None
    error_kind: Literal["rejected", "conflict"] | None = None

    @property
    def wrote(self) -> bool:
        return bool(self.written)

    @property
    def refusal(self) -> str | None:
        """Why nothing was written (one line), or None."""
        return None if self.error is None else nothing_written(one_line(self.error))

    def raise_error(self) -> None:
        if self.error is not None:
            raise self.error

    def summary(self) -> str:
        """One line for a toast or the CLI."""
        if self.refusal is not None:
            return self.refusal
        if not self.written:
            return f"nothing to {self.action}: {', '.join(self.ids) or 'no open interrupt'} unchanged"
        what = {"claim": "claimed by", "assign": "assigned to", "release": "released by"}[self.action]
        who = self.owner if self.action != "release" else (self.operator or "?")
        return f"{len(self.ids)} interrupt(s) {what} {who}: {', '.join(self.ids)}"


@dataclass(frozen=True)
class Target:
    """One open interrupt as the write found it."""

    invocation_id: str
    interrupt_id: str
    owner: str | None
    owned_at: float | None
    status: str = "open"


async def targets(
    store: SessionStore, session_id: str, ids: list[str] | None = None, invocation_id: str | None = None
) -> list[Target]:
    """The interrupts a write names: ``ids`` (index rows; an id that is not open
    is refused), else every open id of ``invocation_id``."""
    require_id(session_id, "the session id")
    if ids:
        rows = {r.interrupt_id: r for r in await store.lookup_interrupts(session_id, list(ids))
                if r.status == "open" and (invocation_id is None or r.invocation_id == invocation_id)}
        missing = [i for i in ids if i not in rows]
        if missing:
            from .store.owner_index import NotOpenError

            raise NotOpenError(missing)
        return [Target(r.invocation_id, r.interrupt_id, r.owner, r.owned_at) for r in (rows[i] for i in ids)]
    if invocation_id is None:
        raise OwnershipInputError("name the interrupt ids, or the invocation whose open ids to take")
    from .loading import load_invocation

    proj = await load_invocation(store, session_id, invocation_id)
    found = [Target(invocation_id, i.id, i.owner, i.owned_at) for i in proj.open_interrupts(invocation_id)]
    if not found:
        raise OwnershipInputError(f"invocation {invocation_id} has no open interrupt; nothing was written")
    return found


async def change(
    store: SessionStore,
    action: OwnerAction,
    session_id: str,
    ids: list[str] | None = None,
    *,
    to: str | None = None,
    invocation_id: str | None = None,
    operator: str | None,
    reason: str | None = None,
    force: bool = False,
    policy: Policy | None = None,
) -> OwnerOutcome:
    """``action`` on ``ids`` (or every open id of ``invocation_id``): :func:`claim`,
    :func:`assign` (to ``to``) or :func:`release`."""
    owner = operator if action == "claim" else to if action == "assign" else None
    out = OwnerOutcome(action, session_id, operator, owner, reason)
    try:
        if store.read_only:  # before "nothing to change": a read-only store refuses every write it is asked for
            raise ReadOnlyError("the store is open read-only; nothing was written (open it without --read-only)")
        if action == "assign" and not to:
            raise OwnershipInputError("assign needs an operator or @group to assign to; nothing was written")
        if not operator:
            raise OwnershipInputError(
                f"{action} needs an operator name (--operator, or [console] operator in hitl.toml); nothing was written"
            )
        if owner is not None:
            owner = out.owner = check_owner_name(owner, policy)
        await _write(store, out, ids, invocation_id, force, policy)
    except HitlError as exc:
        out.error = exc
        out.error_kind = "conflict" if isinstance(exc, CONFLICTS) else "rejected"
    return out


async def claim(store: SessionStore, session_id: str, ids: list[str] | None = None, **kw: Any) -> OwnerOutcome:
    """Take the ids for ``operator`` (keywords: :func:`change`'s). Refused without
    ``force`` when another operator owns one (a group the operator belongs to may
    be claimed from); an id the operator already owns is left as it is."""
    return await change(store, "claim", session_id, ids, **kw)


async def assign(store: SessionStore, session_id: str, ids: list[str] | None = None, **kw: Any) -> OwnerOutcome:
    """Give the ids to ``to`` (an operator, or ``@group``: a group of ``policy``).
    Refused without ``force`` when someone other than ``operator`` owns one."""
    return await change(store, "assign", session_id, ids, **kw)


async def release(store: SessionStore, session_id: str, ids: list[str] | None = None, **kw: Any) -> OwnerOutcome:
    """Leave the ids unowned. Refused without ``force`` when another operator owns one."""
    return await change(store, "release", session_id, ids, **kw)


def check_owner_name(name: str, policy: Policy | None) -> str:
    """A valid owner: an operator name, or ``@group`` naming a configured group."""
    name = name.strip()
    if not name or not name.isprintable() or len(name) > 200:
        raise OwnershipInputError(f"{name!r} is not an operator or @group name; nothing was written")
    if name.startswith("@"):
        groups = policy.groups if policy is not None else {}
        if name[1:] not in groups:
            known = ", ".join(f"@{g}" for g in sorted(groups)) or "none is configured ([groups] in hitl.toml)"
            raise OwnershipInputError(f"no group {name[1:]!r} (groups: {known}); nothing was written")
    return name


async def _write(
    store: SessionStore, out: OwnerOutcome, ids: list[str] | None, invocation_id: str | None, force: bool,
    policy: Policy | None,
) -> None:
    """Check the ids' owners and append one event per invocation (all in one append)."""
    action, operator, owner = out.action, out.operator, out.owner
    assert operator is not None
    found = await targets(store, out.session_id, ids, invocation_id)
    changing = [t for t in found if t.owner != owner]
    out.ids = [t.interrupt_id for t in changing] if changing else [t.interrupt_id for t in found]
    for t in changing:
        if t.owner is None or t.owner == operator or force:
            continue
        if action == "claim" and policy is not None and policy.is_member(operator, t.owner):
            continue  # a group's member takes what was assigned to the group
        raise OwnedByOtherError(t.interrupt_id, t.owner, t.owned_at, f"{action} refused")
    if not changing:
        return
    out.previous = {t.interrupt_id: t.owner for t in changing}
    by_inv: dict[str, list[Target]] = {}
    for t in changing:
        by_inv.setdefault(t.invocation_id, []).append(t)
    events = [_event(action, inv, ts, operator, owner, out.reason, force) for inv, ts in by_inv.items()]
    out.written = [s.event for s in await store.append_events(out.session_id, events)]


def _event(
    action: OwnerAction, inv: str, ts: list[Target], operator: str, owner: str | None, reason: str | None, force: bool
) -> Event:
    meta: dict[str, Any] = operator_metadata(action, operator, reason)
    meta["interrupts"] = [t.interrupt_id for t in ts]
    meta["previous"] = {t.interrupt_id: t.owner for t in ts}
    if owner is not None:
        meta["owner"] = owner
    if force:
        meta["forced"] = True  # took it over from another owner: the audit row says so
    return Event(invocation_id=inv, author="user", custom_metadata=meta)
