"""Who calls the API: service tokens, and what a retried write gets back.

Service tokens are ``[serve.operators.NAME]`` entries with a ``token_hash``
(argon2, like passwords: ``hitl serve --hash-password`` makes one; an
operator's password works the same way); the caller sends
``Authorization: Bearer NAME:TOKEN`` (or HTTP Basic with NAME and TOKEN).
The name is what the audit trail records, the entry's role what it may do.
A browser's sign-in cookie works too (:meth:`ConsoleServer.identity`).

- :class:`TokenBook` -- checks a presented token: an unknown name costs what
  a wrong token costs (one argon2 verify, in a thread); a malformed or
  oversized header is refused unread;
  failures count in the server's sign-in limiter (per client address and per
  name: past the limit the token is refused before it is checked, 429). A
  token that verified is remembered for a few minutes by its SHA-256 (never
  the token itself), so a busy client does not pay argon2 per request.
- :class:`IdempotencyBook` -- ``Idempotency-Key`` on a write: the first
  request with a key runs, a concurrent one waits for it, later ones get its
  response again (marked ``Idempotent-Replayed: true``); the same key with
  another body is refused (``idempotency_key_reused``).

Idempotency keys are also kept in the store (:mod:`engine.store.idempotency`),
so a retry that reaches another server, or this one after a restart, gets the
first response too; a key whose first request is still running elsewhere (or
whose server died mid-write) is refused, ``idempotency_key_in_use`` (409).
Blind spot: the token cache and the in-memory store's keys live in the server's memory.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import contextlib
import hashlib
import hmac
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from .auth import FailureLimiter, Identity
from .config import ServeConfig, valid_name

MAX_CREDENTIAL = 1024
"""Longest ``Authorization`` value looked at; a longer one is refused unread."""
CACHE_SECONDS = 300.0
CACHE_SIZE = 1024


class TokenRefused(Exception):
    """A token that does not sign anyone in: ``status`` 401, or 429 with ``retry_after``."""

    def __init__(self, message: str, status: int = 401, retry_after: float = 0.0) -> None:
        super().__init__(message)
        self.status = status
        self.retry_after = retry_after


def parse_authorization(header: str) -> tuple[str, str] | None:
    """``Bearer NAME:TOKEN`` / ``Basic base64(NAME:TOKEN)`` -> (name, token); None when malformed."""
    if len(header) > MAX_CREDENTIAL:
        return None
    scheme, _, value = header.strip().partition(" ")
    value = value.strip()
    if scheme.lower() == "basic":
        try:
            value = base64.b64decode(value, validate=True).decode("utf-8")
        except (binascii.Error, UnicodeDecodeError):
            return None
        name, sep, token = value.partition(":")
    elif scheme.lower() == "bearer":
        name, sep, token = value.rpartition(":")
    else:
        return None
    if not sep or not token or not valid_name(name):
        return None
    return name, token


@dataclass
class _Cached:
    identity: Identity
    until: float


class TokenBook:
    """Service tokens of ``config`` (entries with a ``token_hash``)."""

    def __init__(self, config: ServeConfig, limiter: FailureLimiter, clock: Callable[[], float] = time.monotonic) -> None:
        from argon2 import PasswordHasher

        self._hasher = PasswordHasher()
        self._entries = dict(config.operators)
        self._limiter = limiter
        self._clock = clock
        self._cache: OrderedDict[bytes, _Cached] = OrderedDict()
        self._decoy = self._hasher.hash("decoy-" + base64.b64encode(hashlib.sha256(b"x").digest()).decode())

    @property
    def configured(self) -> bool:
        return bool(self._entries)

    def _verify(self, name: str, token: str) -> bool:
        from argon2.exceptions import InvalidHashError, VerificationError

        entry = self._entries.get(name)
        try:
            self._hasher.verify(entry.secret_hash if entry else self._decoy, token)
        except (VerificationError, InvalidHashError):
            return False
        return entry is not None

    async def identify(self, header: str, peer: str) -> Identity:
        """The identity ``header`` proves, or :class:`TokenRefused`."""
        parsed = parse_authorization(header)
        name, token = parsed if parsed is not None else ("", "")
        key = f"token:{name}"  # counted per (name, address) and per address, as sign-ins are
        digest = hashlib.sha256(f"{name}\0{token}".encode("utf-8", "surrogatepass")).digest()
        now = self._clock()
        hit = self._cache.get(digest)
        if hit is not None and hit.until > now:
            self._cache.move_to_end(digest)
            return hit.identity
        # Reserved before the hash is checked, so concurrent guesses are counted
        # before any of them is verified; a correct token takes its reservation back.
        wait, stamp = self._limiter.reserve(key, peer)
        if wait > 0:
            raise TokenRefused(f"too many failed sign-ins: try again in {int(wait) + 1} s", 429, wait)
        ok = parsed is not None and await asyncio.to_thread(self._verify, name, token)
        if not ok:
            raise TokenRefused("wrong or unknown token: send Authorization: Bearer NAME:TOKEN "
                               "of a [serve.operators.NAME] entry with a token_hash")
        self._limiter.succeeded(key, peer, stamp)
        identity = Identity(name, self._entries[name].role, "token")
        self._cache[digest] = _Cached(identity, now + CACHE_SECONDS)
        while len(self._cache) > CACHE_SIZE:
            self._cache.popitem(last=False)
        return identity


# ------------------------------------------------------------------ idempotency
@dataclass
class _Entry:
    fingerprint: bytes
    done: asyncio.Future[tuple[int, bytes]]
    at: float


class IdempotencyBook:
    """Responses of writes by (caller, key), kept ``ttl`` seconds, at most ``size`` of them."""

    def __init__(self, ttl: float = 24 * 3600.0, size: int = 10_000, clock: Callable[[], float] = time.monotonic) -> None:
        self.ttl, self.size, self._clock = ttl, size, clock
        self._entries: OrderedDict[tuple[str, str], _Entry] = OrderedDict()

    def _expire(self) -> None:
        now = self._clock()
        while self._entries:
            key, entry = next(iter(self._entries.items()))
            if entry.at + self.ttl > now and len(self._entries) <= self.size:
                break
            if not entry.done.done() and len(self._entries) <= self.size:
                break
            del self._entries[key]

    async def run(
        self, who: str, key: str, fingerprint: bytes, write: Callable[[], Awaitable[tuple[int, bytes]]],
        durable: Any = None,
    ) -> tuple[int, bytes, bool]:
        """(status, body, replayed): ``write``'s response, or the first one's for this key.
        ``durable``: the store's keys (:func:`engine.store.idempotency.keys_of`), so that a
        retry reaching another server, or this one after a restart, is answered the same."""
        self._expire()
        entry = self._entries.get((who, key))
        if entry is not None:
            if not hmac.compare_digest(entry.fingerprint, fingerprint):
                raise KeyReused()
            status, body = await asyncio.shield(entry.done)
            return status, body, True
        done: asyncio.Future[tuple[int, bytes]] = asyncio.get_running_loop().create_future()
        self._entries[(who, key)] = _Entry(fingerprint, done, self._clock())
        began = False
        try:
            if durable is not None:
                state, saved = await durable.begin(who, key, fingerprint, time.time())
                if state == "mismatch":
                    raise KeyReused()
                if state == "running":
                    raise KeyInUse()
                if state == "done":
                    done.set_result(saved)
                    return saved[0], saved[1], True
                began = True
            result = await write()
            if durable is not None:
                await durable.finish(who, key, result[0], result[1])
        except BaseException as exc:
            # Nothing to replay: the next try runs again (a write the engine refused is a response, not this).
            del self._entries[(who, key)]
            if began:
                with contextlib.suppress(Exception):
                    await durable.finish(who, key, None, None)
            done.set_exception(exc)
            done.exception()  # retrieved: no "never retrieved" warning when nobody waits
            raise
        done.set_result(result)
        return result[0], result[1], False


class KeyInUse(Exception):
    """An idempotency key whose first request is still running elsewhere (or died mid-write)."""


class KeyReused(Exception):
    """An idempotency key sent again with another request."""


def fingerprint(method: str, path: str, body: bytes) -> bytes:
    return hashlib.sha256(b"\0".join([method.encode(), path.encode("utf-8", "surrogatepass"), body])).digest()


__all__ = ["IdempotencyBook", "KeyInUse", "KeyReused", "TokenBook", "TokenRefused", "fingerprint", "parse_authorization"]
