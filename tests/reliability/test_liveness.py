"""Leases, "interrupted mid-run" and nodes in doubt, in one process.

Real crashes are in ``test_crash.py``; here the failure modes are produced
deterministically: a store that starts failing after n appends (a process
whose store went away mid-turn), a turn blocked on an event (a live run), a
lease taken over from under a turn (a zombie), and owner ids of processes
that do not exist any more.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from engine import START, Content, JoinNode, RequestInput, Runner, Workflow, node
from engine.errors import (
    InDoubtError,
    InvocationBusyError,
    InvocationInterruptedError,
    LeaseLostError,
    StoreError,
)
from engine.liveness import (
    INTERRUPTED,
    LeaseKeeper,
    acquire_invocation_lease,
    interrupted_invocations,
    invocation_health,
    lease_is_live,
    new_owner,
    owner_state,
    session_health,
)
from engine.models import Event, NodeStatus
from engine.operator_actions import cancel_invocation
from engine.projection import project
from engine.resume_plan import plan_resume
from engine.store import MemoryStore
from engine.store.base import Lease

from . import crash_app

YES = {"approved": True}


class FailingStore(MemoryStore):
    """A MemoryStore whose appends fail from the ``fail_from``-th on (its disk
    went away): what a turn leaves behind when its process loses the store."""

    def __init__(self) -> None:
        super().__init__()
        self.fail_from: int | None = None
        self.appends = 0

    async def append_event(self, session_id: str, event: Event, **kw: Any) -> Any:
        if self.fail_from is not None and self.appends + 1 >= self.fail_from:
            raise StoreError("database error: disk I/O error (simulated)")
        stored = await super().append_event(session_id, event, **kw)
        self.appends += 1
        return stored

    async def append_events(self, session_id: str, events: list[Event], **kw: Any) -> Any:
        # One transaction (an answer and its completion records): all fail or none.
        if self.fail_from is not None and self.appends + len(events) >= self.fail_from:
            raise StoreError("database error: disk I/O error (simulated)")
        stored = await super().append_events(session_id, events, **kw)
        self.appends += len(events)
        return stored


async def drain(events: Any) -> list[Event]:
    return [e async for e in events]


@pytest.fixture
def effects(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "effects.log"
    monkeypatch.setenv("HITL_CRASH_EFFECTS", str(path))
    monkeypatch.delenv("HITL_CRASH_KILL_AT", raising=False)
    return path


async def waiting(store: MemoryStore) -> tuple[Runner, str]:
    runner = Runner(crash_app.APP, crash_app.workflow, store)
    events = await drain(runner.run("u", "s", Content.from_text("order-1")))
    assert await store.get_lease("s", events[0].invocation_id) is None  # released at a clean end
    return runner, events[0].invocation_id


async def stranded(store: FailingStore, fail_at: int) -> tuple[Runner, str]:
    """An invocation whose resume died at its ``fail_at``-th append after the answer."""
    runner, inv = await waiting(store)
    store.fail_from = store.appends + fail_at
    with pytest.raises(StoreError, match="simulated"):
        await drain(runner.run("u", "s", Content.from_responses({"finance": YES, "risk": YES})))
    store.fail_from = None
    return runner, inv


async def test_clean_turns_release_their_lease(effects: Path) -> None:
    store = MemoryStore()
    runner, inv = await waiting(store)
    await drain(runner.run("u", "s", Content.from_responses({"finance": YES})))  # partial: nothing runs
    assert await store.list_leases("s") == []
    await drain(runner.run("u", "s", Content.from_responses({"risk": YES})))
    assert await store.list_leases("s") == []
    assert (await invocation_health(store, "s", inv)).label == "COMPLETED"


async def test_a_turn_that_dies_mid_run_is_interrupted_with_its_nodes_in_doubt(effects: Path) -> None:
    store = FailingStore()
    # The answer with finance's and risk's completion records (3 appends), root start,
    # approvals start and end, settle start, pay start; the 9th append, pay's end
    # record, fails (pay's side effect happened).
    runner, inv = await stranded(store, fail_at=9)
    health = await invocation_health(store, "s", inv)
    assert health.interrupted and not health.live and health.label == INTERRUPTED
    assert health.status is NodeStatus.RUNNING
    assert health.in_doubt == ("refund@1/settle@1/pay@1",)
    lease = await store.get_lease("s", inv)
    assert lease is not None and lease.expired(), "an abnormal end leaves its lease, lapsed, as a trace"
    assert [h.invocation_id for h in await interrupted_invocations(store, "s", "running")] == [inv]
    assert crash_app.read_effects(effects) == {"refund@1/settle@1/pay@1": 1}


async def test_answers_to_an_interrupted_invocation_are_refused_without_writing(effects: Path) -> None:
    store = FailingStore()
    runner, inv = await waiting(store)
    # The answer, its record and the root's start land in one write; the turn dies
    # before the root's end record (its last write) lands: interrupted, nothing in
    # doubt. (A turn that runs no user code makes its first write with its end
    # records, so this partial answer takes the lease the long way to stop between.)
    store.capabilities = frozenset({"append_and_release", "leases_of"})  # type: ignore[misc]
    store.fail_from = store.appends + 4
    with pytest.raises(StoreError):
        await drain(runner.run("u", "s", Content.from_responses({"finance": YES})))
    store.fail_from = None
    del store.capabilities
    health = await invocation_health(store, "s", inv)
    assert health.interrupted and health.status is NodeStatus.RUNNING and health.in_doubt == ()
    before = [e.event.to_json() for e in await store.events("s")], await store.list_leases("s")
    with pytest.raises(InvocationInterruptedError, match=f"hitl redrive s {inv}") as info:
        await drain(runner.run("u", "s", Content.from_responses({"risk": YES})))
    assert "--ack-in-doubt" not in str(info.value)
    with pytest.raises(InvocationInterruptedError):
        await plan_resume(store, "s", Content.from_responses({"risk": YES}))
    assert ([e.event.to_json() for e in await store.events("s")], await store.list_leases("s")) == before
    # Continue (no node in doubt: no acknowledgement needed), then answer.
    await drain(runner.run("u", "s", invocation_id=inv, operator="ops"))
    assert (await invocation_health(store, "s", inv)).label == "WAITING"
    await drain(runner.run("u", "s", Content.from_responses({"risk": YES})))
    assert (await invocation_health(store, "s", inv)).label == "COMPLETED"
    assert set(crash_app.read_effects(effects).values()) == {1}


async def test_redrive_over_nodes_in_doubt_needs_an_acknowledgement(effects: Path) -> None:
    store = FailingStore()
    runner, inv = await stranded(store, fail_at=9)
    before = [e.event.to_json() for e in await store.events("s")], await store.list_leases("s")
    with pytest.raises(InDoubtError, match=r"refund@1/settle@1/pay@1.*--ack-in-doubt") as info:
        await drain(runner.run("u", "s", invocation_id=inv))
    assert info.value.paths == ["refund@1/settle@1/pay@1"]
    assert ([e.event.to_json() for e in await store.events("s")], await store.list_leases("s")) == before
    events = await drain(runner.run("u", "s", invocation_id=inv, acknowledge_in_doubt=True, operator="ops", reason="checked the bank"))
    assert events[0].custom_metadata == {
        "action": "redrive",
        "operator": "ops",
        "reason": "checked the bank",
        "in_doubt": ["refund@1/settle@1/pay@1"],
    }
    (record,) = (await store.audit_log(action="redrive")).items
    assert record.details == {"in_doubt": ["refund@1/settle@1/pay@1"]} and record.operator == "ops"
    proj = project([(s.seq, s.event) for s in await store.events("s")])
    assert proj.invocation_status(inv) is NodeStatus.COMPLETED
    assert proj.get(inv, "refund@1/settle@1/pay@1").starts == 2  # same run id, re-executed
    effects_seen = crash_app.read_effects(effects)
    assert effects_seen["refund@1/settle@1/pay@1"] == 2  # what the acknowledgement accepted
    assert all(n == 1 for p, n in effects_seen.items() if p != "refund@1/settle@1/pay@1")
    assert await store.list_leases("s") == []


async def test_completed_nodes_never_run_again_after_an_interruption(effects: Path) -> None:
    store = FailingStore()
    # The 15th append, label@1's end record, fails: pay, notify and settle completed before.
    runner, inv = await stranded(store, fail_at=15)
    health = await invocation_health(store, "s", inv)
    assert health.in_doubt == ("refund@1/ship@1/label@1",), health
    await drain(runner.run("u", "s", invocation_id=inv, acknowledge_in_doubt=True))
    seen = crash_app.read_effects(effects)
    assert seen == {
        "refund@1/settle@1/pay@1": 1,
        "refund@1/settle@1/notify@1": 1,
        "refund@1/ship@1/label@1": 2,
        "refund@1/ship@1/label@2": 1,
        "refund@1/archive@1": 1,
    }


async def test_a_live_run_is_busy_for_everyone_else(effects: Path) -> None:
    release = asyncio.Event()
    started = asyncio.Event()

    @node
    async def ask(node_input: Any):
        yield RequestInput("a?", interrupt_id="a")

    @node
    async def slow(node_input: Any) -> int:
        started.set()
        await release.wait()
        return 1

    store = MemoryStore()
    wf = Workflow("wf", [(START, (ask, slow), JoinNode("j"))])  # one output (DESIGN.md 3.9)
    runner = Runner("app", wf, store, lease_ttl=1.5, lease_wait=0.05)  # renewed each 0.5 s: a stall of 1 s is not an expiry
    turn = asyncio.ensure_future(drain(runner.run("u", "s", Content.from_text("go"))))
    await started.wait()
    (inv,) = [i.invocation_id for i in await store.list_invocations("s")]
    first = await store.get_lease("s", inv)
    await asyncio.sleep(1.6)  # longer than the ttl: only the heartbeat keeps it live
    health = await invocation_health(store, "s", inv)
    assert health.live and not health.interrupted and health.in_doubt == ()
    assert health.lease.expires_at > first.expires_at
    for attempt in (
        drain(runner.run("u", "s", Content.from_responses({"a": 1}))),
        drain(runner.run("u", "s", invocation_id=inv)),
        cancel_invocation(store, "s", inv, lease_wait=0.05),
        plan_resume(store, "s", Content.from_responses({"a": 1})),
    ):
        with pytest.raises(InvocationBusyError, match="running right now in"):
            await attempt
    release.set()
    await turn
    await drain(runner.run("u", "s", Content.from_responses({"a": 1})))
    assert (await invocation_health(store, "s", inv)).label == "COMPLETED"


async def test_a_turn_that_lost_its_lease_writes_nothing_more(effects: Path) -> None:
    """A zombie: its lease was taken over (it looked dead); its next append is
    fenced and it stops; the taker's events are never interleaved with its own."""
    gate = asyncio.Event()
    release = asyncio.Event()

    @node
    async def slow(node_input: Any) -> int:
        gate.set()
        await release.wait()
        return 1

    @node
    async def after(node_input: Any) -> int:
        return 2

    store = MemoryStore()
    runner = Runner("app", Workflow("wf", [(START, slow, after)]), store)
    turn = asyncio.ensure_future(drain(runner.run("u", "s", Content.from_text("go"))))
    await gate.wait()
    (inv,) = [i.invocation_id for i in await store.list_invocations("s")]
    held = await store.get_lease("s", inv)
    taker = await store.acquire_lease("s", inv, "taker:1:-:-:x", 60, steal_from=held.owner)
    n = (await store.get_session("s")).last_seq
    release.set()
    with pytest.raises(LeaseLostError, match="lost its lease"):
        await turn
    assert (await store.get_session("s")).last_seq == n, "the zombie wrote after losing its lease"
    assert (await store.get_lease("s", inv)).owner == taker.owner  # and did not release the taker's lease


