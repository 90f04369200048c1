"""PostgreSQL session store, for teams: many hosts, one server, on asyncpg.

Same tables and the same guarantees as :mod:`engine.store.sqlite` (read its
docstring for what each table holds); this module says what differs.

Why asyncpg
    It speaks PostgreSQL's binary protocol natively from asyncio with its own
    pool and a per-connection prepared-statement cache, so an append -- one
    ``SELECT hitl_append_many(...)`` -- is one round trip with no per-call parse;
    ``executemany`` pipelines imports and bulk loads; ``add_listener`` gives
    LISTEN/NOTIFY on a pooled connection. psycopg 3's async mode would do, but
    is slower per statement and adds nothing we use.

The append is one server-side function
    ``hitl_append`` (PL/pgSQL, created by the migrations) does the whole append
    path in ONE statement, hence one implicit transaction and one round trip:
    it locks the session row (``FOR UPDATE``: appends to one session are
    serialised, so ``seq`` is contiguous under any number of writers and "an id
    answered once" is checked and written atomically), checks ``expected_seq``,
    checks the lease under ``FOR SHARE`` (a steal waits for a fenced append in
    flight and vice versa), writes the event, the interrupt index, the
    invocation, the session summary and state, the audit row, and notifies
    ``hitl_events`` (delivered at commit). What an event does to the derived
    rows is still decided in Python by :func:`engine.store.base.index_effects`
    and passed in as arguments; the function only writes it. The one rule it
    restates in SQL is :func:`engine.store.base.session_status` (a CASE).
    Every append goes through ``hitl_append_many`` (a list of one or more
    events, one statement), which calls ``hitl_append`` per event.

Errors
    The function raises SQLSTATEs of class ``HT`` that :func:`_translate` turns
    into the same exceptions SQLiteStore raises. Serialisation failures and
    deadlocks are retried (the unit of work is one transaction, safe to redo);
    a lost connection is not (an append may have committed): the error says so.
    Every message names the server by its masked URL (:func:`mask_url`).

Read-only
    A read-only store's connections run with ``default_transaction_read_only``
    on: the server itself refuses writes, whatever code path asks.

Schema migrations
    ``hitl_schema(version)`` holds the version; ``_MIGRATIONS[i]`` upgrades
    ``i`` to ``i + 1``. A writer runs the pending ones in one transaction under
    an advisory lock when it opens the store (:meth:`PostgresStore.migrate`);
    a newer schema is refused untouched. ``?schema=NAME`` in the URL puts the
    tables in that schema (created by a writer) instead of ``public``.

Batches
    An import or a bulk load does not go through ``hitl_append``: the derived
    rows of whole sessions are computed in one pass in Python (:class:`_Batch`,
    the same rules and checks) and written with one statement of unnest'ed
    column arrays, so a 100,000-event session imports in seconds, not minutes.
    ``append_events`` (an answer with its auto-completions, a node's end with
    the next node's start) is one ``hitl_append_many`` call.

A turn's first and last writes
    ``acquire_and_append`` and ``append_and_release`` (the capabilities of that
    name) are one statement each too: ``hitl_acquire_append`` takes the lease
    as ``acquire_lease`` does, checks that the invocation did not move on, and
    appends through ``hitl_append_many`` fenced by it; ``hitl_append_release``
    appends fenced, keeps the snapshot and deletes the lease. So a resume that
    runs one node is 5 round trips: the answer's lookup, the invocation's read,
    the first write, the node's write, the last write.

Round trips
    Every store call is one statement, hence one round trip: no BEGIN/COMMIT
    around a single atomic statement, reads that find nothing tell a missing
    session from the same statement (LEFT JOIN from the session row), and the
    pool does not reset connections on release (:func:`_keep_session`).

All SQL of this backend lives in this module.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from functools import partial
from typing import Any, TypeVar
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import asyncpg
from pydantic import ValidationError
from pydantic_core import to_json

from ..errors import (
    AlreadyResolvedError,
    ConflictError,
    CorruptEventError,
    HitlError,
    InvocationBusyError,
    LeaseLostError,
    ReadOnlyError,
    SchemaUpgradeNeeded,
    SessionNotFoundError,
    StoreError,
    StoreFullError,
)
from ..models import Event, Session, StoredEvent, new_id
from . import jsonl
from .base import (
    AuditRecord,
    InterruptRecord,
    InvocationSummary,
    Lease,
    Page,
    SessionOrder,
    SessionSummary,
    import_record,
    session_status,
)

# Row converters, cursors and the event preparation are the SQLite store's: one
# definition of each, whatever the backend.
from .sqlite import (
    _AUDIT_COLS,
    _INTERRUPT_COLS,
    _INVOCATION_COLS,
    _LEASE_COLS,
    _SESSION_COLS,
    _SUMMARY_COLS,
    _audit_from_row,
    _decode_cursor,
    _encode_cursor,
    _interrupt_from_row,
    _invocation_from_row,
    _lease_from_row,
    _parse_event,
    _prepare,
    _Prepared,
    _session_from_row,
    _summary_from_row,
)

T = TypeVar("T")

NOTIFY_CHANNEL = "hitl_events"
"""Every append notifies this channel with ``{"s": session_id, "q": seq}``."""

_LOCK_KEY = 0x48495443
"""Advisory lock taken while migrating ("HITC", like SQLite's application_id)."""

_SCHEMA_NAME = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")
_RETRIES = 5


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
    """The URL without our own ``schema=`` parameter, and that schema."""
    parts = urlsplit(url)
    pairs = parse_qsl(parts.query, keep_blank_values=True)
    schema = None
    kept = []
    for k, v in pairs:
        if k == "schema":
            schema = v
        else:
            kept.append((k, v))
    if schema is not None and not _SCHEMA_NAME.match(schema):
        raise StoreError(f"invalid schema name {schema!r} in the store URL (lower-case letters, digits and _ only)")
    query = urlencode(kept, safe="/:")
    return urlunsplit((parts.scheme, parts.netloc, parts.path, query, parts.fragment)), schema


# --------------------------------------------------------------------------- schema

_APPEND_FN = r"""
CREATE OR REPLACE FUNCTION hitl_append(
    p_session text, p_expected bigint, p_lease text, p_now double precision,
    p_json text, p_event_id text, p_inv text, p_ts double precision, p_path text, p_kind text,
    p_delta jsonb, p_open_ids text[], p_open_paths text[], p_open_names text[], p_open_args text[],
    p_resolved text[], p_cancel boolean, p_inv_status text, p_new_msg text,
    p_audit_action text, p_audit_operator text, p_audit_reason text, p_audit_details text
) RETURNS bigint LANGUAGE plpgsql AS $fn$
DECLARE
    s record;
    v_seq bigint;
    v_holder text;
    v_bad text[];
    v_new boolean;
    v_status text;
    v_open integer;
    v_oldest double precision;
    v_updated double precision;
    v_ninv integer;
BEGIN
    SELECT app_name, user_id, last_seq, updated_at, status, open_interrupts, oldest_open_at, invocation_count
      INTO s FROM sessions WHERE id = p_session FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING ERRCODE = 'HT404', MESSAGE = p_session;
    END IF;
    IF p_expected IS NOT NULL AND p_expected <> s.last_seq THEN
        RAISE EXCEPTION USING ERRCODE = 'HT409', MESSAGE = s.last_seq::text;
    END IF;
    IF p_lease IS NOT NULL THEN
        SELECT owner INTO v_holder FROM leases
         WHERE session_id = p_session AND invocation_id = p_inv FOR SHARE;
        IF v_holder IS DISTINCT FROM p_lease THEN
            RAISE EXCEPTION USING ERRCODE = 'HT423', MESSAGE = coalesce(v_holder, ''),
                DETAIL = CASE WHEN v_holder IS NULL THEN 'none' ELSE 'held' END;
        END IF;
    END IF;
    IF cardinality(p_resolved) > 0 THEN
        SELECT array_agg(u.r ORDER BY u.o) INTO v_bad FROM unnest(p_resolved) WITH ORDINALITY AS u(r, o)
         WHERE NOT EXISTS (SELECT 1 FROM interrupts i WHERE i.session_id = p_session
                           AND i.invocation_id = p_inv AND i.interrupt_id = u.r AND i.status = 'open');
        IF v_bad IS NOT NULL THEN
            RAISE EXCEPTION USING ERRCODE = 'HT410', MESSAGE = array_to_json(v_bad)::text;
        END IF;
    END IF;
    v_seq := s.last_seq + 1;
    INSERT INTO events (session_id, seq, invocation_id, event_id, timestamp, path, kind, json)
        VALUES (p_session, v_seq, p_inv, p_event_id, p_ts, p_path, p_kind, p_json);
    IF cardinality(p_open_ids) > 0 THEN
        INSERT INTO interrupts (session_id, invocation_id, interrupt_id, path, event_id, name, args,
                                raised_seq, raised_at, status, resolved_by, resolved_seq, app_name, user_id)
        SELECT p_session, p_inv, o.iid, o.ipath, p_event_id, o.iname, o.iargs, v_seq, p_ts, 'open', NULL, NULL,
               s.app_name, s.user_id
          FROM unnest(p_open_ids, p_open_paths, p_open_names, p_open_args) AS o(iid, ipath, iname, iargs)
        ON CONFLICT (session_id, invocation_id, interrupt_id) DO UPDATE SET
            path = excluded.path, event_id = excluded.event_id, name = excluded.name, args = excluded.args,
            raised_seq = excluded.raised_seq, raised_at = excluded.raised_at, status = 'open',
            resolved_by = NULL, resolved_seq = NULL;
    END IF;
    IF cardinality(p_resolved) > 0 THEN
        UPDATE interrupts SET status = 'resolved', resolved_by = p_event_id, resolved_seq = v_seq
         WHERE session_id = p_session AND invocation_id = p_inv AND interrupt_id = ANY(p_resolved);
    END IF;
    IF p_cancel THEN
        UPDATE interrupts SET status = 'cancelled', resolved_seq = v_seq
         WHERE session_id = p_session AND invocation_id = p_inv AND status = 'open';
    END IF;
    IF p_inv_status IS NULL THEN
        UPDATE invocations SET updated_at = p_ts WHERE session_id = p_session AND invocation_id = p_inv;
    ELSE
        UPDATE invocations SET status = p_inv_status, updated_at = p_ts
         WHERE session_id = p_session AND invocation_id = p_inv;
    END IF;
    v_new := NOT FOUND;
    v_ninv := s.invocation_count;
    IF v_new THEN
        INSERT INTO invocations (session_id, invocation_id, status, started_seq, started_at, updated_at, message)
            VALUES (p_session, p_inv, coalesce(p_inv_status, 'running'), v_seq, p_ts, p_ts, coalesce(p_new_msg, ''));
        v_ninv := v_ninv + 1;
    END IF;
    v_status := s.status;
    IF v_new OR p_inv_status IS NOT NULL THEN
        -- engine.store.base.session_status, restated
        SELECT CASE WHEN bool_or(status = 'running') THEN 'running'
                    WHEN bool_or(status = 'waiting') THEN 'waiting'
                    WHEN bool_or(status = 'failed') THEN 'failed'
                    WHEN count(*) = 0 THEN 'new'
                    WHEN bool_or(status = 'completed') THEN 'completed'
                    ELSE 'cancelled' END
          INTO v_status FROM invocations WHERE session_id = p_session;
    END IF;
    v_open := s.open_interrupts;
    v_oldest := s.oldest_open_at;
    IF cardinality(p_open_ids) > 0 OR cardinality(p_resolved) > 0 OR p_cancel THEN
        SELECT count(*), min(raised_at) INTO v_open, v_oldest
          FROM interrupts WHERE session_id = p_session AND status = 'open';
    END IF;
    -- updated_at moves at most once a second unless the status changed (as in SQLite)
    v_updated := s.updated_at;
    IF v_status IS DISTINCT FROM s.status OR greatest(p_now, s.updated_at) - s.updated_at >= 1.0 THEN
        v_updated := greatest(p_now, s.updated_at);
    END IF;
    IF p_audit_action IS NOT NULL THEN
        INSERT INTO audit (at, action, operator, reason, session_id, invocation_id, seq, event_id, details)
            VALUES (p_ts, p_audit_action, p_audit_operator, p_audit_reason, p_session, p_inv, v_seq, p_event_id,
                    p_audit_details);
    END IF;
    UPDATE sessions SET last_seq = v_seq, last_event_at = p_ts, event_count = v_seq, status = v_status,
           updated_at = v_updated, open_interrupts = v_open, oldest_open_at = v_oldest,
           invocation_count = v_ninv,
           state = CASE WHEN p_delta IS NULL THEN state ELSE state || p_delta END
     WHERE id = p_session;
    PERFORM pg_notify('hitl_events', json_build_object('s', p_session, 'q', v_seq)::text);
    RETURN v_seq;
END
$fn$
"""

_APPEND_MANY_FN = r"""
CREATE OR REPLACE FUNCTION hitl_append_many(
    p_session text, p_expected bigint, p_lease text, p_now double precision,
    p_json text[], p_event_id text[], p_inv text[], p_ts double precision[], p_path text[], p_kind text[],
    p_delta jsonb[], p_opened jsonb[], p_resolved jsonb[], p_cancel boolean[], p_inv_status text[],
    p_new_msg text[], p_audit_action text[], p_audit_operator text[], p_audit_reason text[], p_audit_details text[]
) RETURNS bigint LANGUAGE plpgsql AS $fn$
-- Several appends in ONE statement (hence one transaction and one round trip):
-- hitl_append once per element, in order; the first checks p_expected. Element i
-- of p_opened is a JSON array of [interrupt_id, path, name, args JSON]; of
-- p_resolved, a JSON array of interrupt ids. Returns the last seq written.
DECLARE
    v_seq bigint;
BEGIN
    FOR i IN 1 .. coalesce(cardinality(p_json), 0) LOOP
        v_seq := hitl_append(
            p_session, CASE WHEN i = 1 THEN p_expected END, p_lease, p_now,
            p_json[i], p_event_id[i], p_inv[i], p_ts[i], p_path[i], p_kind[i], p_delta[i],
            ARRAY(SELECT o->>0 FROM jsonb_array_elements(p_opened[i]) WITH ORDINALITY AS x(o, n) ORDER BY n),
            ARRAY(SELECT o->>1 FROM jsonb_array_elements(p_opened[i]) WITH ORDINALITY AS x(o, n) ORDER BY n),
            ARRAY(SELECT o->>2 FROM jsonb_array_elements(p_opened[i]) WITH ORDINALITY AS x(o, n) ORDER BY n),
            ARRAY(SELECT o->>3 FROM jsonb_array_elements(p_opened[i]) WITH ORDINALITY AS x(o, n) ORDER BY n),
            ARRAY(SELECT r FROM jsonb_array_elements_text(p_resolved[i]) WITH ORDINALITY AS x(r, n) ORDER BY n),
            p_cancel[i], p_inv_status[i], p_new_msg[i],
            p_audit_action[i], p_audit_operator[i], p_audit_reason[i], p_audit_details[i]);
    END LOOP;
    RETURN v_seq;
END
$fn$
"""

_TURN_FNS = [
    r"""
CREATE OR REPLACE FUNCTION hitl_acquire_append(
    p_inv_lease text, p_owner text, p_expires double precision, p_after bigint,
    p_session text, p_expected bigint, p_now double precision,
    p_json text[], p_event_id text[], p_inv text[], p_ts double precision[], p_path text[], p_kind text[],
    p_delta jsonb[], p_opened jsonb[], p_resolved jsonb[], p_cancel boolean[], p_inv_status text[],
    p_new_msg text[], p_audit_action text[], p_audit_operator text[], p_audit_reason text[], p_audit_details text[],
    OUT o_acquired double precision, OUT o_last bigint, OUT o_state text
) LANGUAGE plpgsql AS $fn$
-- A turn's first write in ONE statement (acquire_and_append): take the lease of
-- invocation p_inv_lease for p_owner as acquire_lease does (no stealing; HT503
-- with the holder's row when another owner's has not expired), refuse (HT412)
-- when the invocation has an event after p_after, append through
-- hitl_append_many fenced by the lease just taken, and return the lease's
-- acquired_at, the last seq and the session's state after the events.
DECLARE
    v_held record;
    v_last bigint;
BEGIN
    PERFORM 1 FROM sessions WHERE id = p_session FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING ERRCODE = 'HT404', MESSAGE = p_session;
    END IF;
    INSERT INTO leases (session_id, invocation_id, owner, acquired_at, renewed_at, expires_at)
        VALUES (p_session, p_inv_lease, p_owner, p_now, p_now, p_expires)
    ON CONFLICT (session_id, invocation_id) DO UPDATE SET owner = excluded.owner,
        acquired_at = CASE WHEN leases.owner = excluded.owner THEN leases.acquired_at ELSE excluded.acquired_at END,
        renewed_at = excluded.renewed_at, expires_at = excluded.expires_at
      WHERE leases.owner = excluded.owner OR leases.expires_at <= p_now
    RETURNING acquired_at INTO o_acquired;
    IF o_acquired IS NULL THEN
        -- ON CONFLICT locked the holder's row even though it did not update it
        SELECT owner, acquired_at, renewed_at, expires_at INTO v_held FROM leases
         WHERE session_id = p_session AND invocation_id = p_inv_lease;
        RAISE EXCEPTION USING ERRCODE = 'HT503', MESSAGE = v_held.owner,
            DETAIL = json_build_array(v_held.acquired_at, v_held.renewed_at, v_held.expires_at)::text;
    END IF;
    IF p_after IS NOT NULL THEN
        SELECT seq INTO v_last FROM events WHERE session_id = p_session AND invocation_id = p_inv_lease
         ORDER BY seq DESC LIMIT 1;
        IF v_last > p_after THEN
            RAISE EXCEPTION USING ERRCODE = 'HT412', MESSAGE = v_last::text;
        END IF;
    END IF;
    o_last := hitl_append_many(
        p_session, p_expected, p_owner, p_now, p_json, p_event_id, p_inv, p_ts, p_path, p_kind, p_delta,
        p_opened, p_resolved, p_cancel, p_inv_status, p_new_msg, p_audit_action, p_audit_operator,
        p_audit_reason, p_audit_details);
    SELECT state::text INTO o_state FROM sessions WHERE id = p_session;
END
$fn$
""",
    r"""
CREATE OR REPLACE FUNCTION hitl_append_release(
    p_inv_lease text, p_snap_seq bigint, p_snap_data text,
    p_session text, p_expected bigint, p_lease text, p_now double precision,
    p_json text[], p_event_id text[], p_inv text[], p_ts double precision[], p_path text[], p_kind text[],
    p_delta jsonb[], p_opened jsonb[], p_resolved jsonb[], p_cancel boolean[], p_inv_status text[],
    p_new_msg text[], p_audit_action text[], p_audit_operator text[], p_audit_reason text[], p_audit_details text[]
) RETURNS bigint LANGUAGE plpgsql AS $fn$
-- A turn's last write in ONE statement (append_and_release): the events fenced
-- by p_lease's lease (hitl_append_many), the turn's snapshot (never replacing a
-- newer one), and the release of the lease. Returns the last seq written.
DECLARE
    v_seq bigint;
BEGIN
    v_seq := hitl_append_many(
        p_session, p_expected, p_lease, p_now, p_json, p_event_id, p_inv, p_ts, p_path, p_kind, p_delta,
        p_opened, p_resolved, p_cancel, p_inv_status, p_new_msg, p_audit_action, p_audit_operator,
        p_audit_reason, p_audit_details);
    IF p_snap_seq IS NOT NULL THEN
        INSERT INTO snapshots (session_id, invocation_id, seq, data) VALUES (p_session, p_inv_lease, p_snap_seq, p_snap_data)
        ON CONFLICT (session_id, invocation_id) DO UPDATE SET seq = excluded.seq, data = excluded.data
         WHERE excluded.seq >= snapshots.seq;
    END IF;
    DELETE FROM leases WHERE session_id = p_session AND invocation_id = p_inv_lease AND owner = p_lease;
    RETURN v_seq;
END
$fn$
""",
]

_MIGRATIONS: list[list[str]] = [
    # v0 -> v1: the whole schema of SQLite's version 4, and the append function.
    [
        """CREATE TABLE sessions (
            id text PRIMARY KEY,
            app_name text NOT NULL,
            user_id text NOT NULL,
            state jsonb NOT NULL DEFAULT '{}',
            created_at double precision NOT NULL,
            updated_at double precision NOT NULL,
            last_seq bigint NOT NULL DEFAULT 0,
            status text NOT NULL DEFAULT 'new',
            open_interrupts integer NOT NULL DEFAULT 0,
            oldest_open_at double precision,
            last_event_at double precision,
            event_count bigint NOT NULL DEFAULT 0,
            invocation_count integer NOT NULL DEFAULT 0
        )""",
        "CREATE INDEX sessions_by_updated ON sessions(updated_at DESC, id)",
        "CREATE INDEX sessions_by_status ON sessions(status, updated_at DESC, id)",
        "CREATE INDEX sessions_by_app ON sessions(app_name, updated_at DESC, id)",
        "CREATE INDEX sessions_by_user ON sessions(user_id, updated_at DESC, id)",
        "CREATE INDEX sessions_by_oldest_open ON sessions(oldest_open_at, id) WHERE oldest_open_at IS NOT NULL",
        """CREATE TABLE events (
            session_id text NOT NULL REFERENCES sessions(id),
            seq bigint NOT NULL,
            invocation_id text NOT NULL,
            event_id text NOT NULL,
            timestamp double precision NOT NULL,
            path text,
            kind text NOT NULL,
            json text NOT NULL,
            PRIMARY KEY (session_id, seq)
        )""",
        "CREATE INDEX events_by_invocation ON events(session_id, invocation_id, seq)",
        """CREATE TABLE invocations (
            session_id text NOT NULL REFERENCES sessions(id),
            invocation_id text NOT NULL,
            status text NOT NULL,
            started_seq bigint NOT NULL,
            started_at double precision NOT NULL,
            updated_at double precision NOT NULL,
            message text NOT NULL DEFAULT '',
            PRIMARY KEY (session_id, invocation_id)
        )""",
        """CREATE TABLE interrupts (
            session_id text NOT NULL REFERENCES sessions(id),
            invocation_id text NOT NULL,
            interrupt_id text NOT NULL,
            path text NOT NULL,
            event_id text NOT NULL,
            name text NOT NULL,
            args text NOT NULL DEFAULT '{}',
            raised_seq bigint NOT NULL,
            raised_at double precision NOT NULL,
            status text NOT NULL DEFAULT 'open',
            resolved_by text,
            resolved_seq bigint,
            app_name text NOT NULL,
            user_id text NOT NULL,
            PRIMARY KEY (session_id, invocation_id, interrupt_id)
        )""",
        "CREATE INDEX interrupts_by_id ON interrupts(session_id, interrupt_id)",
        """CREATE INDEX interrupts_inbox ON interrupts(raised_at, session_id, raised_seq, interrupt_id)
            WHERE status = 'open'""",
        """CREATE INDEX interrupts_inbox_by_app
            ON interrupts(app_name, raised_at, session_id, raised_seq, interrupt_id) WHERE status = 'open'""",
        """CREATE INDEX interrupts_open_by_session
            ON interrupts(session_id, raised_at, raised_seq, interrupt_id) WHERE status = 'open'""",
        """CREATE TABLE snapshots (
            session_id text NOT NULL REFERENCES sessions(id),
            invocation_id text NOT NULL,
            seq bigint NOT NULL,
            data text NOT NULL,
            PRIMARY KEY (session_id, invocation_id)
        )""",
        """CREATE TABLE leases (
            session_id text NOT NULL REFERENCES sessions(id),
            invocation_id text NOT NULL,
            owner text NOT NULL,
            acquired_at double precision NOT NULL,
            renewed_at double precision NOT NULL,
            expires_at double precision NOT NULL,
            PRIMARY KEY (session_id, invocation_id)
        )""",
        """CREATE TABLE audit (
            id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            at double precision NOT NULL,
            action text NOT NULL,
            operator text,
            reason text,
            session_id text NOT NULL,
            invocation_id text,
            seq bigint,
            event_id text,
            details text NOT NULL DEFAULT '{}'
        )""",
        "CREATE INDEX audit_by_time ON audit(at, id)",
        "CREATE INDEX audit_by_operator ON audit(operator, at, id)",
        "CREATE INDEX audit_by_session ON audit(session_id, at, id)",
        _APPEND_FN,
    ],
    # v1 -> v2: several appends in one statement (append_events: one round trip).
    [_APPEND_MANY_FN],
    # v2 -> v3: a turn's first and last writes, one statement each (acquire_and_append, append_and_release).
    _TURN_FNS,
]
"""``_MIGRATIONS[i]`` upgrades schema version ``i`` to ``i + 1`` (statements run in
one transaction). Append only; never edit a released one."""

SCHEMA_VERSION = len(_MIGRATIONS)


# --------------------------------------------------------------------------- errors

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


def _connect_error(exc: BaseException, where: str) -> StoreError:
    state = getattr(exc, "sqlstate", None) or ""
    if state:
        return _translate(exc, where, 0)  # type: ignore[return-value]
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


# --------------------------------------------------------------------------- the store


class _Opener:
    """What :meth:`PostgresStore.open` returns: awaitable, and an async context manager."""

    def __init__(self, **kwargs: Any) -> None:
        self._kwargs = kwargs
        self._store: PostgresStore | None = None

    def __await__(self):  # type: ignore[no-untyped-def]
        return PostgresStore._open(**self._kwargs).__await__()

    async def __aenter__(self) -> PostgresStore:
        self._store = await PostgresStore._open(**self._kwargs)
        return self._store

    async def __aexit__(self, *exc: object) -> None:
        if self._store is not None:
            await self._store.close()


_PUT_SNAPSHOT_SQL = (
    "INSERT INTO snapshots (session_id, invocation_id, seq, data) VALUES ($1, $2, $3, $4)"
    " ON CONFLICT (session_id, invocation_id) DO UPDATE SET seq = excluded.seq, data = excluded.data"
    " WHERE excluded.seq >= snapshots.seq"
)
"""A snapshot is replaced only by a newer one (a late writer never rolls it back)."""


def _snapshot_from(seq: int, text: str) -> tuple[int, dict[str, Any]] | None:
    try:
        data = json.loads(text)
    except (ValueError, TypeError):
        return None  # a cache: an unreadable snapshot is as good as none
    return (seq, data) if isinstance(data, dict) else None


_LOAD_INVOCATION_SQL = (
    "SELECT 0 AS k, seq, data FROM snapshots WHERE session_id = $1 AND invocation_id = $2"
    " UNION ALL SELECT 1, seq, json FROM events WHERE session_id = $1 AND invocation_id = $2 AND seq > coalesce("
    "(SELECT seq FROM snapshots WHERE session_id = $1 AND invocation_id = $2), 0)"
    " UNION ALL SELECT 2, NULL, NULL FROM sessions WHERE id = $1"
    " ORDER BY 1, 2"
)
"""An invocation's snapshot (kind 0), its events after it (1), and a row saying
the session exists (2, last)."""


_RELEASE_SQL = (
    "WITH d AS (DELETE FROM leases WHERE session_id = $1 AND invocation_id = $2 AND owner = $3 RETURNING 1),"
    " p AS (INSERT INTO snapshots (session_id, invocation_id, seq, data) SELECT $1, $2, $4, $5"
    " WHERE $4::bigint IS NOT NULL AND EXISTS (SELECT 1 FROM d)"
    " ON CONFLICT (session_id, invocation_id) DO UPDATE SET seq = excluded.seq, data = excluded.data"
    " WHERE excluded.seq >= snapshots.seq RETURNING 1)"
    " SELECT EXISTS (SELECT 1 FROM d), EXISTS (SELECT 1 FROM sessions WHERE id = $1)"
)
"""Release a lease and, if it was ours, keep the snapshot: one statement, so one
transaction and one round trip."""


class PostgresStore:
    """:class:`~engine.store.base.SessionStore` on a PostgreSQL server.

    Open with ``store = await PostgresStore.open(url)`` or ``async with
    PostgresStore.open(url) as store:``. One store holds one connection pool;
    any number of stores, on any number of hosts, may share a database.
    """

    read_only: bool
    """True when opened read-only: the server refuses every write."""

    path = None
    """Not a file (the ``path`` capability of file stores)."""

    capabilities: frozenset[str] = frozenset(
        {
            "skip_corrupt",
            "corrupt_events",
            "bulk_load",
            "checkpoint",
            "migrate",
            "notify",
            "snapshot_and_events",
            "append_and_release",
            "acquire_and_append",
        }
    )
    """Optional features (see :data:`engine.store.base.Capability`)."""

    def __init__(
        self, pool: asyncpg.Pool, url: str, schema: str | None, *, read_only: bool, busy_timeout: float
    ) -> None:
        self._pool: asyncpg.Pool | None = pool
        self._url = url
        self.schema = schema
        """The PostgreSQL schema of the tables (None: the connection's default, ``public``)."""
        self.read_only = read_only
        self.busy_timeout = busy_timeout
        """Seconds a statement waits for a row lock held by another session before failing."""
        self.migrated_from: int | None = None
        """The schema version found when a writer opened the store (before migrating)."""
        self.retries = 0
        """Units of work redone after a serialisation failure or deadlock (for tests and benchmarks)."""
        self._connect_args: dict[str, Any] = {}

    @property
    def url(self) -> str:
        """The store's URL with any password masked: what every message shows."""
        return mask_url(self._url)

    # ------------------------------------------------------------------ opening
    @classmethod
    def open(
        cls,
        url: str,
        *,
        read_only: bool = False,
        busy_timeout: float = 5.0,
        statement_timeout: float | None = None,
        min_size: int = 1,
        max_size: int = 10,
        migrate: bool = True,
        password: str | None = None,
    ) -> _Opener:
        """Connect to ``url`` (``postgresql://user@host:port/db?sslmode=...&schema=...``;
        the password from the URL, ``PGPASSWORD`` or ``~/.pgpass``/``PGPASSFILE``,
        TLS options as libpq's). A writer creates or upgrades the schema
        (``migrate=False`` leaves it, for ``hitl migrate`` to report first); a
        reader requires the current one. Raises StoreError with the masked URL."""
        return _Opener(
            url=url,
            read_only=read_only,
            busy_timeout=busy_timeout,
            statement_timeout=statement_timeout,
            min_size=min_size,
            max_size=max_size,
            migrate=migrate,
            password=password,
        )

    @classmethod
    async def _open(
        cls,
        *,
        url: str,
        read_only: bool,
        busy_timeout: float,
        statement_timeout: float | None,
        min_size: int,
        max_size: int,
        migrate: bool,
        password: str | None = None,
    ) -> PostgresStore:
        dsn, schema = _split_schema(url)
        where = mask_url(url)
        settings = {"lock_timeout": str(int(busy_timeout * 1000)), "application_name": "hitl-console"}
        if statement_timeout is not None:
            settings["statement_timeout"] = str(int(statement_timeout * 1000))
        if read_only:
            settings["default_transaction_read_only"] = "on"
        if schema is not None:
            settings["search_path"] = schema
        if not read_only and schema is not None:
            try:
                conn = await asyncpg.connect(
                    dsn, password=password, server_settings={"application_name": "hitl-console"}
                )
            except (TimeoutError, OSError, asyncpg.PostgresError, asyncpg.InterfaceError) as e:
                raise _connect_error(e, where) from None
            try:
                await conn.execute(f'CREATE SCHEMA IF NOT EXISTS "{schema}"')
            except asyncpg.UniqueViolationError:
                pass  # created concurrently by another writer
            except asyncpg.PostgresError as e:
                raise _translate(e, where, busy_timeout) from None
            finally:
                await conn.close()
        try:
            pool = await asyncpg.create_pool(
                dsn,
                password=password,
                min_size=min_size,
                max_size=max_size,
                server_settings=settings,
                reset=_keep_session,
            )
        except (TimeoutError, OSError, asyncpg.PostgresError, asyncpg.InterfaceError) as e:
            raise _connect_error(e, where) from None
        store = cls(pool, url, schema, read_only=read_only, busy_timeout=busy_timeout)
        store._connect_args = {"dsn": dsn, "password": password, "server_settings": settings}
        try:
            version = await store.schema_version()
            if version > SCHEMA_VERSION:
                raise _newer_schema_error(where, version)
            if version < SCHEMA_VERSION:
                if read_only:
                    if version == 0:
                        raise StoreError(
                            f"{where} has no hitl-console store yet; open it without --read-only to create one"
                        )
                    raise SchemaUpgradeNeeded(
                        f"the store {where} has schema version {version}, older than this hitl-console's "
                        f"{SCHEMA_VERSION}; run `hitl migrate` (or open it once without --read-only)"
                    )
                if migrate:
                    await store.migrate()
        except BaseException:
            await store.close()
            raise
        return store

    async def schema_version(self) -> int:
        """The schema version in the database (0: no hitl-console tables yet)."""

        async def fn(conn: asyncpg.Connection) -> int:
            has = await conn.fetchval("SELECT to_regclass('hitl_schema') IS NOT NULL")
            if not has:
                if await conn.fetchval("SELECT to_regclass('sessions') IS NOT NULL"):
                    raise StoreError(
                        f"{self.url} has a 'sessions' table that is not a hitl-console store's; "
                        "use another database or add ?schema=NAME to the URL"
                    )
                return 0
            return int(await conn.fetchval("SELECT max(version) FROM hitl_schema") or 0)

        return await self._run(fn)

    async def migrate(self) -> tuple[int, int]:
        """Run the pending migrations in one transaction; returns (version before, after).
        A newer schema is refused untouched (StoreError)."""
        self._check_writable()

        async def fn(conn: asyncpg.Connection) -> tuple[int, int]:
            async with conn.transaction():
                await conn.execute("SELECT pg_advisory_xact_lock($1)", _LOCK_KEY)
                await conn.execute("CREATE TABLE IF NOT EXISTS hitl_schema (version integer NOT NULL)")
                version = int(await conn.fetchval("SELECT coalesce(max(version), 0) FROM hitl_schema"))
                if version > SCHEMA_VERSION:
                    raise _newer_schema_error(self.url, version)
                for n, statements in enumerate(_MIGRATIONS[version:], start=version + 1):
                    try:
                        for stmt in statements:
                            await conn.execute(stmt)
                    except asyncpg.PostgresError as e:
                        raise StoreError(
                            f"upgrading {self.url} to schema version {n} failed ({type(e).__name__}: {e}); "
                            f"the store was left at version {version}"
                        ) from None
                if version < SCHEMA_VERSION:
                    await conn.execute("DELETE FROM hitl_schema")
                    await conn.execute("INSERT INTO hitl_schema (version) VALUES ($1)", SCHEMA_VERSION)
                return version, SCHEMA_VERSION

        before, after = await self._run(fn)
        if self.migrated_from is None:
            self.migrated_from = before
        return before, after

    async def __aenter__(self) -> PostgresStore:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        """Close the pool (idempotent); later calls raise StoreError."""
        pool, self._pool = self._pool, None
        if pool is not None:
            try:
                await asyncio.wait_for(pool.close(), timeout=5)
            except (TimeoutError, OSError, asyncpg.PostgresError, asyncpg.InterfaceError):
                pool.terminate()

    def __repr__(self) -> str:
        mode = "ro" if self.read_only else "rw"
        return f"<PostgresStore {self.url!r} {mode}{' closed' if self._pool is None else ''}>"

    # ------------------------------------------------------------ notifications
    async def notifications(self, callback: Callable[[str | None, int | None], None]) -> Listener:
        """Call ``callback(session_id, seq)`` (on this event loop) for every append
        committed by anyone, from a dedicated LISTEN connection. After that
        connection was lost and re-made, ``callback(None, None)``: notifications
        may have been missed meanwhile, so re-read from the last seq seen. Close
        the returned :class:`Listener` when done."""
        listener = Listener(self._connect_args, callback, self.url)
        await listener.start()
        return listener

    # ---------------------------------------------------------------- helpers
    async def _run(
        self, fn: Callable[[asyncpg.Connection], Awaitable[T]], *, retry: bool = True, reconnect: bool = True
    ) -> T:
        """``fn(conn)`` on a pooled connection; server errors become HitlErrors.
        Serialisation failures and deadlocks are retried (``fn`` is one transaction,
        rolled back by the server). So is a lost connection (a restarted server, a
        pooled connection that died) when ``reconnect``: callers whose ``fn`` may have
        committed before the connection broke pass False and decide themselves."""
        for attempt in range(_RETRIES):
            if self._pool is None:
                raise StoreError(f"the store {self.url} is closed")
            try:
                async with self._pool.acquire() as conn:
                    return await fn(conn)
            except ConnectionLostError:
                raise
            except HitlError:
                raise
            except _CONNECTION_ERRORS as e:
                if not reconnect or attempt == _RETRIES - 1:
                    raise _translate(e, self.url, self.busy_timeout) from None
                self.retries += 1
                await asyncio.sleep(0.05 * (2**attempt))
            except asyncpg.PostgresError as e:
                if e.sqlstate and (e.sqlstate.startswith("08") or e.sqlstate in ("57P01", "57P02", "57P03")):
                    if not reconnect or attempt == _RETRIES - 1:
                        raise _translate(e, self.url, self.busy_timeout) from None
                    self.retries += 1
                    await asyncio.sleep(0.05 * (2**attempt))
                    continue
                if isinstance(e, (asyncpg.SerializationError, asyncpg.DeadlockDetectedError)):
                    if not retry or attempt == _RETRIES - 1:
                        raise _translate(e, self.url, self.busy_timeout) from None
                    self.retries += 1
                    await asyncio.sleep(0.01 * (2**attempt))
                    continue
                raise _translate(e, self.url, self.busy_timeout) from None
            except (json.JSONDecodeError, ValidationError) as e:
                detail = " ".join(str(e).split())[:200]
                raise StoreError(
                    f"a row of {self.url} is corrupted ({type(e).__name__}: {detail}); "
                    "export the readable sessions and repair the row"
                ) from e
        raise AssertionError("unreachable")

    def _check_writable(self) -> None:
        if self.read_only:
            raise ReadOnlyError(
                f"the store {self.url} is open read-only; nothing was written (open it without --read-only)"
            )

    async def _write_batch(
        self, fn: Callable[[asyncpg.Connection], Awaitable[T]], session_id: str, prepared: list[_Prepared]
    ) -> tuple[T, None] | tuple[None, int]:
        """Run ``fn``, a statement that appends ``prepared`` (all or none), and return
        ``(its result, None)``. When the connection breaks, the first event's id
        says whether it committed: then ``(None, the batch's last seq)``, else it
        is run again (nothing of it was written)."""
        for _ in range(_RETRIES):
            try:
                return await self._run(fn, reconnect=False), None
            except ConnectionLostError:
                found = await self._run(partial(_seq_of_event, session_id=session_id, event_id=prepared[0].event_id))
                if found is not None:
                    return None, found + len(prepared) - 1
                self.retries += 1
        raise ConnectionLostError(f"lost the connection to {self.url} again and again; the events were not stored")

    async def _require_session(self, conn: asyncpg.Connection, session_id: str) -> None:
        if await conn.fetchval("SELECT 1 FROM sessions WHERE id = $1", session_id) is None:
            raise SessionNotFoundError(session_id)

    # ---------------------------------------------------------------- sessions
    async def create_session(
        self, app_name: str, user_id: str, session_id: str | None = None, state: dict[str, Any] | None = None
    ) -> Session:
        self._check_writable()
        sid = session_id or new_id()
        now = time.time()
        state_json = to_json(dict(state or {})).decode()

        async def fn(conn: asyncpg.Connection) -> Session:
            row = await conn.fetchrow(
                "INSERT INTO sessions (id, app_name, user_id, state, created_at, updated_at, last_seq, status)"
                " VALUES ($1, $2, $3, $4::jsonb, $5, $5, 0, 'new') ON CONFLICT (id) DO NOTHING"
                f" RETURNING {_SESSION_COLS_PG}",
                sid,
                app_name,
                user_id,
                state_json,
                now,
            )
            if row is None:
                raise ConflictError(f"session {sid!r} already exists")
            return _session_from_row(row)

        return await self._run(fn, reconnect=False)  # a retry after a commit would say 'already exists'

    async def get_session(self, session_id: str) -> Session:
        async def fn(conn: asyncpg.Connection) -> Session:
            row = await conn.fetchrow(f"SELECT {_SESSION_COLS_PG} FROM sessions WHERE id = $1", session_id)
            if row is None:
                raise SessionNotFoundError(session_id)
            return _session_from_row(row)

        return await self._run(fn)

    async def list_sessions(
        self,
        *,
        app_name: str | None = None,
        user_id: str | None = None,
        status: str | None = None,
        text: str | None = None,
        updated_before: float | None = None,
        updated_after: float | None = None,
        limit: int = 50,
        cursor: str | None = None,
        order: SessionOrder = "updated",
    ) -> Page[SessionSummary]:
        if limit < 1:
            raise ValueError(f"limit must be at least 1, not {limit}")
        q = _Query()
        for column, value in (("app_name", app_name), ("user_id", user_id), ("status", status)):
            if value is not None:
                q.where(f"{column} = {q.arg(value)}")
        if text is not None:
            q.where(f"strpos(lower(id), {q.arg(text.lower())}) > 0")
        if updated_before is not None:
            q.where(f"updated_at < {q.arg(float(updated_before))}")
        if updated_after is not None:
            q.where(f"updated_at > {q.arg(float(updated_after))}")
        oldest = order == "oldest_open"
        if oldest:
            q.where("oldest_open_at IS NOT NULL")
        if cursor:
            ts, sid = _decode_cursor(cursor, (float, str))
            a, b = q.arg(ts), q.arg(sid)
            if oldest:
                q.where(f"oldest_open_at >= {a} AND (oldest_open_at > {a} OR id > {b})")
            else:
                q.where(f"updated_at <= {a} AND (updated_at < {a} OR id > {b})")
        sql = f"SELECT {_SUMMARY_COLS} FROM sessions{q.where_sql()}"
        order_by = " ORDER BY oldest_open_at, id" if oldest else " ORDER BY updated_at DESC, id"
        sql += f"{order_by} LIMIT {q.arg(limit + 1)}"
        rows = await self._run(lambda conn: conn.fetch(sql, *q.args))
        page = [_summary_from_row(r) for r in rows[:limit]]
        nxt = None
        if len(rows) > limit:
            last = page[-1]
            nxt = _encode_cursor(last.oldest_open_at if oldest else last.updated_at, last.id)
        return Page(items=page, next_cursor=nxt)

    # ---------------------------------------------------------------- events
    async def append_event(
        self, session_id: str, event: Event, *, expected_seq: int | None = None, lease_owner: str | None = None
    ) -> StoredEvent:
        [stored] = await self.append_events(session_id, [event], expected_seq=expected_seq, lease_owner=lease_owner)
        return stored

    async def append_events(
        self, session_id: str, events: list[Event], *, expected_seq: int | None = None, lease_owner: str | None = None
    ) -> list[StoredEvent]:
        """Several appends in one statement (an answer and the completion records of
        the runs it auto-completes; a node's end and the next node's start):
        ``hitl_append_many``, one round trip, all committed together or none."""
        self._check_writable()
        if not events:
            return []
        prepared = [_prepare(e) for e in events]

        args = _append_many_args(session_id, prepared, expected_seq, lease_owner)

        async def fn(conn: asyncpg.Connection) -> int:
            # One statement: the whole batch commits or none of it, in one round trip.
            try:
                return int(await conn.fetchval(_APPEND_MANY_SQL, *args))
            except asyncpg.PostgresError as e:
                _raise_append_error(e, session_id, prepared[0].invocation_id, lease_owner, expected_seq)
                raise

        last, found = await self._write_batch(fn, session_id, prepared)
        return _stored(session_id, prepared, found if last is None else last)

    async def invocation_count(self, session_id: str) -> int:
        async def fn(conn: asyncpg.Connection) -> int:
            n = await conn.fetchval("SELECT invocation_count FROM sessions WHERE id = $1", session_id)
            if n is None:
                raise SessionNotFoundError(session_id)
            return int(n)

        return await self._run(fn)

    async def events(
        self, session_id: str, *, after_seq: int = 0, limit: int | None = None, skip_corrupt: bool = False
    ) -> list[StoredEvent]:
        """Events with ``seq > after_seq`` in order. A corrupt row raises
        CorruptEventError; with ``skip_corrupt=True`` it is left out instead."""
        return await self._read_events(session_id, None, after_seq, limit, skip_corrupt)

    async def event_at(self, session_id: str, seq: int) -> StoredEvent:
        async def fn(conn: asyncpg.Connection) -> StoredEvent:
            text = await conn.fetchval("SELECT json FROM events WHERE session_id = $1 AND seq = $2", session_id, seq)
            if text is None:
                last = await conn.fetchval("SELECT last_seq FROM sessions WHERE id = $1", session_id)
                if last is None:
                    raise SessionNotFoundError(session_id)
                raise IndexError(f"session {session_id} has no event {seq} (it has {last})")
            return StoredEvent(seq=seq, session_id=session_id, event=_parse_event(session_id, seq, text))

        return await self._run(fn)

    async def invocation_events(
        self, session_id: str, invocation_id: str, *, after_seq: int = 0, skip_corrupt: bool = False
    ) -> list[StoredEvent]:
        return await self._read_events(session_id, invocation_id, after_seq, None, skip_corrupt)

    async def _read_events(
        self, session_id: str, invocation_id: str | None, after_seq: int, limit: int | None, skip_corrupt: bool
    ) -> list[StoredEvent]:
        if limit is not None and limit <= 0:
            await self.get_session(session_id)
            return []
        # One statement either way: the events in index order, or -- only when there
        # are none -- one row of NULLs if the session exists (no row: no session).
        # Just one branch can yield rows, so the first one's order is the result's;
        # a join from the session row would sort every event after after_seq per page.
        cond = "session_id = $1 AND seq > $2"
        params: list[Any] = [session_id, after_seq]
        if invocation_id is not None:
            cond += " AND invocation_id = $3"
            params.append(invocation_id)
        page = ""
        if limit is not None and not skip_corrupt:
            page = f" LIMIT ${len(params) + 1}"
            params.append(limit)
        sql = (
            f"(SELECT seq, json FROM events WHERE {cond} ORDER BY seq{page}) UNION ALL"
            f" SELECT NULL, NULL FROM sessions WHERE id = $1 AND NOT EXISTS (SELECT 1 FROM events WHERE {cond})"
        )

        async def fn(conn: asyncpg.Connection) -> list[StoredEvent]:
            rows = await conn.fetch(sql, *params)
            if not rows:
                raise SessionNotFoundError(session_id)
            out: list[StoredEvent] = []
            for seq, text in rows:
                if seq is None:
                    break
                try:
                    event = _parse_event(session_id, seq, text)
                except CorruptEventError:
                    if skip_corrupt:
                        continue
                    raise
                out.append(StoredEvent(seq=seq, session_id=session_id, event=event))
                if limit is not None and len(out) >= limit:
                    break
            return out

        return await self._run(fn)

    async def corrupt_events(self, session_id: str) -> list[int]:
        """Seqs of this session's events that cannot be read (empty when all are fine)."""

        async def fn(conn: asyncpg.Connection) -> list[int]:
            await self._require_session(conn, session_id)
            bad: list[int] = []
            async with conn.transaction(readonly=True):
                async for seq, text in conn.cursor(
                    "SELECT seq, json FROM events WHERE session_id = $1 ORDER BY seq", session_id
                ):
                    try:
                        _parse_event(session_id, seq, text)
                    except CorruptEventError:
                        bad.append(seq)
            return bad

        return await self._run(fn)

    # ------------------------------------------------------------ derived rows
    async def _session_rows(self, sql: str, session_id: str, from_row: Callable[[Any], T], *args: Any) -> list[T]:
        """A session's rows of a derived table in one statement: ``sql`` selects
        ``FROM sessions s LEFT JOIN ...`` with ``s.id = $1``, so no row means no
        session (SessionNotFoundError) and one row of NULLs means none."""

        async def fn(conn: asyncpg.Connection) -> list[T]:
            rows = await conn.fetch(sql, session_id, *args)
            if not rows:
                raise SessionNotFoundError(session_id)
            return [from_row(r) for r in rows if r[0] is not None]

        return await self._run(fn)

    async def list_invocations(self, session_id: str) -> list[InvocationSummary]:
        return await self._session_rows(
            f"SELECT {_cols('v', _INVOCATION_COLS)} FROM sessions s LEFT JOIN invocations v"
            " ON v.session_id = s.id WHERE s.id = $1 ORDER BY v.started_seq",
            session_id,
            _invocation_from_row,
        )

    async def lookup_interrupts(self, session_id: str, interrupt_ids: list[str]) -> list[InterruptRecord]:
        return await self._session_rows(
            f"SELECT {_cols('i', _INTERRUPT_COLS)} FROM sessions s LEFT JOIN interrupts i"
            " ON i.session_id = s.id AND i.interrupt_id = ANY($2::text[])"
            " WHERE s.id = $1 ORDER BY i.raised_seq, i.invocation_id, i.interrupt_id",
            session_id,
            _interrupt_from_row,
            list(interrupt_ids),
        )

    async def open_interrupts(
        self,
        *,
        session_id: str | None = None,
        app_name: str | None = None,
        limit: int = 50,
        cursor: str | None = None,
    ) -> Page[InterruptRecord]:
        if limit < 1:
            raise ValueError(f"limit must be at least 1, not {limit}")
        q = _Query()
        q.where("status = 'open'")  # the literal lets the planner use the partial inbox indexes
        if session_id is not None:
            q.where(f"session_id = {q.arg(session_id)}")
        if app_name is not None:
            q.where(f"app_name = {q.arg(app_name)}")
        if cursor:
            ts, sid, seq, iid = _decode_cursor(cursor, (float, str, int, str))
            q.where(
                f"(raised_at, session_id, raised_seq, interrupt_id) > ({q.arg(ts)}, {q.arg(sid)}, "
                f"{q.arg(seq)}, {q.arg(iid)})"
            )
        sql = (
            f"SELECT {_INTERRUPT_COLS} FROM interrupts{q.where_sql()}"
            f" ORDER BY raised_at, session_id, raised_seq, interrupt_id LIMIT {q.arg(limit + 1)}"
        )
        rows = await self._run(lambda conn: conn.fetch(sql, *q.args))
        page = [_interrupt_from_row(r) for r in rows[:limit]]
        nxt = None
        if len(rows) > limit:
            last = page[-1]
            nxt = _encode_cursor(last.raised_at, last.session_id, last.raised_seq, last.interrupt_id)
        return Page(items=page, next_cursor=nxt)

    async def get_snapshot(self, session_id: str, invocation_id: str) -> tuple[int, dict[str, Any]] | None:
        async def fn(conn: asyncpg.Connection) -> tuple[int, dict[str, Any]] | None:
            row = await conn.fetchrow(
                "SELECT p.seq, p.data FROM sessions s LEFT JOIN snapshots p"
                " ON p.session_id = s.id AND p.invocation_id = $2 WHERE s.id = $1",
                session_id,
                invocation_id,
            )
            if row is None:
                raise SessionNotFoundError(session_id)
            return None if row[0] is None else _snapshot_from(row[0], row[1])

        return await self._run(fn)

    async def snapshot_and_events(
        self, session_id: str, invocation_id: str
    ) -> tuple[tuple[int, dict[str, Any]] | None, list[StoredEvent]]:
        """``get_snapshot`` and ``invocation_events(after_seq=<the snapshot's seq>)``
        in one statement (capability ``snapshot_and_events``): what a resume reads."""

        async def fn(conn: asyncpg.Connection) -> tuple[tuple[int, dict[str, Any]] | None, list[StoredEvent]]:
            rows = await conn.fetch(_LOAD_INVOCATION_SQL, session_id, invocation_id)
            if not rows or rows[-1][0] != 2:
                raise SessionNotFoundError(session_id)
            snap = None
            events: list[StoredEvent] = []
            for kind, seq, text in rows[:-1]:
                if kind == 0:
                    snap = _snapshot_from(seq, text)
                    if snap is None:  # unreadable: no cache, so every event of the invocation (rare)
                        rows = await conn.fetch(
                            "SELECT 1, seq, json FROM events WHERE session_id = $1 AND invocation_id = $2 ORDER BY seq",
                            session_id,
                            invocation_id,
                        )
                        return None, [
                            StoredEvent(seq=q, session_id=session_id, event=_parse_event(session_id, q, t))
                            for _, q, t in rows
                        ]
                else:
                    events.append(
                        StoredEvent(seq=seq, session_id=session_id, event=_parse_event(session_id, seq, text))
                    )
            return snap, events

        return await self._run(fn)

    async def put_snapshot(self, session_id: str, invocation_id: str, seq: int, data: dict[str, Any]) -> None:
        self._check_writable()
        text = to_json(data).decode()

        async def fn(conn: asyncpg.Connection) -> None:
            try:
                await conn.execute(_PUT_SNAPSHOT_SQL, session_id, invocation_id, seq, text)
            except asyncpg.ForeignKeyViolationError:
                raise SessionNotFoundError(session_id) from None

        await self._run(fn)

    # ---------------------------------------------------------- export/import
    def export_session(self, session_id: str) -> AsyncIterator[str]:
        """The session as JSON Lines (see :mod:`engine.store.jsonl`), one line per item."""
        return jsonl.export_lines(self, session_id)

    async def import_session(
        self,
        lines: Iterable[str | bytes],
        *,
        session_id: str | None = None,
        operator: str | None = None,
        reason: str | None = None,
        source: str | None = None,
    ) -> Session:
        """Create a session from an export: validated as a whole first, its derived
        rows computed in one pass (:class:`_Batch`), then written with its audit
        record in one statement."""
        self._check_writable()
        parsed = jsonl.parse_export(lines)
        sid = session_id or parsed.session.id
        prepared = [_prepare(e) for e in parsed.events]
        record = import_record(sid, len(prepared), operator, reason, source, parsed.session.id)

        now = time.time()
        batch = _Batch()
        batch.add(sid, parsed.session, prepared, updated_at=max(now, parsed.session.created_at), now=now)
        batch.audit.append(
            (
                record.at,
                record.action,
                record.operator,
                record.reason,
                sid,
                None,
                None,
                None,
                to_json(record.details).decode(),
            )
        )

        async def fn(conn: asyncpg.Connection) -> None:
            try:
                await batch.write(conn)
            except asyncpg.UniqueViolationError:
                raise ConflictError(f"session {sid!r} already exists") from None

        await self._run(fn, reconnect=False)
        return await self.get_session(sid)

    # ------------------------------------------------------------------ leases
    async def acquire_lease(
        self, session_id: str, invocation_id: str, owner: str, ttl: float, *, steal_from: str | None = None
    ) -> Lease:
        self._check_writable()
        now = time.time()

        async def fn(conn: asyncpg.Connection) -> Lease:
            # One compare-and-swap statement: insert, or take over when the row's
            # owner is us / steal_from / expired; else nothing is written.
            try:
                row = await conn.fetchrow(
                    f"INSERT INTO leases ({_LEASE_COLS}) VALUES ($1, $2, $3, $4, $4, $5)"
                    " ON CONFLICT (session_id, invocation_id) DO UPDATE SET owner = excluded.owner,"
                    " acquired_at = CASE WHEN leases.owner = excluded.owner THEN leases.acquired_at"
                    " ELSE excluded.acquired_at END, renewed_at = excluded.renewed_at, expires_at = excluded.expires_at"
                    " WHERE leases.owner = excluded.owner OR leases.owner = $6 OR leases.expires_at <= $4"
                    f" RETURNING {_LEASE_COLS}",
                    session_id,
                    invocation_id,
                    owner,
                    now,
                    now + ttl,
                    steal_from,
                )
            except asyncpg.ForeignKeyViolationError:
                raise SessionNotFoundError(session_id) from None
            if row is None:
                held = await conn.fetchrow(
                    f"SELECT {_LEASE_COLS} FROM leases WHERE session_id = $1 AND invocation_id = $2",
                    session_id,
                    invocation_id,
                )
                if held is None:  # released meanwhile: a busy answer would be wrong, try again
                    raise asyncpg.SerializationError("lease row vanished")
                raise InvocationBusyError(invocation_id, _lease_from_row(held))
            return _lease_from_row(row)

        return await self._run(fn)

    async def renew_lease(self, session_id: str, invocation_id: str, owner: str, ttl: float) -> Lease:
        self._check_writable()
        now = time.time()

        async def fn(conn: asyncpg.Connection) -> Lease:
            row = await conn.fetchrow(
                "UPDATE leases SET renewed_at = $4, expires_at = $5"
                " WHERE session_id = $1 AND invocation_id = $2 AND owner = $3"
                f" RETURNING {_LEASE_COLS}",
                session_id,
                invocation_id,
                owner,
                now,
                now + ttl,
            )
            if row is None:
                await self._require_session(conn, session_id)
                held = await conn.fetchval(
                    "SELECT owner FROM leases WHERE session_id = $1 AND invocation_id = $2", session_id, invocation_id
                )
                holder = None
                if held is not None:
                    holder = Lease(
                        session_id=session_id,
                        invocation_id=invocation_id,
                        owner=held,
                        acquired_at=0,
                        renewed_at=0,
                        expires_at=0,
                    ).holder
                raise LeaseLostError(session_id, invocation_id, owner, holder)
            return _lease_from_row(row)

        return await self._run(fn)

    async def release_lease(
        self,
        session_id: str,
        invocation_id: str,
        owner: str,
        *,
        snapshot: tuple[int, dict[str, Any]] | None = None,
    ) -> bool:
        self._check_writable()
        text = to_json(snapshot[1]).decode() if snapshot is not None else None

        async def fn(conn: asyncpg.Connection) -> bool:
            released, exists = await conn.fetchrow(
                _RELEASE_SQL, session_id, invocation_id, owner, None if snapshot is None else snapshot[0], text
            )
            if not exists:
                raise SessionNotFoundError(session_id)
            return bool(released)

        return await self._run(fn)

    async def acquire_and_append(
        self,
        session_id: str,
        invocation_id: str,
        events: list[Event],
        *,
        owner: str,
        ttl: float,
        expected_seq: int | None = None,
        invocation_after: int | None = None,
    ) -> tuple[Lease, list[StoredEvent], dict[str, Any]]:
        """A turn's first write (see :data:`engine.store.base.Capability`): the
        lease, the checks and the events in one statement, ``hitl_acquire_append``
        (one transaction, one round trip). Returns the lease, the stored events
        and the session's state after them."""
        self._check_writable()
        prepared = [_prepare(e) for e in events]
        args = _append_many_args(session_id, prepared, expected_seq, owner)
        now = args[3]

        async def fn(conn: asyncpg.Connection) -> tuple[float, int | None, str]:
            try:
                row = await conn.fetchrow(
                    _ACQUIRE_APPEND_SQL, invocation_id, owner, now + ttl, invocation_after, *args[:2], *args[3:]
                )
            except asyncpg.PostgresError as e:
                _raise_append_error(e, session_id, invocation_id, owner, expected_seq, invocation_after)
                raise
            return row[0], row[1], row[2]

        if not prepared:
            row = await self._run(fn)  # nothing to find again after a lost connection: the lease alone
        else:
            row, found = await self._write_batch(fn, session_id, prepared)
            if row is None:  # committed, and the connection broke: so was the lease; read it and the state back
                held = await self.get_lease(session_id, invocation_id)
                if held is None or held.owner != owner:  # lapsed and taken over meanwhile
                    raise LeaseLostError(session_id, invocation_id, owner, held.holder if held else None)
                session = await self.get_session(session_id)
                return held, _stored(session_id, prepared, found), dict(session.state)
        acquired, last, state_text = row
        lease = Lease(
            session_id=session_id,
            invocation_id=invocation_id,
            owner=owner,
            acquired_at=acquired,
            renewed_at=now,
            expires_at=now + ttl,
        )
        return lease, _stored(session_id, prepared, last), json.loads(state_text)

    async def append_and_release(
        self,
        session_id: str,
        invocation_id: str,
        events: list[Event],
        *,
        owner: str,
        expected_seq: int | None = None,
        snapshot: tuple[int, dict[str, Any]] | None = None,
    ) -> list[StoredEvent]:
        """A turn's last events (fenced by ``owner``'s lease), its snapshot and its
        lease's release in one statement, ``hitl_append_release`` (see
        :func:`engine.store.base.append_and_release`)."""
        self._check_writable()
        prepared = [_prepare(e) for e in events]
        args = _append_many_args(session_id, prepared, expected_seq, owner)
        snap_seq, snap_text = (None, None) if snapshot is None else (snapshot[0], to_json(snapshot[1]).decode())

        async def fn(conn: asyncpg.Connection) -> int | None:
            try:
                return await conn.fetchval(_APPEND_RELEASE_SQL, invocation_id, snap_seq, snap_text, *args)
            except asyncpg.PostgresError as e:
                _raise_append_error(e, session_id, invocation_id, owner, expected_seq)
                raise

        if not prepared:
            last = await self._run(fn)  # the snapshot and the release: safe to redo
        else:
            # All or none committed (the release with the events).
            last, found = await self._write_batch(fn, session_id, prepared)
            last = found if last is None else last
        return _stored(session_id, prepared, last)

    async def get_lease(self, session_id: str, invocation_id: str) -> Lease | None:
        async def fn(conn: asyncpg.Connection) -> Lease | None:
            row = await conn.fetchrow(
                f"SELECT {_cols('l', _LEASE_COLS)} FROM sessions s LEFT JOIN leases l"
                " ON l.session_id = s.id AND l.invocation_id = $2 WHERE s.id = $1",
                session_id,
                invocation_id,
            )
            if row is None:
                raise SessionNotFoundError(session_id)
            return None if row[0] is None else _lease_from_row(row)

        return await self._run(fn)

    async def list_leases(self, session_id: str) -> list[Lease]:
        return await self._session_rows(
            f"SELECT {_cols('l', _LEASE_COLS)} FROM sessions s LEFT JOIN leases l ON l.session_id = s.id"
            " WHERE s.id = $1 ORDER BY l.invocation_id",
            session_id,
            _lease_from_row,
        )

    # ------------------------------------------------------------------- audit
    async def audit_log(
        self,
        *,
        operator: str | None = None,
        session_id: str | None = None,
        action: str | None = None,
        since: float | None = None,
        until: float | None = None,
        limit: int = 50,
        cursor: str | None = None,
    ) -> Page[AuditRecord]:
        if limit < 1:
            raise ValueError(f"limit must be at least 1, not {limit}")
        q = _Query()
        for column, value in (("operator", operator), ("session_id", session_id), ("action", action)):
            if value is not None:
                q.where(f"{column} = {q.arg(value)}")
        if since is not None:
            q.where(f"at >= {q.arg(float(since))}")
        if until is not None:
            q.where(f"at < {q.arg(float(until))}")
        if cursor:
            at, no = _decode_cursor(cursor, (float, int))
            a, b = q.arg(at), q.arg(no)
            q.where(f"at <= {a} AND (at < {a} OR id < {b})")
        sql = f"SELECT {_AUDIT_COLS} FROM audit{q.where_sql()} ORDER BY at DESC, id DESC LIMIT {q.arg(limit + 1)}"
        rows = await self._run(lambda conn: conn.fetch(sql, *q.args))
        page = rows[:limit]
        nxt = _encode_cursor(page[-1][1], page[-1][0]) if len(rows) > limit else None
        return Page(items=[_audit_from_row(r) for r in page], next_cursor=nxt)

    # ------------------------------------------------------------- utilities
    async def bulk_load(self, sessions: Iterable[tuple[Session, Iterable[Event]]], *, batch_size: int = 500) -> int:
        """Create many sessions with their events, ``batch_size`` sessions per
        statement (derived rows computed in one pass, :class:`_Batch`). Returns the
        events written."""
        self._check_writable()
        total = 0
        batch = _Batch()

        async def flush(b: _Batch) -> int:
            async def fn(conn: asyncpg.Connection) -> int:
                try:
                    await b.write(conn)
                except asyncpg.UniqueViolationError as e:
                    raise ConflictError(f"a session of the batch already exists ({e.detail or e})") from None
                return len(b.events)

            return await self._run(fn, reconnect=False)

        now = time.time()
        for session, events in sessions:
            batch.add(session.id, session, [_prepare(e) for e in events], updated_at=session.created_at, now=now)
            if len(batch.sessions) >= batch_size:
                total += await flush(batch)
                batch = _Batch()
        if batch.sessions:
            total += await flush(batch)
        return total

    async def checkpoint(self) -> None:
        """Nothing to do on a server (the file stores fold their journal here)."""
        self._check_writable()


class Listener:
    """A LISTEN connection on :data:`NOTIFY_CHANNEL` that reconnects when it is lost."""

    def __init__(self, connect_args: dict[str, Any], callback: Callable[[str | None, int | None], None], where: str):
        self._args = connect_args
        self._callback = callback
        self._where = where
        self._conn: asyncpg.Connection | None = None
        self._closed = False
        self._reconnect: asyncio.Task[None] | None = None
        self.reconnects = 0

    async def start(self) -> None:
        try:
            conn = await asyncpg.connect(
                self._args["dsn"], password=self._args["password"], server_settings=self._args["server_settings"]
            )
            await conn.add_listener(NOTIFY_CHANNEL, self._on_notify)
        except (TimeoutError, OSError, asyncpg.PostgresError, asyncpg.InterfaceError) as e:
            raise _connect_error(e, self._where) from None
        conn.add_termination_listener(self._on_lost)
        self._conn = conn

    def _on_notify(self, _conn: object, _pid: int, _channel: str, payload: str) -> None:
        try:
            data = json.loads(payload)
            sid, seq = str(data["s"]), int(data["q"])
        except (ValueError, KeyError, TypeError):
            return
        self._callback(sid, seq)

    def _on_lost(self, _conn: object) -> None:
        self._conn = None
        if not self._closed and self._reconnect is None:
            self._reconnect = asyncio.get_running_loop().create_task(self._reconnect_loop())

    async def _reconnect_loop(self) -> None:
        delay = 0.1
        try:
            while not self._closed:
                try:
                    await self.start()
                except StoreError:
                    await asyncio.sleep(delay)
                    delay = min(delay * 2, 5.0)
                    continue
                self.reconnects += 1
                self._callback(None, None)
                return
        finally:
            self._reconnect = None

    async def close(self) -> None:
        self._closed = True
        if self._reconnect is not None:
            self._reconnect.cancel()
        conn, self._conn = self._conn, None
        if conn is not None:
            try:
                await asyncio.wait_for(conn.close(), timeout=2)
            except (TimeoutError, OSError, asyncpg.PostgresError, asyncpg.InterfaceError):
                conn.terminate()


class _Query:
    """A WHERE clause built with numbered ``$n`` parameters."""

    def __init__(self) -> None:
        self.args: list[Any] = []
        self._where: list[str] = []

    def arg(self, value: Any) -> str:
        self.args.append(value)
        return f"${len(self.args)}"

    def where(self, clause: str) -> None:
        self._where.append(clause)

    def where_sql(self) -> str:
        return (" WHERE " + " AND ".join(self._where)) if self._where else ""


_SESSION_COLS_PG = _SESSION_COLS.replace("state", "state::text")


def _cols(alias: str, cols: str) -> str:
    """``cols`` (a comma-separated column list) qualified by a table alias."""
    return ", ".join(f"{alias}.{c.strip()}" for c in cols.split(","))


_APPEND_MANY_SQL = "SELECT hitl_append_many(" + ", ".join(f"${i}" for i in range(1, 21)) + ")"
_ACQUIRE_APPEND_SQL = "SELECT * FROM hitl_acquire_append(" + ", ".join(f"${i}" for i in range(1, 24)) + ")"
_APPEND_RELEASE_SQL = "SELECT hitl_append_release(" + ", ".join(f"${i}" for i in range(1, 24)) + ")"


def _stored(session_id: str, prepared: list[_Prepared], last: int | None) -> list[StoredEvent]:
    """The stored events of a batch whose last one got seq ``last``."""
    if not prepared:
        return []
    assert last is not None
    first = last - len(prepared) + 1
    return [
        StoredEvent(seq=first + i, session_id=session_id, event=Event.from_json(p.json)) for i, p in enumerate(prepared)
    ]


def _append_many_args(
    session_id: str, prepared: list[_Prepared], expected_seq: int | None, lease_owner: str | None
) -> tuple[Any, ...]:
    """The arguments of ``hitl_append_many``: one array per field of ``hitl_append``'s."""
    cols: list[list[Any]] = [[] for _ in range(16)]
    for p in prepared:
        opened = {iid: [iid, path, name, args] for iid, path, name, args in p.opened}  # last wins, as in SQLite
        audit = p.audit or (None, None, None, None)
        row = (
            p.json,
            p.event_id,
            p.invocation_id,
            p.timestamp,
            p.path,
            p.kind,
            None if p.delta is None else to_json(p.delta).decode(),
            to_json(list(opened.values())).decode(),
            to_json(p.resolved).decode(),
            p.cancel,
            p.invocation_status,
            p.new_message,
            *audit,
        )
        for col, value in zip(cols, row, strict=True):
            col.append(value)
    return (session_id, expected_seq, lease_owner, time.time(), *cols)


async def _seq_of_event(conn: asyncpg.Connection, *, session_id: str, event_id: str) -> int | None:
    """The seq of event ``event_id`` in the session, if it was stored (a scan of that
    session's log: only after a lost connection)."""
    return await conn.fetchval(
        "SELECT seq FROM events WHERE session_id = $1 AND event_id = $2 ORDER BY seq DESC LIMIT 1",
        session_id,
        event_id,
    )


_BATCH_SQL = """
WITH s AS (
    INSERT INTO sessions (id, app_name, user_id, state, created_at, updated_at, last_seq, status, open_interrupts,
                          oldest_open_at, last_event_at, event_count, invocation_count)
    SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::jsonb[], $5::float8[], $6::float8[], $7::bigint[],
                         $8::text[], $9::int[], $10::float8[], $11::float8[], $12::bigint[], $13::int[])
), e AS (
    INSERT INTO events (session_id, seq, invocation_id, event_id, timestamp, path, kind, json)
    SELECT * FROM unnest($14::text[], $15::bigint[], $16::text[], $17::text[], $18::float8[], $19::text[],
                         $20::text[], $21::text[])
), i AS (
    INSERT INTO interrupts (session_id, invocation_id, interrupt_id, path, event_id, name, args, raised_seq,
                            raised_at, status, resolved_by, resolved_seq, app_name, user_id)
    SELECT * FROM unnest($22::text[], $23::text[], $24::text[], $25::text[], $26::text[], $27::text[], $28::text[],
                         $29::bigint[], $30::float8[], $31::text[], $32::text[], $33::bigint[], $34::text[],
                         $35::text[])
), v AS (
    INSERT INTO invocations (session_id, invocation_id, status, started_seq, started_at, updated_at, message)
    SELECT * FROM unnest($36::text[], $37::text[], $38::text[], $39::bigint[], $40::float8[], $41::float8[],
                         $42::text[])
), a AS (
    INSERT INTO audit (at, action, operator, reason, session_id, invocation_id, seq, event_id, details)
    SELECT * FROM unnest($43::float8[], $44::text[], $45::text[], $46::text[], $47::text[], $48::text[],
                         $49::bigint[], $50::text[], $51::text[])
)
SELECT 1
"""
"""A batch of whole sessions in ONE statement: every table's rows as column arrays
(unnest), so one round trip and one transaction whatever the size. The foreign
keys are checked at the end of the statement, when the sessions are in."""


class _Batch:
    """The rows a run of appends would write, computed in one pass in Python.

    :meth:`add` folds a new session's prepared events exactly as ``hitl_append``
    does one by one -- the interrupt index (raise, re-raise, answer, cancel), the
    invocations, the session's summary, status, state and ``updated_at`` rule,
    the audit rows -- with the same check (an answer must name an interrupt open
    in its invocation: AlreadyResolvedError), but each row is written once, in
    its final form, by :meth:`write`. This is what makes a 100,000-event import
    linear: the per-event path updates the session row once per event."""

    def __init__(self) -> None:
        self.sessions: list[tuple[Any, ...]] = []
        self.events: list[tuple[Any, ...]] = []
        self.interrupts: list[tuple[Any, ...]] = []
        self.invocations: list[tuple[Any, ...]] = []
        self.audit: list[tuple[Any, ...]] = []

    def add(self, sid: str, session: Session, prepared: list[_Prepared], *, updated_at: float, now: float) -> None:
        interrupts: dict[tuple[str, str], list[Any]] = {}
        """(invocation, interrupt id) -> [path, event_id, name, args, raised_seq, raised_at, status,
        resolved_by, resolved_seq]"""
        open_by_inv: dict[str, set[str]] = {}
        invocations: dict[str, list[Any]] = {}
        """invocation -> [status, started_seq, started_at, updated_at, message]"""
        counts: dict[str, int] = {}
        state = dict(session.state)
        status = "new"
        updated = updated_at
        last_ts = None
        for seq, p in enumerate(prepared, start=1):
            inv = p.invocation_id
            open_here = open_by_inv.setdefault(inv, set())
            if p.resolved:
                bad = [r for r in p.resolved if r not in open_here]
                if bad:
                    raise AlreadyResolvedError(bad)
            self.events.append((sid, seq, inv, p.event_id, p.timestamp, p.path, p.kind, p.json))
            for iid, path, name, args in p.opened:  # a later duplicate wins, as in hitl_append
                interrupts[inv, iid] = [path, p.event_id, name, args, seq, p.timestamp, "open", None, None]
                open_here.add(iid)
            for iid in p.resolved:
                rec = interrupts[inv, iid]
                rec[6:9] = ["resolved", p.event_id, seq]
                open_here.discard(iid)
            if p.cancel:
                for iid in open_here:
                    rec = interrupts[inv, iid]
                    rec[6], rec[8] = "cancelled", seq
                open_here.clear()
            rec = invocations.get(inv)
            changed = rec is None or p.invocation_status is not None
            if rec is None:
                invocations[inv] = [
                    p.invocation_status or "running",
                    seq,
                    p.timestamp,
                    p.timestamp,
                    p.new_message or "",
                ]
                counts[invocations[inv][0]] = counts.get(invocations[inv][0], 0) + 1
            else:
                rec[3] = p.timestamp
                if p.invocation_status is not None:
                    counts[rec[0]] -= 1
                    rec[0] = p.invocation_status
                    counts[rec[0]] = counts.get(rec[0], 0) + 1
            before = status
            if changed:
                status = session_status([k for k, n in counts.items() if n > 0])  # type: ignore[misc]
            if status != before or max(now, updated) - updated >= 1.0:
                updated = max(now, updated)
            if p.audit is not None:
                action, operator, reason, details = p.audit
                self.audit.append((p.timestamp, action, operator, reason, sid, inv, seq, p.event_id, details))
            if p.delta is not None:
                state.update(p.delta)
            last_ts = p.timestamp
        open_at = [rec[5] for rec in interrupts.values() if rec[6] == "open"]
        self.sessions.append(
            (
                sid,
                session.app_name,
                session.user_id,
                to_json(state).decode(),
                session.created_at,
                updated,
                len(prepared),
                status,
                len(open_at),
                min(open_at, default=None),
                last_ts,
                len(prepared),
                len(invocations),
            )
        )
        for (inv, iid), r in interrupts.items():
            self.interrupts.append((sid, inv, iid, *r, session.app_name, session.user_id))
        for inv, r in invocations.items():
            self.invocations.append((sid, inv, *r))

    async def write(self, conn: asyncpg.Connection) -> None:
        args: list[list[Any]] = []
        for rows, width in (
            (self.sessions, 13),
            (self.events, 8),
            (self.interrupts, 14),
            (self.invocations, 7),
            (self.audit, 9),
        ):
            args += [list(col) for col in zip(*rows, strict=True)] if rows else [[] for _ in range(width)]
        await conn.execute(_BATCH_SQL, *args)


async def _keep_session(_conn: asyncpg.Connection) -> None:
    """The pool's reset on release: nothing. asyncpg's default sends ``RESET ALL;
    UNLISTEN *; CLOSE ALL; ...`` on every release -- one more round trip per store
    call -- to undo session state this store never creates (its settings are
    connection parameters, its locks transaction-scoped, LISTEN has its own
    connection). A transaction left open is still rolled back by the pool."""


def _newer_schema_error(where: str, version: int) -> StoreError:
    return StoreError(
        f"the store {where} has schema version {version}, newer than this hitl-console's {SCHEMA_VERSION}; "
        "it was left untouched: upgrade hitl-console to open it"
    )
