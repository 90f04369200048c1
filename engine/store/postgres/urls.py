"""Store URLs: which ones are PostgreSQL's, their passwords masked, our ``schema=`` parameter."""

from __future__ import annotations

import re
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from ...errors import StoreError

_SCHEMA_NAME = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")


def is_postgres_url(target: object) -> bool:
    return isinstance(target, str) and target.split("://", 1)[0] in ("postgresql", "postgres")


def mask_url(url: str) -> str:
    """``url`` with its password (in the netloc or a ``password=`` parameter) replaced by ``***``."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return re.sub(r"//([^:/@]*):[^@]*@", r"//\1:***@", url)
    netloc = parts.netloc
    if "@" in netloc:
        user, _, host = netloc.rpartition("@")
        if ":" in user:
            user = user.split(":", 1)[0] + ":***"
        netloc = f"{user}@{host}"
    query = parts.query
    if query:
        pairs = [(k, "***" if k.lower() == "password" else v) for k, v in parse_qsl(query, keep_blank_values=True)]
        query = urlencode(pairs, safe="/:*")
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


def _split_schema(url: str) -> tuple[str, str | None]:
    """The URL without our own ``schema=`` (and ``pooler=``) parameters, and that schema."""
    dsn, schema, _ = split_ours(url)
    return dsn, schema


def split_ours(url: str) -> tuple[str, str | None, str | None]:
    """The URL without our own parameters, the ``schema=`` and the ``pooler=`` it gave.
    ``pooler=session`` says a connection pooler in session mode is in front of the
    server (the store then sends its settings as SET statements at once, instead
    of learning it from a refused first connection); other modes are refused."""
    parts = urlsplit(url)
    pairs = parse_qsl(parts.query, keep_blank_values=True)
    schema = pooler = None
    kept = []
    for k, v in pairs:
        if k == "schema":
            schema = v
        elif k == "pooler":
            pooler = v
        else:
            kept.append((k, v))
    if schema is not None and not _SCHEMA_NAME.match(schema):
        raise StoreError(f"invalid schema name {schema!r} in the store URL (lower-case letters, digits and _ only)")
    if pooler is not None and pooler != "session":
        raise StoreError(
            f"pooler={pooler!r} in the store URL: hitl-console works behind a connection pooler in session mode "
            "only (pooler=session); transaction mode breaks its prepared statements, settings and LISTEN"
        )
    query = urlencode(kept, safe="/:")
    return urlunsplit((parts.scheme, parts.netloc, parts.path, query, parts.fragment)), schema, pooler
