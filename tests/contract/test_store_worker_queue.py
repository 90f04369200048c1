"""The worker queue (engine.store.capabilities.WorkerQueue), run against every
backend: turn requests claimed by compare-and-swap, handed back, finished,
adopted and dropped; an answer queued with its request in one transaction;
worker heartbeats; the first graph version an invocation ran under."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from engine.errors import ConflictError, InvocationBusyError, ReadOnlyError, StoreError
from engine.models import NodeStatus
from engine.store.capabilities import WorkerQueue, capability, require
from engine.store.workers import TurnRequest, WorkerRecord

from .builders import KINDS, answer, dump, end, open_store, start, user_msg, waiting_session


@pytest.fixture(params=KINDS)
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    s = await open_store(request.param, tmp_path, **({"workers": True} if request.param == "memory" else {}))
    yield s
    await s.close()


def req(sid: str, inv: str = "inv1", *, app: str = "app", at: float | None = None, kind: str = "continue") -> TurnRequest:
    return TurnRequest(app_name=app, session_id=sid, invocation_id=inv, kind=kind, payload={"operator": "op"},
                       requested_at=time.time() if at is None else at)


def queue(store: Any) -> WorkerQueue:
    q = capability(store, WorkerQueue)
    assert q is not None, f"{type(store).__name__} has no worker queue"
    return q


async def test_every_backend_is_a_worker_queue(store: Any) -> None:
    assert isinstance(store, WorkerQueue)
    assert require(store, WorkerQueue, "hitl worker") is store


def test_require_names_what_is_missing() -> None:
    from engine.store.memory import MemoryStore

    with pytest.raises(StoreError, match="has no worker queue: hitl worker needs one"):
        require(MemoryStore(), WorkerQueue, "hitl worker")  # methods alone: not declared
    assert capability(object(), WorkerQueue) is None


async def test_request_renew_keeps_the_claim_and_clears_held(store: Any) -> None:
    q = queue(store)
    await q.request_turn(req("s1", at=1.0))
    await q.request_turn(req("s2", at=0.5, app="other"))
    assert [r.session_id for r in await q.turn_requests()] == ["s2", "s1"]
    assert [r.session_id for r in await q.turn_requests(["app"])] == ["s1"]
    assert await q.claim_turn_request("s1", "inv1", "w1", 60)
    await q.request_turn(req("s1", at=2.0, kind="redrive"))
    got = await q.get_turn_request("s1", "inv1")
    assert got is not None
    assert (got.kind, got.requested_at, got.claimed_by, got.payload) == ("redrive", 2.0, "w1", {"operator": "op"})
    await q.unclaim_turn_request("s1", "inv1", "w1", held="nodes in doubt", note="ack first")
    held = await q.get_turn_request("s1", "inv1")
    assert held is not None and (held.claimed_by, held.held, held.note) == (None, "nodes in doubt", "ack first")
    await q.request_turn(req("s1", at=3.0))
    renewed = await q.get_turn_request("s1", "inv1")
    assert renewed is not None and (renewed.held, renewed.note) == (None, None)
    assert await q.get_turn_request("s1", "nope") is None
    assert [r.session_id for r in await q.turn_requests_of(["s1", "s1", "zz"])] == ["s1"]


async def test_claim_is_a_compare_and_swap(store: Any) -> None:
    q = queue(store)
    await q.request_turn(req("s1"))
    assert await q.claim_turn_request("s1", "inv1", "w1", 60)
    assert not await q.claim_turn_request("s1", "inv1", "w2", 60)  # claimed and live
    assert await q.claim_turn_request("s1", "inv1", "w2", 60, expected="w1")  # w1 is dead: take it over
    assert not await q.claim_turn_request("s1", "inv1", "w3", 60, expected="w1")
    await q.unclaim_turn_request("s1", "inv1", "w1")  # not w1's any more: nothing happens
    assert (await q.get_turn_request("s1", "inv1")).claimed_by == "w2"  # type: ignore[union-attr]
    await q.unclaim_turn_request("s1", "inv1", "w2", held="wait")
    assert not await q.claim_turn_request("s1", "inv1", "w3", 60)  # held: left alone
    assert not await q.claim_turn_request("s9", "inv1", "w3", 60)  # no such request
    await q.request_turn(req("s3"))
    assert await q.claim_turn_request("s3", "inv1", "w1", -1)  # a claim that already lapsed
    assert await q.claim_turn_request("s3", "inv1", "w4", 60)


async def test_drop_only_while_claimed_and_not_asked_again(store: Any) -> None:
    q = queue(store)
    await q.request_turn(req("s1", at=5.0))
    assert await q.claim_turn_request("s1", "inv1", "w1", 60)
    await q.drop_turn_request("s1", "inv1", owner="w2")
    await q.drop_turn_request("s1", "inv1", owner="w1", requested_at=4.0)
    assert await q.get_turn_request("s1", "inv1") is not None
    await q.drop_turn_request("s1", "inv1", owner="w1", requested_at=5.0)
    assert await q.get_turn_request("s1", "inv1") is None
    await q.request_turn(req("s2"))
    await q.drop_turn_request("s2", "inv1")
    assert await q.turn_requests() == []


async def test_claim_next_takes_the_oldest_runnable(store: Any) -> None:
    q = queue(store)
    assert await q.claim_next_turn(["app"], "w1", 60) is None
    assert await q.claim_next_turn([], "w1", 60) is None
    await q.request_turn(req("old", at=1.0))
    await q.request_turn(req("mid", at=2.0))
    await q.request_turn(req("new", at=3.0))
    await q.request_turn(req("elsewhere", at=0.5, app="other"))
    got = await q.claim_next_turn(["app"], "w1", 60, skip={("old", "inv1", 1.0)})
    assert got is not None and (got.session_id, got.claimed_by) == ("mid", "w1")
    assert got.claimed_until is not None and got.claimed_until > time.time()
    got = await q.claim_next_turn(["app"], "w2", 60)
    assert got is not None and got.session_id == "old"
    assert await q.claim_turn_request("new", "inv1", "w3", 60)
    await q.unclaim_turn_request("new", "inv1", "w3", held="wait")
    assert await q.claim_next_turn(["app"], "w4", 60) is None  # the rest is claimed or held
    assert [r.session_id for r in await q.turn_requests(["app"], claimed=True)] == ["old", "mid"]
    assert [r.session_id for r in await q.turn_requests(claimed=True)] == ["old", "mid"]


async def test_claim_next_records_the_claimers_graph_version_unless_one_was(store: Any) -> None:
    """A worker's claim and the graph version its invocation runs under are one
    write: the first claimer's version is recorded, a later claim returns that one."""
    q = queue(store)
    await q.request_turn(req("s1", at=1.0))
    await q.request_turn(req("s2", at=2.0))
    await q.request_turn(req("s3", at=3.0, app="other"))
    got = await q.claim_next_turn(["app"], "w1", 60, versions={"app": "v1", "other": "o1"})
    assert got is not None and (got.session_id, got.graph) == ("s1", "v1")
    assert await q.invocation_graph("s1", "inv1", "v2") == "v1"  # recorded by the claim
    assert await q.invocation_graph("s2", "inv1", "v0") == "v0"  # recorded before its claim
    got = await q.claim_next_turn(["app"], "w2", 60, versions={"app": "v2"})
    assert got is not None and (got.session_id, got.graph) == ("s2", "v0")  # the one recorded first
    got = await q.claim_next_turn(["other"], "w3", 60)  # no versions: records nothing, reads none
    assert got is not None and (got.session_id, got.graph) == ("s3", None)
    await q.unclaim_turn_request("s1", "inv1", "w1")
    got = await q.claim_next_turn(["app"], "w4", 60, versions={"app": "v9"})
    assert got is not None and (got.session_id, got.graph) == ("s1", "v1")  # claimed again: still its first
    assert [r.graph for r in await q.turn_requests()] == [None, None, None]  # a claim's answer, not a column


