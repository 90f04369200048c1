"""PostgreSQL reliability: a writer SIGKILLed between appends loses no
acknowledged event and leaves no transaction or lock behind; the invocation
it ran is seen interrupted and the operator completes it. (N processes
answering at once and a tailing reader run in test_concurrency.py, on both
backends.)"""

from __future__ import annotations

import asyncio
import signal
from collections import Counter
from pathlib import Path

import pytest

from engine import Content, Runner
from engine.liveness import session_health
from engine.models import NodeStatus
from engine.projection import project
from engine.store.postgres import PostgresStore
from tests.contract.builders import pg_fresh_url

from . import crash_app
from .workers import context, crash_child

YES = {"approved": True, "note": "ok"}


def _run_child(spec: dict) -> int:
    proc = context().Process(target=crash_child, args=(spec,), daemon=True)
    proc.start()
    proc.join(60)
    try:
        assert proc.exitcode is not None, "child hung"
        return proc.exitcode
    finally:
        if proc.is_alive():
            proc.kill()
            proc.join()


def _acks(path: Path) -> list[tuple[int, str]]:
    out = []
    for line in path.read_text().splitlines():
        if line.startswith("ack "):
            _, seq, eid = line.split()
            out.append((int(seq), eid))
    return out


@pytest.mark.parametrize("kill_after", [1, 2, "release"])
def test_sigkill_of_a_writer_loses_nothing_and_holds_nothing(
    kill_after: int | str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = pg_fresh_url()
    effects = tmp_path / "effects.log"
    monkeypatch.setenv("HITL_CRASH_EFFECTS", str(effects))

    async def make() -> None:
        async with PostgresStore.open(url) as store:
            await store.create_session(crash_app.APP, "u", "n")

    asyncio.run(make())
    acks = tmp_path / "acks.log"
    spec = {
        "db": url,
        "session": "n",
        "effects": str(effects),
        "acks": str(acks),
        "turns": [{"kind": "start", "text": "order-9"}],
        "kill_after_append": kill_after,
    }
    assert _run_child(spec) == -signal.SIGKILL
    acked = _acks(acks)
    commits = acks.read_text().splitlines().count("commit")
    if kill_after != "release":
        assert commits == kill_after  # killed after that many commits

    async def after_kill() -> None:
        # busy_timeout 2s: a lock the dead writer still held would fail the writes below
        async with PostgresStore.open(url, busy_timeout=2) as store:
            events = await store.events("n")
            assert [e.seq for e in events] == list(range(1, len(events) + 1))
            assert len({e.event.id for e in events}) == len(events)
            by_seq = {e.seq: e.event.id for e in events}
            assert all(by_seq.get(seq) == eid for seq, eid in acked), "an acknowledged event is missing"
            # an append in flight in a parallel branch may have committed unacknowledged
            assert len(events) >= commits
            assert store._pool is not None
            async with store._pool.acquire() as conn:
                left = await conn.fetchval(
                    "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
                    " AND state LIKE 'idle in transaction%' AND pid <> pg_backend_pid()"
                )
            assert left == 0, "the dead writer left a transaction open"
            (inv,) = [i.invocation_id for i in await store.list_invocations("n")]
            health = (await session_health(store, "n"))[inv]
            runner = Runner(crash_app.APP, crash_app.workflow, store)
            if kill_after == "release":
                # killed after the start's last commit: the root's end with the lease's release
                assert not health.interrupted and health.status is NodeStatus.WAITING, health
                assert health.lease is None, health
            else:
                assert health.interrupted, health
                async for _ in runner.run("u", "n", invocation_id=inv, acknowledge_in_doubt=True):
                    pass
            events = await store.events("n")
            raised = Counter(c.id for e in events for c in e.event.interrupt_calls)
            assert raised == {"finance": 1, "risk": 1}, raised
            async for _ in runner.run("u", "n", Content.from_responses({"finance": YES, "risk": YES})):
                pass
            proj = project([(s.seq, s.event) for s in await store.events("n")])
            assert proj.invocation_status(inv) is NodeStatus.COMPLETED

    asyncio.run(after_kill())
