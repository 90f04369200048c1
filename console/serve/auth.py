"""Who is at the other end of a browser connection.

- :class:`Verifier` checks a name and a secret against the configured argon2
  hashes (argon2-cffi; an unknown name costs the same as a wrong secret).
- :class:`FailureLimiter` counts failed sign-ins per (name, address) and per
  address in a sliding window, reserving each attempt before its secret is
  checked; past a limit a sign-in is refused *before* hashing until the window
  moves on. :class:`WorkGate` bounds the argon2 checks in flight (503 beyond).
- :class:`SessionBook` holds signed-in sessions by an unguessable token (the
  cookie's value), each expiring a fixed time after sign-in; sign-out drops it.

Blind spots: sessions and failure counts live in the server's memory, so a
restart signs everyone out and forgets the counts; the limiter keys on the
client address (behind a trusted proxy, the rightmost untrusted X-Forwarded-For
entry), so an attacker with many addresses gets ``limit`` guesses per name from
each of them within a window.
"""

from __future__ import annotations

import contextlib
import secrets
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeVar

from .config import OperatorEntry, ServeConfig

T = TypeVar("T")

COOKIE = "hitl_session"


@dataclass(frozen=True)
class Identity:
    """A signed-in operator: the name recorded on writes, and the role."""

    name: str
    role: str
    via: str
    """``password`` (a sign-in), ``proxy`` (the trusted header) or ``local`` (loopback, no sign-in)."""

    @property
    def read_only(self) -> bool:
        return self.role == "viewer"


class Verifier:
    """Name + secret → the operator entry, or None."""

    def __init__(self, config: ServeConfig) -> None:
        from argon2 import PasswordHasher

        self._hasher = PasswordHasher()
        self._operators = config.operators
        # Verified when the name is unknown, so that a miss takes as long as a wrong secret.
        self._decoy = self._hasher.hash(secrets.token_urlsafe(16))

    def verify(self, name: str, secret: str) -> OperatorEntry | None:
        from argon2.exceptions import InvalidHashError, VerificationError

        entry = self._operators.get(name)
        try:
            self._hasher.verify(entry.secret_hash if entry else self._decoy, secret)
        except (VerificationError, InvalidHashError):
            return None
        return entry


class FailureLimiter:
    """Failed sign-ins in a sliding window, per (name, address) and per address.

    An attempt is *reserved* (counted as a failure) before its secret is checked,
    in one synchronous step on the event loop, so requests sent together cannot all
    slip under the limit; a success takes its reservation back and clears that
    pair. A pair past ``limit`` is refused until its window moves on: a name is
    never locked out everywhere by a stranger, only from the stranger's address,
    and an address past ``address_limit`` (any names) backs off entirely.
    Refused attempts store nothing; empty keys are forgotten, and at most
    ``max_keys`` keys are kept (the oldest are dropped first).
    """

    def __init__(self, limit: int, window: float, clock: Callable[[], float] = time.monotonic, *,
                 address_limit: int | None = None, max_keys: int = 10_000) -> None:
        self.limit = limit
        self.address_limit = address_limit if address_limit is not None else 4 * limit
        self.window = window
        self.max_keys = max_keys
        self._clock = clock
        self._failures: dict[tuple[str, ...], deque[float]] = {}

    def __len__(self) -> int:
        return len(self._failures)

    def _recent(self, key: tuple[str, ...]) -> deque[float] | None:
        q = self._failures.get(key)
        if q is None:
            return None
        cutoff = self._clock() - self.window
        while q and q[0] <= cutoff:
            q.popleft()
        if not q:
            del self._failures[key]
            return None
        return q

    def _wait(self, key: tuple[str, ...], limit: int) -> float:
        q = self._recent(key)
        if q is None or len(q) < limit:
            return 0.0
        return max(0.0, q[-limit] + self.window - self._clock())

    def retry_after(self, name: str, address: str) -> float:
        """Seconds until ``name`` may try again from ``address`` (0: now)."""
        return max(self._wait(("pair", name, address), self.limit), self._wait(("addr", address), self.address_limit))

    def reserve(self, name: str, address: str) -> tuple[float, float]:
        """Count an attempt before its secret is checked: (0, stamp) when reserved,
        (seconds to wait, 0) when refused (nothing is stored then)."""
        wait = self.retry_after(name, address)
        if wait > 0:
            return wait, 0.0
        now = self._clock()
        for key in (("pair", name, address), ("addr", address)):
            self._failures.setdefault(key, deque()).append(now)
        self._cap()
        return 0.0, now

    def count(self, name: str, address: str) -> int:
        q = self._recent(("pair", name, address))
        return len(q) if q else 0

    def succeeded(self, name: str, address: str, stamp: float) -> None:
        """A correct secret: its reservation is taken back and the pair's failures cleared."""
        self._failures.pop(("pair", name, address), None)
        q = self._failures.get(("addr", address))
        if q is not None:
            with contextlib.suppress(ValueError):
                q.remove(stamp)
            if not q:
                del self._failures[("addr", address)]

    def _cap(self) -> None:
        if len(self._failures) <= self.max_keys:
            return
        for key in list(self._failures):  # expired keys first, then the oldest
            self._recent(key)
        while len(self._failures) > self.max_keys:
            del self._failures[next(iter(self._failures))]


class WorkGate:
    """At most ``running`` argon2 checks at once and ``queued`` more waiting; beyond that
    a sign-in is turned away at once (503) instead of piling up threads and memory."""

    def __init__(self, running: int, queued: int) -> None:
        import asyncio
        from concurrent.futures import ThreadPoolExecutor

        self.running = running
        self.queued = queued
        self._inside = 0
        self._semaphore = asyncio.Semaphore(running)
        self._pool = ThreadPoolExecutor(max_workers=running, thread_name_prefix="hitl-signin")

    @property
    def full(self) -> bool:
        return self._inside >= self.running + self.queued

    async def run(self, fn: Callable[..., T], *args: object) -> T:
        """Run ``fn(*args)`` on the gate's threads; the caller checked :attr:`full` first."""
        import asyncio

        self._inside += 1
        try:
            async with self._semaphore:
                return await asyncio.get_running_loop().run_in_executor(self._pool, fn, *args)
        finally:
            self._inside -= 1

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)


@dataclass
class Session:
    identity: Identity
    expires: float
    """Epoch seconds."""
    closers: set[Callable[[], object]] = field(default_factory=set)
    """Close this session's open consoles (sign-out, expiry)."""


class SessionBook:
    """Signed-in sessions by cookie token."""

    def __init__(self, lifetime: float, clock: Callable[[], float] = time.time) -> None:
        self.lifetime = lifetime
        self._clock = clock
        self._sessions: dict[str, Session] = {}

    def create(self, identity: Identity) -> tuple[str, Session]:
        now = self._clock()
        for old in [t for t, s in self._sessions.items() if s.expires <= now]:
            self.drop(old)  # expired sessions are forgotten as new ones come
        token = secrets.token_urlsafe(32)
        session = Session(identity, self._clock() + self.lifetime)
        self._sessions[token] = session
        return token, session

    def get(self, token: str | None) -> Session | None:
        if not token:
            return None
        session = self._sessions.get(token)
        if session is None:
            return None
        if session.expires <= self._clock():
            self.drop(token)
            return None
        return session

    def drop(self, token: str | None) -> Session | None:
        session = self._sessions.pop(token, None) if token else None
        if session is not None:
            for close in list(session.closers):
                close()
        return session

    def remaining(self, session: Session) -> float:
        return max(0.0, session.expires - self._clock())
