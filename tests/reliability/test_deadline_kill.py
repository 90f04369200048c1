"""1,000 deadlines firing across 3 worker processes that are SIGKILLed at random
(SQLite and PostgreSQL): none lost, none fired twice, each default answer
audited exactly once.

The workers' deadline sweep runs on a clock four hours and a minute ahead, so
every deadline has passed for them from the start (no test waits for a deadline
to pass). Workers are killed at random points -- inside a sweep, between an
answer and its timer's record, inside a turn -- and replaced; the loop is
bounded (a number of kills, then a bounded wait for the store to settle). The
figures are printed (``-s``) and asserted.
"""

from __future__ import annotations

import asyncio
import os
import random
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from engine import Content, Runner
from engine.resume import load_invocation
from engine.store import open_store
from engine.store.deadlines import timers
from tests.engine import deadline_app as app
from tests.reliability.deadline_procs import context, worker_child

pytestmark = pytest.mark.kill

N = 1000
KILLS = 12
HOUR = 3600.0


@pytest.fixture(params=["sqlite", "postgres"])
def db(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return str(tmp_path / "deadlines.sqlite")
    from tests.contract.builders import pg_fresh_url

    return pg_fresh_url()


async def _make(url: str) -> dict[str, str]:
    """``N`` sessions each waiting on one interrupt with a 4 h default answer; session -> invocation."""
    store = await open_store(url)
    try:
        runner = Runner(app.APP, app.single, store)
        out = {}
        for i in range(N):
            sid = f"d{i:04d}"
            events = [e async for e in runner.run("u", sid, Content.from_text(f"order-{i}"))]
            out[sid] = events[0].invocation_id
        return out
    finally:
        await store.close()


async def _progress(url: str) -> tuple[int, int]:
    """(pending timers, turn requests) left."""
    store = await open_store(url, read_only=True)
    try:
        pending = await timers(store).listing(status="pending", limit=N + 1)
        return len(pending), len(await store.turn_requests())  # type: ignore[attr-defined]
    finally:
        await store.close()


async def _report(url: str, invs: dict[str, str]) -> dict[str, Any]:
    store = await open_store(url, read_only=True)
    try:
        statuses: Counter[str] = Counter()
        outputs: Counter[str] = Counter()
        answers_per_session: Counter[int] = Counter()
        for sid, inv in invs.items():
            proj = await load_invocation(store, sid, inv)
            statuses[proj.invocation_status(inv).value] += 1
            outputs[repr(proj.get(inv, "quick@1/approve@1").output)] += 1
            answers_per_session[sum(1 for e in await store.events(sid) if e.event.kind == "response")] += 1
        audit: Counter[str] = Counter()
        cursor = None
        while True:
            page = await store.audit_log(action="answer", limit=1000, cursor=cursor)
            audit.update(r.session_id for r in page.items if r.operator == "deadline")
            cursor = page.next_cursor
            if cursor is None:
                break
        rows = await timers(store).listing(limit=N + 1)
        return {"statuses": statuses, "outputs": outputs, "answers_per_session": answers_per_session,
                "audit": audit, "timers": Counter(t.status for t in rows),
                "void_outcomes": Counter(t.outcome for t in rows if t.status == "void")}
    finally:
        await store.close()


def test_1000_deadlines_three_workers_sigkilled(db: str, tmp_path: Path) -> None:
    invs = asyncio.run(_make(db))
    ctx = context()
    spec = {"db": db, "offset": app.HOURS * HOUR + 60, "claim_ttl": 3.0, "heartbeat": 0.2, "batch": 25,
            "ready": str(tmp_path / "ready")}
    procs: list[Any] = []

    def start() -> None:
        p = ctx.Process(target=worker_child, args=(spec,), daemon=True)
        p.start()
        procs.append(p)

    started = time.monotonic()
    for _ in range(3):
        start()
    rng = random.Random(37)
    kills = 0
    for _ in range(KILLS):  # bounded: KILLS kills, each at a random point, each replaced at once
        time.sleep(rng.uniform(0.1, 0.6))
        alive = [p for p in procs if p.is_alive()]
        victim = rng.choice(alive)
        victim.kill()  # Process.kill: it may have exited since is_alive()
        victim.join(10)
        kills += 1
        start()
    left = (-1, -1)
    for _ in range(3000):  # bounded wait for the survivors to finish (claims of the killed lapse after 3 s)
        left = asyncio.run(_progress(db))
        if left == (0, 0):
            break
        time.sleep(0.1)
    elapsed = time.monotonic() - started
    ready = Path(spec["ready"])
    for _ in range(600):  # bounded: a survivor started last may not have its SIGTERM handler yet
        said = set(ready.read_text(encoding="utf-8").split()) if ready.exists() else set()
        if all(str(p.pid) in said for p in procs if p.is_alive()):
            break
        time.sleep(0.05)
    for p in procs:
        if p.is_alive():
            p.terminate()
    codes = [p.join(60) or p.exitcode for p in procs]
    assert left == (0, 0), f"pending timers, turn requests left: {left}"
    r = asyncio.run(_report(db, invs))
    store_kind = "postgres" if db.startswith("postgresql") else "sqlite"
    print(f"\n[{store_kind}] {N} deadlines, 3 workers, {kills} SIGKILLs, {elapsed:.1f} s (load {os.getloadavg()[0]:.1f}): "
          f"timers {dict(r['timers'])}, void because already answered {sum(r['void_outcomes'].values())}, "
          f"answers per session {dict(r['answers_per_session'])}, deadline audit rows {sum(r['audit'].values())}")
    assert kills == KILLS
    assert codes[-3:] == [0, 0, 0]  # the survivors drained on SIGTERM
    assert r["statuses"] == Counter({"COMPLETED": N})  # 0 lost
    assert r["answers_per_session"] == Counter({1: N})  # 0 fired twice
    assert r["outputs"] == Counter({"{'approved': False}": N})
    assert sorted(r["audit"]) == sorted(invs) and set(r["audit"].values()) == {1}  # each audited once
    assert r["timers"]["pending"] == 0 and r["timers"]["fired"] + r["timers"]["void"] == N
    # a timer is void only when its answer was written by a sweeper killed before recording it
    assert set(r["void_outcomes"]) <= {"the interrupt was answered, cancelled or asked again before it was due"}
