"""On PostgreSQL an append statement writes its events set-based (schema version
11): ``hitl_append_many`` locks the session once, inserts all the statement's
events in one INSERT and writes each derived row once, where version 10 called
``hitl_append`` once per event (that loop is kept as ``hitl_append_each``, and
the set-based function hands it the shapes it does not take). Every PostgreSQL
writer shares this path (turns, operations, workers), so the two are held to
each other over random event sequences on the real server: the same seqs, the
same rows in every table the append maintains, the same notifications, and the
same errors with nothing written. And it is counted: a worker's one-node turn
calls no per-event function at all.

The statements send a batch's events as one JSON parameter, split into the
functions' arrays on the server; the reference side of the property test sends
them as the sixteen array parameters it took before, so the split is held to
the same results too."""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from typing import Any

import asyncpg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.models import Event
from engine.store import open_store
from engine.store.postgres import SCHEMA_VERSION, PostgresStore
from engine.store.postgres.schema import _notify_once_per_statement
from engine.store.postgres.statements import (
    _ACQUIRE_APPEND_SQL,
    _APPEND_MANY_SQL,
    _APPEND_RELEASE_SQL,
    _append_many_args,
)
from engine.store.postgres.workers import _SETTLE_CLAIM_SQL, _SETTLE_SQL
from engine.store.sql.prepared import Prepared
from tests.contract.builders import pg_fresh_url
from tests.reliability.test_worker_turn_cost import _queued, _serve

pytestmark = pytest.mark.postgres

_EACH_SQL = (
    "SELECT hitl_append_each($1, $2, $3, $4, $5, $6, $7, $8::text[]::float8[], $9, $10, $11::text[]::jsonb[],"
    " $12::text[]::jsonb[], $13::text[]::jsonb[], $14::text[]::boolean[], $15, $16, $17, $18, $19, $20)"
)
"""Version 10's per-event loop, its events as sixteen array parameters (as the
store sent them before the one JSON parameter): the reference."""


def _array_args(args: tuple[Any, ...]) -> tuple[Any, ...]:
    """:data:`_EACH_SQL`'s arguments for the same statement: each field of the JSON
    rows an array, as text (the old client's encoding, written out again here)."""
    cols: list[list[Any]] = [[] for _ in range(16)]
    for row in json.loads(args[4]):
        for i, v in enumerate(row):
            if i in (6, 7, 8):  # delta, opened, resolved: JSON values (None: no delta)
                v = None if v is None else json.dumps(v)
            elif i == 9:
                v = None if v is None else ("true" if v else "false")
            cols[i].append(v)
    return (*args[:4], *cols)

_STORES: dict[str, dict[str, Any]] = {}
"""Two migrated schemas (per-event, set-based), created once per test process."""


async def _connect_args() -> dict[str, dict[str, Any]]:
    for side in ("each", "set"):
        if side not in _STORES:
            store = await open_store(pg_fresh_url())
            _STORES[side] = store._connect_args  # type: ignore[attr-defined]
            await store.close()
    return _STORES


_DEADLINE = json.dumps({"deadline": {"timers": [{"after": 5, "action": "remind"}, {"after": 9}]}})

_events = st.lists(
    st.fixed_dictionaries({
        "inv": st.sampled_from(["i1", "i1", "i1", "i2"]),
        "opened": st.lists(st.tuples(st.sampled_from("abc"), st.sampled_from(["{}", _DEADLINE])),
                           max_size=2, unique_by=lambda t: t[0]),
        "resolved": st.lists(st.sampled_from("abc"), max_size=2, unique=True),
        "cancel": st.sampled_from([False, False, False, True]),
        "status": st.sampled_from([None, None, None, "running", "waiting", "completed", "failed", "cancelled"]),
        "msg": st.sampled_from([None, "hello"]),
        "delta": st.sampled_from([None, None, {"x": 1}, {"y": [2]}, {"x": 3, "z": None}]),
        "audit": st.booleans(),
    }),
    min_size=1,
    max_size=4,
)
_batches = st.lists(
    st.tuples(
        _events,
        st.sampled_from(["right", "right", None, "wrong"]),  # expected seq
        st.sampled_from(["w", "w", None, "x"]),  # lease owner ('w' holds i1's lease)
        st.sampled_from([0.0, 0.3, 0.99, 1.0, 2.5]),  # how far the clock moves before the statement
    ),
    min_size=1,
    max_size=5,
)


def _prepared(spec: dict[str, Any], ts: float) -> Prepared:
    return Prepared(
        json=json.dumps({"k": uuid.uuid4().hex}), event_id=uuid.uuid4().hex, invocation_id=spec["inv"], timestamp=ts,
        path="n@1", kind="k", delta=spec["delta"],
        opened=[(iid, f"n@1/{iid}", iid.upper(), args) for iid, args in spec["opened"]],
        resolved=spec["resolved"], cancel=spec["cancel"], invocation_status=spec["status"],
        new_message=spec["msg"], audit=("act", "op", None, "{}") if spec["audit"] else None,
    )


