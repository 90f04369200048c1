"""What ``hitl serve`` is told: the ``[serve]`` section of ``hitl.toml``.

::

    [serve]
    title = "hitl console (production)"   # page title; default "hitl console"
    session_hours = 8                      # a sign-in lasts this long (cookie and server side)
    max_failed_signins = 5                 # per (name, client address) ...
    max_failed_signins_per_address = 20    # ... and per client address, any names ...
    signin_window_seconds = 300            # ... within this window, then refused until it passes
    signin_concurrency = 2                 # password checks (argon2) at once ...
    signin_queue = 8                       # ... and waiting; beyond that a sign-in gets 503
    max_consoles = 50                      # consoles open at once on this server ...
    max_consoles_per_user = 4              # ... and per signed-in name
    console_starts = 8                     # consoles drawing their first screen at once; later ones
                                           # wait in turn, their page says how many start before them
    allowed_hosts = ["hitl.example.com"]   # Host names served besides localhost, IPs and --public-url's
    shutdown_seconds = 10                  # on SIGTERM: consoles get this long to end, then are killed
    fork_consoles = true                   # fork consoles from a pre-imported parent (false: start each afresh)
    proxy_role = "viewer"                  # --trust-proxy-header: role of names not listed below
    trusted_proxies = ["127.0.0.1", "::1"] # --trust-proxy-header: peers whose header is believed

    [serve.operators.alice]
    role = "operator"                      # or "viewer"
    password_hash = "$argon2id$v=19$..."   # `hitl serve --hash-password`

    [serve.operators.kiosk]
    role = "viewer"
    token_hash = "$argon2id$v=19$..."      # a long random token, hashed the same way

Credentials are only ever stored as argon2 hashes (argon2-cffi); a plain
``password``/``token`` key is refused. Every problem is one :class:`ServeConfigError`
line naming the key.
"""

from __future__ import annotations

import ipaddress
import stat
import tomllib
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from engine.errors import HitlError

ROLES = ("viewer", "operator")
DEFAULT_TITLE = "hitl console"


class ServeConfigError(HitlError):
    """``[serve]`` of hitl.toml is wrong, or the bind is unsafe: one line, nothing started."""


@dataclass(frozen=True)
class OperatorEntry:
    """One configured operator: a name, a role and one credential hash."""

    name: str
    role: str
    secret_hash: str
    """An argon2 hash of the operator's password or token."""


@dataclass(frozen=True)
class ServeConfig:
    """Everything ``hitl serve`` reads from hitl.toml (defaults when there is none)."""

    operators: dict[str, OperatorEntry] = field(default_factory=dict)
    title: str = DEFAULT_TITLE
    session_seconds: float = 8 * 3600
    max_failed_signins: int = 5
    max_failed_signins_per_address: int = 20
    signin_window_seconds: float = 300.0
    signin_concurrency: int = 2
    signin_queue: int = 8
    max_consoles: int = 50
    max_consoles_per_user: int = 4
    console_starts: int = 8
    """Consoles starting (forked, drawing their first screen) at once; the others queue in arrival order."""
    allowed_hosts: tuple[str, ...] = ()
    shutdown_seconds: float = 10.0
    fork_consoles: bool = True
    proxy_role: str = "viewer"
    trusted_proxies: tuple[str, ...] = ("127.0.0.1", "::1")
    metrics_from: tuple[str, ...] = ("127.0.0.1/32", "::1/128")
    """Networks whose direct connections may read ``/metrics`` (no sign-in; never
    through a proxy): loopback unless ``[serve] metrics_from`` lists more."""

    warnings: tuple[str, ...] = ()
    """Said once at start (a world-readable config holding the store's password)."""

    @property
    def has_operators(self) -> bool:
        return bool(self.operators)


def load_serve_config(path: str | Path | None) -> ServeConfig:
    """``[serve]`` of the config file at ``path`` (None or no section: the defaults)."""
    if path is None:
        return ServeConfig()
    try:
        mode = Path(path).stat().st_mode
        data = tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ServeConfigError(f"config file {path} not found") from None
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ServeConfigError(f"cannot read {path}: {exc}") from None
    section = data.get("serve", {})
    if not isinstance(section, dict):
        raise ServeConfigError(f"{path}: [serve] must be a table")
    if mode & stat.S_IWOTH:
        raise ServeConfigError(
            f"refusing {path}: it is world-writable, so anyone on this machine could add an operator (chmod o-w {path})"
        )
    config = _parse(section, str(path))
    store = data.get("store")
    if mode & stat.S_IROTH and isinstance(store, dict) and "password" in store:
        config = replace(config, warnings=(
            f"warning: {path} holds the store's password and is world-readable (chmod o-r {path})",
        ))
    return config


