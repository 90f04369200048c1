"""Sending one notification to one channel.

Webhook (``type = "webhook"``): ``POST`` of the notification's JSON with

- ``X-Hitl-Delivery`` -- its key: the same on every retry (the receiver's
  idempotency key: a resend after a crash is a duplicate with the same key);
- ``X-Hitl-Timestamp`` -- epoch seconds when this try was signed;
- ``X-Hitl-Signature`` -- ``sha256=HEX``: HMAC-SHA256 under the channel's
  secret of ``TIMESTAMP.BODY`` (the timestamp, a dot, the raw body bytes).

A receiver recomputes the HMAC over the bytes it received, compares in
constant time, and refuses a timestamp more than 5 minutes off its clock
(a replayed request): :func:`verify_signature` does exactly that.

Slack (``type = "slack"``): Slack's incoming-webhook body (``text`` and
``blocks``), with an "Answer" link button per answer link (it opens the
answer page). Approve/Reject buttons only when the channel has the Slack
app's ``signing_secret``: Slack then calls back ``/answer/slack/actions`` on
``hitl serve``, which answers only if :func:`verify_slack` accepts the call.

SMTP (``type = "smtp"``): one message per recipient (each with its own
answer link), ``Message-ID`` derived from the key (a resend is the same
message to a mail client), STARTTLS unless ``starttls = false``, login when
``username`` is set; the password comes from the config or its environment
variable and is never printed. 2xx is success for HTTP; anything else, a
refused connection or a timeout is a failed try (retried with backoff).
"""

from __future__ import annotations

import asyncio
import email.policy
import hashlib
import hmac
import json
import time
from email.message import EmailMessage
from typing import Any

from ..errors import HitlError
from .config import Channel
from .facts import Notification

TOLERANCE = 300.0
"""Seconds a receiver accepts a signature's timestamp off its own clock."""


class DeliveryError(HitlError):
    """One try that failed (the sender retries it)."""


def sign(secret: str, timestamp: int, body: bytes) -> str:
    return "sha256=" + hmac.new(secret.encode(), str(timestamp).encode() + b"." + body, hashlib.sha256).hexdigest()


def verify_signature(secret: str, timestamp: str | None, signature: str | None, body: bytes,
                     now: float | None = None, tolerance: float = TOLERANCE) -> bool:
    """What a webhook receiver checks: the signature over the bytes received, and a fresh timestamp."""
    if not timestamp or not signature or not timestamp.isdigit() or len(timestamp) > 12:
        return False
    if abs((time.time() if now is None else now) - int(timestamp)) > tolerance:
        return False
    return hmac.compare_digest(sign(secret, int(timestamp), body), signature)


def body_of(n: Notification, links: dict[str, str]) -> bytes:
    return json.dumps({**n.data, "subject": n.subject, "links": links}, default=str, ensure_ascii=False,
                      separators=(",", ":")).encode()


async def _post(channel: Channel, body: bytes, headers: dict[str, str]) -> None:
    import aiohttp

    assert channel.url is not None
    try:
        async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=channel.timeout)) as http, \
                http.post(channel.url, data=body, headers={"Content-Type": "application/json", **headers}) as r:
            await r.read()
            if not 200 <= r.status < 300:
                raise DeliveryError(f"{channel.name}: the receiver answered HTTP {r.status}")
    except (TimeoutError, aiohttp.ClientError, OSError) as exc:
        raise DeliveryError(f"{channel.name}: {type(exc).__name__}: {' '.join(str(exc).split())[:200]}") from None


async def send_webhook(channel: Channel, n: Notification, links: dict[str, str]) -> None:
    body = body_of(n, links)
    ts = int(time.time())
    headers = {"X-Hitl-Delivery": n.key, "X-Hitl-Timestamp": str(ts), "User-Agent": "hitl-console"}
    if channel.secret:
        headers["X-Hitl-Signature"] = sign(channel.secret, ts, body)
    await _post(channel, body, headers)


