"""An event prepared for the append path: what the append transaction writes,
computed once in Python whatever the dialect (the derived rows' rules are
:func:`engine.store.base.index_effects`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydantic_core import to_json

from ...models import Event
from ..base import index_effects
from ..owner_index import OwnerChange


@dataclass(slots=True)
class Prepared:
    """An event reduced to what the append transaction writes."""

    json: str
    event_id: str
    invocation_id: str
    timestamp: float
    path: str | None
    kind: str
    delta: dict[str, Any] | None
    opened: list[tuple[str, str, str, str]]
    """(interrupt_id, path, name, args JSON)"""
    resolved: list[str]
    cancel: bool
    invocation_status: str | None
    new_message: str | None
    audit: tuple[str, str | None, str | None, str] | None
    """(action, operator, reason, details JSON) of an operator write."""
    owners: OwnerChange | None = None
    """Who owns which interrupts after it (a claim, assignment or release)."""


def prepare(event: Event) -> Prepared:
    # Once per event written (a bulk load prepares every event): positional
    # construction, and no comprehension over what an event rarely has.
    if event.state_delta:
        kept = {k: v for k, v in event.state_delta.items() if not k.startswith("temp:")}
        if len(kept) != len(event.state_delta):  # (no copy of the event when it has no temp: key)
            event = event.model_copy(update={"state_delta": kept or None})
    eff = index_effects(event)
    text = event.to_json()
    delta = None
    if event.state_delta:  # as JSON would give it back, like the event log does
        delta = event.model_dump(mode="json", include={"state_delta"})["state_delta"]
    info = event.node_info
    return Prepared(
        text,
        event.id,
        event.invocation_id,
        event.timestamp,
        info.path if info is not None else None,
        event.kind,
        delta,
        [(iid, path, name, to_json(args).decode()) for iid, path, name, args in eff.opened] if eff.opened else [],
        eff.resolved,
        eff.cancel_invocation,
        eff.invocation_status,
        eff.new_invocation_message,
        None if eff.audit is None else (*eff.audit[:3], to_json(eff.audit[3]).decode()),
        eff.owners,
    )
