"""Driver and server errors as the operator reads them (every message names the masked URL)."""

from __future__ import annotations

import json

import asyncpg

from ...errors import (
    AlreadyResolvedError,
    ConflictError,
    HitlError,
    InvocationBusyError,
    LeaseLostError,
    ReadOnlyError,
    SessionNotFoundError,
    StoreError,
    StoreFullError,
)
from ..base import Lease
from .schema import SCHEMA_VERSION

_CONNECTION_ERRORS = (
    asyncpg.PostgresConnectionError,
    asyncpg.InterfaceError,
    asyncpg.CannotConnectNowError,
    asyncpg.AdminShutdownError,
    ConnectionError,
    OSError,
)


class ConnectionLostError(StoreError):
    """The connection to the server broke during a unit of work."""


def _translate(exc: BaseException, where: str, busy_timeout: float) -> HitlError:
    """A driver or server error as the operator should read it (``where`` is the masked URL)."""
    state = getattr(exc, "sqlstate", None) or ""
    msg = " ".join(str(exc).split())
    if state == "25006":
        return ReadOnlyError(f"the store {where} is open read-only; nothing was written (open it without --read-only)")
    if state in ("53100", "53200", "54000"):
        return StoreFullError(
            f"the PostgreSQL server of {where} has no room ({msg}); the write was rolled back and nothing of it "
            "was stored. Free space on the server, then retry"
        )
    if state == "55P03":
        return StoreError(
            f"the store {where} is locked by another session (waited {busy_timeout:g}s for it); "
            "retry in a moment, or raise the busy timeout"
        )
    if state == "57014":
        return StoreError(
            f"a statement on {where} was cancelled ({msg}); nothing of it was stored; "
            "retry, or raise the server's statement_timeout"
        )
    if state == "28P01" or state == "28000":
        return StoreError(f"cannot sign in to {where} ({msg}); check the user and password (PGPASSWORD, ~/.pgpass)")
    if state == "3D000":
        return StoreError(f"the database of {where} does not exist ({msg}); create it first (createdb)")
    if state == "42501":
        return StoreError(f"permission denied on {where} ({msg}); grant the store's user access to its schema")
    if isinstance(exc, _CONNECTION_ERRORS) or state.startswith("08") or state in ("57P01", "57P02", "57P03"):
        return ConnectionLostError(
            f"lost the connection to {where} ({type(exc).__name__}: {msg}); check that the server runs, then retry"
        )
    return StoreError(f"database error on {where}: {msg}")


def _connect_error(exc: BaseException, where: str) -> HitlError:
    state = getattr(exc, "sqlstate", None) or ""
    if state:
        return _translate(exc, where, 0)
    msg = " ".join(str(exc).split()) or type(exc).__name__
    return StoreError(
        f"cannot connect to the PostgreSQL server of {where} ({msg}); check that it runs and the URL "
        "(--db / $HITL_DB / hitl.toml [store] url)"
    )


def _raise_append_error(
    exc: asyncpg.PostgresError,
    session_id: str,
    inv: str,
    owner: str | None,
    expected: int | None = None,
    after: int | None = None,
) -> None:
    state = exc.sqlstate
    msg = getattr(exc, "message", "") or ""
    if state == "HT503":  # hitl_acquire_append: another owner's live lease (its times in the detail)
        acquired, renewed, expires = json.loads(getattr(exc, "detail", None) or "[0, 0, 0]")
        lease = Lease(
            session_id=session_id,
            invocation_id=inv,
            owner=msg,
            acquired_at=acquired,
            renewed_at=renewed,
            expires_at=expires,
        )
        raise InvocationBusyError(inv, lease) from None
    if state == "HT412":
        raise ConflictError(f"invocation {inv} changed since event {after}; read it again") from None
    if state == "HT404":
        raise SessionNotFoundError(session_id) from None
    if state == "HT4EX":  # hitl_create_acquire_append: the session to create exists
        raise ConflictError(f"session {session_id!r} already exists") from None
    if state == "HT409":
        raise ConflictError(
            f"session {session_id} changed (now at event {msg}, expected {expected}); reload and retry"
        ) from None
    if state == "HT423":
        holder = None
        if getattr(exc, "detail", None) == "held":
            holder = Lease(
                session_id=session_id, invocation_id=inv, owner=msg, acquired_at=0, renewed_at=0, expires_at=0
            ).holder
        raise LeaseLostError(session_id, inv, owner or "", holder) from None
    if state == "HT410":
        raise AlreadyResolvedError(json.loads(msg)) from None


def _newer_schema_error(where: str, version: int) -> StoreError:
    return StoreError(
        f"the store {where} has schema version {version}, newer than this hitl-console's {SCHEMA_VERSION}; "
        "it was left untouched: upgrade hitl-console to open it"
    )
