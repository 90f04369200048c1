"""The worker side of issue 18, against SQLite and PostgreSQL:

* a turn run *in-process* (its own Runner, no turn request) that is SIGKILLed
  mid-run is adopted by the live workers of its app: continued exactly once
  when no node is in doubt; with a node in doubt, not run but held (the reason
  names the paths) until an operator's acknowledged re-drive; never while the
  process that runs it is alive;
* an answer left to a worker is one transaction (answer, request, lease);
* workers claim the next runnable request in one store call, each request
  once however many claim at once; a request asked again while its turn ran is
  handed back at once, not left claimed until the claim expires.
"""

from __future__ import annotations

import asyncio
import os
import signal
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from engine import handoff
from engine.liveness import invocation_health
from engine.models import NodeStatus
from engine.resume import load_invocation
from engine.store import open_store
from engine.store.workers import TurnRequest
from engine.worker import Waker, Worker
from tests.reliability import crash_app, test_workers
from tests.reliability.test_workers import _make_sessions, _reference, one_session, wait_for
from tests.reliability.worker_procs import APPROVE
from tests.reliability.workers import context, crash_child

APP = crash_app.APP
db = test_workers.db  # the fixture: a SQLite file, a fresh PostgreSQL schema


def in_process_turn(db: str, tmp_path: Path, sid: str, **kill: Any) -> Any:
    """Start a child that answers ``sid`` with its own Runner (the in-process
    resume: no turn request), with a kill point (``kill_after_first_write``,
    ``kill_at_effect``, ``pause_at_effect``). Returns the process."""
    spec = {
        "db": db, "session": sid, "effects": str(tmp_path / "effects"), "acks": str(tmp_path / f"acks-{sid}"),
        "turns": [{"kind": "answer", "answers": APPROVE}], **kill,
    }
    proc = context().Process(target=crash_child, args=(spec,), daemon=True)
    proc.start()
    return proc


async def run_workers(db: str, n: int, until: Callable[[Any], Any]) -> list[Any]:
    """Run ``n`` workers (each on its own store) until ``await until(store)`` is
    truthy; returns their results."""
    stores = [await open_store(db) for _ in range(n + 1)]
    results: list[Any] = []
    workers = [Worker(s, {APP: crash_app.workflow}, heartbeat=0.2, on_result=results.append) for s in stores[1:]]
    tasks = [asyncio.ensure_future(w.run()) for w in workers]
    try:
        deadline = time.monotonic() + 60
        while not await until(stores[0]):
            assert time.monotonic() < deadline, "timed out waiting for the workers"
            assert not any(t.done() for t in tasks), [t.exception() for t in tasks if t.done()]
            await asyncio.sleep(0.05)
    finally:
        for w in workers:
            w.stop()
        await asyncio.gather(*tasks)
        for s in stores:
            await s.close()
    return results


@pytest.fixture
def effects_env(tmp_path: Path) -> Any:
    os.environ["HITL_CRASH_EFFECTS"] = str(tmp_path / "effects")
    yield tmp_path / "effects"
    os.environ.pop("HITL_CRASH_EFFECTS", None)


# ----------------------------------------------------------------- adoption
def test_a_killed_in_process_turn_with_nothing_in_doubt_is_continued_by_one_worker(
    db: str, tmp_path: Path, effects_env: Path
) -> None:
    sid, inv = one_session(db)
    proc = in_process_turn(db, tmp_path, sid, kill_after_first_write=True)  # dies right after its first commit
    proc.join(60)
    assert proc.exitcode == -signal.SIGKILL

    async def before() -> None:
        store = await open_store(db)
        try:
            health = await invocation_health(store, sid, inv)
            assert health.interrupted and health.in_doubt == ()  # the answer and the root's start, nothing else
            assert await store.get_turn_request(sid, inv) is None  # nothing asked a worker for it
        finally:
            await store.close()

    asyncio.run(before())

    async def settled(store: Any) -> bool:
        proj = await load_invocation(store, sid, inv)
        return proj.invocation_status(inv) is NodeStatus.COMPLETED and await store.get_turn_request(sid, inv) is None

    results = asyncio.run(run_workers(db, 3, settled))
    assert [r.outcome for r in results] == ["ran"]  # three workers, one ran it

    async def after() -> dict[str, Any]:
        store = await open_store(db, read_only=True)
        try:
            events = await store.events(sid)
            proj = await load_invocation(store, sid, inv)
            redrives = [e.event.custom_metadata or {} for e in events if e.event.kind == "redrive"]
            return {
                "seqs": [e.seq for e in events], "redrives": redrives,
                "outputs": {r.path: r.output for r in proj.runs(inv)},
            }
        finally:
            await store.close()

    got = asyncio.run(after())
    assert got["seqs"] == list(range(1, len(got["seqs"]) + 1))
    assert len(got["redrives"]) == 1 and "interrupted mid-run" in got["redrives"][0]["reason"], got["redrives"]
    assert not got["redrives"][0].get("in_doubt")
    assert got["outputs"] == asyncio.run(_reference(1))[sid]
    effects = crash_app.read_effects(effects_env)
    assert len(effects) == 5 and set(effects.values()) == {1}, effects  # every side effect once


