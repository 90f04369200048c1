"""Workers (issue 18) against SQLite and PostgreSQL, with real processes:

* 3 worker processes and 4 answering processes (no workflow code used to
  answer) on 50 sessions: every answer's turn runs exactly once, each
  session's log is contiguous, every side effect happens once;
* SIGKILL of random workers at random points (>= 30 kills): no lost or
  duplicated event; invocations with no node in doubt are continued by another
  worker; in-doubt ones wait (held) until an acknowledged re-drive; the final
  node outputs equal those of an uninterrupted in-process run;
* an answer sent while no worker is alive is stored, queued, said so, and runs
  when a worker starts; SIGTERM drains (the running turn finishes, exit 0);
  a worker with another graph version refuses the invocation.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from engine import Content, Runner, handoff
from engine.models import NodeStatus
from engine.resume import load_invocation
from engine.store import open_store
from engine.store.memory import MemoryStore
from engine.worker import Worker
from tests.reliability import crash_app
from tests.reliability.conftest import start_orders
from tests.reliability.worker_procs import APPROVE, answer_child, context, worker_child

SESSIONS = 50
APP = crash_app.APP


@pytest.fixture(params=["sqlite", "postgres"])
def db(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return str(tmp_path / "workers.sqlite")
    from tests.contract.builders import pg_fresh_url

    return pg_fresh_url()


def run(coro: Any) -> Any:
    return asyncio.run(coro)


def wait_for(pred: Callable[[], bool], message: str, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while not pred():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for: {message}")
        time.sleep(0.05)


async def _make_sessions(url: str, n: int) -> dict[str, str]:
    """``n`` crash-app sessions waiting on finance and risk; session -> invocation."""
    store = await open_store(url)
    try:
        return await start_orders(Runner(APP, crash_app.workflow, store), store, n)
    finally:
        await store.close()


def one_session(url: str) -> tuple[str, str]:
    """One crash-app session waiting on finance and risk: (session, invocation)."""
    return next(iter(run(_make_sessions(url, 1)).items()))


async def _reference(n: int) -> dict[str, dict[str, Any]]:
    """The node outputs of uninterrupted in-process runs (path -> output)."""
    store = MemoryStore()
    runner = Runner(APP, crash_app.workflow, store)
    out = {}
    os.environ.pop("HITL_CRASH_EFFECTS", None)
    for i in range(n):
        sid = f"s{i:02d}"
        async for _ in runner.run("u", sid, Content.from_text(f"order-{i}")):
            pass
        inv = (await store.list_invocations(sid))[0].invocation_id
        async for _ in runner.run("u", sid, Content.from_responses(APPROVE)):
            pass
        proj = await load_invocation(store, sid, inv)
        out[sid] = {r.path: r.output for r in proj.runs(inv)}
    return out


async def _state(url: str, invs: dict[str, str]) -> dict[str, tuple[str | None, str | None]]:
    """session -> (invocation status, the held reason of its request or 'queued' or None)."""
    store = await open_store(url, read_only=True)
    try:
        out: dict[str, tuple[str | None, str | None]] = {}
        for sid, inv in invs.items():
            status = (await load_invocation(store, sid, inv)).invocation_status(inv)
            req = await store.get_turn_request(sid, inv)
            out[sid] = (status.value if status else None, None if req is None else (req.held or "queued"))
        return out
    finally:
        await store.close()


async def _audit(url: str, invs: dict[str, str]) -> dict[str, Any]:
    """Per session: the log's checks and the worker re-drives; the node outputs."""
    store = await open_store(url, read_only=True)
    try:
        report: dict[str, Any] = {}
        for sid, inv in invs.items():
            events = await store.events(sid)
            seqs = [e.seq for e in events]
            ids = [e.event.id for e in events]
            redrives = [e.event.custom_metadata or {} for e in events if e.event.kind == "redrive"]
            proj = await load_invocation(store, sid, inv)
            report[sid] = {
                "contiguous": seqs == list(range(1, len(seqs) + 1)),
                "unique": len(set(ids)) == len(ids),
                "status": proj.invocation_status(inv),
                "unfinished": [r.path for r in proj.runs(inv) if r.unfinished],
                "redrives": redrives,
                "outputs": {r.path: r.output for r in proj.runs(inv)},
                "request": await store.get_turn_request(sid, inv),
            }
        return report
    finally:
        await store.close()


class Workers:
    """Worker processes of the crash app on one store."""

    def __init__(self, url: str, tmp: Path, **spec: Any) -> None:
        self.ctx = context()
        self.spec = {"db": url, "effects": str(tmp / "effects"), **spec}
        self.procs: list[Any] = []

    def start(self) -> Any:
        p = self.ctx.Process(target=worker_child, args=(self.spec,), daemon=True)
        p.start()
        self.procs.append(p)
        return p

    def alive(self) -> list[Any]:
        return [p for p in self.procs if p.is_alive()]

    def stop(self) -> list[int | None]:
        for p in self.alive():
            p.terminate()
        codes = []
        for p in self.procs:
            p.join(60)
            codes.append(p.exitcode)
        return codes


