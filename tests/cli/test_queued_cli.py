"""Issue 18 from the operator's shell: an answer left to a worker reads "queued
for a worker" in ``hitl sessions`` (both paths: the SQLite fast path and the
store's) and ``hitl show``, with ``--json`` too; the ``queued`` filter lists it
and ``interrupted`` does not. ``hitl bulk-answer`` without the app's code
validates against the stored schema, queues every item with one batch id,
says once that no worker is alive, and a worker then runs the turns."""

from __future__ import annotations

import asyncio
import json
import threading
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from console.cli import cli
from engine.models import NodeStatus
from tests.cli import ghost_app

from .conftest import Hitl, ok
from .helpers import invocation_ids, projection, session_events, start_session
from .test_cli import a_ghost_worker_follows


def _store_path(db: Path, *args: str) -> str:
    """The same command through the store (a ``sqlite:///`` URL skips the fast listing)."""
    result = CliRunner().invoke(cli, ["--db", f"sqlite:///{db}", *args], catch_exceptions=True)
    return ok(result)


def _row(table: str, sid: str) -> str:
    return next(line for line in table.splitlines() if line.startswith(sid + " "))


def test_a_queued_answer_reads_queued_in_sessions_and_show(hitl: Hitl, db: Path) -> None:
    start_session(db, "ghost", ghost_app.workflow, "ghost-q", "hello")
    (inv,) = invocation_ids(db, "ghost-q")
    ok(hitl("resume", "ghost-q", "boo=true", "--no-wait"))

    for table in (ok(hitl("sessions", "--limit", "1000")), _store_path(db, "sessions", "--limit", "1000")):
        row = _row(table, "ghost-q")
        assert "queued for a worker" in row and "interrupted" not in row, row
        assert "queued for a worker: an answer is stored and its turn waits for a worker of the app" in table
    for listing in (ok(hitl("sessions", "--json", "--limit", "1000")),
                    _store_path(db, "sessions", "--json", "--limit", "1000")):
        rows = {s["id"]: s for s in json.loads(listing)["sessions"]}
        assert (rows["ghost-q"]["queued"], rows["ghost-q"]["interrupted"]) == ([inv], [])

    def ids(*args: str) -> set[str]:
        return {s["id"] for s in json.loads(ok(hitl("sessions", "--json", "--limit", "1000", *args)))["sessions"]}

    assert "ghost-q" in ids("--status", "queued")
    assert "ghost-q" not in ids("--status", "interrupted")

    text = ok(hitl("show", "ghost-q"))
    assert f"invocation {inv}  QUEUED for a worker of ghost (projection: PENDING)" in text
    assert "queued for a worker of ghost: the turn is stored and waits for a worker of ghost" in text
    assert "stored; no worker for ghost is alive" in text
    assert "interrupted mid-run" not in text and "hitl redrive" not in text
    health = json.loads(ok(hitl("show", "ghost-q", "--json")))["invocations"][0]["health"]
    assert (health["queued"], health["interrupted"], health["display"]) == (True, False, "QUEUED")
    assert health["worker_notice"].startswith("stored; no worker for ghost is alive")

    assert a_ghost_worker_follows(db, "ghost-q", inv) == "settled"
    text = ok(hitl("show", "ghost-q"))
    assert f"invocation {inv}  COMPLETED" in text and "queued" not in text
    assert "ghost-q" not in ids("--status", "queued")


def test_bulk_answer_without_the_code_is_queued_for_a_worker(hitl: Hitl, db: Path) -> None:
    invs = {}
    for sid in ("ghost-b1", "ghost-b2"):
        start_session(db, "ghost", ghost_app.workflow, sid, "hello")
        invs[sid] = invocation_ids(db, sid)[0]
    before = {sid: len(session_events(db, sid)[1]) for sid in invs}

    # the stored schema still decides: a string is no boolean, nothing is written
    result = hitl("bulk-answer", "app=ghost", "--answer", '"maybe"')
    assert result.exit_code == 1 and "2 refused" in result.stdout
    # --via local: no code here, refused as before
    dry = hitl("bulk-answer", "app=ghost", "--answer", "true", "--dry-run", "--via", "local")
    assert dry.exit_code == 1 and "not registered" in dry.stdout
    dry = ok(hitl("bulk-answer", "app=ghost", "--answer", "true", "--dry-run"))
    assert "2 auto-complete, 0 re-execute, 0 refused; 2 left to a worker" in dry
    assert dry.count("(a worker of ghost runs it)") == 2
    assert {sid: len(session_events(db, sid)[1]) for sid in invs} == before

    text = ok(hitl("bulk-answer", "app=ghost", "--answer", "true", "--no-wait", "--reason", "monthly"))
    lines = text.splitlines()
    notice = [n for n, line in enumerate(lines) if line.startswith("stored; no worker for ghost is alive")]
    queued = [n for n, line in enumerate(lines) if line.strip().startswith("queued ")]
    assert len(notice) == 1 and len(queued) == 2 and notice[0] < queued[0], text
    assert "-> answered, queued for a worker of ghost" in lines[queued[0]]
    assert "2 queued for a worker" in text and "not waiting (--no-wait)" in text
    batches = set()
    for sid, inv in invs.items():
        answer = [s.event for s in session_events(db, sid)[1] if s.event.kind == "response"]
        assert len(answer) == 1 and answer[0].custom_metadata["reason"] == "monthly"
        batches.add(answer[0].custom_metadata["batch"])
        assert projection(db, sid).invocation_status(inv) is NodeStatus.PENDING  # queued, not run here
    (batch,) = batches
    assert f"batch {batch}: 0 applied, 2 queued for a worker, 0 refused of 2 invocations" in text
    audit = json.loads(ok(hitl("audit", "--json", "--limit", "1000")))["audit"]
    assert sum(1 for row in audit if (row.get("details") or {}).get("batch") == batch) == 2

    for sid, inv in invs.items():
        assert a_ghost_worker_follows(db, sid, inv) == "settled"
        assert projection(db, sid).invocation_status(inv) is NodeStatus.COMPLETED


def test_bulk_answer_follows_the_workers_turns_until_they_settle(hitl: Hitl, db: Path) -> None:
    start_session(db, "ghost", ghost_app.workflow, "ghost-w", "hello")
    (inv,) = invocation_ids(db, "ghost-w")
    started, stop = threading.Event(), threading.Event()

    def serve() -> None:  # a worker with the ghost app's code, in another thread (its own loop)
        from engine.store.sqlite import SQLiteStore
        from engine.worker import Worker

        async def go() -> None:
            async with SQLiteStore.open(db) as store:
                worker = Worker(store, {"ghost": ghost_app.workflow}, heartbeat=2.0)  # live for 6 s after a beat (checked by bulk-answer)
                task = asyncio.ensure_future(worker.run())
                while not await _live(store):
                    await asyncio.sleep(0.05)
                started.set()
                while not stop.is_set():
                    await asyncio.sleep(0.05)
                worker.stop()
                await task

        asyncio.run(go())

    thread = threading.Thread(target=serve)
    thread.start()
    try:
        assert started.wait(60), "the worker never recorded its heartbeat"
        text = ok(hitl("bulk-answer", "app=ghost", "--answer", "true", "--wait-timeout", "60"))
    finally:
        stop.set()
        thread.join(60)
    assert "no worker for ghost is alive" not in text
    assert f"settled  ghost-w / {inv}: boo -> COMPLETED" in text
    assert projection(db, "ghost-w").invocation_status(inv) is NodeStatus.COMPLETED


async def _live(store: Any) -> bool:
    from engine import handoff

    return bool(await handoff.live_workers(store, "ghost"))
