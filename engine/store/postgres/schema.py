"""The schema: the migrations, and the server-side append functions they create."""

from __future__ import annotations

from .deadlines import MIGRATION as _DEADLINES

NOTIFY_CHANNEL = "hitl_events"
"""Every append statement notifies this channel with ``{"s": session_id, "q": seq}``, its last seq."""



_LOCK_KEY = 0x48495443
"""Advisory lock taken while migrating ("HITC", like SQLite's application_id)."""


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


_WORKERS = [
    """CREATE TABLE IF NOT EXISTS turn_requests (
        app_name text NOT NULL,
        session_id text NOT NULL,
        invocation_id text NOT NULL,
        kind text NOT NULL,
        payload text NOT NULL DEFAULT '{}',
        requested_at double precision NOT NULL,
        claimed_by text,
        claimed_until double precision,
        held text,
        note text,
        PRIMARY KEY (session_id, invocation_id)
    )""",
    "CREATE INDEX IF NOT EXISTS turn_requests_by_app ON turn_requests(app_name, requested_at)",
    """CREATE TABLE IF NOT EXISTS workers (
        worker_id text PRIMARY KEY,
        host text NOT NULL,
        pid integer NOT NULL,
        apps text NOT NULL,
        versions text NOT NULL,
        current text NOT NULL,
        state text NOT NULL,
        started_at double precision NOT NULL,
        heartbeat_at double precision NOT NULL,
        stale_after double precision NOT NULL
    )""",
    """CREATE TABLE IF NOT EXISTS invocation_graphs (
        session_id text NOT NULL,
        invocation_id text NOT NULL,
        graph text NOT NULL,
        PRIMARY KEY (session_id, invocation_id)
    )""",
]
"""The workers' migration: its tables, read by ``workers.py``."""


_CREATE_FIRST_WRITE_FN = """
CREATE OR REPLACE FUNCTION hitl_create_acquire_append(
    p_app text, p_user text,
    p_inv_lease text, p_owner text, p_expires double precision, p_after bigint,
    p_session text, p_expected bigint, p_now double precision,
    p_json text[], p_event_id text[], p_inv text[], p_ts double precision[], p_path text[], p_kind text[],
    p_delta jsonb[], p_opened jsonb[], p_resolved jsonb[], p_cancel boolean[], p_inv_status text[],
    p_new_msg text[], p_audit_action text[], p_audit_operator text[], p_audit_reason text[], p_audit_details text[],
    OUT o_acquired double precision, OUT o_last bigint, OUT o_state text
) LANGUAGE plpgsql AS $fn$
-- A new session's first turn in ONE statement (capability create_in_first_write):
-- create the session (HT4EX when it exists), then hitl_acquire_append.
BEGIN
    INSERT INTO sessions (id, app_name, user_id, state, created_at, updated_at, last_seq, status)
        VALUES (p_session, p_app, p_user, '{}'::jsonb, p_now, p_now, 0, 'new') ON CONFLICT (id) DO NOTHING;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING ERRCODE = 'HT4EX', MESSAGE = p_session;
    END IF;
    SELECT * INTO o_acquired, o_last, o_state FROM hitl_acquire_append(
        p_inv_lease, p_owner, p_expires, p_after, p_session, p_expected, p_now,
        p_json, p_event_id, p_inv, p_ts, p_path, p_kind, p_delta, p_opened, p_resolved, p_cancel, p_inv_status,
        p_new_msg, p_audit_action, p_audit_operator, p_audit_reason, p_audit_details);
END
$fn$
"""
"""A new session's creation folded into its first turn's first write."""

