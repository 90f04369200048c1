"""A worker pool on PostgreSQL wakes one idle worker per request, not all of
them (engine/store/postgres/listen.py, Listener.lead): the one that leads the
pool hears the request and claims it; the others make no claim. A leader with
no free slot hands the lead on, and a leader that goes away loses it."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from engine import handoff
from engine.store import open_store
from engine.worker import Worker, pool_key
from tests.contract.builders import pg_fresh_url
from tests.reliability import crash_app
from tests.reliability.test_workers import _make_sessions
from tests.reliability.worker_procs import APPROVE

APP = crash_app.APP
pytestmark = pytest.mark.postgres


async def until(pred: Callable[[], bool], what: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not pred():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for: {what}")
        await asyncio.sleep(0.02)


class Pool:
    """``n`` workers, each on its own store, counting their claim calls."""

    def __init__(self, url: str, n: int, **kw: Any) -> None:
        self.url, self.n, self.kw = url, n, kw
        self.claims: list[int] = [0] * n
        self.results: list[list[Any]] = [[] for _ in range(n)]

    async def __aenter__(self) -> Pool:
        self.stores = [await open_store(self.url) for _ in range(self.n)]
        self.workers = []
        for i, store in enumerate(self.stores):
            self._count(store, i)
            self.workers.append(
                Worker(store, {APP: crash_app.workflow}, heartbeat=3600.0, on_result=self.results[i].append, **self.kw)
            )
        self.tasks = [asyncio.ensure_future(w.run()) for w in self.workers]
        await until(lambda: self.leaders() == 1, "one leader of the pool")
        await until(lambda: all(c >= 1 for c in self.claims), "every worker's first look at the queue")
        return self

    def _count(self, store: Any, i: int) -> None:
        for name in ("claim_next_turn", "claim_and_read"):  # whichever the worker claims with
            if hasattr(store, name):
                setattr(store, name, self._counted(getattr(store, name), i))

    def _counted(self, claim: Callable[..., Awaitable[Any]], i: int) -> Callable[..., Awaitable[Any]]:
        async def counted(*a: Any, **kw: Any) -> Any:
            self.claims[i] += 1
            return await claim(*a, **kw)

        return counted

    def listeners(self) -> list[Any]:
        return [w._waker._listener if w._waker is not None else None for w in self.workers]

    def leaders(self) -> int:
        return sum(1 for li in self.listeners() if li is not None and li.leader)

    async def __aexit__(self, *exc: object) -> None:
        for w in self.workers:
            w.stop()
        await asyncio.gather(*self.tasks)
        for s in self.stores:
            await s.close()


async def test_a_request_wakes_one_idle_worker_and_no_other_claims() -> None:
    url = pg_fresh_url()
    invs = await _make_sessions(url, 3)
    async with Pool(url, 4) as pool:
        queue = await open_store(url)
        try:
            for sid, inv in invs.items():
                await until(lambda: pool.leaders() == 1, "a leader")
                pool.claims = [0] * pool.n
                assert (await handoff.queue_answer(queue, sid, APPROVE, operator="ann")).error is None
                assert await handoff.follow(queue, sid, inv, timeout=60) == "settled"
                await until(lambda: sum(len(r) for r in pool.results) >= 1, "the turn's result")
                ran = [i for i, r in enumerate(pool.results) if r]
                assert len(ran) == 1, pool.results
                idle = [pool.claims[i] for i in range(pool.n) if i not in ran]
                assert idle == [0] * (pool.n - 1), (sid, pool.claims, [li.terms for li in pool.listeners()], ran)  # nobody else was woken to claim
                pool.results[ran[0]].clear()
        finally:
            await queue.close()


async def answer_all_and_settle(url: str, invs: dict[str, str]) -> None:
    """Answer every session's interrupt (left to the pool), then follow each turn until it settles."""
    queue = await open_store(url)
    try:
        for sid in invs:
            assert (await handoff.queue_answer(queue, sid, APPROVE, operator="ann")).error is None
        for sid, inv in invs.items():
            assert await handoff.follow(queue, sid, inv, timeout=60) == "settled"
    finally:
        await queue.close()


async def test_a_full_leader_hands_the_lead_on_and_a_gone_one_loses_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HITL_CRASH_DELAY", "1.5")  # turns that last, so the first worker is busy when the second request comes
    url = pg_fresh_url()
    invs = await _make_sessions(url, 2)
    async with Pool(url, 2, concurrency=1) as pool:
        first = next(i for i, li in enumerate(pool.listeners()) if li.leader)
        await answer_all_and_settle(url, invs)
        await until(lambda: sum(len(r) for r in pool.results) == 2, "both results")
        assert [len(r) for r in pool.results] == [1, 1]  # the busy leader handed the second one on
        other = 1 - first
        await until(lambda: pool.leaders() == 1, "a leader again")
        leader = next(i for i, li in enumerate(pool.listeners()) if li.leader)
        terms = pool.listeners()[1 - leader].terms
        await pool.listeners()[leader].close()  # the leader goes away: its connection, and the lock with it
        await until(lambda: pool.listeners()[1 - leader].leader, "the other worker leads")
        assert pool.listeners()[1 - leader].terms == terms + 1
        assert other in (0, 1)


def test_workers_of_different_app_sets_have_different_pools() -> None:
    assert pool_key(["a", "b"]) == pool_key(["b", "a"])
    assert pool_key(["a"]) != pool_key(["a", "b"])
    assert -(2**63) <= pool_key(["a"]) < 2**63
