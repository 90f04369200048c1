"""Progress on stderr for a command that reads or copies many events (long work shows progress).

Silent for the first second (:data:`AFTER`; ``$HITL_PROGRESS_AFTER`` sets it,
``0`` from the start), then one line at most every second -- rewritten in
place on a terminal, appended otherwise -- and a last line when it ends.
stdout is never touched, so ``--json`` and pipes read the same bytes::

    events deploy-long-1: 52,000 of 109,000 events (2 s)
"""

from __future__ import annotations

import gc
import os
import sys
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import TypeVar

T = TypeVar("T")

AFTER = 1.0
"""Seconds a command runs before it says how far it got."""
EVERY = 1.0
"""Seconds between two progress lines."""


class Progress:
    """``tick(n)`` after each page of ``n`` items; ``done()`` at the end."""

    def __init__(self, what: str, total: int | None = None, unit: str = "events") -> None:
        self.what, self.total, self.unit = what, total, unit
        self.count = 0
        self.shown = False
        self._start = time.monotonic()
        try:
            after = float(os.environ.get("HITL_PROGRESS_AFTER", AFTER))
        except ValueError:
            after = AFTER
        self._next = self._start + after
        self._tty = sys.stderr.isatty()

    def tick(self, n: int = 1) -> None:
        self.count += n
        now = time.monotonic()
        if now >= self._next:
            self._next = now + EVERY
            self._say(f"{self.what}: {self._counted()} ({now - self._start:.0f} s)", final=False)

    def done(self) -> None:
        """The last line, when a progress line was shown (a quick command says nothing)."""
        if self.shown:
            self._say(f"{self.what}: {self._counted()}, done in {time.monotonic() - self._start:.1f} s", final=True)

    def _counted(self) -> str:
        of = f" of {self.total:,}" if self.total else ""
        return f"{self.count:,}{of} {self.unit}"

    def _say(self, line: str, *, final: bool) -> None:
        self.shown = True
        if self._tty:
            sys.stderr.write("\r" + line + "\x1b[K" + ("\n" if final else ""))
        else:
            sys.stderr.write(line + "\n")
        sys.stderr.flush()


@contextmanager
def bulk_read() -> Iterator[None]:
    """Hold the cyclic garbage collector while a command folds or copies a whole
    session. Its objects (events, the runs of a projection) are acyclic and live
    until the command ends, yet every collection walked all of them again: on a
    100k-event session half the CPU time of ``show --all-runs`` and ``replay
    --diff-from`` went to collections that freed nothing. Reference counting
    still frees everything as usual; the collector runs again afterwards."""
    enabled = gc.isenabled()
    gc.freeze()  # what start-up imported is never scanned either
    gc.disable()
    try:
        yield
    finally:
        gc.unfreeze()
        if enabled:
            gc.enable()


_TICK_EVERY = 256
"""Items between two ticks of :func:`counted` (an import's lines: a clock read per
line cost more than the count it shows, which moves once a second)."""


def counted(items: Iterable[T], progress: Progress) -> Iterator[T]:
    """``items``, ticking ``progress`` every few of them (its last line, with the
    whole count, once they are all read)."""
    n = 0
    for item in items:
        yield item
        n += 1
        if n == _TICK_EVERY:
            progress.tick(n)
            n = 0
    if n:  # the rest, shown as a tick would (a short input past its deadline says so too)
        progress.tick(n)
    progress.done()