async def test_lease_and_news_reads_the_lease_and_whether_the_invocation_moved_on(store: Any) -> None:
    from engine.errors import SessionNotFoundError
    from engine.store.capabilities import LeaseAndNews

    both = capability(store, LeaseAndNews)
    assert both is not None
    sid = await waiting_session(store, "ln")
    inv = (await store.list_invocations(sid))[0].invocation_id
    last = (await store.get_session(sid)).last_seq
    assert await both.lease_and_news(sid, inv, last) == (None, False)
    assert (await both.lease_and_news(sid, inv, last - 1))[1] is True
    held = await store.acquire_lease(sid, inv, "me", 60)
    lease, moved = await both.lease_and_news(sid, inv, last)
    assert lease is not None and (lease.owner, lease.expires_at, moved) == ("me", held.expires_at, False)
    assert await both.lease_and_news(sid, "no-such-invocation", 0) == (None, False)
    with pytest.raises(SessionNotFoundError):
        await both.lease_and_news("no-such-session", inv, 0)


async def test_finish_deletes_or_hands_back_a_request_asked_again(store: Any) -> None:
    q = queue(store)
    await q.request_turn(req("s1", at=1.0))
    await q.request_turn(req("s2", at=1.0))
    assert await q.claim_turn_request("s1", "inv1", "w1", 60)
    assert await q.claim_turn_request("s2", "inv1", "w1", 60)
    assert not await q.finish_turn_request("s1", "inv1", "w2", 1.0)  # not w2's
    assert await q.finish_turn_request("s1", "inv1", "w1", 1.0)
    assert await q.get_turn_request("s1", "inv1") is None
    await q.request_turn(req("s2", at=2.0))  # a new answer while the turn ran
    assert not await q.finish_turn_request("s2", "inv1", "w1", 1.0)
    back = await q.get_turn_request("s2", "inv1")
    assert back is not None and (back.claimed_by, back.claimed_until, back.requested_at) == (None, None, 2.0)