# ----------------------------------------------------------------- exactly once
def test_three_workers_four_answerers_run_every_turn_once(db: str, tmp_path: Path) -> None:
    invs = run(_make_sessions(db, SESSIONS))
    workers = Workers(db, tmp_path, concurrency=2)
    for _ in range(3):
        workers.start()
    ctx = context()
    sids = sorted(invs)
    answerers = []
    for k in range(4):
        spec = {"db": db, "sessions": sids[k::4], "report": str(tmp_path / f"answers{k}.json")}
        p = ctx.Process(target=answer_child, args=(spec,))
        p.start()
        answerers.append(p)
    for p in answerers:
        p.join(120)
        assert p.exitcode == 0
    reports = [r for k in range(4) for r in json.loads((tmp_path / f"answers{k}.json").read_text())]
    assert sorted(r["session"] for r in reports) == sids
    assert all(r["error"] is None and r["written"] == 3 for r in reports), reports  # answer + 2 auto-completions

    wait_for(lambda: all(s == ("COMPLETED", None) for s in run(_state(db, invs)).values()), "every turn completed")
    codes = workers.stop()
    assert codes == [0, 0, 0]  # SIGTERM drains and exits 0

    audit = run(_audit(db, invs))
    reference = run(_reference(SESSIONS))
    for sid, a in audit.items():
        assert a["contiguous"] and a["unique"], sid
        assert len(a["redrives"]) == 1, (sid, a["redrives"])  # the answer's turn ran exactly once
        assert a["outputs"] == reference[sid], sid
        assert a["request"] is None
    effects = crash_app.read_effects(tmp_path / "effects")
    # 5 effects per session (pay, notify, label x2, archive), each once; a path is the same in every session
    assert len(effects) == 5 and set(effects.values()) == {SESSIONS}, effects


# ----------------------------------------------------------------- SIGKILL
def test_sigkill_random_workers(db: str, tmp_path: Path) -> None:
    invs = run(_make_sessions(db, SESSIONS))
    workers = Workers(db, tmp_path, concurrency=2, delay=0.03)
    for _ in range(3):
        workers.start()
    # Answer everything at once, without the code (in this process: no workflow imported for it).
    async def answer_all() -> None:
        store = await open_store(db)
        try:
            for sid in invs:
                done = await handoff.queue_answer(store, sid, APPROVE, operator="op")
                assert done.error is None, done.error
        finally:
            await store.close()

    run(answer_all())
    rng = random.Random(18)
    kills = 0
    deadline = time.monotonic() + 120
    while kills < 30 and time.monotonic() < deadline:
        time.sleep(rng.uniform(0.02, 0.12))
        alive = workers.alive()
        victim = rng.choice(alive)
        victim.kill()  # Process.kill: it may have exited since is_alive()
        victim.join(10)
        kills += 1
        workers.start()
    assert kills >= 30

    def settled_or_held() -> bool:
        return all(s[1] is None and s[0] == "COMPLETED" or (s[1] not in (None, "queued"))
                   for s in run(_state(db, invs)).values())

    wait_for(settled_or_held, "every invocation completed or waiting for an acknowledged re-drive")
    state = run(_state(db, invs))
    held = sorted(sid for sid, s in state.items() if s[1] not in (None, "queued"))
    for sid in held:  # in doubt: nothing ran on its own; an operator acknowledges
        assert state[sid][0] in ("RUNNING", "PENDING"), state[sid]
        assert "in doubt" in state[sid][1]

        async def ack(sid: str = sid) -> None:
            store = await open_store(db)
            try:
                await handoff.request_redrive(store, sid, invs[sid], acknowledge_in_doubt=True, operator="op")
            finally:
                await store.close()

        run(ack())
    wait_for(lambda: all(s == ("COMPLETED", None) for s in run(_state(db, invs)).values()), "all completed after acks")
    workers.stop()

    audit = run(_audit(db, invs))
    reference = run(_reference(SESSIONS))
    continued = 0
    acked_paths: Counter[str] = Counter()
    for sid, a in audit.items():
        assert a["contiguous"] and a["unique"], sid  # no lost or duplicated event
        assert a["unfinished"] == [], sid
        assert a["outputs"] == reference[sid], sid  # as if never interrupted
        acks = [r for r in a["redrives"] if r.get("in_doubt")]
        assert bool(acks) == (sid in held), (sid, a["redrives"])
        for r in acks:
            acked_paths.update(r["in_doubt"])
        if len(a["redrives"]) - len(acks) > 1:
            continued += 1
    effects = crash_app.read_effects(tmp_path / "effects")
    # Every effect once per session, except those acknowledged in doubt (they may run twice).
    for path, count in effects.items():
        assert SESSIONS <= count <= SESSIONS + acked_paths[path], (path, count, acked_paths[path])
    print(f"\nworker kills: {kills} kills, {continued} invocations continued by another worker, "
          f"{len(held)} waited for an acknowledged re-drive, 0 lost / 0 duplicated events")


