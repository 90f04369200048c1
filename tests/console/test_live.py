"""Live updates: a session written by someone else changes on screen within a second,
node by node (the tree is not rebuilt)."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

from console.screens.session import SessionScreen
from console.screens.sessions import SessionsScreen
from console.widgets.event_log import EventLog
from engine import Content, Runner

from .conftest import drive, make_app, settle
from .scenarios import build_store, refund_wf


async def wait_until(pilot: Any, predicate: Any, timeout: float = 30.0) -> None:
    """Wait until ``predicate()`` holds (a generous deadline against hangs, not a
    latency check: how fast the tree follows is measured in benchmarks/bench_console.py)."""
    start = time.monotonic()
    while not predicate():
        if time.monotonic() - start > timeout:
            raise AssertionError("condition not met in time")
        await pilot.pause(0.05)


def label(screen: SessionScreen, path: str) -> str:
    node = screen.run_tree.node_for(path)
    return "" if node is None else node.label.plain  # type: ignore[union-attr]


async def test_resume_by_another_task_updates_the_tree_in_place():
    store = await build_store()
    app = make_app(store, poll_interval=0.1)
    async with app.run_test(size=(120, 34)) as pilot:
        screen = await drive(pilot, session="refund-partial", expect=SessionScreen)
        fetch_node = screen.run_tree.node_for("refund@1/fetch@1")
        legal_node = screen.run_tree.node_for("refund@1/legal@1")
        assert "WAITING" in label(screen, "refund@1/legal@1")
        before = screen.query_one(EventLog).total

        runner = Runner("refunds", refund_wf, store)

        async def answer(answers: dict[str, Any]) -> None:
            async for _ in runner.run("alice", "refund-partial", Content.from_responses(answers)):
                pass

        await asyncio.create_task(answer({"legal-1": True}))
        await wait_until(pilot, lambda: "COMPLETED" in label(screen, "refund@1/legal@1"))
        assert "answered → true" in label(screen, "refund@1/legal@1")
        assert "WAITING" in label(screen, "refund@1/ops@1")  # partial answer: ops still waits
        assert screen.run_tree.node_for("refund@1/join@1") is None

        await pilot.press("f")  # follow: the cursor goes where things happen
        await asyncio.create_task(answer({"ops-1": False}))
        # A poll that ran while the answer was being written shows pay@1 ended and
        # refund@1 not yet; the next one shows both: wait for the final state.
        await wait_until(
            pilot,
            lambda: all("COMPLETED" in label(screen, p) for p in ("refund@1/pay@1", "refund@1"))
            and "COMPLETED" in str(screen.run_tree.root.label),
        )
        # Updated in place: the same TreeNode objects, new ones only for new runs.
        assert screen.run_tree.node_for("refund@1/fetch@1") is fetch_node
        assert screen.run_tree.node_for("refund@1/legal@1") is legal_node
        assert screen.run_tree.cursor_path == "refund@1/pay@1"
        last = (await store.get_session("refund-partial")).last_seq
        await wait_until(pilot, lambda: screen.query_one(EventLog).total == last)
        log = screen.query_one(EventLog)
        assert log.total > before and log.cursor_seq == last  # follow keeps the log at its tail
        assert log.line(last) is not None and log.line(last).kind == "end"  # type: ignore[union-attr]


async def test_new_invocation_appears_in_the_picker():
    store = await build_store()
    app = make_app(store, poll_interval=0.1)
    async with app.run_test(size=(120, 34)) as pilot:
        await drive(pilot, session="refund-done")
        screen = app.screen
        assert isinstance(screen, SessionScreen) and len(screen.invocations) == 1
        runner = Runner("refunds", refund_wf, store)
        async for _ in runner.run("alice", "refund-done", Content.from_text("order-3")):
            pass
        await wait_until(pilot, lambda: len(screen.invocations) == 2)
        assert screen.check_action("pick_invocation", ()) is True


async def test_sessions_list_refreshes_in_place():
    store = await build_store()
    app = make_app(store, refresh_interval=0.1)
    async with app.run_test(size=(120, 34)) as pilot:
        screen = await drive(pilot, expect=SessionsScreen)
        await pilot.press("o")  # every session by activity (triage lists only what needs attention)
        await settle(pilot)
        runner = Runner("refunds", refund_wf, store)
        async for _ in runner.run("alice", "refund-partial", Content.from_responses({"legal-1": True, "ops-1": True})):
            pass
        await wait_until(pilot, lambda: next(r for r in screen.rows if r.id == "refund-partial").status == "completed")


CHILD = textwrap.dedent(
    """
    import asyncio, sys
    sys.path.insert(0, {root!r})
    from engine import Content, Runner
    from engine.store import open_store
    from tests.console.scenarios import refund_wf

    async def main():
        store = await open_store({db!r})
        runner = Runner("refunds", refund_wf, store)
        async for _ in runner.run("alice", "refund-partial", Content.from_responses({{"legal-1": True, "ops-1": True}})):
            pass
        await store.close()

    asyncio.run(main())
    """
)


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
async def test_another_process_writes_the_store(kind: str, tmp_path: Path):
    """SQLite: the screen's poll brings another process's events. PostgreSQL: the
    screen follows LISTEN/NOTIFY -- with a poll interval far beyond the deadline,
    only a notification can bring them on screen."""
    from tests.contract.builders import location, open_store

    from .conftest import copy_into_store

    seed = await build_store()
    store = await open_store(kind, tmp_path)
    await copy_into_store(seed, store)
    app = make_app(store, poll_interval=0.2 if kind == "sqlite" else 3600)
    async with app.run_test(size=(120, 34)) as pilot:
        screen = await drive(pilot, session="refund-partial", expect=SessionScreen)
        assert "WAITING" in label(screen, "refund@1")
        if kind == "postgres":
            await wait_until(pilot, lambda: screen._listener is not None)
        root = str(Path(__file__).resolve().parents[2])
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-c", CHILD.format(root=root, db=str(location(store))), stderr=subprocess.PIPE
        )
        _, err = await proc.communicate()
        assert proc.returncode == 0, err.decode()
        await wait_until(pilot, lambda: "COMPLETED" in label(screen, "refund@1/pay@1"))
        assert "COMPLETED" in label(screen, "refund@1")
    await store.close()