async def test_append_and_queue_is_one_transaction(store: Any) -> None:
    q = queue(store)
    sid = await waiting_session(store, "c1")
    last = (await store.get_session(sid)).last_seq
    written = await q.append_and_queue(
        sid, "inv1", [answer("inv1", {"c1": {"ok": True}})], owner="op", invocation_after=last, request=req(sid)
    )
    assert [e.seq for e in written] == [last + 1]
    assert await store.get_lease(sid, "inv1") is None  # released
    assert (await q.get_turn_request(sid, "inv1")) is not None
    # moved on since the read: refused, nothing written, no request
    sid2 = await waiting_session(store, "c2", session_id="s2")
    before = await dump(store, sid2)
    with pytest.raises(ConflictError):
        await q.append_and_queue(
            sid2, "inv1", [answer("inv1", {"c2": 1})], owner="op", invocation_after=1, request=req(sid2)
        )
    assert await dump(store, sid2) == before
    assert await q.get_turn_request(sid2, "inv1") is None
    await store.acquire_lease(sid2, "inv1", "runner", 60)
    with pytest.raises(InvocationBusyError):
        await q.append_and_queue(
            sid2, "inv1", [answer("inv1", {"c2": 1})], owner="op", invocation_after=None, request=req(sid2)
        )
    assert await dump(store, sid2) == before and await q.get_turn_request(sid2, "inv1") is None


async def running(store: Any, sid: str, app: str = "app") -> None:
    await store.create_session(app, "u", sid)
    await store.append_events(sid, [user_msg("inv1"), start("inv1")])