_OWNERS = [
    "ALTER TABLE interrupts ADD COLUMN IF NOT EXISTS owner text",
    "ALTER TABLE interrupts ADD COLUMN IF NOT EXISTS owned_at double precision",
    """CREATE INDEX IF NOT EXISTS interrupts_open_by_owner
        ON interrupts(owner, raised_at, session_id, raised_seq, interrupt_id) WHERE status = 'open'""",
    # hitl_append re-opens a row when an id is raised again (ON CONFLICT DO UPDATE): a new
    # interrupt is nobody's, as SQLite's INSERT OR REPLACE leaves it.
    r"""CREATE OR REPLACE FUNCTION hitl_reopen_unowned() RETURNS trigger LANGUAGE plpgsql AS $fn$
BEGIN
    IF NEW.status = 'open' AND NEW.raised_seq IS DISTINCT FROM OLD.raised_seq THEN
        NEW.owner := NULL;
        NEW.owned_at := NULL;
    END IF;
    RETURN NEW;
END
$fn$""",
    "DROP TRIGGER IF EXISTS interrupts_reopen_unowned ON interrupts",
    """CREATE TRIGGER interrupts_reopen_unowned BEFORE UPDATE ON interrupts
        FOR EACH ROW WHEN (NEW.raised_seq IS DISTINCT FROM OLD.raised_seq) EXECUTE FUNCTION hitl_reopen_unowned()""",
]
"""Owners of open interrupts: the columns the ownership events (claim, assign, release) derive
(their check and update run with the append, :meth:`engine.store.postgres.writes._Writes.append_events`)."""

_DEADLINE_TRIGGER_WHEN = [
    "DROP TRIGGER IF EXISTS interrupts_deadline_timers ON interrupts",
    # The function's own first test, as the trigger's condition: an interrupt without
    # a rule (most) no longer calls it, so a new backend's first such write does not
    # load and compile it and plan its INSERT (~0.3 ms of a cold turn's server CPU).
    """CREATE TRIGGER interrupts_deadline_timers AFTER INSERT OR UPDATE OF raised_seq ON interrupts
        FOR EACH ROW WHEN (NEW.status = 'open' AND position('"deadline"' in NEW.args) > 0)
        EXECUTE FUNCTION hitl_deadline_timers()""",
]
"""The deadline trigger fires only for an open interrupt whose args name a deadline."""

def _notify_once_per_statement() -> list[str]:
    """``hitl_append`` notifies only when asked (a new last parameter, true by
    default), and ``hitl_append_many`` asks none of its appends and notifies once,
    after them, with the last seq: one notification per statement instead of one
    per event. Every listener re-reads from the last seq it saw, so the last one
    wakes each exactly as the many did (at the commit); a turn's two writes send two
    where a one-node turn sent six, and the commit's notify queue work shrinks with
    them. Derived from the functions above, so that the bodies stay one text."""
    old_tail = "p_audit_reason text, p_audit_details text\n) RETURNS bigint"
    perform = "    PERFORM pg_notify('hitl_events', json_build_object('s', p_session, 'q', v_seq)::text);\n"
    assert _APPEND_FN.count(old_tail) == 1 and _APPEND_FN.count(perform) == 1
    append = _APPEND_FN.replace(
        old_tail, "p_audit_reason text, p_audit_details text,\n    p_notify boolean DEFAULT true\n) RETURNS bigint"
    ).replace(perform, "    IF p_notify THEN\n    " + perform + "    END IF;\n")
    call_tail = "p_audit_action[i], p_audit_operator[i], p_audit_reason[i], p_audit_details[i]);"
    loop_end = "    END LOOP;\n    RETURN v_seq;"
    assert _APPEND_MANY_FN.count(call_tail) == 1 and _APPEND_MANY_FN.count(loop_end) == 1
    many = _APPEND_MANY_FN.replace(call_tail, call_tail[:-2] + ", false);").replace(
        loop_end,
        "    END LOOP;\n    IF v_seq IS NOT NULL THEN\n"
        "        PERFORM pg_notify('hitl_events', json_build_object('s', p_session, 'q', v_seq)::text);\n"
        "    END IF;\n    RETURN v_seq;",
    )
    return [
        "DROP FUNCTION IF EXISTS hitl_append(text, bigint, text, double precision, text, text, text, double precision,"
        " text, text, jsonb, text[], text[], text[], text[], text[], boolean, text, text, text, text, text, text)",
        append,
        many,
    ]