async def test_a_lost_lease_is_noticed_by_the_heartbeat(effects: Path) -> None:
    release = asyncio.Event()

    @node
    async def slow(node_input: Any) -> int:
        await release.wait()  # never released: the heartbeat must stop the turn
        return 1

    store = MemoryStore()
    runner = Runner("app", Workflow("wf", [(START, slow)]), store, lease_ttl=0.15)
    turn = asyncio.ensure_future(drain(runner.run("u", "s", Content.from_text("go"))))
    while not (await _exists(store) and await store.list_invocations("s")):
        await asyncio.sleep(0.005)
    (inv,) = [i.invocation_id for i in await store.list_invocations("s")]
    held = await store.get_lease("s", inv)
    await store.acquire_lease("s", inv, "taker:1:-:-:x", 60, steal_from=held.owner)
    with pytest.raises(LeaseLostError):
        await asyncio.wait_for(turn, 30)  # bounded: noticed at the next renewal (every 0.05 s)


async def _exists(store: MemoryStore) -> bool:
    try:
        await store.get_session("s")
        return True
    except Exception:
        return False


# ------------------------------------------------------------------ owner ids


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def _lease(owner: str, ttl: float = 60.0) -> Lease:
    import time

    now = time.time()
    return Lease(session_id="s", invocation_id="i", owner=owner, acquired_at=now, renewed_at=now, expires_at=now + ttl)


