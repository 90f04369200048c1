"""A worker pool on one SQLite file wakes one idle worker per request, not all
of them (engine/waker.py, FileLead): only the idle worker that holds the pool's
lock file polls the store's change counter; the others neither poll nor claim
when a request comes. A leader with no free slot hands the lead on, and one
that goes away (its waker closed, or its process dead) lets another take it."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from engine import handoff
from engine.store import open_store
from tests.reliability.test_worker_pool_lead import Pool, answer_all_and_settle, until
from tests.reliability.test_workers import _make_sessions
from tests.reliability.worker_procs import APPROVE


class SQLitePool(Pool):
    """``Pool`` on a SQLite file, also counting each worker's change-counter polls."""

    polls: list[int]

    def _count(self, store: Any, i: int) -> None:
        super()._count(store, i)
        if not hasattr(self, "polls"):
            self.polls = [0] * self.n
        poll: Callable[..., Awaitable[Any]] = store.change_counter

        async def counted() -> Any:
            self.polls[i] += 1
            return await poll()

        store.change_counter = counted

    def listeners(self) -> list[Any]:
        return [w._waker._lead if w._waker is not None else None for w in self.workers]

    def leaders(self) -> int:
        return sum(1 for w in self.workers if w._waker is not None and w._waker.leader)


async def test_a_request_wakes_one_idle_worker_and_the_others_neither_poll_nor_claim(tmp_path: Path) -> None:
    url = str(tmp_path / "pool.sqlite")
    invs = await _make_sessions(url, 3)
    async with SQLitePool(url, 4) as pool:
        queue = await open_store(url)
        try:
            for sid, inv in invs.items():
                await until(lambda: pool.leaders() == 1, "a leader")
                leader = next(i for i, w in enumerate(pool.workers) if w._waker is not None and w._waker.leader)
                pool.claims = [0] * pool.n
                pool.polls = [0] * pool.n
                assert (await handoff.queue_answer(queue, sid, APPROVE, operator="ann")).error is None
                assert await handoff.follow(queue, sid, inv, timeout=60) == "settled"
                await until(lambda: sum(len(r) for r in pool.results) >= 1, "the turn's result")
                ran = [i for i, r in enumerate(pool.results) if r]
                assert ran == [leader], (pool.results, leader)
                others = [i for i in range(pool.n) if i != leader]
                assert [pool.claims[i] for i in others] == [0] * (pool.n - 1), pool.claims  # nobody else claimed
                assert [pool.polls[i] for i in others] == [0] * (pool.n - 1), pool.polls  # nor read the store
                pool.results[leader].clear()
        finally:
            await queue.close()


async def test_a_full_leader_hands_the_lead_on_and_a_gone_one_lets_it_go(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HITL_CRASH_DELAY", "0.5")  # turns that last, so the first worker is busy when the second request comes
    url = str(tmp_path / "pool.sqlite")
    invs = await _make_sessions(url, 2)
    async with SQLitePool(url, 2, concurrency=1) as pool:
        await answer_all_and_settle(url, invs)
        await until(lambda: sum(len(r) for r in pool.results) == 2, "both results")
        assert [len(r) for r in pool.results] == [1, 1]  # the busy leader handed the second one on
        await until(lambda: pool.leaders() == 1, "a leader again")
        leader = next(i for i, w in enumerate(pool.workers) if w._waker is not None and w._waker.leader)
        other = pool.listeners()[1 - leader]
        terms = other.terms
        pool.listeners()[leader].close()  # the leader goes away: the kernel lets its lock go
        await until(lambda: other.held, "the other worker leads")
        assert other.terms == terms + 1


def test_pools_on_different_files_or_app_sets_have_different_lock_files(tmp_path: Path) -> None:
    from engine.waker import FileLead

    a, b = FileLead(str(tmp_path / "a.sqlite"), 1), FileLead(str(tmp_path / "b.sqlite"), 1)
    c, d = FileLead(str(tmp_path / "a.sqlite"), 2), FileLead(str(tmp_path / "." / "a.sqlite"), 1)
    try:
        assert len({a.path, b.path, c.path}) == 3 and d.path == a.path
        assert a.try_take() and not d.try_take()  # one lead per file and pool, across open files
        a.resign()
        assert d.try_take() and a.terms == d.terms == 1
    finally:
        for lead in (a, b, c, d):
            lead.close()