async def _dump(conn: asyncpg.Connection, sid: str) -> dict[str, list[tuple[Any, ...]]]:
    """Every row the append maintains for session ``sid``."""
    queries = {
        "sessions": "SELECT app_name, user_id, state::text, created_at, updated_at, last_seq, status, open_interrupts,"
                    " oldest_open_at, last_event_at, event_count, invocation_count FROM sessions WHERE id = $1",
        "events": "SELECT * FROM events WHERE session_id = $1 ORDER BY seq",
        "interrupts": "SELECT * FROM interrupts WHERE session_id = $1 ORDER BY invocation_id, interrupt_id",
        "invocations": "SELECT * FROM invocations WHERE session_id = $1 ORDER BY invocation_id",
        "audit": "SELECT at, action, operator, reason, invocation_id, seq, event_id, details FROM audit"
                 " WHERE session_id = $1 ORDER BY id",
        "deadline_timers": "SELECT * FROM deadline_timers WHERE session_id = $1 ORDER BY 1, 2, 3, 4, 5",
        "leases": "SELECT * FROM leases WHERE session_id = $1 ORDER BY invocation_id",
    }
    return {name: [tuple(r) for r in await conn.fetch(q, sid)] for name, q in queries.items()}


async def _append(conn: asyncpg.Connection, sql: str, args: tuple[Any, ...], heard: list[str]) -> Any:
    """The statement's result -- its last seq, or its error (code, message, detail) -- and its notifications."""
    try:
        result: Any = await conn.fetchval(sql, *args)
    except asyncpg.PostgresError as e:
        result = (e.sqlstate, str(e), getattr(e, "detail", None))
    for _ in range(3):  # asyncpg hands notifications to the listener with call_soon
        await asyncio.sleep(0)
    return result, list(heard)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(batches=_batches, other=st.sampled_from([None, "running", "waiting", "completed", "failed", "cancelled"]))
async def test_set_based_appends_write_what_the_per_event_loop_writes(
    batches: list[tuple[list[dict[str, Any]], str | None, str | None, float]], other: str | None
) -> None:
    stores = await _connect_args()
    sid = f"p-{uuid.uuid4().hex}"
    base = time.time()
    conns: dict[str, asyncpg.Connection] = {}
    heard: dict[str, list[str]] = {"each": [], "set": []}
    try:
        for side, args in stores.items():
            conn = conns[side] = await asyncpg.connect(args["dsn"], server_settings=args["server_settings"])
            await conn.add_listener(  # both schemas' appends notify one channel: each hears its own only
                "hitl_events",
                lambda c, pid, _ch, payload, side=side: pid == c.get_server_pid() and heard[side].append(payload),
            )
            await conn.execute(
                "INSERT INTO sessions (id, app_name, user_id, state, created_at, updated_at, status, invocation_count)"
                " VALUES ($1, 'app', 'u', '{\"x\": 0}', $2, $2, $3, $4)",
                sid, base, other or "new", int(other is not None),
            )
            await conn.execute("INSERT INTO leases VALUES ($1, 'i1', 'w', $2, $2, $3)", sid, base, base + 3600)
            if other is not None:  # another invocation of the session, whose status weighs on the session's
                await conn.execute("INSERT INTO invocations VALUES ($1, 'i0', $2, 0, $3, $3, '')", sid, other, base)
        now, last, ts = base, 0, base
        for events, expected, lease, step in batches:
            now += step
            prepared = []
            for spec in events:
                ts += 0.01
                prepared.append(_prepared(spec, ts))
            exp = {"right": last, "wrong": last + 7, None: None}[expected]
            built = _append_many_args(sid, prepared, exp, lease)
            args = (*built[:3], now, *built[4:])
            heard["each"].clear()
            heard["set"].clear()
            each = await _append(conns["each"], _EACH_SQL, _array_args(args), heard["each"])
            got = await _append(conns["set"], _APPEND_MANY_SQL, args, heard["set"])
            assert got == each
            assert await _dump(conns["set"], sid) == await _dump(conns["each"], sid)
            if isinstance(each[0], int):
                last = each[0]
    finally:
        for conn in conns.values():
            await conn.close()


