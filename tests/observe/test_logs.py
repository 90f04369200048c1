"""``--log-format json`` (console/logs.py): one JSON object a line with time,
level, event, ids and message, secrets masked, from a real ``hitl worker``."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

from console import logs
from engine import Content, Runner, handoff
from engine.redact import Redactor
from engine.store import open_store
from tests.reliability import crash_app
from tests.reliability.worker_procs import APPROVE

ROOT = Path(__file__).resolve().parents[2]


def test_a_json_line_masks_secret_named_fields_and_free_text_secrets() -> None:
    red = Redactor()
    red.learn({"password": "hunter2-SEKRET"})
    line = json.loads(logs.json_line(red, "turn.failed", "login with hunter2-SEKRET refused", "error",
                                     session="s1", api_key="k-123", events=3))
    assert line["event"] == "turn.failed" and line["level"] == "error" and line["session"] == "s1"
    assert line["events"] == 3 and line["time"].endswith("Z")
    assert "hunter2-SEKRET" not in json.dumps(line) and "k-123" not in json.dumps(line)


async def test_hitl_worker_logs_one_json_object_a_line(tmp_path: Path) -> None:
    db = tmp_path / "w.sqlite"
    store = await open_store(db)
    try:
        async for _ in Runner(crash_app.APP, crash_app.workflow, store).run("u", "s1", Content.from_text("order-1")):
            pass
        inv = (await store.open_interrupts(session_id="s1", limit=1)).items[0].invocation_id
        assert (await handoff.queue_answer(store, "s1", APPROVE, operator="ann")).error is None
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        proc = subprocess.Popen(
            [sys.executable, "-m", "console.cli", "--db", str(db), "worker", "--log-format", "json",
             "--heartbeat", "0.2", "--app", f"{crash_app.APP}=tests.reliability.crash_app:workflow"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=ROOT,
        )
        try:
            assert await handoff.follow(store, "s1", inv, timeout=60) == "settled"
        finally:
            proc.send_signal(signal.SIGTERM)
            out, err = await asyncio.to_thread(proc.communicate, timeout=60)
        assert proc.returncode == 0, err
        lines = [json.loads(line) for line in out.splitlines()]
        assert all({"time", "level", "event", "message"} <= set(line) for line in lines), lines
        events = [line["event"] for line in lines]
        assert events[0] == "worker.started" and events[-1] == "worker.stopped", events
        [ran] = [line for line in lines if line["event"] == "turn.ran"]
        assert ran["session"] == "s1" and ran["invocation"] == inv and ran["app"] == crash_app.APP
    finally:
        await store.close()