def test_a_killed_in_process_turn_in_doubt_is_held_not_run_until_acknowledged(
    db: str, tmp_path: Path, effects_env: Path
) -> None:
    sid, inv = one_session(db)
    proc = in_process_turn(db, tmp_path, sid, pause_at_effect="pay")  # pay did its effect, then sleeps
    try:
        wait_for(lambda: "pay" in crash_app.read_effects(effects_env).__repr__(), "pay did its side effect")

        async def sweep() -> TurnRequest | None:
            store = await open_store(db)
            try:
                await Worker(store, {APP: crash_app.workflow})._sweep()
                return await store.get_turn_request(sid, inv)
            finally:
                await store.close()

        assert asyncio.run(sweep()) is None  # its process is alive: its lease is live, nobody adopts it
    finally:
        proc.kill()  # Process.kill: no error if it has just exited and been reaped
        proc.join(30)
    assert asyncio.run(sweep()) is not None  # dead now: adopted (a continue request)

    async def held(store: Any) -> bool:
        req = await store.get_turn_request(sid, inv)
        return req is not None and req.held is not None

    results = asyncio.run(run_workers(db, 2, held))
    assert [r.outcome for r in results] == ["held"]

    async def check_held() -> None:
        store = await open_store(db)
        try:
            req = await store.get_turn_request(sid, inv)
            assert req is not None and req.claimed_by is None
            assert "in doubt" in req.held and "pay@1" in req.held, req.held
            assert await handoff.follow(store, sid, inv, timeout=5) == req.held  # what a follower is told
            health = await invocation_health(store, sid, inv)
            assert health.interrupted and [p.rsplit("/", 1)[-1] for p in health.in_doubt] == ["pay@1"]
            await handoff.request_redrive(store, sid, inv, acknowledge_in_doubt=True, operator="op")
        finally:
            await store.close()

    asyncio.run(check_held())
    assert crash_app.read_effects(effects_env) == {p: 1 for p in crash_app.read_effects(effects_env)}  # nothing re-ran

    async def completed(store: Any) -> bool:
        proj = await load_invocation(store, sid, inv)
        return proj.invocation_status(inv) is NodeStatus.COMPLETED and await store.get_turn_request(sid, inv) is None

    assert [r.outcome for r in asyncio.run(run_workers(db, 2, completed))] == ["ran"]
    effects = crash_app.read_effects(effects_env)
    pay = [p for p in effects if p.endswith("/pay@1")]
    assert len(effects) == 5 and [effects[p] for p in pay] == [2], effects  # only the acknowledged one twice
    assert all(n == 1 for p, n in effects.items() if p not in pay), effects


def test_a_held_request_goes_once_its_invocation_was_redriven_elsewhere(db: str, tmp_path: Path) -> None:
    sid, inv = one_session(db)

    async def body() -> None:
        store = await open_store(db)
        try:
            request = TurnRequest(app_name=APP, session_id=sid, invocation_id=inv, kind="continue", requested_at=1.0)
            assert await store.adopt_turn(request)
            assert not await store.adopt_turn(request.model_copy(update={"requested_at": 2.0}))  # never replaced
            worker = Worker(store, {APP: crash_app.workflow})
            assert await store.claim_next_turn([APP], worker.worker_id, 30.0) is not None
            await store.unclaim_turn_request(sid, inv, worker.worker_id, held="nodes in doubt (x): waiting")
            await worker._sweep()  # the invocation is WAITING (not mid-run): nothing to wait for
            assert await store.get_turn_request(sid, inv) is None
        finally:
            await store.close()

    asyncio.run(body())