_APPEND_SET_TEMPLATE = r"""
--SIGNATURE--) RETURNS bigint LANGUAGE plpgsql SET plan_cache_mode = force_generic_plan AS $fn$
-- Several appends in ONE statement, set-based: the session row locked and written
-- once, the events inserted by one INSERT, each derived row (the invocation, the
-- interrupts, the session's summary) written once, one notification -- the same
-- rows, seqs, errors and notification as hitl_append_each (hitl_append once per
-- event), which still takes the shapes this does not: events of several
-- invocations, an interrupt id named by two events, or an interrupt opened or
-- resolved after a cancel. Element i of p_opened is a JSON array of
-- [interrupt_id, path, name, args JSON]; of p_resolved, a JSON array of ids.
-- Generic plans: a statement over the arrays was planned again at every call
-- for their sizes (custom plans), ~70 us each.
DECLARE
    n integer := coalesce(cardinality(p_json), 0);
    v_inv text := p_inv[1];
    v_cancel integer := array_position(p_cancel, true);
    s record;
    v_simple boolean := true;
    v_opens boolean := false;
    v_resolves boolean := false;
    v_holder text;
    v_bad text[];
    v_statuses text[] := array_remove(p_inv_status, NULL);
    v_delta jsonb;
    d jsonb;
    v_new boolean;
    v_run boolean;
    v_wait boolean;
    v_fail boolean;
    v_done boolean;
    v_status text;
    v_next text;
    v_changed boolean := false;
    v_open integer;
    v_oldest double precision;
    v_updated double precision;
BEGIN
    IF n = 0 THEN
        RETURN NULL;
    END IF;
    IF NOT p_inv <@ ARRAY[v_inv] THEN
        v_simple := false;
    ELSIF cardinality(array_remove(array_remove(p_opened || p_resolved, '[]'::jsonb), NULL)) > 0 THEN
        -- (most appends open and answer nothing: no query for them)
        SELECT count(DISTINCT (t.o, t.iid)) = count(DISTINCT t.iid) AND coalesce(max(t.o) <= v_cancel, true),
               bool_or(t.k), bool_or(NOT t.k)
          INTO v_simple, v_opens, v_resolves
          FROM (SELECT true, x.o, e->>0 FROM unnest(p_opened) WITH ORDINALITY AS x(j, o), jsonb_array_elements(x.j) AS e
                UNION ALL
                SELECT false, x.o, r FROM unnest(p_resolved) WITH ORDINALITY AS x(j, o),
                                          jsonb_array_elements_text(x.j) AS r
               ) AS t(k, o, iid);
    END IF;
    IF NOT v_simple THEN
        RETURN hitl_append_each(
            p_session, p_expected, p_lease, p_now, p_json, p_event_id, p_inv, p_ts, p_path, p_kind, p_delta,
            p_opened, p_resolved, p_cancel, p_inv_status, p_new_msg, p_audit_action, p_audit_operator,
            p_audit_reason, p_audit_details);
    END IF;
    --LOCK AND CHECK--
    IF v_resolves THEN
        -- no id is named twice and no cancel comes first: each answer is checked against the rows as they are
        SELECT array_agg(r.r ORDER BY r.m) INTO v_bad
          FROM unnest(p_resolved) WITH ORDINALITY AS x(j, o), jsonb_array_elements_text(x.j) WITH ORDINALITY AS r(r, m)
         WHERE NOT EXISTS (SELECT 1 FROM interrupts i WHERE i.session_id = p_session
                           AND i.invocation_id = v_inv AND i.interrupt_id = r.r AND i.status = 'open')
         GROUP BY x.o ORDER BY x.o LIMIT 1;
        IF v_bad IS NOT NULL THEN
            RAISE EXCEPTION USING ERRCODE = 'HT410', MESSAGE = array_to_json(v_bad)::text;
        END IF;
    END IF;
    INSERT INTO events (session_id, seq, invocation_id, event_id, timestamp, path, kind, json)
    SELECT p_session, s.last_seq + e.o, v_inv, e.id, e.ts, e.path, e.kind, e.json
      FROM unnest(p_event_id, p_ts, p_path, p_kind, p_json) WITH ORDINALITY AS e(id, ts, path, kind, json, o)
     ORDER BY e.o;
    IF v_opens THEN
        INSERT INTO interrupts (session_id, invocation_id, interrupt_id, path, event_id, name, args,
                                raised_seq, raised_at, status, resolved_by, resolved_seq, app_name, user_id)
        SELECT p_session, v_inv, e->>0, e->>1, p_event_id[x.o], e->>2, e->>3, s.last_seq + x.o, p_ts[x.o], 'open',
               NULL, NULL, s.app_name, s.user_id
          FROM unnest(p_opened) WITH ORDINALITY AS x(j, o), jsonb_array_elements(x.j) WITH ORDINALITY AS y(e, m)
         ORDER BY x.o, y.m
        --REOPEN--
    END IF;
    IF v_resolves THEN
        UPDATE interrupts i SET status = 'resolved', resolved_by = p_event_id[x.o], resolved_seq = s.last_seq + x.o
          FROM unnest(p_resolved) WITH ORDINALITY AS x(j, o), jsonb_array_elements_text(x.j) AS r
         WHERE i.session_id = p_session AND i.invocation_id = v_inv AND i.interrupt_id = r;
    END IF;
    IF v_cancel IS NOT NULL THEN
        UPDATE interrupts SET status = 'cancelled', resolved_seq = s.last_seq + v_cancel
         WHERE session_id = p_session AND invocation_id = v_inv AND status = 'open';
    END IF;
    UPDATE invocations SET status = coalesce(v_statuses[cardinality(v_statuses)], status), updated_at = p_ts[n]
     WHERE session_id = p_session AND invocation_id = v_inv;
    v_new := NOT FOUND;
    IF v_new THEN
        INSERT INTO invocations (session_id, invocation_id, status, started_seq, started_at, updated_at, message)
            VALUES (p_session, v_inv, coalesce(v_statuses[cardinality(v_statuses)], 'running'), s.last_seq + 1,
                    p_ts[1], p_ts[n], coalesce(p_new_msg[1], ''));
        IF p_inv_status[1] IS NULL THEN
            v_statuses := array_prepend('running'::text, v_statuses);  -- its first event made it, running
        END IF;
    END IF;
    -- the session's status after each event that set the invocation's (engine.store.base.session_status)
    v_status := s.status;
    IF cardinality(v_statuses) > 0 THEN
        FOREACH v_next IN ARRAY v_statuses LOOP
            IF v_next <> 'running' AND v_run IS NULL THEN  -- running wins whatever the others are
                SELECT coalesce(bool_or(status = 'running'), false), coalesce(bool_or(status = 'waiting'), false),
                       coalesce(bool_or(status = 'failed'), false), coalesce(bool_or(status = 'completed'), false)
                  INTO v_run, v_wait, v_fail, v_done
                  FROM invocations WHERE session_id = p_session AND invocation_id <> v_inv;
            END IF;
            v_next := CASE WHEN v_next = 'running' OR v_run THEN 'running'
                           WHEN v_wait OR v_next = 'waiting' THEN 'waiting'
                           WHEN v_fail OR v_next = 'failed' THEN 'failed'
                           WHEN v_done OR v_next = 'completed' THEN 'completed'
                           ELSE 'cancelled' END;
            v_changed := v_changed OR v_next IS DISTINCT FROM v_status;
            v_status := v_next;
        END LOOP;
    END IF;
    v_open := s.open_interrupts;
    v_oldest := s.oldest_open_at;
    IF v_opens OR v_resolves OR v_cancel IS NOT NULL THEN
        SELECT count(*), min(raised_at) INTO v_open, v_oldest
          FROM interrupts WHERE session_id = p_session AND status = 'open';
    END IF;
    -- updated_at moves at most once a second unless the status changed (as in SQLite)
    v_updated := s.updated_at;
    IF v_changed OR greatest(p_now, s.updated_at) - s.updated_at >= 1.0 THEN
        v_updated := greatest(p_now, s.updated_at);
    END IF;
    IF cardinality(array_remove(p_audit_action, NULL)) > 0 THEN
        INSERT INTO audit (at, action, operator, reason, session_id, invocation_id, seq, event_id, details)
        SELECT p_ts[o], p_audit_action[o], p_audit_operator[o], p_audit_reason[o], p_session, v_inv,
               s.last_seq + o, p_event_id[o], p_audit_details[o]
          FROM generate_subscripts(p_audit_action, 1) AS o WHERE p_audit_action[o] IS NOT NULL ORDER BY o;
    END IF;
    FOREACH d IN ARRAY coalesce(array_remove(p_delta, NULL), '{}') LOOP  -- (no array at all: no delta, as the loop)
        v_delta := coalesce(v_delta || d, d);  -- objects: (state || a) || b = state || (a || b)
    END LOOP;
    UPDATE sessions SET last_seq = s.last_seq + n, last_event_at = p_ts[n], event_count = s.last_seq + n,
           status = v_status, updated_at = v_updated, open_interrupts = v_open, oldest_open_at = v_oldest,
           invocation_count = s.invocation_count + v_new::integer,
           state = CASE WHEN v_delta IS NULL THEN state ELSE state || v_delta END
     WHERE id = p_session;
    PERFORM pg_notify('hitl_events', json_build_object('s', p_session, 'q', s.last_seq + n)::text);
    RETURN s.last_seq + n;
END
$fn$
"""


