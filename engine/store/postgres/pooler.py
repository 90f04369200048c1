"""A connection pooler in front of the server (PgBouncer in session mode).

The store gives each connection its settings (``search_path`` for the URL's
``schema=``, ``lock_timeout``, ``extra_float_digits``, read-only, a statement
timeout) as parameters of the connection's start, which costs no round trip. A
pooler takes only a few of those (PgBouncer: ``application_name`` and
``client_encoding``) and refuses the connection over the others ("unsupported
startup parameter"). Told that once, the store connects again with only those
and gives each new connection the rest as ``SET`` statements -- in front of its
first statement, in the same message, where that statement can carry them (a
turn's first read), else as a statement of their own (see ``_Core._run``).

Session mode is what the store needs: a connection is the client's for its whole
life, so its settings, prepared statements, LISTEN and session advisory locks
hold. Transaction mode breaks those (see the README's PostgreSQL section).
"""

from __future__ import annotations

import asyncpg

STARTUP = frozenset({"application_name", "client_encoding"})
"""The settings PgBouncer takes at a connection's start."""


def refuses_settings(exc: BaseException) -> bool:
    """Whether a connection was refused over a setting at its start (a pooler's answer)."""
    return isinstance(exc, asyncpg.ProtocolViolationError) and "unsupported startup parameter" in str(exc)


def split(settings: dict[str, str]) -> tuple[dict[str, str], str]:
    """``settings`` as what a pooler takes at the start, and the rest as ``SET`` statements."""
    startup = {k: v for k, v in settings.items() if k in STARTUP}
    sets = "".join(
        f"SET {k} = {_value(k, v)}; " for k, v in settings.items() if k not in STARTUP
    )
    return startup, sets


def _value(name: str, value: str) -> str:
    if name == "search_path":
        return value  # the URL's schema name, checked to be a plain lower-case identifier (urls.py)
    return "'" + value.replace("'", "''") + "'"