# ----------------------------------------------------------------- one transaction
async def test_an_answer_left_to_a_worker_is_one_transaction(tmp_path: Path) -> None:
    from engine.store.sqlite import SQLiteStore
    from tests.engine.test_turn_cost import Traced

    url = str(tmp_path / "one.sqlite")
    invs = await _make_sessions(url, 1)
    sid, inv = next(iter(invs.items()))
    store = await SQLiteStore.open(Path(url), inline=True)
    try:
        with Traced(store) as t:
            done = await handoff.queue_answer(store, sid, APPROVE, operator="op")
        assert done.error is None and [e.kind for e in done.written] == ["response", "end", "end"]
        # the lease, the answer and its completion records, the request, the release:
        # one commit (was four: lease, request, answer, release)
        assert t.commits == 1, t.sql
        assert await store.get_lease(sid, inv) is None
        req = await store.get_turn_request(sid, inv)
        assert req is not None and req.kind == "continue" and req.claimed_by is None
    finally:
        await store.close()


def test_an_answer_waits_for_a_held_lease_and_is_still_one_write(db: str, tmp_path: Path) -> None:
    sid, inv = one_session(db)

    async def body() -> None:
        store = await open_store(db)
        try:
            from engine.liveness import acquire_invocation_lease

            lease = await acquire_invocation_lease(store, sid, inv)  # another turn holds it
            answer = asyncio.ensure_future(handoff.queue_answer(store, sid, APPROVE, lease_wait=30))
            await asyncio.sleep(0.2)
            assert not answer.done() and await store.get_turn_request(sid, inv) is None
            await store.release_lease(sid, inv, lease.owner)
            done = await answer
            assert done.error is None and len(done.written) == 3
            assert await store.get_lease(sid, inv) is None
            assert (await store.get_turn_request(sid, inv)).kind == "continue"  # type: ignore[union-attr]
        finally:
            await store.close()

    asyncio.run(body())


# ----------------------------------------------------------------- claiming
def test_racing_claimers_take_every_request_once(db: str, tmp_path: Path) -> None:
    async def body() -> None:
        stores = [await open_store(db) for _ in range(6)]
        try:
            for i in range(4):  # sessions, so the requests name real invocations (nothing checks it)
                await stores[0].create_session(APP, "u", f"c{i}")
            for i in range(20):
                await stores[0].request_turn(
                    TurnRequest(app_name=APP, session_id=f"c{i % 4}", invocation_id=f"i{i}", kind="continue",
                                requested_at=1000.0 + i)
                )
            await stores[0].request_turn(
                TurnRequest(app_name="other", session_id="c0", invocation_id="x", kind="continue", requested_at=1.0)
            )

            async def claimer(k: int) -> list[str]:
                got = []
                while (req := await stores[k].claim_next_turn([APP], f"owner-{k}", 30.0)) is not None:
                    assert req.claimed_by == f"owner-{k}"
                    got.append(req.invocation_id)
                return got

            claims = await asyncio.gather(*(claimer(k) for k in range(1, 6)))
            flat = [i for c in claims for i in c]
            assert sorted(flat) == sorted(f"i{i}" for i in range(20))  # each once, none of another app
            for c in claims:  # each claimer took the oldest left: its claims are in request order
                assert c == sorted(c, key=lambda i: int(i[1:]))
            rows = await stores[0].turn_requests([APP])
            assert all(r.claimed_by is not None for r in rows)
            # skip: what a worker refused (another graph version) is not claimed by it again
            await stores[0].unclaim_turn_request("c0", "i0", next(r.claimed_by for r in rows if r.invocation_id == "i0"))
            assert await stores[1].claim_next_turn([APP], "o", 30.0, skip={("c0", "i0", 1000.0)}) is None
            again = await stores[1].claim_next_turn([APP], "o", 30.0, skip={("c0", "i0", 999.0)})
            assert again is not None and again.invocation_id == "i0"
        finally:
            for s in stores:
                await s.close()

    asyncio.run(body())


