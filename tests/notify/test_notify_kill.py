"""A sender killed mid-delivery, again and again: nothing is lost, and every
duplicate carries the key of the notification it repeats.

``hitl notify`` runs as a process against a SQLite store of open interrupts,
sending to a loopback receiver that holds each request before answering; the
test SIGKILLs the process while a request is held (sent, not yet recorded),
at least 20 times, then lets a sender finish. Every expected key arrives,
no other key arrives, and the ledger says every one was sent."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from engine.store.notify import ledger
from tests.api.conftest import fill
from tests.browser.served import hitl_bin
from tests.contract.builders import open_store

from .receivers import HttpReceiver

pytestmark = pytest.mark.kill

KILLS = 20
BOUND = 60.0
"""Longest wait for the receiver to see a request (a bound against a hang, not an assertion)."""


def write_config(directory: Path, url: str) -> Path:
    path = directory / "hitl.toml"
    path.write_text(f"""[notify]
retry_seconds = 0.01
max_retry_seconds = 0.01

[notify.channels.ops]
type = "webhook"
url = "{url}"
secret = "kill-test-secret"

[[notify.rules]]
on = ["interrupt_opened"]
channels = ["ops"]
""", encoding="utf-8")
    return path


async def test_killing_the_sender_mid_delivery_loses_nothing(tmp_path: Path) -> None:
    store = await open_store("sqlite", tmp_path)
    await fill(store)
    db = store.path  # type: ignore[attr-defined]
    await store.close()
    hook = await HttpReceiver(held=True).start()  # a request waits, sent and unanswered, until the kill
    config = write_config(tmp_path, hook.url)
    argv = [hitl_bin(), "--db", str(db), "--config", str(config), "notify", "--poll", "0.05", "--claim-ttl", "0.2"]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    try:
        for _ in range(KILLS):
            hook.arrived.clear()
            proc = await asyncio.create_subprocess_exec(*argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                                        env=env)
            try:
                await asyncio.wait_for(hook.arrived.wait(), BOUND)
            finally:
                proc.send_signal(signal.SIGKILL)
                await proc.wait()
        assert len(hook.got) >= KILLS
        hook.release()
        once = [*argv[:-4], "--once", "--claim-ttl", "0.2"]
        for _ in range(20):  # bounded: a claim the last kill left lapses after 0.2 s
            proc = await asyncio.create_subprocess_exec(*once, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
            _, err = await proc.communicate()
            assert proc.returncode == 0, err.decode()
            store = await open_store("sqlite", tmp_path, path=db)
            try:
                rows = await ledger(store).deliveries(limit=1000)
            finally:
                await store.close()
            if len(rows) == 6 and all(r.status == "sent" for r in rows):
                break
            await asyncio.sleep(0.2)
        assert len(rows) == 6 and {r.status for r in rows} == {"sent"}, rows
        expected = {r.key for r in rows}
        keys = [json.loads(r.body)["id"] for r in hook.got]
        assert set(keys) == expected  # nothing lost, nothing else sent
        assert all(r.headers["X-Hitl-Delivery"] == json.loads(r.body)["id"] for r in hook.got)  # a duplicate has its key
        assert len(keys) > len(expected)  # the kills did make duplicates
    finally:
        await hook.stop()
