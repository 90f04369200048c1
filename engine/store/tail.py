"""Follow a session's log as it grows: every event once, in order.

:func:`follow` reads ``events(after_seq=last)`` whenever something may have
been appended: on a notification when the store has them (capability
``notify``: PostgreSQL's LISTEN/NOTIFY), and on a timer in any case -- every
``interval`` seconds without notifications, every ``fallback`` seconds with
them (a notification lost, or a listener that reconnected, is caught up by the
next read from the last seq seen). Reads, not notifications, decide what is
yielded, so nothing is yielded twice or out of order.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

from ..models import StoredEvent
from .base import SessionStore
from .capabilities import Notifications, capability


async def follow(
    store: SessionStore, session_id: str, *, after_seq: int = 0, interval: float = 0.5, fallback: float = 2.0
) -> AsyncIterator[StoredEvent]:
    """Yield the session's events after ``after_seq`` forever (see the module docstring)."""
    wake = asyncio.Event()
    listener = None
    if (listens := capability(store, Notifications)) is not None:

        def on_append(sid: str | None, _seq: int | None) -> None:
            if sid is None or sid == session_id:
                wake.set()

        listener = await listens.notifications(on_append)
    period = fallback if listener is not None else interval
    last = after_seq
    try:
        while True:
            wake.clear()
            for stored in await store.events(session_id, after_seq=last):
                last = stored.seq
                yield stored
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(wake.wait(), period)
    finally:
        if listener is not None:
            await listener.close()
