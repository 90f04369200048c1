"""What one worker turn costs the store, counted (times are in
``benchmarks/bench_workers.py``): the answers to ``prep -> ask -> after`` (one
node runs per turn) are queued first, then one worker serves them; the cost of
a turn is the difference between serving three and serving one, so the
worker's start and stop cancel out.

Per turn: the claim (which records the graph version and, on PostgreSQL,
reads what the turn's Runner needs: the session's user, the invocation, its
lease), the turn's first write (lease, first events, the node's start) and its
last write (end records, snapshot, the lease's release and the request's
finish) -- three write transactions, nothing else written. On PostgreSQL, with
a backlog, the last write also makes the worker's next claim, in its statement:
two per turn."""

from __future__ import annotations

import asyncio
import asyncio.selector_events
from pathlib import Path
from typing import Any

import pytest

from engine import Runner, handoff
from engine.models import Content
from engine.store import open_store
from engine.worker import Worker
from tests.contract.builders import pg_fresh_url
from tests.engine.test_turn_cost import SIMPLE

APP = "one_node"
WRITES = ("INSERT ", "UPDATE ", "DELETE ", "hitl_")
"""What a statement that writes holds (the turn's writes are SQL functions ``hitl_...``)."""


async def _queued(url: str, n: int, prefix: str = "s") -> None:
    """``n`` sessions waiting on ``ask``, each answered and left to a worker."""
    store = await open_store(url)
    try:
        runner = Runner(APP, SIMPLE, store)
        for i in range(n):
            async for _ in runner.run("u", f"{prefix}{i}", Content.from_text(f"x{i}")):
                pass
        for row in (await store.open_interrupts(limit=100)).items:
            done = await handoff.queue_answer(store, row.session_id, {row.interrupt_id: "yes"})
            assert done.error is None, done.error
    finally:
        await store.close()


def _count_empty_claims(store: Any) -> list[int]:
    """``[n]``: the claims that found nothing (a wake-up with nothing to claim: one
    statement each, whether it comes is a matter of timing, so it is not counted)."""
    empty = [0]
    for name in ("claim_next_turn", "claim_and_read"):  # whichever the worker claims with
        if hasattr(store, name):
            setattr(store, name, _counted(getattr(store, name), empty))
    return empty


def _counted(claim: Any, empty: list[int]) -> Any:
    async def counted(*a: Any, **kw: Any) -> Any:
        got = await claim(*a, **kw)
        empty[0] += got is None
        return got

    return counted


async def _serve(store: Any, n: int) -> None:
    results: list[Any] = []
    worker = Worker(store, {APP: SIMPLE}, concurrency=1, heartbeat=600, deadlines=False, on_result=results.append)
    task = asyncio.ensure_future(worker.run())
    for _ in range(3000):
        if len(results) == n or task.done():
            break
        await asyncio.sleep(0.01)
    assert [r.outcome for r in results] == ["ran"] * n
    for _ in range(100):  # the claim that finds nothing more, then the wait
        await asyncio.sleep(0.01)
        if worker._waker is not None and not worker._running:
            break
    worker.stop()
    await task
    store_left = await store.turn_requests()  # type: ignore[attr-defined]
    assert store_left == []


def _transactions(sql: list[str]) -> list[list[str]]:
    """The statements grouped by transaction (a statement outside BEGIN..COMMIT is one)."""
    out: list[list[str]] = []
    current: list[str] | None = None
    for s in sql:
        head = s.lstrip().upper()
        if head.startswith("BEGIN"):
            current = []
        elif head.startswith(("COMMIT", "ROLLBACK")):
            if current is not None:
                out.append(current)
            current = None
        elif current is not None:
            current.append(s)
        else:
            out.append([s])
    return out


def _writes(sql: list[str]) -> int:
    return sum(
        1 for tx in _transactions(sql) if any(w in s for s in tx for w in WRITES)
    )