def test_owner_ids_tell_dead_local_processes_at_once() -> None:
    me = new_owner()
    host, pid, scope, start, token = me.split(":")
    assert int(pid) == os.getpid() and owner_state(me) == "alive"
    if scope == "-":
        pytest.skip("no /proc here: liveness falls back to lease expiry only")
    dead = ":".join([host, str(_dead_pid()), scope, start, token])
    assert owner_state(dead) == "dead"
    assert not lease_is_live(_lease(dead)), "a dead owner's lease is not live, even before it expires"
    reused = ":".join([host, pid, scope, str(int(start) + 1), token])  # our pid, another process's start time
    assert owner_state(reused) == "dead"
    elsewhere = ":".join(["other-host", "1", "0123456789ab", "5", token])  # another host or pid namespace
    assert owner_state(elsewhere) == "unknown" and lease_is_live(_lease(elsewhere))
    assert not lease_is_live(_lease(elsewhere, ttl=-1)), "unknown owners are live until their lease expires"
    assert owner_state("some-other-store's-owner-format") == "unknown"
    assert _lease(me).holder == f"{host} pid {pid}"


async def test_a_dead_holder_is_taken_over_and_a_live_one_waited_for() -> None:
    store = MemoryStore()
    await store.create_session("app", "u", "s")
    me = new_owner()
    if me.split(":")[2] == "-":
        pytest.skip("no /proc here")
    host, _, scope, start, token = me.split(":")
    dead = ":".join([host, str(_dead_pid()), scope, start, token])
    await store.acquire_lease("s", "i", dead, 60)
    lease = await acquire_invocation_lease(store, "s", "i", wait=0)
    assert lease.owner != dead
    with pytest.raises(InvocationBusyError):
        await acquire_invocation_lease(store, "s", "i", wait=0.05)

    async def let_go() -> None:
        await asyncio.sleep(0.05)
        await store.release_lease("s", "i", lease.owner)

    waiter = asyncio.ensure_future(acquire_invocation_lease(store, "s", "i", wait=2))
    await let_go()
    assert (await waiter).owner not in (dead, lease.owner)