def _append_set_based() -> list[str]:
    """v11: ``hitl_append_many`` set-based (:data:`_APPEND_SET_TEMPLATE`, with
    ``hitl_append``'s own lock, checks and re-raise). v10's, which calls
    ``hitl_append`` once per event, stays as ``hitl_append_each``: the new one hands
    it the shapes it does not take, and the tests hold the two to the same rows,
    seqs, errors and notifications (tests/reliability/test_append_set.py)."""

    def part(first: str, end: str, text: str = _APPEND_FN) -> str:  # the lines from ``first`` up to ``end``
        assert text.count(first) == 1 and text.count(end) == 1
        return text[text.index(first):text.index(end)]

    checks = part("    SELECT app_name, user_id, last_seq", "    IF cardinality(p_resolved) > 0 THEN\n        SELECT")
    reopen = part("        ON CONFLICT (session_id", "    END IF;\n    IF cardinality(p_resolved) > 0 THEN\n        UPDATE")
    lease = "invocation_id = p_inv FOR SHARE"
    assert checks.count(lease) == 1
    body = _APPEND_SET_TEMPLATE.replace("    --LOCK AND CHECK--\n", checks.replace(lease, "invocation_id = v_inv FOR SHARE"))
    body = body.replace("        --REOPEN--\n", reopen).replace(
        "--SIGNATURE--", part("CREATE OR REPLACE FUNCTION", ") RETURNS bigint", _APPEND_MANY_FN)
    )
    each = _notify_once_per_statement()[2]
    head = "CREATE OR REPLACE FUNCTION hitl_append_many("
    assert each.count(head) == 1 and "--" not in body.replace("-- ", "")
    return [each.replace(head, "CREATE OR REPLACE FUNCTION hitl_append_each("), body]

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
    # seek checkpoints (engine/checkpoints.py): the session's compact projection every ~1000 events.
    [
        """CREATE TABLE IF NOT EXISTS projection_checkpoints (
            session_id text NOT NULL REFERENCES sessions(id),
            seq bigint NOT NULL,
            data text NOT NULL,
            PRIMARY KEY (session_id, seq)
        )""",
    ],
    # workers: turn requests, worker heartbeats, invocation graph versions.
    _WORKERS,
    # a new session's first turn creates it in its first write (one statement less per fresh run).
    [_CREATE_FIRST_WRITE_FN],
    # v8: owners of open interrupts (engine/ownership.py), as SQLite's version 8.
    _OWNERS,
    # deadline timers (engine/deadlines.py): one row per step of an interrupt's rule, written by a trigger.
    _DEADLINES,
    # v9: the deadline trigger's function called only for an interrupt that may have a rule.
    _DEADLINE_TRIGGER_WHEN,
    # v10: one notification per append statement (its last seq), not one per event.
    _notify_once_per_statement(),
    # v11: an append statement's events written set-based (one lock, one insert, each derived row once).
    _append_set_based(),
]
"""``_MIGRATIONS[i]`` upgrades schema version ``i`` to ``i + 1`` (statements run in
one transaction). Append only; never edit a released one."""


SCHEMA_VERSION = len(_MIGRATIONS)
