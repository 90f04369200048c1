"""One round trip for a statement a connection has not prepared: the turn's statements.

asyncpg runs every parameterised statement in two round trips the first time a
connection sees it (Parse/Describe, wait for the parameter types, then
Bind/Execute), and every ``hitl resume`` or ``hitl start`` is the first turn of
a new connection: its three or four statements cost twice as many round trips.
Here the parameters are written into the statement as literals and the
statement is sent as one simple-protocol ``COPY (...) TO STDOUT`` message -- one
write, one answer, no statement to prepare, and the rows come back in COPY's
text format (a simple query's rows are dropped by asyncpg), converted per
column. The statement runs in one implicit transaction, as an extended-protocol
one does, and a server error arrives as the same ``asyncpg.PostgresError``.

The first read of a store opened with its schema check deferred carries the
check (:func:`carry`): the statement is wrapped so that the server compares
``hitl_schema``'s version before it reads anything, and fails with
:data:`SCHEMA_MARK` in its message (or on a missing table) when it differs --
no round trip of its own for the check. Behind a connection pooler that takes no
session settings at the connection's start, a new connection's first read
carries them too, as ``SET`` statements in front of it in the same message.

That is for a statement's first use on a connection: from its second, the
connection prepares it as usual (one more round trip, once) and runs it with
bound parameters -- a worker's or a console's long-lived connection sends short
messages, and the server plans the statement once, not every time.

Literals are ``E'...'`` strings with ``\\`` and ``'`` doubled, so they mean the
same whatever ``standard_conforming_strings`` says; a NUL character, which no
PostgreSQL text can hold, is refused before anything is sent. A ``double
precision`` column reads back as the same double when ``extra_float_digits`` is
above 0 (the server's default; the store's connections set 3).
"""

from __future__ import annotations

import re
import weakref
from collections.abc import Callable, Sequence
from typing import Any

import asyncpg

from ...errors import StoreError

_PARAM = re.compile(r"\$(\d+)")
_ESCAPE = re.compile(r"\\(.)")
_COPY_ESCAPES = {"b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v"}


def _text(value: str) -> str:
    if "\x00" in value:
        raise StoreError("a text value holds a NUL character, which PostgreSQL cannot store; nothing was written")
    return "E'" + value.replace("\\", "\\\\").replace("'", "''") + "'"


def literal(value: Any) -> str:
    """``value`` as an SQL literal: None, bool, int, float, str, or a list of
    str/None (a ``text[]``). Strings and arrays are left for the server to type
    from their context, as a parameter would be."""
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return f"{_text(repr(value))}::float8"  # repr: the shortest text that reads back as the same double
    if isinstance(value, str):
        return _text(value)
    if isinstance(value, (list, tuple)):
        return "ARRAY[" + ", ".join("NULL" if v is None else _text(str(v)) for v in value) + "]::text[]"
    raise TypeError(f"no SQL literal for {type(value).__name__}")


def inline(sql: str, args: Sequence[Any]) -> str:
    """``sql`` with each ``$n`` replaced by the literal of ``args[n - 1]``."""
    lits = [literal(a) for a in args]
    return _PARAM.sub(lambda m: lits[int(m[1]) - 1], sql)


def _field(raw: str) -> str | None:
    if raw == "\\N":
        return None
    if "\\" not in raw:
        return raw
    return _ESCAPE.sub(lambda m: _COPY_ESCAPES.get(m[1], m[1]), raw)


_USED: weakref.WeakKeyDictionary[Any, set[str]] = weakref.WeakKeyDictionary()
"""The statements each connection has run once (the next use prepares them)."""


class Carried:
    """What rides on a connection's next statement here: a schema check, and the
    session settings a connection pooler would not take at the connection's start."""

    def __init__(self, version: int | None, settings: str | None) -> None:
        self.version = version
        """The schema version to check (None: no check)."""
        self.settings = settings
        """``SET ...;`` statements to run first, in the same message (None: none)."""
        self.sent = False
        """The statement carrying them went to the server."""
        self.passed = False
        """It came back without an error: the schema is ``version``, the settings hold."""


