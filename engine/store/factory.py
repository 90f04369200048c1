"""``open_store``: one way to open any backend from what an operator typed.

A store is named by a path or a URL, wherever one is asked for (``--db``,
``$HITL_DB``, ``hitl.toml`` ``[store] url``, ``hitl copy --from/--to``):

``/path/to/file.sqlite``, ``~/x.sqlite``, ``sqlite:///abs/path``, ``sqlite:rel/path``
    :class:`~engine.store.sqlite.SQLiteStore`
``postgresql://user@host:5432/db?sslmode=require&schema=hitl`` (or ``postgres://``)
    :class:`~engine.store.postgres.PostgresStore` (asyncpg imported only then)
``memory:``
    :class:`~engine.store.memory.MemoryStore` (empty; for tests and demos)

Without one, the store is :func:`default_db_path`. :func:`store_label` is how a
store is named in messages: a path as is, a URL with its password masked.

The surfaces (CLI, console, API) reach a backend only through this module and
:mod:`engine.store.capabilities` (a test keeps it so): :func:`session_rows` and
:func:`interrupt_rows` are the read commands' fast paths, which answer from a
SQLite file without opening a store (no pydantic, no asyncio: a short start-up
for a read); :func:`migrate_sqlite` is ``hitl migrate`` on a file.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import HitlError, StoreError

if TYPE_CHECKING:
    from .base import SessionStore
    from .sqlite.event_log import EventLog
    from .sqlite.inbox_rows import InterruptRows
    from .sqlite.session_rows import SessionRows

_SQLITE_ONLY = ("inline", "synchronous")
_POSTGRES_ONLY = ("statement_timeout", "min_size", "max_size", "migrate", "password", "defer_schema_check")


def default_db_path() -> Path:
    """The store when none is named: the SQLite file at ``$HITL_DB`` if set, else
    ``~/.local/share/hitl-console/hitl.sqlite`` (:func:`engine.store.sqlite.listing.default_db_path`)."""
    from .sqlite.listing import default_db_path as sqlite_default

    return sqlite_default()


def store_kind(target: str | os.PathLike[str]) -> str:
    """``"sqlite"``, ``"postgres"`` or ``"memory"`` for a path or URL."""
    text = os.fspath(target)
    scheme = text.split("://", 1)[0].lower() if "://" in text else ""
    if scheme in ("postgresql", "postgres"):
        return "postgres"
    if text == "memory:" or text.startswith("memory:"):
        return "memory"
    if scheme in ("", "sqlite") or text.startswith("sqlite:"):
        return "sqlite"
    raise StoreError(
        f"unknown store URL scheme {scheme!r} in {store_label(text)}; "
        "use a file path, sqlite:///path, postgresql://... or memory:"
    )


def sqlite_path(target: str | os.PathLike[str]) -> Path:
    """The file a SQLite target names (``sqlite:///abs``, ``sqlite:rel`` or a plain path)."""
    text = os.fspath(target)
    if text.startswith("sqlite://"):
        text = text[len("sqlite://") :] or "/"
    elif text.startswith("sqlite:"):
        text = text[len("sqlite:") :]
    return Path(text).expanduser()


def store_label(target: str | os.PathLike[str] | None) -> str:
    """How messages name a store: a path as given, a URL with its password masked."""
    if target is None:
        return ""
    text = os.fspath(target)
    if "://" in text and not text.startswith("sqlite:"):
        from .postgres import mask_url

        return mask_url(text)
    return text


async def open_store(target: str | os.PathLike[str], *, read_only: bool = False, **options: Any) -> SessionStore:
    """Open the store ``target`` names (see the module docstring). ``options`` are
    passed to the backend that understands them (``busy_timeout`` to both,
    ``inline``/``synchronous`` to SQLite, ``statement_timeout``/pool sizes/``migrate``/
    ``defer_schema_check`` to PostgreSQL) and dropped for the others."""
    kind = store_kind(target)
    if kind == "memory":
        from .memory import MemoryStore

        return MemoryStore(read_only=read_only)
    if kind == "postgres":
        from .postgres import PostgresStore

        kept = {k: v for k, v in options.items() if k not in _SQLITE_ONLY}
        return await PostgresStore.open(os.fspath(target), read_only=read_only, **kept)
    from .sqlite import SQLiteStore

    kept = {k: v for k, v in options.items() if k not in _POSTGRES_ONLY}
    return await SQLiteStore.open(sqlite_path(target), read_only=read_only, **kept)


def session_rows(target: Path | str, **filters: Any) -> SessionRows | None:
    """One page of the sessions listing (:meth:`SessionStore.list_sessions`'s
    ``filters``) with each session's interrupted and queued invocations, read from
    the SQLite file ``target`` with plain sqlite3 (:mod:`engine.store.sqlite.listing`).
    None when this fast path cannot answer: ``target`` is a URL (a string), no such
    file, another schema version, a bad cursor; the caller then opens the store,
    which answers or refuses the usual way."""
    if not isinstance(target, Path):
        return None
    from .sqlite.session_rows import list_session_rows

    return list_session_rows(target, **filters)


def event_log(target: Path | str, session_id: str) -> EventLog | None:
    """A session's stored event rows as text, read from the SQLite file ``target`` with
    plain sqlite3 (:mod:`engine.store.sqlite.event_log`, ``hitl events``' fast path);
    None when it cannot answer (a URL, no such file or session, another schema)."""
    if not isinstance(target, Path):
        return None
    from .sqlite.event_log import open_event_log

    return open_event_log(target, session_id)


def interrupt_rows(target: Path | str, **filters: Any) -> InterruptRows | None:
    """One page of the inbox (:meth:`SessionStore.open_interrupts`'s ``app_name``,
    ``session_id``, ``limit``, ``cursor``) as plain rows, read as :func:`session_rows`
    reads (:mod:`engine.store.sqlite.inbox_rows`); None when it cannot answer."""
    if not isinstance(target, Path):
        return None
    from .sqlite.inbox_rows import list_interrupt_rows

    return list_interrupt_rows(target, **filters)


async def migrate_sqlite(target: str | os.PathLike[str]) -> tuple[int, int]:
    """(version before, after) of the SQLite file ``target`` names (a path or a
    ``sqlite:`` URL): a writer migrates on open."""
    from .sqlite import SCHEMA_VERSION, SQLiteStore, schema_version

    path = sqlite_path(target)
    if not path.exists():
        # Never create a store here: a mistyped --db would leave a new empty file.
        raise HitlError(f"no session database at {path}; check --db / $HITL_DB")
    before = await schema_version(path)
    await (await SQLiteStore.open(path, inline=True)).close()
    return before, SCHEMA_VERSION


def is_url(target: object) -> bool:
    """Whether ``target`` is a store URL (``scheme:...``) rather than a file path."""
    return isinstance(target, str) and (
        "://" in target or target.startswith(("sqlite:", "memory:")) and not os.path.exists(target)
    )


def store_config(config: str | os.PathLike[str] | None) -> dict[str, Any]:
    """The ``[store]`` table of a ``hitl.toml`` ({} when there is none): ``url`` and,
    for PostgreSQL, ``password`` (kept out of the URL so it is never shown)."""
    from ..configfile import read_toml

    if config is None:
        return {}
    path = Path(config)
    try:
        data = read_toml(path)
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError, ValueError) as exc:  # ValueError: tomllib.TOMLDecodeError
        raise StoreError(f"cannot read {path}: {exc}") from None
    table = data.get("store", {})
    if not isinstance(table, dict):
        raise StoreError(f"{path}: [store] must be a table (url = \"postgresql://...\")")
    for key in ("url", "password"):
        if key in table and not isinstance(table[key], str):
            raise StoreError(f"{path}: [store] {key} must be a string")
    unknown = sorted(set(table) - {"url", "password"})
    if unknown:
        raise StoreError(f"{path}: unknown key(s) in [store]: {', '.join(unknown)} (known: url, password)")
    return dict(table)
