"""A worker's claim on PostgreSQL reads what the turn's Runner would read next
(``claim_and_read``: the session's user, the invocation's snapshot and events
after it, its lease row), in the claim's statement. The reads are those of the
separate calls they replace, and they are only a head start: a turn whose claim
read went stale (another process continued the invocation in between) writes
nothing and settles the request, as a turn that read late would."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from engine import Runner, handoff
from engine.models import Content
from engine.store import open_store
from engine.store.base import snapshot_and_events
from engine.worker import Worker
from tests.contract.builders import pg_fresh_url
from tests.engine.test_turn_cost import SIMPLE

APP = "one_node"
pytestmark = pytest.mark.postgres


async def _answered(store: Any, sid: str) -> str:
    """A session waiting on ``ask``, answered and left to a worker; its invocation id."""
    async for _ in Runner(APP, SIMPLE, store).run("ann", sid, Content.from_text("x")):
        pass
    [row] = (await store.open_interrupts(session_id=sid, limit=10)).items
    done = await handoff.queue_answer(store, sid, {row.interrupt_id: "yes"})
    assert done.error is None, done.error
    return str(row.invocation_id)


async def test_the_claim_reads_what_the_runner_would_read() -> None:
    store = await open_store(pg_fresh_url())
    try:
        inv = await _answered(store, "s1")
        claimed = await store.claim_and_read([APP], "w1", 30.0, versions={APP: "v1"})
        assert claimed is not None
        req, reads = claimed
        assert (req.session_id, req.invocation_id, req.kind, req.claimed_by, req.graph) == ("s1", inv, "continue", "w1", "v1")
        assert reads is not None
        assert reads.user_id == "ann" == (await store.get_session("s1")).user_id
        snap, events = await snapshot_and_events(store, "s1", inv)
        assert reads.loaded.invocation_id == inv
        assert reads.loaded.snapshot == snap
        assert [(e.seq, e.event.model_dump()) for e in reads.loaded.events] == [(e.seq, e.event.model_dump()) for e in events]
        assert events  # the answer, at least: there is something to compare
        assert reads.lease is None  # the answer released the lease it took
        assert await store.claim_and_read([APP], "w2", 30.0) is None  # claimed: nothing left for another
    finally:
        await store.close()


async def test_the_claim_reads_a_live_lease() -> None:
    store = await open_store(pg_fresh_url())
    try:
        inv = await _answered(store, "s1")
        held = await store.acquire_lease("s1", inv, "someone", 60.0)
        claimed = await store.claim_and_read([APP], "w1", 30.0)
        assert claimed is not None and claimed[1] is not None
        lease = claimed[1].lease
        assert lease is not None
        assert (lease.owner, lease.expires_at) == ("someone", held.expires_at)
    finally:
        await store.close()


async def test_a_turn_whose_claim_read_went_stale_writes_nothing() -> None:
    url = pg_fresh_url()
    store, other = await open_store(url), await open_store(url)
    try:
        inv = await _answered(store, "s1")
        claim = store.claim_and_read
        ran_elsewhere: list[Any] = []

        async def claim_then_continued_elsewhere(*a: Any, **kw: Any) -> Any:
            got = await claim(*a, **kw)
            if got is not None:  # after the claim read it: another process runs the turn
                async for _ in Runner(APP, SIMPLE, other).run("", "s1", None, inv, only_mid_run=True):
                    pass
                ran_elsewhere.extend(await other.invocation_events("s1", inv))
            return got

        store.claim_and_read = claim_then_continued_elsewhere
        results: list[Any] = []
        worker = Worker(store, {APP: SIMPLE}, concurrency=1, heartbeat=600, deadlines=False, on_result=results.append)
        task = asyncio.ensure_future(worker.run())
        for _ in range(3000):
            if results or task.done():
                break
            await asyncio.sleep(0.01)
        worker.stop()
        await task
        assert [r.outcome for r in results] == ["settled"], results
        assert ran_elsewhere
        assert await other.invocation_events("s1", inv) == ran_elsewhere  # the worker wrote nothing
        assert await other.turn_requests() == []  # and finished the request
    finally:
        await store.close()
        await other.close()


@pytest.mark.parametrize("with_reads", [False, True])
async def test_a_claim_planned_on_an_empty_queue_claims_one_request_of_a_backlog(with_reads: bool) -> None:
    """The claim is prepared once per connection and its plan kept: planned when
    the queue was empty (a vacuumed table of no pages), a plan that rescanned a
    joined ``LIMIT 1 ... SKIP LOCKED`` pick for every row of the table claimed the
    whole backlog at once (or failed on its one-row reads). One request a claim."""
    from engine.store.workers import TurnRequest

    store = await open_store(pg_fresh_url(), max_size=1)  # one connection: the plan it keeps is the one used
    try:
        assert store._pool is not None
        async with store._pool.acquire() as conn:
            await conn.execute("SET plan_cache_mode = force_generic_plan")  # the plan a connection keeps after 5 runs
            await conn.execute(
                "INSERT INTO turn_requests (app_name, session_id, invocation_id, kind, payload, requested_at)"
                " VALUES ('a', 'gone', 'i', 'continue', '{}', 0)"
            )
            await conn.execute("DELETE FROM turn_requests")
            await conn.execute("VACUUM turn_requests")  # empty, no pages: what a drained queue looks like
        claim = store.claim_and_read if with_reads else store.claim_next_turn
        assert await claim(["a"], "w1", 30.0, versions={"a": "v"}) is None  # planned now, on the empty queue
        for i in range(5):
            await store.request_turn(
                TurnRequest(app_name="a", session_id=f"s{i}", invocation_id="i", kind="continue", requested_at=float(i))
            )
        got = await claim(["a"], "w1", 30.0, versions={"a": "v"})
        assert got is not None
        req = got[0] if with_reads else got
        assert req.session_id == "s0"  # the oldest
        claimed = [r.session_id for r in await store.turn_requests() if r.claimed_by == "w1"]
        assert claimed == ["s0"]
    finally:
        await store.close()
