"""``hitl worker`` sends the [notify] rules' notifications too: a worker started
on a store with open interrupts delivers them to a loopback receiver, and drains
on SIGTERM."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

from tests.api.conftest import fill
from tests.browser.served import hitl_bin
from tests.contract.builders import open_store

from .receivers import HttpReceiver
from .test_notify_kill import BOUND, write_config


async def test_a_worker_delivers_the_notifications_and_drains(tmp_path: Path) -> None:
    store = await open_store("sqlite", tmp_path)
    await fill(store)
    db = store.path  # type: ignore[attr-defined]
    await store.close()
    hook = await HttpReceiver().start()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    proc = await asyncio.create_subprocess_exec(
        hitl_bin(), "--db", str(db), "--config", str(write_config(tmp_path, hook.url)), "worker",
        "--app", "refund_approval=sample_sessions.refund_approval:workflow", "--heartbeat", "0.2",
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    try:
        async def six() -> None:
            while len({json.loads(r.body)["id"] for r in hook.got}) < 6:
                hook.arrived.clear()
                await hook.arrived.wait()

        await asyncio.wait_for(six(), BOUND)
    finally:
        proc.send_signal(signal.SIGTERM)
        out, err = await asyncio.wait_for(proc.communicate(), BOUND)
        await hook.stop()
    assert proc.returncode == 0, err.decode()
    assert "sending notifications for 1 rule(s)" in out.decode() and "drained and stopped" in out.decode()
    assert {json.loads(r.body)["interrupt_id"] for r in hook.got} == {
        f"{k}-order-{n}" for k in ("finance", "risk") for n in (1, 2, 3)}
