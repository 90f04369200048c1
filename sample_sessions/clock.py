"""A deterministic clock and id source for the engine, for reproducible demo stores.

``frozen_engine(epoch, seed)`` patches, for the duration of a ``with`` block:

* ``time.time`` with a :class:`SimClock` (what stores use for session
  timestamps, and what ``Event.timestamp``'s default factory calls: it is a
  lambda that looks ``time.time`` up at each call);
* ``engine.models.new_id`` (what ``Event.id``'s default factory calls, the same
  way) and ``engine.runner.new_id`` (invocation ids; imported by name, so
  patched there too) with counter-based ids derived from ``seed``
  (:meth:`IdSource.reseed` starts a new sequence).

Run against the same code, the same calls yield byte-identical stores, which is
what snapshot fixtures need. The generator moves the clock forward explicitly
(``clock.advance(hours=2)``) so that sessions look spread over days.

Limits: only the engine's own id and time sources are patched; a workflow that
calls ``time.time()`` itself sees the simulated clock too, one that calls
``uuid.uuid4()`` does not.
"""

from __future__ import annotations

import hashlib
import itertools
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any
from unittest import mock


class SimClock:
    """A clock that stands still until :meth:`advance` moves it.

    It does not tick on reads: stores read the time on their own thread while
    the event loop creates events, and the interleaving of those reads is not
    deterministic. Events of one turn share a timestamp; their order is the
    log's ``seq``."""

    def __init__(self, start: float) -> None:
        self.now = float(start)
        self._lock = threading.Lock()

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float = 0.0, *, minutes: float = 0.0, hours: float = 0.0, days: float = 0.0) -> None:
        with self._lock:
            self.now = round(self.now + seconds + 60 * minutes + 3600 * hours + 86400 * days, 6)


class IdSource:
    """uuid4-hex-shaped ids, deterministic in ``seed`` and call order."""

    def __init__(self, seed: str) -> None:
        self._lock = threading.Lock()
        self.reseed(seed)

    def reseed(self, seed: str) -> None:
        """Start a new sequence (e.g. one per session, so that each session's ids
        do not depend on which other sessions were generated before it)."""
        with self._lock:
            self.seed = seed
            self._counter = itertools.count(1)

    def __call__(self) -> str:
        with self._lock:
            n = next(self._counter)
            seed = self.seed
        return hashlib.sha256(f"{seed}:{n}".encode()).hexdigest()[:32]


class RealClock:
    """The wall clock, with ``advance`` as a no-op (so generator code needs no branches)."""

    def __call__(self) -> float:
        return time.time()

    def advance(self, *args: Any, **kwargs: Any) -> None:
        return None


@dataclass
class Frozen:
    clock: SimClock
    ids: IdSource


@contextmanager
def frozen_engine(epoch: float, seed: str = "hitl-demo") -> Iterator[Frozen]:
    """Make the engine's timestamps and ids deterministic inside the block."""
    from engine import models, runner

    frozen = Frozen(SimClock(epoch), IdSource(seed))
    with (
        mock.patch("time.time", frozen.clock),
        mock.patch.object(runner, "new_id", frozen.ids),
        mock.patch.object(models, "new_id", frozen.ids),
    ):
        yield frozen