# ------------------------------------------------------------------ PostgreSQL
class _PgCount:
    """Statements the worker's store ran, and messages it sent on them (round trips)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.sql: list[str] = []
        self.sent = 0
        self.conns: set[int] = set()
        transport = asyncio.selector_events._SelectorSocketTransport  # type: ignore[attr-defined]
        write = transport.write
        counter = self

        def counting(self: Any, data: Any) -> None:
            if id(self) in counter.conns:
                counter.sent += 1
            write(self, data)

        monkeypatch.setattr(transport, "write", counting)

    def attach(self, store: Any) -> None:
        run = store._run

        async def traced(fn: Any, **kw: Any) -> Any:
            async def logged(conn: Any) -> Any:
                raw = getattr(conn, "_con", None) or conn
                self.conns.add(id(raw._transport))
                seen = lambda q: self.sql.append(q.query)  # noqa: E731
                conn.add_query_logger(seen)
                try:
                    return await fn(conn)
                finally:
                    await asyncio.sleep(0)  # asyncpg calls query loggers with call_soon
                    conn.remove_query_logger(seen)

            return await run(logged, **kw)

        store._run = traced


@pytest.mark.postgres
async def test_a_worker_turn_of_a_backlog_on_postgresql_is_two_write_transactions(monkeypatch: pytest.MonkeyPatch) -> None:
    url = pg_fresh_url()
    count = _PgCount(monkeypatch)
    store = await open_store(url, max_size=1)  # one connection: it has prepared the turn's statements after two turns
    count.attach(store)
    empty = _count_empty_claims(store)
    try:
        await _queued(url, 2, "warm")
        await _serve(store, 2)
        costs = []
        for n in (1, 3):
            await _queued(url, n, f"n{n}-")
            count.sent, count.sql, empty[0] = 0, [], 0
            await _serve(store, n)
            costs.append((count.sent - empty[0], len(count.sql) - empty[0], _writes(count.sql) - empty[0]))
    finally:
        await store.close()
    sent, statements, writes = ((b - a) / 2 for a, b in zip(*costs, strict=True))
    # first write, last write (+ the request's finish, + the next request's claim,
    # graph version and reads: the first turn's claim is its own, the same for 1 and 3)
    assert writes == 2
    # The invocation's reads (the session's user, its log, its lease) come with the
    # claim, in its statement: nothing is read between the claim and the first write.
    assert statements == 2
    assert sent == 2  # one round trip each


# ------------------------------------------------------------------ SQLite
async def _sqlite_cost(tmp_path: Path, n: int) -> list[str]:
    """The statements a worker ran serving ``n`` answers (PRAGMAs and the reads of
    claims that found nothing left out)."""
    path = str(tmp_path / f"cost{n}.sqlite")
    await _queued(path, n)
    store = await open_store(path, inline=True)  # on this thread: its statements can be traced
    sql: list[str] = []
    store._driver._raw.set_trace_callback(sql.append)  # type: ignore[attr-defined]
    empty = _count_empty_claims(store)
    try:
        await _serve(store, n)
    finally:
        await store.close()
    sql = [s for s in sql if not s.lstrip().upper().startswith("PRAGMA")]
    for _ in range(empty[0]):  # a claim that finds nothing is one read (of the runnable requests)
        sql.remove(next(s for s in reversed(sql) if s.startswith("SELECT app_name, session_id") and "held IS NULL" in s))
    return sql


async def test_a_worker_turn_on_sqlite_is_three_commits(tmp_path: Path) -> None:
    one = await _sqlite_cost(tmp_path, 1)
    three = await _sqlite_cost(tmp_path, 3)

    def count(sql: list[str], *heads: str) -> int:
        return sum(1 for s in sql if s.lstrip().upper().startswith(heads))

    assert (count(three, "COMMIT") - count(one, "COMMIT")) / 2 == 3  # claim, first write, last write (+ finish)
    assert (len(three) - len(one)) / 2 == 28  # statements, BEGIN and COMMIT included
    assert not [s for s in three if "SELECT graph" in s]  # recorded by the claim: nothing read back


@pytest.mark.postgres
async def test_a_new_connections_first_claim_asks_nothing_about_types(monkeypatch: pytest.MonkeyPatch) -> None:
    """A worker's claim on a connection that has not run it: prepared and run, two
    round trips -- no look-up of a parameter's type (asyncpg has no built-in codec
    for ``double precision[]``: a look-up is three more round trips and a catalog
    query on every connection of every worker, each paid again at every start)."""
    url = pg_fresh_url()
    await _queued(url, 1)
    count = _PgCount(monkeypatch)
    store = await open_store(url, max_size=1)
    count.attach(store)
    try:
        count.sent, count.sql = 0, []
        got = await store.claim_and_read([APP], "w1", 30.0, skip={("other", "inv", 1234.5)}, versions={APP: "v"})
        assert got is not None
        assert count.sql and not [q for q in count.sql if "typeinfo" in q or "set_config" in q]
        assert count.sent == 2
    finally:
        await store.close()