def _parse(section: dict[str, Any], where: str) -> ServeConfig:
    known = {"title", "session_hours", "signin_window_seconds", "proxy_role", "trusted_proxies", "operators",
             "allowed_hosts", "shutdown_seconds", "fork_consoles", "metrics_from", *_WHOLE}
    unknown = sorted(set(section) - known)
    if unknown:
        raise ServeConfigError(f"{where}: unknown key serve.{unknown[0]} (known: {', '.join(sorted(known))})")
    title = section.get("title", DEFAULT_TITLE)
    if not isinstance(title, str) or not title.strip():
        raise ServeConfigError(f"{where}: serve.title must be a non-empty string")
    hours = _number(section, "session_hours", 8, where)
    window = _number(section, "signin_window_seconds", 300, where)
    # ints, passed by name: mypy cannot match a dict's keys to the fields it fills
    whole: dict[str, Any] = {key: _whole(section, key, default, where) for key, default in _WHOLE.items()}
    drain = _number(section, "shutdown_seconds", 10, where)
    fork = section.get("fork_consoles", True)
    if not isinstance(fork, bool):
        raise ServeConfigError(f"{where}: serve.fork_consoles must be true or false, not {fork!r}")
    hosts = section.get("allowed_hosts", [])
    if not isinstance(hosts, list) or not all(isinstance(h, str) and h and "/" not in h for h in hosts):
        raise ServeConfigError(f"{where}: serve.allowed_hosts must be a list of host names (no scheme, no path)")
    proxy_role = section.get("proxy_role", "viewer")
    if proxy_role not in ROLES:
        raise ServeConfigError(f"{where}: serve.proxy_role must be one of {', '.join(ROLES)}, not {proxy_role!r}")
    proxies = section.get("trusted_proxies", ["127.0.0.1", "::1"])
    if not isinstance(proxies, list) or not all(isinstance(p, str) for p in proxies):
        raise ServeConfigError(f"{where}: serve.trusted_proxies must be a list of addresses")
    for p in proxies:
        try:
            ipaddress.ip_address(p)
        except ValueError:
            raise ServeConfigError(f"{where}: serve.trusted_proxies: {p!r} is not an IP address") from None
    metrics_from = section.get("metrics_from", ["127.0.0.1/32", "::1/128"])
    if not isinstance(metrics_from, list) or not all(isinstance(n, str) for n in metrics_from):
        raise ServeConfigError(f"{where}: serve.metrics_from must be a list of networks (e.g. \"10.0.0.0/8\")")
    for n in metrics_from:
        try:
            ipaddress.ip_network(n, strict=False)
        except ValueError:
            raise ServeConfigError(f"{where}: serve.metrics_from: {n!r} is not a network") from None
    operators: dict[str, OperatorEntry] = {}
    raw = section.get("operators", {})
    if not isinstance(raw, dict):
        raise ServeConfigError(f"{where}: serve.operators must be a table of [serve.operators.NAME]")
    for name, entry in raw.items():
        operators[name] = _operator(name, entry, where)
    return ServeConfig(
        operators=operators,
        title=title.strip(),
        session_seconds=hours * 3600,
        signin_window_seconds=window,
        allowed_hosts=tuple(h.lower() for h in hosts),
        shutdown_seconds=drain,
        fork_consoles=fork,
        **whole,
        proxy_role=proxy_role,
        trusted_proxies=tuple(proxies),
        metrics_from=tuple(metrics_from),
    )


_WHOLE = {"max_failed_signins": 5, "max_failed_signins_per_address": 20, "signin_concurrency": 2,
          "signin_queue": 8, "max_consoles": 50, "max_consoles_per_user": 4, "console_starts": 8}
"""The whole-number keys of [serve] and their defaults."""


def _whole(section: dict[str, Any], key: str, default: int, where: str) -> int:
    value = _number(section, key, default, where)
    if int(value) != value:
        raise ServeConfigError(f"{where}: serve.{key} must be a whole number")
    return int(value)


def _number(section: dict[str, Any], key: str, default: float, where: str) -> float:
    value = section.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
        raise ServeConfigError(f"{where}: serve.{key} must be a positive number, not {value!r}")
    return float(value)


def _operator(name: str, entry: Any, where: str) -> OperatorEntry:
    key = f"serve.operators.{name}"
    if not valid_name(name):
        raise ServeConfigError(f"{where}: {key}: a name is 1-64 printable characters without spaces at the ends")
    if not isinstance(entry, dict):
        raise ServeConfigError(f"{where}: {key} must be a table (role, password_hash or token_hash)")
    for plain in ("password", "token"):
        if plain in entry:
            raise ServeConfigError(
                f"{where}: {key}.{plain}: store a hash, never the secret itself (hitl serve --hash-password)"
            )
    unknown = sorted(set(entry) - {"role", "password_hash", "token_hash"})
    if unknown:
        raise ServeConfigError(f"{where}: {key}: unknown key {unknown[0]} (role, password_hash, token_hash)")
    role = entry.get("role")
    if role not in ROLES:
        raise ServeConfigError(f"{where}: {key}.role must be one of {', '.join(ROLES)}, not {role!r}")
    hashes = [k for k in ("password_hash", "token_hash") if k in entry]
    if len(hashes) != 1:
        raise ServeConfigError(f"{where}: {key} needs exactly one of password_hash, token_hash")
    value = entry[hashes[0]]
    if not isinstance(value, str) or not value.startswith("$argon2"):
        raise ServeConfigError(f"{where}: {key}.{hashes[0]} is not an argon2 hash (make one: hitl serve --hash-password)")
    return OperatorEntry(name, role, value)


def valid_name(name: Any) -> bool:
    """An operator name as recorded on events: 1-64 printable characters, no spaces at the ends."""
    return (
        isinstance(name, str)
        and 0 < len(name) <= 64
        and name == name.strip()
        and name.isprintable()
    )


def is_loopback(host: str) -> bool:
    """True for ``localhost`` and loopback addresses; a bind to anything else is exposed."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_bind(host: str, config: ServeConfig, proxy_header: str | None) -> None:
    """Refuse to expose a console nobody has to sign in to."""
    if is_loopback(host) or config.has_operators or proxy_header:
        return
    raise ServeConfigError(
        f"refusing to serve on {host}: it is not a loopback address and no sign-in is configured; "
        "add operators to [serve.operators] in hitl.toml (hitl serve --hash-password makes a hash), "
        "or put an authenticating proxy in front with --trust-proxy-header, or bind 127.0.0.1"
    )


def hash_secret(secret: str) -> str:
    """An argon2id hash of ``secret`` (argon2-cffi's recommended parameters)."""
    from argon2 import PasswordHasher

    return PasswordHasher().hash(secret)
