"""Owner ids of lease holders, and whether the process behind one is alive.

Pure standard library -- no pydantic, no asyncio -- so a command that only lists
sessions (``hitl sessions``'s fast path, :mod:`engine.store.sqlite.listing`)
can judge leases without importing the models. :mod:`engine.liveness` holds the
policy on top (and re-exports these names).

Owner ids (:func:`new_owner`) name the host, the pid, the process start time
and a scope (boot id + pid namespace). A reader in the same scope can tell a
dead owner at once (no such pid, or a different process start time: pid
reuse); from anywhere else it waits for the lease's expiry. A wrong "dead" is
never possible: an unknown scope counts as alive until expiry.
"""

from __future__ import annotations

import os
import time
from functools import cache
from typing import Literal

INTERRUPTED = "interrupted mid-run"
"""The label the CLI and the console show for an interrupted invocation."""

QUEUED = "queued for a worker"
"""The label of an invocation whose turn waits for a worker; ``of APP`` follows where there is room."""


def _read(path: str) -> str | None:
    """A small /proc file's text. Bytes, decoded with the interpreter's built-in
    ASCII fast path: a text-mode open with encoding="ascii" looks the codec up
    and imports encodings.ascii, which a cold ``hitl resume`` paid inside its
    first write (~0.5 ms). One ``os.read``, not ``open()``: no io objects to
    build (these files are a few hundred bytes; /proc serves them in one read)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    try:
        return os.read(fd, 65536).decode("ascii", "replace")
    except OSError:
        return None
    finally:
        os.close(fd)


def _start_time(pid: int) -> str | None:
    """The process's start time in clock ticks since boot (Linux), or None."""
    stat = _read(f"/proc/{pid}/stat")
    if not stat:
        return None
    # The command name (field 2) may contain spaces and parentheses: split after the last ')'.
    fields = stat.rpartition(")")[2].split()
    return fields[19] if len(fields) > 19 else None


@cache
def _scope() -> str:
    """Where pids mean the same thing as here: boot id + pid namespace ('-' if unknown).

    The boot id's first 12 hex digits (it is random: 48 bits tell boots apart as
    well as a digest of it would) and the namespace's inode in hex. No digest: a
    cold process's first OpenSSL hash cost 40-120 us inside its first write.
    An owner id written with another scope format (an older version's digest)
    reads as "unknown scope" here: alive until its lease expires, never wrongly dead."""
    boot = (_read("/proc/sys/kernel/random/boot_id") or "").strip().replace("-", "")
    try:
        ns = os.stat("/proc/self/ns/pid").st_ino
    except OSError:
        return "-"
    if not boot or ":" in boot:  # (':' separates an owner id's fields; the kernel's boot id is a uuid)
        return "-"
    return f"{boot[:12]}.{ns:x}"


@cache
def _own_start(pid: int) -> str:
    """This process's start time ('-' if unknown): it never changes, so every turn
    of a process reads /proc once (keyed by pid: a forked child reads its own)."""
    return _start_time(pid) or "-"


_OPEN_OWNERS: set[str] = set()
"""Owner ids of this process whose turn has not closed its lease keeper yet."""


def new_owner() -> str:
    """A fresh owner id for one turn: ``host:pid:scope:start:token``."""
    import socket  # here: a listing that never starts a turn does not pay for it

    host = socket.gethostname().replace(":", "_") or "host"
    pid = os.getpid()
    owner = f"{host}:{pid}:{_scope()}:{_own_start(pid)}:{os.urandom(4).hex()}"
    _OPEN_OWNERS.add(owner)
    return owner


def owner_state(owner: str) -> Literal["alive", "dead", "unknown"]:
    """Whether the process behind an owner id is alive, as far as this process can tell."""
    parts = owner.split(":")
    if len(parts) != 5:
        return "unknown"
    _, pid, scope, start, _ = parts
    if scope == "-" or scope != _scope() or not pid.isdigit():
        return "unknown"
    now_start = _start_time(int(pid))
    if now_start is None:
        return "dead"
    if start != "-" and now_start != start:
        return "dead"  # the pid was reused by another process
    if int(pid) == os.getpid() and owner not in _OPEN_OWNERS:
        # This very process, whose turn closed its keeper: what is left is a lease
        # row its last write could not lapse (e.g. on a full disk).
        return "dead"
    return "alive"


def owner_live(owner: str, expires_at: float, now: float | None = None) -> bool:
    """A lease row (owner id, expiry) is live: not expired, and its owner not provably dead."""
    if expires_at <= (time.time() if now is None else now):
        return False
    return owner_state(owner) != "dead"
