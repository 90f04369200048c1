"""Keep a long history out of the garbage collector's full passes.

A screen holding a 100,000-event history (the session screen's projection of a
long loop, the replay's events and checkpoints) holds a few hundred thousand
objects the cyclic collector tracks. Python runs a full collection every so often
as objects pile up, and a full pass over them all took 120-130 ms -- landing on
whatever key happened to be pressed then. :func:`hold` moves every object alive
now out of the collector's passes (``gc.freeze``); reference counting still frees
them. When the last screen that held goes away, :func:`release` hands them back,
so the cycles of the screens closed meanwhile are collected again.
"""

from __future__ import annotations

import gc

_holders: set[int] = set()


def hold(owner: object) -> None:
    """``owner`` has just loaded something large: freeze what is alive now."""
    _holders.add(id(owner))
    gc.freeze()


def release(owner: object) -> None:
    """``owner`` goes away: once nothing holds, the collector sees everything again."""
    if id(owner) in _holders:
        _holders.discard(id(owner))
        if not _holders:
            gc.unfreeze()


def holding() -> bool:
    return bool(_holders)
