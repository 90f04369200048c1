"""The notification ledger: which notification went to which channel, and how it went.

A notification is *caused* by a fact the store already records in the same
transaction as the event behind it -- an open interrupt (the interrupt index),
a failed turn (the invocation index), a turn held in doubt or waiting for an
app nobody serves (the turn requests). Those rows are the outbox: they exist
from the moment the event is committed, and stay until the event's effect
does, so a notification can never be lost by a crash (:mod:`engine.notify`
derives the notifications from them). This ledger is the other half: one row
per (notification key, channel) with its state --

* ``pending`` -- not sent yet: ``attempts`` failed so far, the next try not
  before ``next_at``; while a sender holds its claim (``claimed_by`` until
  ``claimed_until``) no other sender tries it;
* ``sent`` -- the channel accepted it (``sent_at``);
* ``failed`` -- given up after the channel's attempts (``last_error`` says why).

A sender claims a row (compare-and-swap), sends, then records the result. A
crash between the send and the record leaves the claim to lapse and the next
sender sends again *with the same key* (the receiver's idempotency key): a
duplicate, never a loss.

:func:`ledger` gives the backend's ledger (SQLite, PostgreSQL: their modules
``notify``; the in-memory store: :class:`MemoryLedger`). The table is created
by the first write that needs it (a store never notified has none).
"""

from __future__ import annotations

import time
from typing import Any, Literal, Protocol

from pydantic import BaseModel, Field

DeliveryStatus = Literal["pending", "sent", "failed"]


class Delivery(BaseModel):
    """One notification to one channel."""

    key: str
    """The notification's idempotency key (``interrupt_opened:SESSION:INV:ID:SEQ``)."""
    channel: str
    kind: str
    session_id: str | None = None
    subject: str = ""
    """One line: what the notification says."""
    status: DeliveryStatus = "pending"
    attempts: int = 0
    next_at: float = 0.0
    claimed_by: str | None = None
    claimed_until: float | None = None
    last_error: str | None = None
    created_at: float = Field(default_factory=time.time)
    updated_at: float = Field(default_factory=time.time)
    sent_at: float | None = None


COLUMNS = ("key, channel, kind, session_id, subject, status, attempts, next_at, claimed_by, claimed_until, "
           "last_error, created_at, updated_at, sent_at")


def from_row(row: Any) -> Delivery:
    names = [c.strip() for c in COLUMNS.split(",")]
    return Delivery(**dict(zip(names, tuple(row), strict=True)))


class Ledger(Protocol):
    async def claim(self, d: Delivery, owner: str, ttl: float, now: float) -> Delivery | None:
        """Record ``d`` (pending) unless known, then claim it for ``owner`` if it is
        pending, due and unclaimed (or its claim lapsed); the claimed row, or None."""
        ...

    async def finish(self, key: str, channel: str, owner: str, *, sent: bool, error: str | None, next_at: float,
                     give_up: bool, now: float) -> bool:
        """Record a claimed try: sent, or failed (``give_up``: for good); False when
        ``owner`` no longer held the claim (another sender took it: its record stands)."""
        ...

    async def finished(self, keys: list[str]) -> set[tuple[str, str]]:
        """The (key, channel) pairs among ``keys`` that are sent or failed (nothing more to do)."""
        ...

    async def deliveries(self, *, status: str | None = None, limit: int = 100) -> list[Delivery]:
        """Newest first (``updated_at``)."""
        ...


class MemoryLedger:
    """The in-memory store's ledger (a dict on the store object)."""

    def __init__(self, store: Any) -> None:
        self.rows: dict[tuple[str, str], Delivery] = vars(store).setdefault("_notify_rows", {})

    async def claim(self, d: Delivery, owner: str, ttl: float, now: float) -> Delivery | None:
        row = self.rows.setdefault((d.key, d.channel), d.model_copy(update={"created_at": now, "updated_at": now}))
        free = row.claimed_by is None or (row.claimed_until or 0) <= now
        if row.status != "pending" or row.next_at > now or not free:
            return None
        row.claimed_by, row.claimed_until = owner, now + ttl
        return row.model_copy()

    async def finish(self, key: str, channel: str, owner: str, *, sent: bool, error: str | None, next_at: float,
                     give_up: bool, now: float) -> bool:
        row = self.rows.get((key, channel))
        if row is None or row.claimed_by != owner:
            return False
        row.attempts += 1
        row.claimed_by = row.claimed_until = None
        row.updated_at = now
        if sent:
            row.status, row.sent_at = "sent", now
        else:
            row.last_error, row.next_at = error, next_at
            row.status = "failed" if give_up else "pending"
        return True

    async def finished(self, keys: list[str]) -> set[tuple[str, str]]:
        wanted = set(keys)
        return {k for k, r in self.rows.items() if k[0] in wanted and r.status != "pending"}

    async def deliveries(self, *, status: str | None = None, limit: int = 100) -> list[Delivery]:
        rows = [r for r in self.rows.values() if status is None or r.status == status]
        return sorted(rows, key=lambda r: (-r.updated_at, r.key, r.channel))[:limit]


def ledger(store: Any) -> Ledger:
    """The ledger of ``store``'s backend (each store builds its own: this module stays
    below the backends, whose ledgers read its row model)."""
    built: Ledger = store.notification_ledger()
    return built


async def failing_channels(store: Any, scan: int = 500) -> list[str]:
    """Channels whose latest finished delivery (of the ``scan`` newest rows) failed for
    good: what the console's title bar names (a later success clears it)."""
    latest: dict[str, str] = {}
    for d in await ledger(store).deliveries(limit=scan):
        if d.status != "pending":
            latest.setdefault(d.channel, d.status)
    return sorted(c for c, status in latest.items() if status == "failed")