def slack_body(n: Notification, links: dict[str, str], interactive: bool = False) -> dict[str, Any]:
    """Slack's incoming-webhook body: the subject, and per answer link either an
    "Answer" link button, or -- ``interactive`` (the channel has the Slack app's
    signing secret, so its callbacks can be checked) -- Approve/Reject buttons
    whose value is the link's token (``approve:TOKEN``)."""
    blocks: list[dict[str, Any]] = [{"type": "section", "text": {"type": "plain_text", "text": n.subject[:2900]}}]
    elements: list[dict[str, Any]] = []
    for who, url in sorted(links.items()):
        if interactive:
            token = url.rsplit("/", 1)[1]
            elements += [
                {"type": "button", "style": "primary", "text": {"type": "plain_text", "text": "Approve"},
                 "action_id": "hitl-approve", "value": f"approve:{token}"},
                {"type": "button", "style": "danger", "text": {"type": "plain_text", "text": "Reject"},
                 "action_id": "hitl-reject", "value": f"reject:{token}"},
            ]
        elements.append({"type": "button", "text": {"type": "plain_text", "text": f"Answer ({who})"[:75]}, "url": url,
                         "action_id": f"hitl-open-{len(elements)}"})
    if elements:
        blocks.append({"type": "actions", "elements": elements[:25]})
    return {"text": n.subject[:3000], "blocks": blocks}


def slack_signature(secret: str, timestamp: str, body: bytes) -> str:
    """Slack's request signature (``X-Slack-Signature``): ``v0=`` HMAC-SHA256 of ``v0:TIMESTAMP:BODY``."""
    return "v0=" + hmac.new(secret.encode(), b"v0:" + timestamp.encode() + b":" + body, hashlib.sha256).hexdigest()


def verify_slack(secret: str, timestamp: str | None, signature: str | None, body: bytes,
                 now: float | None = None, tolerance: float = TOLERANCE) -> bool:
    """A Slack callback is Slack's: its signature matches and its timestamp is fresh."""
    if not timestamp or not signature or not timestamp.isdigit() or len(timestamp) > 12:
        return False
    if abs((time.time() if now is None else now) - int(timestamp)) > tolerance:
        return False
    return hmac.compare_digest(slack_signature(secret, timestamp, body), signature)


async def send_slack(channel: Channel, n: Notification, links: dict[str, str]) -> None:
    body = slack_body(n, links, interactive=channel.signing_secret is not None)
    await _post(channel, json.dumps(body).encode(), {"X-Hitl-Delivery": n.key})


def message_id(key: str) -> str:
    return f"<{hashlib.sha256(key.encode()).hexdigest()[:32]}@hitl-console>"


_POLICY = email.policy.SMTP.clone(max_line_length=998)
"""Lines up to SMTP's limit: a key or a link stays one readable line (no encoded-word folding)."""


def email_of(channel: Channel, n: Notification, to: str, link: str | None) -> EmailMessage:
    msg = EmailMessage(policy=_POLICY)
    msg["From"] = channel.sender or ""
    msg["To"] = to
    msg["Subject"] = ("[hitl] " + n.subject)[:200]
    msg["Message-ID"] = message_id(f"{n.key}:{to}")
    msg["X-Hitl-Delivery"] = n.key
    lines = [n.subject, ""]
    if n.session_id:
        lines.append(f"session: {n.session_id}")
    if n.interrupt_id:
        lines.append(f"interrupt: {n.interrupt_id}")
    if link:
        lines += ["", f"Answer it here (this link is for {to} only, and works once): {link}"]
    text = "\n".join(lines) + "\n"
    # Plain ASCII goes as is (7bit), so the link is one line in any mail reader or sink.
    if text.isascii():
        msg.set_content(text, cte="7bit")
    else:
        msg.set_content(text)
    return msg


def _smtp_send(channel: Channel, messages: list[EmailMessage]) -> None:
    import smtplib
    import ssl

    assert channel.host is not None
    with smtplib.SMTP(channel.host, channel.port, timeout=channel.timeout) as smtp:
        smtp.ehlo()
        if channel.starttls:
            context = ssl.create_default_context(cafile=channel.ca_file)
            smtp.starttls(context=context)
            smtp.ehlo()
        if channel.username:
            smtp.login(channel.username, channel.password or "")
        for msg in messages:
            smtp.send_message(msg)


async def send_smtp(channel: Channel, n: Notification, links: dict[str, str]) -> None:
    import smtplib
    import ssl

    messages = [email_of(channel, n, to, links.get(to)) for to in channel.to]
    try:
        await asyncio.to_thread(_smtp_send, channel, messages)
    except (smtplib.SMTPException, ssl.SSLError, OSError) as exc:
        text = " ".join(str(exc).split())[:200]
        if channel.password:
            text = text.replace(channel.password, "***")
        raise DeliveryError(f"{channel.name}: {type(exc).__name__}: {text}") from None


SENDERS = {"webhook": send_webhook, "slack": send_slack, "smtp": send_smtp}


def recipients(channel: Channel) -> list[str]:
    """The names an answer link of this channel is made for (one per e-mail address)."""
    if channel.type == "smtp":
        return list(channel.to)
    return [channel.recipient] if channel.recipient else []
