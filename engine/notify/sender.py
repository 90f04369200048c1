"""The sender: deliver what the rules ask for, each notification once per channel.

One pass (:meth:`Sender.run_once`): read the notifications due
(:func:`engine.notify.facts.collect`), skip the (key, channel) pairs the
ledger says are done, and for each other one: claim it (compare-and-swap in
the store: two senders never try the same pair at once), send it, record the
result. A failed try is retried after the config's backoff (doubling, capped)
until the rule's ``attempts`` are used up; then the pair is ``failed`` and
``hitl notifications`` lists it. :meth:`Sender.run` repeats passes until
stopped, woken by the store's changes (LISTEN/NOTIFY, SQLite's change
counter) or the poll interval (durations, retries).

Crash safety: the claim is taken before the send and released by the record
after it; a sender killed in between leaves a claim that lapses after
``claim_ttl`` seconds, and the next pass sends again with the same key.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .. import metrics
from ..store.notify import Delivery, ledger
from .channels import SENDERS, DeliveryError, recipients
from .config import NotifyConfig
from .facts import Notification, collect
from .links import Link, link_url, make_token

if TYPE_CHECKING:
    from ..store.base import SessionStore


@dataclass
class Pass:
    """What one pass did."""

    sent: list[tuple[str, str]] = field(default_factory=list)
    failed: list[tuple[str, str, str]] = field(default_factory=list)
    """(key, channel, error) of tries that failed (retried later unless given up)."""
    gave_up: list[tuple[str, str]] = field(default_factory=list)
    due: int = 0
    """Pairs that were not done before the pass."""


class Sender:
    def __init__(self, store: SessionStore, config: NotifyConfig, *, owner: str | None = None, claim_ttl: float = 60.0,
                 redactor: Any = None, on_result: Callable[[str, Delivery, str | None], None] | None = None,
                 sweep: Any = None) -> None:
        from ..owners import new_owner
        from ..redact import Redactor

        self.store, self.config = store, config
        self.owner = owner or new_owner()
        self.claim_ttl = claim_ttl
        self.red = redactor if redactor is not None else Redactor()
        self.ledger = ledger(store)
        self.on_result = on_result
        self.sweep = sweep
        """A :class:`engine.deadline_sweep.DeadlineSweep` run at the start of each pass
        (``hitl notify`` enforces deadlines too), so a step's notification goes out in the same pass."""

    def links(self, n: Notification, channel: Any, now: float) -> dict[str, str]:
        c = self.config
        if not (c.link_secret and c.public_url and n.interrupt_id and n.session_id and n.raised_seq is not None):
            return {}
        out = {}
        for who in recipients(channel):
            link = Link(n.session_id, n.interrupt_id, n.raised_seq, who, now + c.link_seconds)
            out[who] = link_url(c.public_url, make_token(c.link_secret, link))
        return out

    async def run_once(self) -> Pass:
        done = Pass()
        if self.sweep is not None:
            await self.sweep.run_once()
        now = time.time()
        found = await collect(self.store, self.config, self.red, now)
        finished = await self.ledger.finished(sorted({n.key for n in found}))
        seen: set[tuple[str, str]] = set()
        for n in found:
            for name in n.channels:
                if (n.key, name) in finished or (n.key, name) in seen:
                    continue
                seen.add((n.key, name))
                done.due += 1
                await self._one(n, name, done)
        return done

    async def _one(self, n: Notification, name: str, done: Pass) -> None:
        channel = self.config.channels[name]
        now = time.time()
        row = await self.ledger.claim(Delivery(key=n.key, channel=name, kind=n.kind, session_id=n.session_id,
                                               subject=n.subject[:300]), self.owner, self.claim_ttl, now)
        if row is None:
            return  # another sender holds it, or its next try is not due yet
        error: str | None = None
        try:
            await SENDERS[channel.type](channel, n, self.links(n, channel, now))
        except DeliveryError as exc:
            error = str(exc)
        give_up = error is not None and row.attempts + 1 >= n.attempts
        after = time.time()
        await self.ledger.finish(n.key, name, self.owner, sent=error is None, error=error,
                                 next_at=after + self.config.backoff(row.attempts + 1), give_up=give_up, now=after)
        if error is None:
            done.sent.append((n.key, name))
        else:
            done.failed.append((n.key, name, error))
            if give_up:
                done.gave_up.append((n.key, name))
        result = "sent" if error is None else "gave up" if give_up else "retry"
        metrics.NOTIFICATIONS.inc(channel=row.channel, result=result)
        if self.on_result is not None:
            self.on_result(result, row, error)

    async def run(self, stop: asyncio.Event, *, poll: float = 1.0) -> None:
        """Passes until ``stop`` is set."""
        from ..waker import Waker

        waker = Waker(self.store, poll=min(poll, 0.05))
        await waker.start()
        try:
            while not stop.is_set():
                await self.run_once()
                waiter = asyncio.ensure_future(waker.wait(poll))
                stopper = asyncio.ensure_future(stop.wait())
                await asyncio.wait({waiter, stopper}, return_when=asyncio.FIRST_COMPLETED)
                for t in (waiter, stopper):
                    t.cancel()
        finally:
            await waker.close()