def test_a_request_asked_again_while_its_turn_ran_is_handed_back(db: str, tmp_path: Path) -> None:
    async def body() -> None:
        store = await open_store(db)
        try:
            await store.create_session(APP, "u", "s")
            first = TurnRequest(app_name=APP, session_id="s", invocation_id="i", kind="continue", requested_at=1.0)
            await store.request_turn(first)
            claimed = await store.claim_next_turn([APP], "w1", 30.0)
            assert claimed is not None
            await store.request_turn(first.model_copy(update={"requested_at": 2.0}))  # a new answer meanwhile
            assert not await store.finish_turn_request("s", "i", "w1", claimed.requested_at)
            req = await store.get_turn_request("s", "i")
            assert req is not None and req.claimed_by is None and req.requested_at == 2.0  # runnable at once
            again = await store.claim_next_turn([APP], "w2", 30.0)
            assert again is not None and again.claimed_by == "w2"
            assert await store.finish_turn_request("s", "i", "w2", again.requested_at)
            assert await store.get_turn_request("s", "i") is None
        finally:
            await store.close()

    asyncio.run(body())


def test_a_worker_wakes_for_runnable_requests_not_for_every_append() -> None:
    waker = Waker(None, queue_only=True)  # type: ignore[arg-type]
    waker._notified("s", 17)  # an append of some turn
    waker._notified("s", -1)  # a request went away
    assert not waker._event.is_set()
    waker._notified("s", 0)  # a request became runnable
    assert waker._event.is_set()
    waker._event.clear()
    waker._notified(None, None)  # LISTEN was re-made: something may have been missed
    assert waker._event.is_set()
    follower = Waker(None)  # type: ignore[arg-type]
    follower._notified("s", 17)
    assert follower._event.is_set()


async def test_the_sweep_reads_running_sessions_only(tmp_path: Path) -> None:
    """The sweep's query is driven by the sessions-by-status index: its cost
    follows what runs now, not how many sessions the app ever had."""
    from engine.store.sqlite import SQLiteStore
    from engine.store.sqlite.workers import _INTERRUPTED_SQL

    store = await SQLiteStore.open(tmp_path / "plan.sqlite", inline=True)
    try:
        for i in range(30):
            await store.create_session(APP, "u", f"s{i}")
        await store._call(lambda conn: conn.execute("ANALYZE"))  # type: ignore[attr-defined]
        plan = await store._call(  # type: ignore[attr-defined]
            lambda conn: [r[-1] for r in conn.execute("EXPLAIN QUERY PLAN " + _INTERRUPTED_SQL.format(marks="?"), (APP, 10))]
        )
        first = next(line for line in plan if "sessions" in line or " s " in f" {line} ")
        assert "sessions_by_status" in first and "status=?" in first.replace(" ", ""), plan
    finally:
        await store.close()


def test_workers_listen_where_only_runnable_requests_are_announced() -> None:
    """On PostgreSQL a worker's LISTEN hears a new request, a request handed back
    and an adopted one -- and not the appends of the turns that run."""
    from tests.contract.builders import pg_fresh_url

    db = pg_fresh_url()

    async def body() -> None:
        store = await open_store(db)
        heard: list[tuple[str | None, int | None]] = []
        listener = await store.turn_notifications(lambda s, q: heard.append((s, q)))  # type: ignore[attr-defined]
        try:
            await store.create_session(APP, "u", "n")

            async def settle(n: int) -> None:
                deadline = time.monotonic() + 30
                while len(heard) < n:
                    assert time.monotonic() < deadline, heard
                    await asyncio.sleep(0.01)

            from engine import Content, Runner

            async for _ in Runner(APP, crash_app.workflow, store).run("u", "n", Content.from_text("order-1")):
                pass  # a turn's appends: nothing for the workers
            req = TurnRequest(app_name=APP, session_id="n", invocation_id="i", kind="continue", requested_at=1.0)
            await store.request_turn(req)
            await settle(1)
            claimed = await store.claim_next_turn([APP], "w", 30.0)
            await store.request_turn(req.model_copy(update={"requested_at": 2.0}))
            await settle(2)
            assert not await store.finish_turn_request("n", "i", "w", claimed.requested_at)  # handed back
            await settle(3)
            assert await store.adopt_turn(req.model_copy(update={"invocation_id": "j"}))
            await settle(4)
            assert heard == [("n", 0)] * 4
        finally:
            await listener.close()
            await store.close()

    asyncio.run(body())
