"""What ``[notify]`` of ``hitl.toml`` says::

    [notify]
    public_url = "https://hitl.example.com"   # where hitl serve is reached (answer links)
    link_secret_env = "HITL_LINK_SECRET"       # or link_secret = "..." : signs answer links
    link_hours = 24                            # a link expires this long after it is made
    retry_seconds = 5                          # first retry after this, doubling ...
    max_retry_seconds = 600                    # ... up to this

    [notify.channels.ops]
    type = "webhook"                           # JSON body, X-Hitl-Signature (HMAC-SHA256)
    url = "https://ops.example.com/hitl"
    secret_env = "HITL_WEBHOOK_SECRET"         # or secret = "..."
    recipient = "ops-oncall"                   # the name an answer link of this channel records

    [notify.channels.slack]
    type = "slack"                             # Slack incoming-webhook format
    url = "https://hooks.slack.com/services/..."
    recipient = "slack"                        # links and buttons record "USER via slack"
    signing_secret_env = "SLACK_SIGNING_SECRET"  # with it: Approve/Reject buttons that call back
                                               # (the Slack app's Request URL: {public_url}/answer/slack/actions)

    [notify.channels.mail]
    type = "smtp"
    host = "smtp.example.com"
    port = 587
    starttls = true                            # default true (false only for a local sink)
    username = "hitl"
    password_env = "HITL_SMTP_PASSWORD"        # or password = "..."
    from = "hitl@example.com"
    to = ["alice@example.com", "bob@example.com"]   # one message (and link) per recipient

    [[notify.rules]]
    name = "big refunds"
    on = ["interrupt_opened"]                  # interrupt_opened, interrupt_open_for, turn_failed,
                                               # turn_in_doubt, pool_empty
    filter = "app=refund_approval amount>1000" # the inbox's filter terms
    after = "2h"                               # interrupt_open_for: open at least this long
    channels = ["ops", "mail"]
    attempts = 8                               # tries per channel before it counts as failed

Problems are one :class:`NotifyConfigError` line naming the key; a secret's
value never appears in one.
"""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import HitlError

KINDS = ("interrupt_opened", "interrupt_open_for", "turn_failed", "turn_in_doubt", "pool_empty")
CHANNEL_TYPES = ("webhook", "slack", "smtp")


class NotifyConfigError(HitlError):
    """``[notify]`` of hitl.toml is wrong: one line, nothing sent."""


@dataclass(frozen=True)
class Channel:
    name: str
    type: str
    url: str | None = None
    secret: str | None = field(default=None, repr=False)
    recipient: str | None = None
    host: str | None = None
    port: int = 587
    starttls: bool = True
    username: str | None = None
    password: str | None = field(default=None, repr=False)
    sender: str | None = None
    to: tuple[str, ...] = ()
    timeout: float = 10.0
    ca_file: str | None = None
    signing_secret: str | None = field(default=None, repr=False)
    """Slack: the app's signing secret; with it the message has Approve/Reject buttons that call back."""


@dataclass(frozen=True)
class Rule:
    name: str
    on: tuple[str, ...]
    filter: str = ""
    after: float | None = None
    channels: tuple[str, ...] = ()
    attempts: int = 8

    def where(self) -> Any:
        from ..bulk_filter import Where, parse_where

        return parse_where(self.filter, Where(older_than=self.after)) if self.filter else Where(older_than=self.after)


@dataclass(frozen=True)
class NotifyConfig:
    rules: tuple[Rule, ...] = ()
    channels: dict[str, Channel] = field(default_factory=dict)
    public_url: str | None = None
    link_secret: str | None = field(default=None, repr=False)
    link_seconds: float = 24 * 3600.0
    retry_seconds: float = 5.0
    max_retry_seconds: float = 600.0

    @property
    def active(self) -> bool:
        """Something may need sending: rules, or channels a deadline rule's steps may name."""
        return bool(self.rules or self.channels)

    def backoff(self, attempts: int) -> float:
        """Seconds before the next try after ``attempts`` failed ones."""
        return min(self.retry_seconds * (2.0 ** max(attempts - 1, 0)), self.max_retry_seconds)


def load_notify_config(path: str | Path | None, env: dict[str, str] | None = None) -> NotifyConfig:
    """``[notify]`` of the file at ``path`` (None, or no section: nothing to send)."""
    if path is None:
        return NotifyConfig()
    try:
        data = tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise NotifyConfigError(f"config file {path} not found") from None
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise NotifyConfigError(f"cannot read {path}: {exc}") from None
    section = data.get("notify", {})
    if not isinstance(section, dict):
        raise NotifyConfigError(f"{path}: [notify] must be a table")
    return parse(section, str(path), os.environ if env is None else env)


def _secret(table: dict[str, Any], key: str, where: str, env: Any) -> str | None:
    if key in table and f"{key}_env" in table:
        raise NotifyConfigError(f"{where}: give {key} or {key}_env, not both")
    if f"{key}_env" in table:
        name = table[f"{key}_env"]
        if not isinstance(name, str) or name not in env:
            raise NotifyConfigError(f"{where}.{key}_env: the environment variable {name!r} is not set")
        return str(env[name])
    value = table.get(key)
    if value is not None and not isinstance(value, str):
        raise NotifyConfigError(f"{where}.{key} must be a string")
    return value


def _number(table: dict[str, Any], key: str, default: float, where: str) -> float:
    value = table.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
        raise NotifyConfigError(f"{where}.{key} must be a positive number, not {value!r}")
    return float(value)