async def test_interrupted_adopted_and_settled_held(store: Any) -> None:
    q = queue(store)
    await running(store, "r1")
    await running(store, "r2")
    await running(store, "r3", app="other")
    await waiting_session(store, "c1", session_id="w1")
    await store.acquire_lease("r2", "inv1", "dead-owner", 60)
    await q.request_turn(req("r1"))
    found = await q.interrupted_turns(["app"])
    assert [(a, s, i) for a, s, i, _ in found] == [("app", "r2", "inv1")]
    assert found[0][3].owner == "dead-owner"
    assert await q.interrupted_turns([]) == []
    assert await q.adopt_turn(req("r2"))
    assert not await q.adopt_turn(req("r2", at=99.0))  # never replaces one
    assert (await q.get_turn_request("r2", "inv1")).requested_at != 99.0  # type: ignore[union-attr]
    assert await q.interrupted_turns(["app"]) == []
    # a held request whose invocation settled meanwhile
    assert await q.claim_turn_request("r2", "inv1", "wk", 60)
    await q.unclaim_turn_request("r2", "inv1", "wk", held="in doubt")
    assert await q.settled_held_requests(["app"]) == []  # still running
    await store.release_lease("r2", "inv1", "dead-owner")
    await store.append_event("r2", end("inv1", NodeStatus.COMPLETED))
    settled = await q.settled_held_requests(["app"])
    assert [r.session_id for r in settled] == ["r2"]
    await q.drop_held_request(settled[0].model_copy(update={"requested_at": 1.0}))  # asked again since: kept
    assert await q.get_turn_request("r2", "inv1") is not None
    await q.drop_held_request(settled[0])
    assert await q.get_turn_request("r2", "inv1") is None


async def test_graph_versions_and_workers(store: Any) -> None:
    q = queue(store)
    assert await q.invocation_graph("s1", "inv1", "aaa") == "aaa"
    assert await q.invocation_graph("s1", "inv1", "bbb") == "aaa"
    now = time.time()
    w = WorkerRecord(worker_id="w-b", host="h", pid=1, apps=["app"], versions={"app": "aaa"}, started_at=now,
                     heartbeat_at=now, stale_after=6)
    await q.put_worker(w)
    await q.put_worker(w.model_copy(update={"worker_id": "w-a", "started_at": now - 1}))
    await q.put_worker(w.model_copy(update={"current": ["s1/inv1"], "state": "draining"}))
    rows = await q.list_workers()
    assert [(r.worker_id, r.current, r.state) for r in rows] == [("w-a", [], "running"), ("w-b", ["s1/inv1"], "draining")]
    await q.drop_worker("w-a")
    await q.drop_worker("nobody")
    assert [r.worker_id for r in await q.list_workers()] == ["w-b"]


async def test_a_heartbeat_renews_the_workers_own_claims_in_the_same_write(store: Any) -> None:
    q = queue(store)
    for sid in ("mine", "theirs", "held", "lapsed"):
        await q.request_turn(req(sid, at=1.0))
    assert await q.claim_turn_request("mine", "inv1", "w1", 5)
    assert await q.claim_turn_request("theirs", "inv1", "w2", 60)
    assert await q.claim_turn_request("held", "inv1", "w1", 5)
    await q.unclaim_turn_request("held", "inv1", "w1", held="nodes in doubt")
    assert await q.claim_turn_request("lapsed", "inv1", "w1", -1)  # its claim expired already
    now = time.time()
    w = WorkerRecord(worker_id="w1", host="h", pid=1, apps=["app"], started_at=now, heartbeat_at=now, stale_after=6)
    keys = [(s, "inv1") for s in ("mine", "theirs", "held", "lapsed", "gone")]
    await q.put_worker(w, renew=keys, ttl=600)
    rows = {r.session_id: r for r in await q.turn_requests()}
    assert rows["mine"].claimed_by == "w1" and rows["mine"].claimed_until > now + 500  # renewed
    assert rows["lapsed"].claimed_by == "w1" and rows["lapsed"].claimed_until > now + 500  # taken again
    assert rows["theirs"].claimed_by == "w2" and rows["theirs"].claimed_until < now + 100  # another's live claim stands
    assert (rows["held"].claimed_by, rows["held"].held) == (None, "nodes in doubt")  # held: left alone
    assert [r.worker_id for r in await q.list_workers()] == ["w1"]
    await q.put_worker(w.model_copy(update={"state": "draining"}))  # no claims to renew
    assert [r.state for r in await q.list_workers()] == ["draining"]


async def test_read_only_memory_store_writes_no_request() -> None:
    from engine.store.memory import MemoryStore

    ro = MemoryStore(read_only=True, workers=True)
    with pytest.raises(ReadOnlyError):
        await queue(ro).request_turn(req("s1"))
    assert await queue(ro).turn_requests() == []
