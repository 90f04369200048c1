"""A worker makes its connections ready for its turns before it claims any
(``warm_turns``): on PostgreSQL a new server backend compiles the turn's
PL/pgSQL functions and plans their statements at their first call, and a
connection's first use of a statement is a COPY, its second a prepare -- all
of which a worker's first turns paid, on every connection of every process.
The warm-up runs the turn's statements on a scratch session in a transaction
it rolls back: nothing is written, nobody is notified. Counted here, never
timed (``benchmarks/bench_workers.py`` times it)."""

from __future__ import annotations

import asyncio
from typing import Any

import asyncpg
import pytest

from engine.store import open_store
from engine.worker import Worker
from tests.contract.builders import pg_fresh_url
from tests.engine.test_turn_cost import SIMPLE
from tests.reliability.test_worker_turn_cost import _count_empty_claims, _PgCount, _queued

APP = "one_node"
TURN_FUNCTIONS = {"hitl_acquire_append", "hitl_append_release", "hitl_append_many"}
"""What a turn calls (``hitl_append``, per event, only for the appends the set-based path hands back)."""
TABLES = ("sessions", "events", "interrupts", "invocations", "leases", "snapshots", "audit",
          "turn_requests", "invocation_graphs")
pytestmark = pytest.mark.postgres


async def _compiled(conn: Any) -> set[str]:
    """The PL/pgSQL functions this connection's server backend has compiled."""
    rows = await conn.fetch("SELECT ident FROM pg_backend_memory_contexts WHERE name = 'PL/pgSQL function'")
    return {str(r[0]).split("(")[0] for r in rows if r[0]}


async def _each_connection(store: Any, n: int) -> list[set[str]]:
    """What each of ``n`` pooled connections, held at once, has compiled."""
    conns = [await store._pool.acquire() for _ in range(n)]
    try:
        return [await _compiled(c) for c in conns]
    finally:
        for c in conns:
            await store._pool.release(c)


async def test_warmed_connections_have_compiled_the_turns_functions() -> None:
    url = pg_fresh_url()
    await (await open_store(url)).close()  # created (the migration's backend compiled the functions)
    store = await open_store(url, max_size=3)
    try:
        assert not any(TURN_FUNCTIONS & seen for seen in await _each_connection(store, 1))  # a new backend: nothing yet
        assert await store.warm_turns(3, [APP], "w1") == 3
        for seen in await _each_connection(store, 3):
            assert seen >= TURN_FUNCTIONS
        assert await store.warm_turns(3, [APP], "w1") == 0  # the pool kept them: nothing to do again
    finally:
        await store.close()


async def test_the_warm_up_writes_nothing_and_notifies_no_one() -> None:
    url = pg_fresh_url()
    await _queued(url, 1)  # a request waiting: the warm-up's claim must not take it
    store = await open_store(url)
    listener = await asyncpg.connect(store._connect_args["dsn"])
    heard: list[str] = []
    try:
        for channel in ("hitl_events", "hitl_turns"):
            await listener.add_listener(channel, lambda *a: heard.append(a[-1]))

        async def counts() -> list[int]:
            async def fn(conn: Any) -> list[int]:
                return [int(await conn.fetchval(f"SELECT count(*) FROM {t}")) for t in TABLES]

            return await store._run(fn)

        before = await counts()
        [request] = await store.turn_requests()
        assert await store.warm_turns(2, [APP], "w1") == 2
        assert await counts() == before
        assert await store.turn_requests() == [request]  # not claimed
        # Notifications arrive in commit order: one the warm-up sent would come before this one.
        await listener.execute("SELECT pg_notify('hitl_events', 'sentinel')")
        for _ in range(500):
            if heard:
                break
            await asyncio.sleep(0.01)
        assert heard == ["sentinel"]
    finally:
        await listener.close()
        await store.close()


async def test_a_warmed_workers_first_turn_is_three_round_trips(monkeypatch: pytest.MonkeyPatch) -> None:
    """The first turn of a new worker process: its claim, first write and last write,
    one message each -- no prepare of the claim, no COPY of a write (and the server
    compiled the functions before, in the warm-up: the test above)."""
    url = pg_fresh_url()
    await _queued(url, 1)
    count = _PgCount(monkeypatch)
    store = await open_store(url)
    count.attach(store)
    empty = _count_empty_claims(store)
    claim = store.claim_and_read
    first = [True]

    async def claim_counted(*a: Any, **kw: Any) -> Any:
        if first[0]:  # the worker started (warm-up, heartbeat, sweep): count from its first claim
            first[0] = False
            count.sent, count.sql, empty[0] = 0, [], 0
        return await claim(*a, **kw)

    store.claim_and_read = claim_counted
    results: list[Any] = []
    at_result: list[tuple[int, int, list[str]]] = []  # what was sent when the turn ended (the drain comes after)

    def ended(result: Any) -> None:
        results.append(result)
        at_result.append((count.sent, empty[0], list(count.sql)))

    worker = Worker(store, {APP: SIMPLE}, concurrency=2, heartbeat=600, deadlines=False, on_result=ended)
    task = asyncio.ensure_future(worker.run())
    try:
        for _ in range(3000):
            if results or task.done():
                break
            await asyncio.sleep(0.01)
        assert [r.outcome for r in results] == ["ran"]
        for _ in range(100):  # the claims that find nothing more
            await asyncio.sleep(0.01)
            if not worker._running:
                break
        worker.stop()
        await task
        [(sent, empties, sql)] = at_result
        assert not [q for q in sql if q.lstrip().upper().startswith("COPY")]
        assert sent - empties == 3, sql
    finally:
        if not task.done():
            worker.stop()
            await task
        await store.close()


async def test_a_read_only_store_warms_nothing() -> None:
    url = pg_fresh_url()
    await (await open_store(url)).close()
    store = await open_store(url, read_only=True)
    try:
        assert await store.warm_turns(3, [APP], "w1") == 0
        assert not any(TURN_FUNCTIONS & seen for seen in await _each_connection(store, 1))
    finally:
        await store.close()