# ----------------------------------------------------------------- no worker alive
def test_answer_without_a_live_worker_is_queued_then_runs(db: str, tmp_path: Path) -> None:
    sid, inv = one_session(db)

    async def body() -> None:
        store = await open_store(db)
        try:
            assert await handoff.worker_notice(store, APP) == (
                f"stored; no worker for {APP} is alive: the turn runs when one starts (hitl worker --app {APP}=...)"
            )
            done = await handoff.queue_answer(store, sid, APPROVE, operator="op")
            assert done.error is None and [e.kind for e in done.written] == ["response", "end", "end"]
            req = await store.get_turn_request(sid, inv)
            assert req is not None and req.kind == "continue" and req.held is None
            assert await handoff.follow(store, sid, inv, timeout=0.2) == "timeout"  # queued, not failed
            assert (await load_invocation(store, sid, inv)).invocation_status(inv) is NodeStatus.PENDING
            worker = Worker(store, {APP: crash_app.workflow}, heartbeat=2.0)  # live for 6 s after a beat: a loaded machine does not read it as gone
            task = asyncio.ensure_future(worker.run())
            try:
                assert await handoff.follow(store, sid, inv, timeout=60) == "settled"
                assert [w.worker_id for w in await handoff.live_workers(store, APP)] == [worker.worker_id]
                assert await handoff.worker_notice(store, APP) is None
            finally:
                worker.stop()
                await task
            assert (await load_invocation(store, sid, inv)).invocation_status(inv) is NodeStatus.COMPLETED
            assert await store.get_turn_request(sid, inv) is None
            assert await store.list_workers() == []  # a drained worker says goodbye
        finally:
            await store.close()

    os.environ["HITL_CRASH_EFFECTS"] = str(tmp_path / "effects")
    try:
        run(body())
    finally:
        os.environ.pop("HITL_CRASH_EFFECTS", None)


def test_start_request_runs_once_with_racing_workers(db: str, tmp_path: Path) -> None:
    async def body() -> None:
        stores = [await open_store(db) for _ in range(3)]
        try:
            invs = [await handoff.request_start(stores[0], APP, f"new{i}", f"order-{i}") for i in range(5)]
            ws = [Worker(s, {APP: crash_app.workflow}, heartbeat=0.2) for s in stores[1:]]
            tasks = [asyncio.ensure_future(w.run()) for w in ws]
            try:
                for i, inv in enumerate(invs):
                    assert await handoff.follow(stores[0], f"new{i}", inv, timeout=60) == "settled"
            finally:
                for w in ws:
                    w.stop()
                await asyncio.gather(*tasks)
            for i, inv in enumerate(invs):
                found = await stores[0].list_invocations(f"new{i}")
                assert [s.invocation_id for s in found] == [inv]  # started once, with the id the request named
                proj = await load_invocation(stores[0], f"new{i}", inv)
                assert proj.invocation_status(inv) is NodeStatus.WAITING
        finally:
            for s in stores:
                await s.close()

    run(body())


# ----------------------------------------------------------------- SIGTERM
def test_sigterm_drains_a_running_turn(db: str, tmp_path: Path) -> None:
    invs = run(_make_sessions(db, 1))
    sid, inv = next(iter(invs.items()))
    ready = tmp_path / "ready"
    workers = Workers(db, tmp_path, delay=1.0, ready=str(ready))
    proc = workers.start()
    wait_for(ready.exists, "the worker started")

    async def answer() -> None:
        store = await open_store(db)
        try:
            assert (await handoff.queue_answer(store, sid, APPROVE)).error is None
        finally:
            await store.close()

    run(answer())
    effects = tmp_path / "effects"
    wait_for(lambda: effects.exists() and "pay" in effects.read_text(), "the turn is running (pay did its effect)")
    proc.terminate()  # SIGTERM
    proc.join(120)
    assert proc.exitcode == 0
    assert run(_state(db, invs))[sid] == ("COMPLETED", None)  # finished, not abandoned
    assert sum(crash_app.read_effects(effects).values()) == 5


# ----------------------------------------------------------------- version skew
def test_other_graph_version_is_refused(db: str, tmp_path: Path) -> None:
    sid, inv = one_session(db)

    async def body() -> None:
        store = await open_store(db)
        try:
            assert await store.invocation_graph(sid, inv, "0123456789ab") == "0123456789ab"  # started under other code
            assert (await handoff.queue_answer(store, sid, APPROVE)).error is None
            before = (await store.get_session(sid)).last_seq
            results: list[Any] = []
            worker = Worker(store, {APP: crash_app.workflow}, heartbeat=0.2, on_result=results.append)
            task = asyncio.ensure_future(worker.run())
            try:
                deadline = time.monotonic() + 60
                while not results and time.monotonic() < deadline:
                    await asyncio.sleep(0.02)
            finally:
                worker.stop()
                await task
            assert [r.outcome for r in results] == ["refused"]
            req = await store.get_turn_request(sid, inv)
            assert req is not None and req.claimed_by is None
            assert "started under graph version 0123456789ab" in req.note
            assert f"this worker runs version {worker.versions[APP]}" in req.note
            assert (await store.get_session(sid)).last_seq == before  # nothing ran
        finally:
            await store.close()

    run(body())
