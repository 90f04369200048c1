"""Who is at the other end of a browser connection.

- :class:`Verifier` checks a name and a secret against the configured argon2
  hashes (argon2-cffi; an unknown name costs the same as a wrong secret).
- :class:`FailureLimiter` counts failed sign-ins per client address and per
  name in a sliding window; past the limit a sign-in is refused *before* its
  secret is checked (no guessing, no hashing load) until the window moves on.
- :class:`SessionBook` holds signed-in sessions by an unguessable token (the
  cookie's value), each expiring a fixed time after sign-in; sign-out drops it.

Blind spots: sessions and failure counts live in the server's memory, so a
restart signs everyone out and forgets the counts; the limiter keys on the
peer address, which behind a proxy is the proxy's (name limits still apply).
"""

from __future__ import annotations

import secrets
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

from .config import OperatorEntry, ServeConfig

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
    """At most ``limit`` failed sign-ins per key within ``window`` seconds."""

    def __init__(self, limit: int, window: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.limit = limit
        self.window = window
        self._clock = clock
        self._failures: dict[str, deque[float]] = {}

    def _recent(self, key: str) -> deque[float]:
        now = self._clock()
        q = self._failures.setdefault(key, deque())
        while q and q[0] <= now - self.window:
            q.popleft()
        return q

    def retry_after(self, *keys: str) -> float:
        """Seconds until a sign-in under any of ``keys`` is accepted again (0: now)."""
        wait = 0.0
        for key in keys:
            q = self._recent(key)
            if len(q) >= self.limit:
                wait = max(wait, q[0] + self.window - self._clock())
        return wait

    def failed(self, *keys: str) -> int:
        """Record a failure; the highest count among ``keys`` in the window."""
        now = self._clock()
        counts = []
        for key in keys:
            q = self._recent(key)
            q.append(now)
            counts.append(len(q))
        return max(counts)

    def succeeded(self, name_key: str) -> None:
        """A correct sign-in clears that name's failures (not the address's)."""
        self._failures.pop(name_key, None)


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
