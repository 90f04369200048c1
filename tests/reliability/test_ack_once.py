"""An operator's in-doubt acknowledgement covers exactly the runs it names, once
(issue 42.1), against SQLite and PostgreSQL, with real worker processes.

The kill loop: 3 workers of :mod:`tests.reliability.ack_app` (``approve ->
charge -> ledger -> notify``, three side effects), answers queued for 20
sessions, workers SIGKILLed at planned points (a node begun; its effect done,
no end record) and at random moments, >= 30 kills per store. Each time a turn
is held for nodes in doubt, the test is the operator: it reads what is in doubt
(what ``hitl show`` shows), *checks* those effects (undoes them: counts them as
compensated), and sends an acknowledged re-drive through a worker naming what
it saw, with a reason of its own. A worker killed while it runs that re-drive
must not stretch the acknowledgement over a node that went in doubt later.

Asserted: every side effect happened once (effects - compensated == 1 for every
session and node), every invocation completed with a contiguous log, and every
acknowledgement's audit row (``re-drove, acknowledged in doubt: ...``) names only
paths its operator saw, with that operator's reason.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import random
import signal
import time
from pathlib import Path
from typing import Any

import pytest

from engine import Runner, handoff
from engine.liveness import invocation_health
from engine.models import NodeStatus
from engine.resume import load_invocation
from engine.store import open_store
from tests.reliability import ack_app
from tests.reliability.conftest import start_orders

SESSIONS = 20
WORKERS = 3
MIN_KILLS = 30
LOOP_BOUND = 90.0  # seconds: the loop gives up (and fails) after this
PLANS = [
    {"charge": "after", "ledger": "after"},  # the repro
    {"charge": "after", "ledger": "begin", "notify": "after"},
    {"charge": "begin", "ledger": "after"},
    {"ledger": "after", "notify": "after"},
]


@pytest.fixture(params=["sqlite", "postgres"])
def db(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return str(tmp_path / "ack.sqlite")
    from tests.contract.builders import pg_fresh_url

    return pg_fresh_url()


def _context() -> Any:
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(["engine", "engine.worker", "engine.store.sqlite", "engine.store.postgres",
                                "tests.reliability.ack_app"])
    return ctx


async def _make_sessions(store: Any) -> dict[str, str]:
    return await start_orders(Runner(ack_app.APP, ack_app.workflow, store), store, SESSIONS)


async def _operator_pass(
    store: Any, invs: dict[str, str], effects: Path, acks: dict[str, list[str]], compensated: dict[str, int]
) -> None:
    """Acknowledge every turn held for nodes in doubt, naming what is shown."""
    for sid, inv in invs.items():
        req = await store.get_turn_request(sid, inv)
        if req is None or req.held is None:
            continue
        health = await invocation_health(store, sid, inv)
        if not health.interrupted or not health.in_doubt:
            continue
        seen = list(health.in_doubt)
        done = ack_app.count_lines(effects)
        for path in seen:  # checked: whatever those runs did is undone
            compensated[f"{sid} {path}"] = done.get(f"{sid} {path}", 0)
        reason = f"checked {', '.join(seen)} (ack {len(acks)})"
        await handoff.request_redrive(store, sid, inv, acknowledge_in_doubt=seen, operator="ann", reason=reason)
        acks[reason] = seen


async def _kill_loop(db: str, tmp: Path) -> tuple[int, int, dict[str, list[str]], dict[str, int], dict[str, str]]:
    store = await open_store(db, busy_timeout=30)
    ctx = _context()
    procs: list[Any] = []
    spec = {"db": db, "dir": str(tmp)}

    def start() -> None:
        p = ctx.Process(target=ack_app.worker_child, args=(spec,), daemon=True)
        p.start()
        procs.append(p)

    try:
        invs = await _make_sessions(store)
        (tmp / "plan.json").write_text(
            __import__("json").dumps({sid: PLANS[i % len(PLANS)] for i, sid in enumerate(sorted(invs))})
        )
        for _ in range(WORKERS):
            start()
        for sid in invs:
            done = await handoff.queue_answer(store, sid, {"approve": {"approved": True}}, operator="op")
            assert done.error is None, done.error
        rng = random.Random(42)
        acks: dict[str, list[str]] = {}
        compensated: dict[str, int] = {}
        kills = external = 0
        next_external = time.monotonic() + rng.uniform(0.3, 0.8)
        deadline = time.monotonic() + LOOP_BOUND
        while True:
            for p in [p for p in procs if not p.is_alive() and p.exitcode is not None and not getattr(p, "_seen", 0)]:
                p._seen = 1
                kills += p.exitcode == -signal.SIGKILL
                start()
            states = {sid: (await load_invocation(store, sid, inv)).invocation_status(inv) for sid, inv in invs.items()}
            if all(s is NodeStatus.COMPLETED for s in states.values()) and all(
                [await store.get_turn_request(sid, inv) is None for sid, inv in invs.items()]
            ):
                break
            assert time.monotonic() < deadline, f"not settled after {LOOP_BOUND}s: {states}"
            alive = [p for p in procs if p.is_alive()]
            if time.monotonic() >= next_external and external < 10 and alive:  # (all may have killed themselves just now)
                victim = rng.choice(alive)
                victim.kill()  # Process.kill: it may have killed itself since is_alive()
                external += 1
                next_external = time.monotonic() + rng.uniform(0.3, 0.8)
            await _operator_pass(store, invs, tmp / "effects", acks, compensated)
            await asyncio.sleep(0.05)
        for p in procs:
            if p.is_alive():
                p.terminate()
        for p in procs:
            p.join(30)
        return kills, external, acks, compensated, invs
    finally:
        await store.close()


async def _audit(db: str, invs: dict[str, str]) -> dict[str, Any]:
    store = await open_store(db, read_only=True)
    try:
        out = {}
        for sid in invs:
            events = await store.events(sid)
            out[sid] = {
                "seqs": [e.seq for e in events],
                "ids": [e.event.id for e in events],
                "acks": [e.event.custom_metadata for e in events
                         if e.event.kind == "redrive" and (e.event.custom_metadata or {}).get("in_doubt")],
            }
        return out
    finally:
        await store.close()


def test_an_acknowledgement_covers_what_it_names_once(db: str, tmp_path: Path) -> None:
    kills, external, acks, compensated, invs = asyncio.run(_kill_loop(db, tmp_path))
    assert kills >= MIN_KILLS, kills
    effects = ack_app.count_lines(tmp_path / "effects")
    twice = {}
    for sid in invs:
        for name in ack_app.EFFECT_NODES:
            key = f"{sid} ledger_flow@1/{name}@1"
            net = effects.get(key, 0) - compensated.get(key, 0)
            if net != 1:
                twice[key] = (effects.get(key, 0), compensated.get(key, 0))
    audit = asyncio.run(_audit(db, invs))
    overreach = []
    for sid, a in audit.items():
        assert a["seqs"] == list(range(1, len(a["seqs"]) + 1)) and len(set(a["ids"])) == len(a["ids"]), sid
        for meta in a["acks"]:
            seen = acks.get(meta.get("reason"))
            if meta.get("operator") != "ann" or seen is None or not set(meta["in_doubt"]) <= set(seen):
                overreach.append((sid, meta))
    print(f"\nack kill loop: {kills} SIGKILLs ({external} external), {len(acks)} acknowledgements, "
          f"{len(twice)} effects not exactly once, {len(overreach)} audit rows naming what the operator did not see")
    assert twice == {}, f"side effects not exactly once (effects, compensated): {twice}"
    assert overreach == [], overreach