def _channel(name: str, t: Any, where: str, env: Any) -> Channel:
    key = f"{where}: notify.channels.{name}"
    if not isinstance(t, dict):
        raise NotifyConfigError(f"{key} must be a table")
    kind = t.get("type")
    if kind not in CHANNEL_TYPES:
        raise NotifyConfigError(f"{key}.type must be one of {', '.join(CHANNEL_TYPES)}, not {kind!r}")
    known = {"type", "url", "secret", "secret_env", "recipient", "timeout", "host", "port", "starttls", "username",
             "password", "password_env", "from", "to", "ca_file", "signing_secret", "signing_secret_env"}
    unknown = sorted(set(t) - known)
    if unknown:
        raise NotifyConfigError(f"{key}: unknown key {unknown[0]}")
    timeout = _number(t, "timeout", 10, key)
    if kind in ("webhook", "slack"):
        url = t.get("url")
        if not isinstance(url, str) or not url.startswith(("http://", "https://")):
            raise NotifyConfigError(f"{key}.url must be an http:// or https:// URL")
        signing = _secret(t, "signing_secret", key, env)
        if signing is not None and kind != "slack":
            raise NotifyConfigError(f"{key}.signing_secret is for slack channels (their buttons' callbacks)")
        return Channel(name, kind, url=url, secret=_secret(t, "secret", key, env), recipient=t.get("recipient"),
                       timeout=timeout, signing_secret=signing)
    host, sender, to = t.get("host"), t.get("from"), t.get("to")
    if not isinstance(host, str) or not host:
        raise NotifyConfigError(f"{key}.host is required for an smtp channel")
    if not isinstance(sender, str) or "@" not in sender:
        raise NotifyConfigError(f"{key}.from must be an e-mail address")
    if not isinstance(to, list) or not to or not all(isinstance(a, str) and "@" in a for a in to):
        raise NotifyConfigError(f"{key}.to must be a list of e-mail addresses")
    port = t.get("port", 587)
    if isinstance(port, bool) or not isinstance(port, int) or not 0 < port < 65536:
        raise NotifyConfigError(f"{key}.port must be a port number")
    return Channel(name, kind, host=host, port=port, starttls=bool(t.get("starttls", True)),
                   username=t.get("username"), password=_secret(t, "password", key, env), sender=sender,
                   to=tuple(to), timeout=timeout, ca_file=t.get("ca_file"))


def _rule(n: int, t: Any, channels: dict[str, Channel], where: str) -> Rule:
    from ..bulk_filter import parse_age, parse_where

    key = f"{where}: notify.rules[{n}]"
    if not isinstance(t, dict):
        raise NotifyConfigError(f"{key} must be a table ([[notify.rules]])")
    unknown = sorted(set(t) - {"name", "on", "filter", "after", "channels", "attempts"})
    if unknown:
        raise NotifyConfigError(f"{key}: unknown key {unknown[0]}")
    on = t.get("on")
    if isinstance(on, str):
        on = [on]
    if not isinstance(on, list) or not on or any(k not in KINDS for k in on):
        raise NotifyConfigError(f"{key}.on must list events of: {', '.join(KINDS)}")
    names = t.get("channels")
    if not isinstance(names, list) or not names or any(c not in channels for c in names):
        raise NotifyConfigError(f"{key}.channels must name channels of [notify.channels] ({', '.join(channels)})")
    after = None
    if "after" in t:
        try:
            after = parse_age(str(t["after"]))
        except HitlError as exc:
            raise NotifyConfigError(f"{key}.after: {exc}") from None
    if "interrupt_open_for" in on and after is None:
        raise NotifyConfigError(f"{key}: interrupt_open_for needs after = DURATION (2h, 30m)")
    text = t.get("filter", "")
    try:
        parse_where(str(text))
    except HitlError as exc:
        raise NotifyConfigError(f"{key}.filter: {exc}") from None
    attempts = t.get("attempts", 8)
    if isinstance(attempts, bool) or not isinstance(attempts, int) or attempts < 1:
        raise NotifyConfigError(f"{key}.attempts must be a whole number >= 1")
    return Rule(str(t.get("name") or f"rule {n}"), tuple(on), str(text), after, tuple(names), attempts)


def parse(section: dict[str, Any], where: str, env: Any) -> NotifyConfig:
    known = {"public_url", "link_secret", "link_secret_env", "link_hours", "retry_seconds", "max_retry_seconds",
             "channels", "rules"}
    unknown = sorted(set(section) - known)
    if unknown:
        raise NotifyConfigError(f"{where}: unknown key notify.{unknown[0]} (known: {', '.join(sorted(known))})")
    raw = section.get("channels", {})
    if not isinstance(raw, dict):
        raise NotifyConfigError(f"{where}: notify.channels must be a table of [notify.channels.NAME]")
    channels = {name: _channel(name, t, where, env) for name, t in raw.items()}
    rules = section.get("rules", [])
    if not isinstance(rules, list):
        raise NotifyConfigError(f"{where}: notify.rules must be an array of tables ([[notify.rules]])")
    public = section.get("public_url")
    if public is not None and (not isinstance(public, str) or not public.startswith(("http://", "https://"))):
        raise NotifyConfigError(f"{where}: notify.public_url must start with http:// or https://")
    return NotifyConfig(
        rules=tuple(_rule(n, t, channels, where) for n, t in enumerate(rules, 1)),
        channels=channels,
        public_url=public.rstrip("/") if public else None,
        link_secret=_secret(section, "link_secret", f"{where}: notify", env),
        link_seconds=_number(section, "link_hours", 24, f"{where}: notify") * 3600,
        retry_seconds=_number(section, "retry_seconds", 5, f"{where}: notify"),
        max_retry_seconds=_number(section, "max_retry_seconds", 600, f"{where}: notify"),
    )
