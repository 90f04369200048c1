"""The tables both SQL stores keep, described once, and the columns they read
them by (in the order the row converters of :mod:`.rows` expect).

Each backend writes its own DDL and migrations (:mod:`engine.store.sqlite.schema`,
:mod:`engine.store.postgres.schema`: the types and the append path differ); the
tables, their meaning and the columns read are the same:

``sessions``
    One row per session: identity, state (JSON), ``last_seq``, and the summary
    the sessions screen lists (status, open interrupts, oldest open, last event,
    counts), maintained in the same transaction as every append.
``events``
    The append-only log, primary key ``(session_id, seq)``; the event's JSON plus
    a few columns copied out of it for indexes (invocation, path, kind).
``invocations``
    Per invocation: status (from root lifecycle records), start seq and message.
``interrupts``
    The interrupt index: interrupt id -> invocation, node path, call; open or not;
    who owns it.
``snapshots``
    Cached projections of one invocation at some seq.
``projection_checkpoints``
    Cached projections of a whole session at some seq (:mod:`engine.checkpoints`).
``leases``
    Which process runs a turn of an invocation, until when.
``audit``
    Operator writes: answers, re-drives and cancels (derived from their events)
    and imports (written in the import's transaction).
``turn_requests``, ``workers``, ``invocation_graphs``
    The worker queue (:mod:`engine.store.workers`).

Everything but ``events``, the session's identity, leases, import audit rows and
the worker queue is derived: the one definition of how an event changes it is
:func:`engine.store.base.index_effects`.

Plain strings and :mod:`json` only: the fast paths on plain ``sqlite3`` use them.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

SESSION_COLS = "id, app_name, user_id, state, created_at, updated_at, last_seq"
INVOCATION_COLS = "session_id, invocation_id, status, started_seq, started_at, updated_at, message"
LEASE_COLS = "session_id, invocation_id, owner, acquired_at, renewed_at, expires_at"
AUDIT_COLS = "id, at, action, operator, reason, session_id, invocation_id, seq, event_id, details"
INTERRUPT_COLS = (
    "interrupt_id, session_id, app_name, user_id, invocation_id, path, event_id, name, args, "
    "raised_seq, raised_at, status, resolved_by, resolved_seq, owner, owned_at"
)
REQUEST_COLS = (
    "app_name, session_id, invocation_id, kind, payload, requested_at, claimed_by, claimed_until, held, note"
)
WORKER_COLS = "worker_id, host, pid, apps, versions, current, state, started_at, heartbeat_at, stale_after"

SESSION_OWNERS = (
    "(SELECT {agg}(DISTINCT o.owner) FROM interrupts AS o"
    " WHERE o.session_id = sessions.id AND o.status = 'open' AND o.owner IS NOT NULL)"
)
"""A session's owners: those of its open interrupts (the interrupts' owner index),
as a JSON array in the row (:func:`session_owners` reads it); ``{agg}`` is the
dialect's JSON aggregate."""


def summary_cols(agg: str) -> str:
    """The columns of a session summary row, its owners last (:data:`SESSION_OWNERS`
    with the dialect's JSON aggregate ``agg``)."""
    return (
        "id, app_name, user_id, status, open_interrupts, oldest_open_at, last_event_at, "
        "event_count, invocation_count, created_at, updated_at, " + SESSION_OWNERS.format(agg=agg)
    )


def session_owners(cell: Any) -> tuple[str, ...]:
    """The owners column of a session row: sorted, distinct (empty: nobody owns an open interrupt)."""
    return tuple(sorted(set(json.loads(cell)))) if cell else ()


def owner_condition(owner: str, arg: Callable[[Any], str]) -> str:
    """The WHERE term of the owner filter of a sessions listing: a session with an
    open interrupt owned by ``owner`` (``""``: one nobody owns). ``arg`` binds a
    value and returns its placeholder (``?`` in SQLite, ``$n`` in PostgreSQL)."""
    match = "o.owner IS NULL" if owner == "" else f"o.owner = {arg(owner)}"
    return ("EXISTS (SELECT 1 FROM interrupts AS o WHERE o.session_id = sessions.id"
            f" AND o.status = 'open' AND {match})")
