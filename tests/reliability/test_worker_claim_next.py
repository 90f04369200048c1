"""A worker's next claim made by its turn's last write (PostgreSQL, a backlog).

The statement that settles a turn (its last events, the lease's release, the
request's finish) also claims the worker's next runnable request and reads it
(``Settle.claim_next``), so the next turn starts with no claim round trip. That
claim is an ordinary one -- ``claimed_by`` and an expiry -- and these tests hold
it to that: it never takes the request it finishes, a worker that never runs it
(killed right after the commit) leaves it to another worker once it expires,
and a draining worker hands it back at once. Counted, not timed: the round trips
are in tests/reliability/test_worker_turn_cost.py."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from engine import Runner
from engine.store import open_store
from engine.worker import Worker
from tests.contract.builders import pg_fresh_url
from tests.engine.test_turn_cost import SIMPLE
from tests.reliability.test_worker_turn_cost import _queued

APP = "one_node"
pytestmark = pytest.mark.postgres


async def _until(check: Any, what: str) -> None:
    for _ in range(1500):  # bounded: 15 s
        if await check():
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"never: {what}")


def _worker(store: Any, results: list[Any], **kw: Any) -> Worker:
    return Worker(store, {APP: SIMPLE}, concurrency=1, deadlines=False, on_result=results.append, **kw)


async def _ran(store: Any, sid: str) -> int:
    """How many times ``after`` (the node an answer's turn runs) started in ``sid``."""
    return sum(1 for e in await store.events(sid) if e.event.author == "after" and e.event.kind == "start")


async def test_each_turn_claims_the_next_with_its_last_write() -> None:
    url = pg_fresh_url()
    await _queued(url, 3)
    store = await open_store(url)
    claims: list[Any] = []
    results: list[Any] = []
    worker = _worker(store, results, heartbeat=600)
    own = store.claim_and_read

    async def counted(*a: Any, **kw: Any) -> Any:
        got = await own(*a, **kw)
        claims.append(got)
        return got

    store.claim_and_read = counted
    try:
        task = asyncio.ensure_future(worker.run())
        await _until(lambda: _done(results, 3), "three turns")
        worker.stop()
        await task
        assert [r.outcome for r in results] == ["ran"] * 3
        # one claim of its own for the first turn; the two after were claimed by the
        # last writes before them (then the claims that find nothing)
        assert len([c for c in claims if c is not None]) == 1
        assert [r.request.session_id for r in results] == ["s0", "s1", "s2"]  # oldest first, each once
        assert [await _ran(store, f"s{i}") for i in range(3)] == [1, 1, 1]
        assert await store.turn_requests() == []
    finally:
        await store.close()


async def _done(results: list[Any], n: int) -> bool:
    return len(results) >= n


async def test_a_request_claimed_by_a_last_write_and_never_run_goes_to_another_worker() -> None:
    """As a worker killed right after its last write committed: the request that
    write claimed is held by a claim nobody renews; it expires, another worker runs it."""
    url = pg_fresh_url()
    await _queued(url, 2)
    store = await open_store(url)
    results: list[Any] = []
    dead = _worker(store, results, heartbeat=600, lease_ttl=1.0)
    dropped: list[Any] = []
    dead._next = lambda req, reads: dropped.append(req)  # type: ignore[method-assign]  # killed: runs nothing more
    try:
        task = asyncio.ensure_future(dead.run())
        await _until(lambda: _done(results, 1), "the first turn")
        dead.stop()
        await task
        [req] = dropped
        assert req.session_id == "s1"
        [row] = await store.turn_requests()
        assert (row.session_id, row.claimed_by) == ("s1", dead.worker_id)  # claimed, never run
        assert await _ran(store, "s1") == 0

        results2: list[Any] = []
        other = _worker(store, results2, heartbeat=0.2)
        task = asyncio.ensure_future(other.run())
        await _until(lambda: _done(results2, 1), "the other worker's turn, once the claim expired")
        other.stop()
        await task
        assert [(r.request.session_id, r.outcome) for r in results2] == [("s1", "ran")]
        assert [await _ran(store, "s0"), await _ran(store, "s1")] == [1, 1]  # each turn once
        assert await store.turn_requests() == []
    finally:
        await store.close()


async def test_a_draining_worker_hands_back_what_its_last_write_claimed() -> None:
    url = pg_fresh_url()
    await _queued(url, 2)
    store = await open_store(url)
    results: list[Any] = []
    worker = _worker(store, results, heartbeat=600)
    next_claims: list[Any] = []
    start_next = worker._next

    def stop_first(result: Any) -> None:  # SIGTERM lands after the turn's last write committed
        results.append(result)
        worker.stop()

    def seen(req: Any, reads: Any) -> None:
        next_claims.append(req)
        start_next(req, reads)

    worker.on_result = stop_first
    worker._next = seen  # type: ignore[method-assign]
    try:
        await worker.run()
        assert [r.request.session_id for r in results] == ["s0"]
        assert [r.session_id for r in next_claims] == ["s1"]  # it was claimed with the last write ...
        [row] = await store.turn_requests()
        assert (row.session_id, row.claimed_by, row.held) == ("s1", None, None)  # ... and handed back, runnable
        assert await _ran(store, "s1") == 0
    finally:
        await store.close()


async def test_the_last_write_never_claims_the_request_it_finishes() -> None:
    """Even when that request's own claim ran out during the turn (it then reads as
    claimable to the statement that finishes it): the claim takes the next one."""
    from engine.store.workers import ClaimNext, Settle

    url = pg_fresh_url()
    await _queued(url, 2)
    store = await open_store(url)
    try:
        claimed = await store.claim_and_read([APP], "w1", -5.0)  # claimed, already expired
        assert claimed is not None
        req, reads = claimed
        assert req.session_id == "s0"
        settle = Settle("w1", req.requested_at, claim_next=ClaimNext([APP], "w1", 30.0))
        turn = Runner(APP, SIMPLE, store).run(
            "", "s0", None, req.invocation_id, operator="w1", reason="test", only_mid_run=True, settle=settle,
            reads=reads,
        )
        async for _ in turn:
            pass
        assert settle.deleted is True  # s0's request finished ...
        assert settle.claimed is not None
        nxt, nxt_reads = settle.claimed
        assert (nxt.session_id, nxt.claimed_by) == ("s1", "w1")  # ... and s1 claimed, with its reads
        assert nxt_reads is not None and nxt_reads.loaded.events
        [row] = await store.turn_requests()
        assert (row.session_id, row.claimed_by) == ("s1", "w1")
    finally:
        await store.close()


async def _live_empty_claims(url: str, n: int, prefix: str) -> list[int]:
    """Claims that found nothing while one worker (concurrency 2: room for another
    turn while one runs) served ``n`` answers given one after another, each once the
    one before settled: the count so far as each turn settled."""
    from engine import handoff
    from engine.models import Content

    store = await open_store(url)
    answers = await open_store(url)
    empty = [0]
    own = store.claim_and_read

    async def counted(*a: Any, **kw: Any) -> Any:
        got = await own(*a, **kw)
        empty[0] += got is None
        return got

    store.claim_and_read = counted
    results: list[Any] = []
    settled: list[int] = []
    worker = Worker(store, {APP: SIMPLE}, concurrency=2, heartbeat=600, deadlines=False, on_result=results.append)
    try:
        sids = [f"{prefix}{i}" for i in range(n)]
        for sid in sids:
            async for _ in Runner(APP, SIMPLE, answers).run("u", sid, Content.from_text("x")):
                pass
        task = asyncio.ensure_future(worker.run())
        await _until(lambda: _leads(worker), "the worker listening")
        for k, sid in enumerate(sids, 1):
            [row] = (await answers.open_interrupts(session_id=sid, limit=10)).items
            done = await handoff.queue_answer(answers, sid, {row.interrupt_id: "yes"})
            assert done.error is None, done.error
            await _until(lambda k=k: _idle(worker, results, k), "the turn settled and the worker idle")
            settled.append(empty[0])
        worker.stop()
        await task
        assert [r.outcome for r in results] == ["ran"] * n
        return settled
    finally:
        await answers.close()
        await store.close()


async def _leads(worker: Worker) -> bool:
    return bool(worker._waker is not None and worker._waker.leader)


async def _idle(worker: Worker, results: list[Any], k: int) -> bool:
    return len(results) >= k and not worker._running and await _leads(worker)


async def test_a_live_turn_claims_nothing_after_its_last_write_found_nothing() -> None:
    """Answers given one at a time: a turn's last write claims and finds nothing, so
    the worker does not look again when the turn ends. What is left is the look for
    a second request right after claiming the first (room for two): one a turn."""
    settled = await _live_empty_claims(pg_fresh_url(), 3, "b")
    # counted from the first turn's end: how many empty claims the worker's start made
    # races with the first answer (its first fill, and the wake-up of becoming the leader)
    assert (settled[2] - settled[0]) / 2 == 1  # two before: that look, and another when the turn ended
