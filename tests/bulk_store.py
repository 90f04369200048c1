"""A store of alike refunds across sessions, for the bulk-answer tests.

"Approve the 40 refunds under 50 EUR older than 2 h": :func:`build` runs the
sample ``refund_approval`` app through the real Runner and leaves

* 40 small refunds (under 50 EUR), raised 5 h before ``now``, across 30
  sessions (``bulk-01`` .. ``bulk-30``; the first 10 hold two orders each);
* 5 large refunds (50 EUR or more), as old, in ``big-1`` .. ``big-5``;
* 3 small refunds raised 1 h before ``now`` (too young), in ``young-1`` .. ``young-3``;
* 1 small old refund of another app, ``legacy_refunds`` (the same workflow, but
  its code is not registered where the tests answer: its answer is refused),
  in ``legacy-1``.

Every refund waits on its finance and its risk approval; the filter
``app=refund_approval node=finance_approval age>2h amount<50 currency=EUR``
selects exactly the 40 old small finance approvals (risk approvals carry no
amount); without ``app=`` it also selects the legacy one. Ids and times are deterministic (``sample_sessions.clock``).
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass

from engine import Content, Runner
from engine.apps import AppRegistry
from engine.store.base import SessionStore
from sample_sessions import refund_approval
from sample_sessions.clock import frozen_engine

APP = refund_approval.app_name
FILTER = f"app={APP} node=finance_approval age>2h amount<50 currency=EUR"
APPROVE = {"approved": True, "note": "bulk: small refund"}


def amount(order_id: str) -> float:
    """What ``refund_approval.fetch_order`` computes for the order (checked by the tests)."""
    return round(20 + (zlib.crc32(order_id.encode()) % 48000) / 100, 2)


def orders(small: bool, count: int, start: int) -> list[str]:
    out, n = [], start
    while len(out) < count:
        o = f"order-{n}"
        if (amount(o) < 50) == small:
            out.append(o)
        n += 1
    return out


SMALL = orders(True, 40, 5000)
BIG = orders(False, 5, 5000)
YOUNG = orders(True, 3, 7000)
LEGACY = orders(True, 1, 8000)
LEGACY_APP = "legacy_refunds"


@dataclass
class Built:
    now: float
    """The time the scenario is seen at (5 h after the old refunds)."""
    small: dict[str, tuple[str, str]]
    """order id -> (session, invocation) of the 40 old small refunds."""


def registry() -> AppRegistry:
    reg = AppRegistry()
    reg.register(APP, refund_approval.workflow)
    return reg


async def build(store: SessionStore, epoch: float) -> Built:
    """Fill ``store`` (empty) as the module docstring says; ``epoch`` is when the old refunds are raised."""
    reg = registry()
    runner = reg.runner(APP, store)
    small: dict[str, tuple[str, str]] = {}

    async def start(sid: str, order: str, app: Runner = runner) -> str:
        first = None
        async for e in app.run("clerk", sid, Content.from_text(order)):
            first = first or e
        assert first is not None
        return first.invocation_id

    with frozen_engine(epoch, seed="bulk-refunds") as f:
        for i, order in enumerate(SMALL):
            sid = f"bulk-{(i % 30) + 1:02d}"
            small[order] = (sid, await start(sid, order))
            f.clock.advance(seconds=20)
        for i, order in enumerate(BIG, 1):
            await start(f"big-{i}", order)
            f.clock.advance(seconds=20)
        await start("legacy-1", LEGACY[0], Runner(LEGACY_APP, refund_approval.workflow, store))
        f.clock.advance(seconds=20)
        f.clock.advance(hours=4)
        for i, order in enumerate(YOUNG, 1):
            await start(f"young-{i}", order)
            f.clock.advance(seconds=20)
    return Built(now=epoch + 5 * 3600, small=small)
