"""Waking a worker or a follower when the store may have changed (:class:`Waker`).

PostgreSQL ``LISTEN``, where a worker listens on a channel of its own that
announces only requests that became runnable (one idle worker of a pool leads:
:func:`pool_key`), a poll of SQLite's ``PRAGMA data_version`` (changes when
another connection commits) every few milliseconds, never a fixed long sleep.
Below both :mod:`engine.worker` and :mod:`engine.handoff` (which follows a
worker's turn), so neither imports the other for it.

A pool of workers on one SQLite file polls as one (:class:`FileLead`): every
commit changes the counter, so each idle worker polling it would wake and try
a claim only one can win (and 16 idle pollers cost a core's tenth doing
nothing). Only the idle worker holding the pool's lock file (``flock``, on
this host) polls the store; the others try the lock now and then without
touching the store, and take over when the leader is busy or gone (the kernel
drops a dead process's lock). Busy workers still claim when a turn of theirs
ends, and every worker claims at its heartbeat, as on PostgreSQL.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import os
import tempfile
from typing import Any

try:
    import fcntl
except ImportError:  # pragma: no cover - no flock (Windows): every idle worker polls
    fcntl = None  # type: ignore[assignment]  # the module's name, None where it does not exist

from .store.base import SessionStore, has_capability
from .store.capabilities import ChangeCounter, Notifications, TurnNotifications, capability, require


def pool_key(apps: list[str]) -> int:
    """The advisory-lock key of the pool of workers serving exactly ``apps``
    (a signed 64-bit integer, as ``pg_advisory_lock`` takes)."""
    digest = hashlib.blake2b("\0".join(sorted(apps)).encode(), digest_size=8, person=b"hitl-pool").digest()
    return int.from_bytes(digest, "big", signed=True)


class FileLead:
    """The lead of a worker pool on one store file: an exclusive, non-blocking
    ``flock`` on a lock file named after the store's real path and the pool, in
    the temporary directory (nothing is written next to the store). ``try_take``
    and ``resign`` are single system calls; closing (or dying) lets it go."""

    def __init__(self, store_path: str, key: int) -> None:
        name = f"{os.path.realpath(store_path)}\0{key}".encode()
        digest = hashlib.blake2b(name, digest_size=8, person=b"hitl-lead").hexdigest()
        self.path = os.path.join(tempfile.gettempdir(), f"hitl-pool-{digest}.lock")
        self._fd: int | None = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        self.held = False
        self.terms = 0
        """How many times it took the lead (tests)."""

    def try_take(self) -> bool:
        if not self.held and self._fd is not None:
            try:
                fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                return False
            self.held = True
            self.terms += 1
        return self.held

    def resign(self) -> None:
        if self.held and self._fd is not None:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
        self.held = False

    def close(self) -> None:
        fd, self._fd, self.held = self._fd, None, False
        if fd is not None:
            os.close(fd)


class Waker:
    """Wait until the store may have changed: LISTEN where the store notifies,
    else a cheap poll of its change counter (SQLite's ``data_version``), else a
    short poll. ``wait(timeout)`` returns early when something changed."""

    def __init__(
        self, store: SessionStore, *, poll: float = 0.01, queue_only: bool = False, pool: list[str] | None = None
    ) -> None:
        self.store = store
        self.poll = poll
        self.queue_only = queue_only
        self.pool = pool
        """A worker's apps: on PostgreSQL only one idle worker serving exactly these
        apps listens at a time (:meth:`~engine.store.postgres.listen.Listener.lead`)."""
        """Wake only when a turn request became runnable (a worker), not at every
        append (a follower): PostgreSQL notifies ``q`` 0 for that, the seq for an
        append, -1 for a request gone. SQLite's change counter cannot tell them apart."""
        self._event = asyncio.Event()
        self._listener: Any = None
        self._counter: int | None = None
        self._lead: FileLead | None = None
        self._room = True
        self.lead_poll = 0.05
        """Seconds between a follower's tries of the pool's lock file (SQLite)."""
        self.news = 0
        """How many times something said there may be a request to claim (a
        notification, a re-made listener, a poke with news): a worker that knows the
        queue was empty since a count claims again only once it moved."""

    async def start(self) -> None:
        notify = has_capability(self.store, "notify")
        if notify and self.queue_only and (turns := capability(self.store, TurnNotifications)) is not None:
            lead = pool_key(self.pool) if self.pool is not None else None
            self._listener = await turns.turn_notifications(self._notified, lead=lead)
        elif notify and (listens := capability(self.store, Notifications)) is not None:
            self._listener = await listens.notifications(self._notified)
        elif (counts := capability(self.store, ChangeCounter)) is not None:
            self._counter = await counts.change_counter()
            path = getattr(self.store, "path", None) if has_capability(self.store, "path") else None
            if self.queue_only and self.pool is not None and path is not None and fcntl is not None and os.path.isfile(path):
                with contextlib.suppress(OSError):  # a lock file another user owns: poll as before
                    self._lead = FileLead(os.fspath(path), pool_key(self.pool))

    @property
    def leader(self) -> bool | None:
        """Whether this worker leads its pool now (None: no pool lead on this store)."""
        if self._lead is not None:
            return self._lead.held
        if self._listener is not None and hasattr(self._listener, "leader"):
            return bool(self._listener.leader)
        return None

    def _notified(self, _session_id: str | None, q: int | None) -> None:
        if not self.queue_only or q is None or q == 0:  # None: the LISTEN connection was re-made
            self.news += 1
            self._event.set()

    def poke(self, *, news: bool = True) -> None:
        """Wake the waiter now: there may be something to claim (``news``), or only
        room (a turn of this process ended)."""
        self.news += news
        self._event.set()

    def set_room(self, room: bool) -> None:
        """Whether the worker could start a turn now: a leading listener without
        room hands the pool's lead to the next idle worker."""
        if self._listener is not None and hasattr(self._listener, "set_room"):
            self._listener.set_room(room)
        self._room = room
        if not room and self._lead is not None:
            self._lead.resign()

    async def wait(self, timeout: float) -> None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + max(timeout, 0.0)
        if self._listener is not None or self._counter is None:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._event.wait(), timeout if self._listener is not None else min(timeout, 0.05))
            self._event.clear()
            return
        while True:
            if self._event.is_set():
                self._event.clear()
                return
            if self._lead is not None and not self._lead.held:
                # a follower: the leader polls the store; try the lead now and then
                if self._room and self._lead.try_take():
                    return  # the lead is ours: claim what became runnable meanwhile
                left = deadline - loop.time()
                if left <= 0:
                    return
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._event.wait(), min(self.lead_poll, left))
                continue
            counter = await require(self.store, ChangeCounter, "polling for changes").change_counter()
            if counter != self._counter:
                self._counter = counter
                return
            left = deadline - loop.time()
            if left <= 0:
                return
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._event.wait(), min(self.poll, left))

    async def close(self) -> None:
        if self._lead is not None:
            self._lead.close()
            self._lead = None
        if self._listener is not None:
            await self._listener.close()
            self._listener = None