async def test_an_append_statement_sends_no_array_parameter() -> None:
    """A turn's writes and an append send their events as one text parameter:
    asyncpg checks no element of an array in Python, and a new connection looks
    up no array type (before: sixteen array parameters, five of them types
    asyncpg has no codec for)."""
    store = await open_store(pg_fresh_url())
    try:
        async def params(conn: asyncpg.Connection) -> dict[str, list[str]]:
            found = {}
            for name, sql in (("append", _APPEND_MANY_SQL), ("first write", _ACQUIRE_APPEND_SQL),
                              ("last write", _APPEND_RELEASE_SQL), ("settle", _SETTLE_SQL),
                              ("settle and claim", _SETTLE_CLAIM_SQL)):
                found[name] = [t.kind for t in (await conn.prepare(sql)).get_parameters()]
            return found

        found = await store._run(params)  # type: ignore[attr-defined]
    finally:
        await store.close()
    arrays = {name: kinds.count("array") for name, kinds in found.items()}
    assert arrays == {"append": 0, "first write": 0, "last write": 0, "settle": 0,
                      "settle and claim": 6}  # the claim's own: its apps, skip list and versions
    assert len(found["first write"]) == 8 and len(found["last write"]) == 8  # 23 each before


async def _function_calls(url: str, turns: int) -> dict[str, int]:
    """The server-side function calls of a worker (one connection) serving ``turns``
    queued one-node turns, its warm-up included (``pg_stat_user_functions``)."""
    schema = url.rsplit("schema=", 1)[1]
    await _queued(url, turns, f"t{turns}-")
    counted = url.replace("?", "?track_functions=all&", 1)  # this worker's connection alone tracks its calls
    store = await open_store(counted, max_size=1)
    try:
        pid = await store._run(lambda conn: conn.fetchval("SELECT pg_backend_pid()"))  # type: ignore[attr-defined]
        await _serve(store, turns)
        dsn = store._connect_args["dsn"]  # type: ignore[attr-defined]
    finally:
        await store.close()
    conn = await asyncpg.connect(dsn)
    try:  # a backend reports its function calls when it ends, at the latest
        for _ in range(500):
            if not await conn.fetchval("SELECT count(*) FROM pg_stat_activity WHERE pid = $1", pid):
                break
            await asyncio.sleep(0.01)
        await asyncio.sleep(0.2)
        await conn.execute("SELECT pg_stat_clear_snapshot()")
        rows = await conn.fetch("SELECT funcname, calls FROM pg_stat_user_functions WHERE schemaname = $1", schema)
        return {r[0]: int(r[1]) for r in rows}
    finally:
        await conn.close()


async def test_a_worker_turn_calls_no_per_event_function() -> None:
    """Counted on the server: serving three turns costs two ``hitl_append_many``
    calls a turn more than serving one, and no ``hitl_append`` call at all (version
    10 called it once per event, five times a turn)."""
    one = await _function_calls(pg_fresh_url(), 1)
    three = await _function_calls(pg_fresh_url(), 3)
    per_turn = {f: (three.get(f, 0) - one.get(f, 0)) / 2 for f in set(one) | set(three)}
    assert per_turn.get("hitl_append_many") == 2  # the turn's first write and its last
    assert per_turn.get("hitl_append", 0) == 0
    assert per_turn.get("hitl_append_each", 0) == 0


_SOURCE_SQL = (
    "SELECT prosrc FROM pg_proc WHERE proname = 'hitl_append_many' AND pronamespace = current_schema()::regnamespace"
)


async def test_a_version_10_store_is_upgraded_to_set_based_appends() -> None:
    url = pg_fresh_url()
    async with PostgresStore.open(url) as store:
        conn = await asyncpg.connect(store._connect_args["dsn"], server_settings=store._connect_args["server_settings"])
    try:  # back to version 10: its hitl_append_many, no hitl_append_each
        await conn.execute(_notify_once_per_statement()[2])
        await conn.execute("DROP FUNCTION hitl_append_each(text, bigint, text, double precision, text[], text[],"
                           " text[], double precision[], text[], text[], jsonb[], jsonb[], jsonb[], boolean[], text[],"
                           " text[], text[], text[], text[], text[])")
        await conn.execute("UPDATE hitl_schema SET version = 10")
        assert "hitl_append(" in await conn.fetchval(_SOURCE_SQL)
    finally:
        await conn.close()
    store = await open_store(url)
    try:
        assert (store.migrated_from, await store.schema_version()) == (10, SCHEMA_VERSION)
        session = await store.create_session("app", "u")
        stored = await store.append_events(session.id, [Event(invocation_id="i1", author="t") for _ in range(3)])
        assert [e.seq for e in stored] == [1, 2, 3]
        assert (await store.get_session(session.id)).last_seq == 3

        async def src(conn: asyncpg.Connection) -> str:
            return str(await conn.fetchval(_SOURCE_SQL))

        assert "hitl_append_each(" in await store._run(src)  # type: ignore[attr-defined]
    finally:
        await store.close()
