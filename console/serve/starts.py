"""Consoles start a few at a time, in arrival order: the queue of ``hitl serve``'s console starts.

A console's start is CPU work (its DOM, styles, first store read and first screen: about
0.12 s of one core when forked warm). Fifty started at once share the cores evenly and so
all finish late, at about the time the last one would have, while the web server (and a
sign-in) gets one share in fifty-one; started ``[serve] console_starts`` at a time, the
first operators see their console after a fraction of that and the server keeps its
share. Too few slots cost time when the machine also runs other work (a start's share of
it shrinks with the slots): 8 was the best of 2/4/8/50 for fifty consoles on a busy 2-core
machine (benchmarks/bench_serve_results.md). The web server itself never waits: a waiting
connection is a future in a list, and its page shows how many consoles start before it
(text written into its terminal, replaced by the console when it draws).

A start holds its slot until the console says its first screen is drawn (the
``hitl_ready`` message of :mod:`console.serve.child`), its process ends, or
:data:`START_SECONDS` pass -- so one console that hangs cannot stop the others.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable

START_SECONDS = 10.0
"""The longest one console holds a start slot (then the next one starts anyway)."""

PROGRESS_SECONDS = 0.5
"""How often a waiting page's "N ahead of you" line is brought up to date (when it changed)."""


class StartQueue:
    """At most ``slots`` consoles starting at once; the others wait in arrival order."""

    def __init__(self, slots: int) -> None:
        self.slots = max(1, slots)
        self.running = 0
        self.waiting: list[asyncio.Future[None]] = []

    def ahead(self, turn: asyncio.Future[None]) -> int:
        """Consoles that start before this waiting one (the ones starting now included)."""
        return self.running + self.waiting.index(turn)

    async def take(self, progress: Callable[[int], Awaitable[object]] | None = None) -> None:
        """Wait for a slot (call :meth:`release` once started); ``progress(ahead)`` is awaited
        whenever the count of consoles ahead changed. Cancelled, it leaves the queue cleanly."""
        if self.running < self.slots and not self.waiting:
            self.running += 1
            return
        turn: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.waiting.append(turn)
        shown = -1
        try:
            while not turn.done():
                ahead = self.ahead(turn)
                if progress is not None and ahead != shown:
                    shown = ahead
                    with contextlib.suppress(Exception):  # a closed page must not keep its place
                        await progress(ahead)
                await asyncio.wait({turn}, timeout=PROGRESS_SECONDS)  # never swallows a cancellation
        except BaseException:
            if turn in self.waiting:
                self.waiting.remove(turn)
            elif turn.done():
                self.release()  # handed a slot while leaving: pass it on
            raise

    def release(self) -> None:
        """A start ended (drawn, failed or timed out): the next waiting one starts."""
        while self.waiting:
            turn = self.waiting.pop(0)
            if not turn.done():
                turn.set_result(None)  # the slot passes over: ``running`` stays
                return
        self.running = max(0, self.running - 1)


def waiting_text(ahead: int) -> bytes:
    """What a waiting page's terminal shows (plain text: cleared, then one line)."""
    noun = "console starts" if ahead == 1 else "consoles start"
    return f"\x1b[2J\x1b[H\r\n  Starting your console: {ahead} {noun} before it...\r\n".encode()
