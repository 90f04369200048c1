"""Signed answer links: one interrupt, one recipient, until they expire.

A link is ``{public_url}/answer/{token}``; the token is the claim
(``{"v": 1, "s": session, "i": interrupt id, "r": the seq that raised it,
"to": recipient, "exp": epoch seconds}``, compact JSON, base64url) and its
HMAC-SHA256 under the configured link secret, ``CLAIM.SIGNATURE``. Reading a
token checks, in order: its size, its form, the signature (constant time),
the expiry. It is single-use by what it points at: the link answers only
while *that raising* of the interrupt is open; once answered (through the
link or anywhere else), cancelled, asked again, or expired, the page says so
and who answered when -- there is no second answer to give.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import time
from dataclasses import dataclass

from ..errors import HitlError

MAX_TOKEN = 2048
"""Longest token read; a longer one is refused unread."""
_CONTEXT = b"hitl-answer-link.v1."


class LinkError(HitlError):
    """A link that does not answer anything: forged, malformed, oversized or expired."""

    def __init__(self, message: str, reason: str) -> None:
        super().__init__(message)
        self.reason = reason


@dataclass(frozen=True)
class Link:
    session_id: str
    interrupt_id: str
    raised_seq: int
    to: str
    expires: float


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _sign(secret: str, claim: str) -> str:
    return _b64(hmac.new(secret.encode(), _CONTEXT + claim.encode(), hashlib.sha256).digest())


def make_token(secret: str, link: Link) -> str:
    if not secret:
        raise HitlError("no link secret: set [notify] link_secret_env (or link_secret) in hitl.toml")
    claim = _b64(json.dumps({"v": 1, "s": link.session_id, "i": link.interrupt_id, "r": link.raised_seq,
                             "to": link.to, "exp": int(link.expires)}, separators=(",", ":")).encode())
    return f"{claim}.{_sign(secret, claim)}"


def read_token(secret: str, token: str, now: float | None = None) -> Link:
    """The link ``token`` proves, or :class:`LinkError` (``reason``: invalid or expired)."""
    bad = LinkError("this link is not valid (it was changed, or is not a hitl link)", "invalid")
    if not secret or len(token) > MAX_TOKEN or token.count(".") != 1:
        raise bad
    claim, sig = token.split(".")
    if not hmac.compare_digest(_sign(secret, claim).encode(), sig.encode()):
        raise bad
    try:
        data = json.loads(_unb64(claim))
        link = Link(str(data["s"]), str(data["i"]), int(data["r"]), str(data["to"]), float(data["exp"]))
    except (binascii.Error, ValueError, KeyError, TypeError, UnicodeDecodeError):
        raise bad from None
    if data.get("v") != 1:
        raise bad
    if link.expires <= (time.time() if now is None else now):
        raise LinkError(f"this link expired at {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime(link.expires))}",
                        "expired")
    return link


def link_url(public_url: str, token: str) -> str:
    return f"{public_url.rstrip('/')}/answer/{token}"
