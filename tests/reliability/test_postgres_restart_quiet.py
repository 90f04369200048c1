"""A PostgreSQL restart in the middle of a ``hitl resume`` turn (issue 42.3):
nothing is lost, the command exits 0, and what it says about the restart is one
line that the connection was restored (and, past two seconds of waiting, one
that it is reconnecting) -- never asyncpg's "Failed to restore the pool
connection floor" warning with its traceback."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from engine import Content, Runner
from engine.models import NodeStatus
from engine.resume import load_invocation
from engine.store.postgres import PostgresStore
from tests.contract.builders import pg_fresh_url
from tests.reliability import crash_app
from tests.reliability.test_postgres_faults import _pg_ctl

REPO = Path(__file__).resolve().parents[2]
APPROVE = {"finance": {"approved": True}, "risk": {"approved": True}}


async def _waiting(url: str) -> str:
    async with PostgresStore.open(url) as store:
        async for _ in Runner(crash_app.APP, crash_app.workflow, store).run("u", "r1", Content.from_text("order-1")):
            pass
        return (await store.list_invocations("r1"))[0].invocation_id


async def _status(url: str, inv: str) -> tuple[NodeStatus | None, list[int]]:
    async with PostgresStore.open(url, read_only=True) as store:
        proj = await load_invocation(store, "r1", inv)
        return proj.invocation_status(inv), [e.seq for e in await store.events("r1")]


def test_a_restart_mid_turn_says_one_line(tmp_path: Path) -> None:
    url = pg_fresh_url()
    inv = asyncio.run(_waiting(url))
    effects = tmp_path / "effects"
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO),
        "HITL_CRASH_EFFECTS": str(effects),
        "HITL_CRASH_DELAY": "4",  # pay and label sleep: the restart lands inside the turn
    }
    argv = [sys.executable, "-m", "console.cli", "--db", url, "resume", "r1",
            *[f"{k}={json.dumps(v)}" for k, v in APPROVE.items()],
            "--app", f"{crash_app.APP}=tests.reliability.crash_app:workflow"]
    with open(tmp_path / "out", "wb") as out, open(tmp_path / "err", "wb") as err:
        proc = subprocess.Popen(argv, env=env, stdout=out, stderr=err, cwd=REPO)
        deadline = time.monotonic() + 60
        while not (effects.exists() and "pay" in effects.read_text()):
            assert proc.poll() is None and time.monotonic() < deadline, (tmp_path / "err").read_text()
            time.sleep(0.05)
        _pg_ctl("restart", "-m", "fast", "-w", "-t", "60")
        assert proc.wait(120) == 0, (tmp_path / "err").read_text()
    stderr = (tmp_path / "err").read_text()
    status, seqs = asyncio.run(_status(url, inv))
    assert status is NodeStatus.COMPLETED and seqs == list(range(1, len(seqs) + 1))
    assert sum(crash_app.read_effects(effects).values()) == 5  # every effect once
    assert "Traceback" not in stderr and "Failed to restore" not in stderr, stderr
    *waiting, restored = [line for line in stderr.splitlines() if line.strip()]
    assert "connection" in restored and "restored" in restored, stderr
    # a restart that took over two seconds (a loaded machine) was said while waited for: once
    assert len(waiting) <= 1 and all("reconnecting (for up to" in line for line in waiting), stderr