async def test_session_health_without_a_projection_reads_only_candidates(effects: Path) -> None:
    store = FailingStore()
    runner, inv = await stranded(store, fail_at=9)
    _, other = await waiting(store)  # a second, healthy invocation in the same session
    health = await session_health(store, "s")
    assert health[inv].interrupted and health[inv].in_doubt == ("refund@1/settle@1/pay@1",)
    assert not health[other].interrupted and health[other].label == "WAITING"
    assert await interrupted_invocations(store, "s", "waiting") != []  # a lease row makes it a candidate


async def test_a_turn_stopped_from_outside_is_interrupted_not_cancelled(
    effects: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ctrl-C, a cancelled worker, an abandoned stream: not an operator's cancel.
    Nothing more is written (the nodes' CANCELLED records are fenced off), the
    invocation is interrupted mid-run with its running leaf in doubt, and a
    re-drive finishes it."""
    monkeypatch.setenv("HITL_CRASH_PAUSE", "pay")
    store = MemoryStore()
    runner, inv = await waiting(store)
    turn = asyncio.ensure_future(drain(runner.run("u", "s", Content.from_responses({"finance": YES, "risk": YES}))))
    while "refund@1/settle@1/pay@1" not in crash_app.read_effects(effects):
        await asyncio.sleep(0.005)
    n = (await store.get_session("s")).last_seq
    turn.cancel()
    with pytest.raises(asyncio.CancelledError):
        await turn
    await asyncio.sleep(0.05)  # nothing left running writes later either
    assert (await store.get_session("s")).last_seq == n
    health = await invocation_health(store, "s", inv)
    assert health.interrupted and health.in_doubt == ("refund@1/settle@1/pay@1",), health
    assert [lease.expired() for lease in await store.list_leases("s")] == [True]  # a trace, not a live lease
    monkeypatch.delenv("HITL_CRASH_PAUSE")
    await drain(runner.run("u", "s", invocation_id=inv, acknowledge_in_doubt=True))
    assert (await invocation_health(store, "s", inv)).label == "COMPLETED"
    assert await store.list_leases("s") == []


class _CountingStore:
    """What a LeaseKeeper calls on its store: renewals, counted."""

    def __init__(self) -> None:
        self.renewals = 0
        self.second = asyncio.Event()

    async def renew_lease(self, session_id: str, invocation_id: str, owner: str, ttl: float) -> Lease:
        self.renewals += 1
        if self.renewals >= 2:
            self.second.set()
        return Lease(session_id=session_id, invocation_id=invocation_id, owner=owner, acquired_at=0, renewed_at=0, expires_at=ttl)


async def test_a_keeper_stopped_before_its_first_renewal_starts_no_task() -> None:
    # Most turns end before a renewal is due: the keeper waits on a timer, so
    # stopping it costs no task and no trip through the event loop.
    store = _CountingStore()
    keeper = LeaseKeeper(store, _lease(new_owner()), ttl=60)  # type: ignore[arg-type]
    tasks_before = len(asyncio.all_tasks())
    keeper.start()
    assert len(asyncio.all_tasks()) == tasks_before
    await keeper.stop()
    assert store.renewals == 0 and keeper._timer is None and keeper._task is None


async def test_a_keeper_renews_every_interval_once_started() -> None:
    store = _CountingStore()
    keeper = LeaseKeeper(store, _lease(new_owner()), ttl=0.03)  # type: ignore[arg-type]
    keeper.start()
    await asyncio.wait_for(store.second.wait(), timeout=30)  # waits on the renewals, not on a clock
    await keeper.stop()
    n = store.renewals
    assert n >= 2 and keeper._task is None
    await asyncio.sleep(0.05)
    assert store.renewals == n  # stopped: no renewal after stop()
