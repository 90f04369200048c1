"""One read model: ``hitl show`` and the console's node tree render the same rows
(:func:`engine.views.tree_rows`), and the tree shows liveness's INTERRUPTED and
IN DOUBT as display states."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from textual.pilot import Pilot
from textual.widgets.tree import TreeNode

from console.cli import cli
from console.screens.session import SessionScreen
from console.widgets.node_tree import FOLD, NodeTree
from engine.store.sqlite import SQLiteStore
from sample_sessions.demo import EXPECTED, FIXTURE_EPOCH, build_demo_db

from .conftest import details_text, make_app
from .scenarios import build_store

LABEL = re.compile(r"^(?:● )?(?P<node>\S+) \S (?P<word>IN DOUBT|[A-Z]+)\b")
FOLD_LABEL = re.compile(r"^⋯ (?P<n>[\d,]+) earlier runs")


@pytest.fixture(scope="module")
def demo_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("views") / "demo.sqlite"
    asyncio.run(build_demo_db(path, epoch=FIXTURE_EPOCH, long_iterations=4))
    return path


@pytest.fixture(scope="module")
def shown(demo_db: Path) -> dict[str, dict[str, Any]]:
    """``hitl --json show SID`` of every demo session (the rows ``hitl show`` prints)."""
    return {sid: show_json(demo_db, sid) for sid in EXPECTED}


async def wait_for(pilot: Pilot[Any], predicate: Any, message: str, timeout: float = 30.0) -> None:
    """Wait on app state (a generous deadline against hangs, not a latency check)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not predicate():
        if loop.time() > deadline:
            raise AssertionError(f"timed out waiting for {message}")
        await pilot.pause(0.02)


def tree_rows_of(tree: NodeTree) -> tuple[list[tuple[str, int, str]], dict[str, int]]:
    """The runs the widget shows, depth-first (folded runs left out), as
    (node, depth, status word), and per parent path the count its fold shows."""
    rows: list[tuple[str, int, str]] = []
    folds: dict[str, int] = {}

    def visit(node: TreeNode[str], depth: int) -> None:
        for child in node.children:
            data = child.data or ""
            if data.startswith(FOLD):
                m = FOLD_LABEL.match(child.label.plain)
                assert m, child.label.plain
                folds[data[len(FOLD) :]] = int(m["n"].replace(",", ""))
                continue
            m = LABEL.match(child.label.plain)
            assert m, child.label.plain
            rows.append((m["node"], depth, m["word"]))
            visit(child, depth + 1)

    visit(tree.root, 0)
    return rows, folds


def show_json(db: Path, session_id: str) -> dict[str, Any]:
    result = CliRunner().invoke(cli, ["--db", str(db), "--json", "show", session_id])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


async def test_hitl_show_and_the_console_tree_show_the_same_rows(demo_db: Path, shown: dict[str, Any]) -> None:
    store = await SQLiteStore.open(demo_db, read_only=True)
    try:
        app = make_app(store)
        async with app.run_test(size=(120, 40)) as pilot:
            compared = 0
            folded: set[str] = set()
            for sid, data in shown.items():
                for inv in data["invocations"]:
                    inv_id = inv["invocation_id"]
                    app.open_session(sid, invocation_id=inv_id)

                    def ready(inv_id: str = inv_id) -> bool:
                        s = app.screen
                        return (
                            isinstance(s, SessionScreen)
                            and s.view is not None
                            and s.invocation_id == inv_id
                            and s.run_tree.invocation_id == inv_id
                            and not s.history_loading
                        )

                    await wait_for(pilot, ready, f"{sid} {inv_id} loaded")
                    await pilot.app.workers.wait_for_complete()
                    tree = app.screen.query_one(NodeTree)
                    rows, folds = tree_rows_of(tree)
                    expected = [(n["node"], n["depth"], n["display"]) for n in inv["nodes"]]
                    assert rows == expected, (sid, inv_id)
                    # The fold under a parent counts the earlier runs `hitl show` prints on its rows.
                    by_parent: dict[str, int] = {}
                    for n in inv["nodes"]:
                        parent = n["path"].rpartition("/")[0]
                        if n["earlier_runs"] and parent:
                            by_parent[parent] = by_parent.get(parent, 0) + n["earlier_runs"]
                    assert folds == by_parent, (sid, inv_id)
                    compared += len(rows)
                    if folds:
                        folded.add(sid)
                    app.pop_screen()
                    await pilot.pause()
            assert compared > 100  # every demo session, each invocation, really compared
            assert {"deploy-waiting-1", "deploy-long-1"} <= folded  # loops were folded alike
    finally:
        await store.close()


async def test_the_tree_shows_interrupted_and_in_doubt_from_liveness() -> None:
    """billing-stuck: a turn that died in ``fetch`` (start record, no end, no lease).
    The projection alone says RUNNING; the tree says what liveness knows."""
    store = await build_store()
    app = make_app(store)
    async with app.run_test(size=(100, 30)) as pilot:
        app.open_session("billing-stuck")
        await wait_for(pilot, lambda: isinstance(app.screen, SessionScreen) and app.screen.interrupted, "liveness verdict")
        tree = app.screen.query_one(NodeTree)
        rows, _ = tree_rows_of(tree)
        assert rows == [("billing@1", 0, "INTERRUPTED"), ("fetch@1", 1, "IN DOUBT")]
        assert "⚠ INTERRUPTED" in tree.root.label.plain
        # The projection is unchanged: the widget's data still says RUNNING.
        assert tree.proj is not None and tree.proj.get("inv1", "billing@1/fetch@1").status.value == "RUNNING"  # type: ignore[union-attr]
        # A verdict that lapses (the turn resumed elsewhere) turns the words back.
        tree.set_liveness(False, frozenset())
        rows, _ = tree_rows_of(tree)
        assert rows == [("billing@1", 0, "RUNNING"), ("fetch@1", 1, "RUNNING")]


async def test_the_header_and_details_of_a_dead_turn_say_interrupted_and_in_doubt() -> None:
    """The session header and the node's details use the same words as the tree:
    the log's RUNNING is not shown as the status of a turn no process runs."""
    store = await build_store()
    app = make_app(store)
    async with app.run_test(size=(140, 30)) as pilot:
        app.open_session("billing-stuck", path="billing@1/fetch@1")
        await wait_for(pilot, lambda: isinstance(app.screen, SessionScreen) and app.screen.interrupted, "liveness verdict")
        screen = app.screen
        await wait_for(pilot, lambda: "IN DOUBT" in details_text(app, width=140), "details redrawn")
        header = str(screen.query_one("#session-info").render())
        assert "⚠ INTERRUPTED mid-run, 1 in doubt" in header and "RUNNING" not in header, header
        details = details_text(app, width=140)
        assert "status     ⚠ IN DOUBT  (the log says RUNNING; no process runs it)" in details, details
        screen.run_tree.select_path("billing@1")
        container = "status     ⚠ INTERRUPTED  (the log says RUNNING; no process runs it)"
        await wait_for(pilot, lambda: container in details_text(app, width=140), "the container's details")