_CARRIED: weakref.WeakKeyDictionary[Any, Carried] = weakref.WeakKeyDictionary()
"""Connections whose next statement here carries something (:func:`carry`)."""

SCHEMA_MARK = "hitl-console schema version "
"""In the error of a read whose schema check failed (the text the server could not
read as an integer: the mark and the version found)."""


def carry(conn: asyncpg.Connection, *, version: int | None, settings: str | None) -> Carried:
    """Make ``conn``'s next statement here check that the store's schema is
    ``version`` before it reads (it must then be a plain SELECT: the check wraps
    it as a subquery), and run ``settings`` first in the same message (they are
    undone with it when it fails: the statements of one message are one
    transaction)."""
    carried = _CARRIED[getattr(conn, "_con", None) or conn] = Carried(version, settings)
    return carried


def forget(conn: asyncpg.Connection) -> None:
    """Drop what :func:`carry` asked for and no statement carried."""
    _CARRIED.pop(getattr(conn, "_con", None) or conn, None)


def _guarded(sql: str, version: int) -> str:
    # A condition without a column of the query is a one-time filter: the server
    # evaluates it, and its subquery on hitl_schema, before it runs the query.
    # A version other than ``version`` (none: 0) casts the mark to an integer,
    # which fails with the mark and the version in the message. The rows keep the
    # read's ORDER BY: the filter above it scans the subquery as it comes.
    found = "coalesce(max(version), 0)"
    return (
        f"SELECT * FROM ({sql}) hitl_q WHERE (SELECT CASE WHEN {found} = {int(version)} THEN true"
        f" ELSE ('{SCHEMA_MARK}' || {found})::integer IS NULL END FROM hitl_schema)"
    )


_CONVERT: dict[str, Callable[[str], Any]] = {"t": str, "i": int, "f": float, "b": lambda s: s == "t"}


async def fetch(conn: asyncpg.Connection, sql: str, args: Sequence[Any], types: str) -> list[tuple[Any, ...]]:
    """The rows of ``sql`` (``$n`` parameters: ``args``), each a tuple: the first
    time ``conn`` runs it, in one round trip, converted by ``types``, one letter
    a column (``t`` text, ``i`` integer, ``f`` double precision, ``b`` boolean);
    after that, prepared (asyncpg's codecs, the same Python types)."""
    raw = getattr(conn, "_con", None) or conn  # a pool's proxy: the connection it lends
    seen = _USED.setdefault(raw, set())
    carried = _CARRIED.pop(raw, None)
    if carried is None and sql in seen:
        return [tuple(r) for r in await conn.fetch(sql, *args)]
    seen.add(sql)
    query = inline(sql if carried is None or carried.version is None else _guarded(sql, carried.version), args)
    statement = f"{carried.settings if carried and carried.settings else ''}COPY ({query}) TO STDOUT"
    chunks: list[bytes] = []

    async def out(data: bytes) -> None:
        chunks.append(data)

    # asyncpg reports a COPY to no query logger: say it, so a store span counts its
    # statement (the text with its $n, not the values).
    with conn._time_and_log(sql, (), None):
        if carried is not None:
            carried.sent = True
        await conn._copy_out(statement, out, None)
        if carried is not None:
            carried.passed = True
    lines = b"".join(chunks).decode().split("\n")
    lines.pop()  # every row ends with a newline: what follows the last is no row
    rows = []
    for line in lines:
        fields = [_field(f) for f in line.split("\t")]
        if len(fields) != len(types):
            raise StoreError(f"expected {len(types)} columns from the server, got {len(fields)}")
        rows.append(tuple(None if f is None else _CONVERT[t](f) for t, f in zip(types, fields, strict=True)))
    return rows


async def fetchrow(conn: asyncpg.Connection, sql: str, args: Sequence[Any], types: str) -> tuple[Any, ...] | None:
    """The first row of :func:`fetch`, or None."""
    rows = await fetch(conn, sql, args, types)
    return rows[0] if rows else None
