"""``hitl start`` (a run started from the shell, in this process) and ``hitl show
--graph`` (the graph view as text and as JSON), on a SQLite store on disk."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from console.cli import cli
from engine import operations
from engine.apps import AppRegistry
from engine.errors import EmptyMessageError
from engine.store.sqlite import SQLiteStore

from .conftest import json_lines, ok, operator_error

APPS = ["--app", "fanout=tests.graphs:FANOUT", "--app", "loop=tests.graphs:LOOP", "--app", "outer=tests.graphs:NESTED",
        "--app", "wide=tests.graphs:WIDE"]


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "runs.sqlite"


def hitl(db: Path, *args: str) -> Result:
    return CliRunner().invoke(cli, ["--db", str(db), *APPS, *args], catch_exceptions=True)


def sessions(db: Path) -> dict[str, tuple[str, str, str]]:
    async def read() -> dict[str, tuple[str, str, str]]:
        async with SQLiteStore.open(db, read_only=True) as store:
            rows = (await store.list_sessions(limit=100)).items
            return {r.id: (r.app_name, r.user_id, r.status) for r in rows}

    return asyncio.run(read()) if db.exists() else {}


# ---------------------------------------------------------------------- start
def test_start_runs_until_it_waits_and_prints_like_resume(db: Path) -> None:
    text = ok(hitl(db, "start", "fanout", "--session", "s1", "--user", "ann", "order-1"))
    lines = text.splitlines()
    assert lines[0].startswith("session s1  app fanout  invocation ")
    assert any(line.startswith("interrupt fanout@1/items@1/check@2") for line in lines)
    assert "WAITING; open: " in lines[-1] and "item-2" in lines[-1] and "all-fine" in lines[-1]
    assert sessions(db) == {"s1": ("fanout", "ann", "waiting")}
    # and it is answered like any other session
    ok(hitl(db, "resume", "s1", "item-2=true", "all-fine=true"))
    assert sessions(db)["s1"][2] == "completed"


def test_start_json_prints_one_object_per_event_then_the_summary(db: Path) -> None:
    rows = json_lines(ok(hitl(db, "--json", "start", "outer", "--session", "n1", "hello")))
    assert rows[0] == {"kind": "session", "session_id": "n1", "app_name": "outer"}
    assert rows[1]["kind"] == "message" and rows[-1]["kind"] == "summary"
    assert rows[-1]["status"] == "WAITING" and rows[-1]["open"] == ["sign"]


def test_start_without_a_session_makes_a_new_one(db: Path) -> None:
    first = ok(hitl(db, "start", "outer", "a")).splitlines()[0]
    sid = first.split()[1]
    assert sid.startswith("outer-") and sessions(db)[sid][0] == "outer"


def test_start_an_unknown_app_is_one_line_and_writes_nothing(db: Path) -> None:
    operator_error(hitl(db, "start", "nope", "--session", "s1", "hi"), "app 'nope' is not registered", "--app nope=")
    assert sessions(db) == {}


def test_start_bad_input_is_one_line_and_writes_nothing(db: Path) -> None:
    operator_error(hitl(db, "start", "fanout", "--session", "s1", "   "), "empty")
    operator_error(hitl(db, "start", "fanout", "--session", " ", "hi"), "session id")
    operator_error(hitl(db, "--app", "bad=tests.graphs:nothing_here", "start", "bad", "--session", "s1", "hi"),
                   "app 'bad' cannot be loaded", "nothing_here")
    operator_error(hitl(db, "--read-only", "start", "fanout", "--session", "s1", "hi"), "read-only")
    assert sessions(db) == {}


def test_start_on_a_session_of_another_app_is_refused(db: Path) -> None:
    ok(hitl(db, "start", "outer", "--session", "s1", "hi"))
    operator_error(hitl(db, "start", "fanout", "--session", "s1", "hi"), "belongs to app 'outer', not 'fanout'")
    assert sessions(db) == {"s1": ("outer", sessions(db)["s1"][1], "waiting")}


def test_a_spec_naming_a_runner_says_to_register_its_workflow(db: Path, tmp_path: Path, monkeypatch) -> None:
    (tmp_path / "myrunner.py").write_text(
        "from engine import Runner\nfrom engine.store import MemoryStore\nfrom tests.graphs import NESTED\n"
        "runner = Runner('docs', NESTED, MemoryStore())\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    operator_error(hitl(db, "--app", "docs=myrunner:runner", "start", "docs", "--session", "s1", "hi"),
                   "is a Runner, not a workflow node", "--app docs=myrunner:")


async def test_start_refuses_a_session_whose_invocation_is_running(db: Path) -> None:
    """While one process runs an invocation of the session (live lease), a start is
    refused before writing; once it has settled, a start goes through."""
    from engine import START, Workflow, node

    gate = asyncio.Event()

    @node
    async def slow(x: str) -> str:
        await gate.wait()
        return x

    reg = AppRegistry()
    reg.register("slow", Workflow("slow", [(START, slow)]))
    async with SQLiteStore.open(db) as store:
        first = asyncio.create_task(operations.start(store, "slow", "s1", "one", user_id="ann", registry=reg))

        from engine.errors import SessionNotFoundError

        async def lease_taken() -> None:
            while True:
                try:
                    if [i for i in await store.list_invocations("s1") if i.status == "running"]:
                        return
                except SessionNotFoundError:  # the first write has not happened yet
                    pass
                await asyncio.sleep(0.01)

        await asyncio.wait_for(lease_taken(), 30)
        busy = await operations.start(store, "slow", "s1", "two", user_id="ann", registry=reg)
        assert isinstance(busy.error, operations.SessionBusyError) and not busy.written
        assert "session s1 is busy" in str(busy.error)
        gate.set()
        done = await first
        assert done.error is None and done.status_after is not None and done.status_after.value == "COMPLETED"
        again = await operations.start(store, "slow", "s1", "three", user_id="ann", registry=reg)
        assert again.error is None and len(await store.list_invocations("s1")) == 2
        empty = await operations.start(store, "slow", "s2", "", user_id="ann", registry=reg)
        assert isinstance(empty.error, EmptyMessageError)


# ---------------------------------------------------------------------- graph
def test_show_graph_draws_the_fan_out_with_its_waiting_item(db: Path) -> None:
    ok(hitl(db, "start", "fanout", "--session", "s1", "go"))
    text = ok(hitl(db, "show", "s1", "--graph"))
    assert "╔═ fanout@1 · ◆ WAITING · answer → re-execute" in text
    assert "║ check ×3 " in text and "1 WAITING · 2 COMPLETED" in text and "answer → 1 auto-complete" in text
    assert "▼" in text and "╔═╗ waiting" in text
    assert all(len(line) <= 120 for line in text.splitlines()), "fits 120 columns"
    assert "fetch@1    COMPLETED" not in text  # the graph instead of the tree


def test_show_graph_folds_a_twelve_way_fan_out_to_fit_120_columns(db: Path) -> None:
    """The console's picture (console.graph_render), folded the same way; --json keeps every node."""
    ok(hitl(db, "start", "wide", "--session", "w1", "go"))
    text = ok(hitl(db, "show", "w1", "--graph"))
    assert all(len(line) <= 120 for line in text.splitlines()), "fits 120 columns"
    assert "│ ×11 fraud…history" in text and "11 COMPLETED" in text and "║ kyc@1" in text
    data = json.loads(ok(hitl(db, "--json", "show", "w1", "--graph")))
    (inv,) = data["invocations"]
    names = {n["name"] for n in inv["graph"]["nodes"]}
    assert {"fraud", "kyc", "history"} <= names


def test_show_graph_marks_the_loop_edge(db: Path) -> None:
    ok(hitl(db, "start", "loop", "--session", "l1", "go"))
    ok(hitl(db, "resume", "l1", "gate-1=1"))
    ok(hitl(db, "resume", "l1", "gate-2=2"))
    text = ok(hitl(db, "show", "l1", "--graph"))
    assert "build@3" in text and "3 runs" in text and "waits on gate-3" in text
    loop_line = next(line for line in text.splitlines() if "◀" in line)
    assert "build" not in loop_line or "COMPLETED" in loop_line  # the arrow enters build's box from the right


def test_show_graph_json_is_a_nodes_edges_structure(db: Path) -> None:
    ok(hitl(db, "start", "outer", "--session", "n1", "go"))
    data = json.loads(ok(hitl(db, "--json", "show", "n1", "--graph")))
    (inv,) = data["invocations"]
    graph = inv["graph"]
    assert graph["invocation_id"] == inv["invocation_id"]
    assert graph["groups"] == ["outer@1", "outer@1/inner@1"]
    assert [(e["src"], e["dst"], e["loop"]) for e in graph["edges"]] == [
        ("outer@1/inner@1/annotate@1", "outer@1/inner@1/sign@1", False),
        ("outer@1/draft@1", "outer@1/inner@1", False),
    ]
    sign = next(n for n in graph["nodes"] if n["name"] == "sign")
    assert sign["waiting"] and sign["next"] == "auto-complete" and sign["group"] == "outer@1/inner@1"
    # without --graph, no graph key (the tree rows stay as they were)
    assert "graph" not in json.loads(ok(hitl(db, "--json", "show", "n1")))["invocations"][0]


def test_every_sample_session_draws_within_120_columns(demo_template: Path) -> None:
    """The demo store's sessions (refunds with a join and a long edge, incidents,
    the labels fan-out, nested reviews, loops) all draw, and every line fits 120
    columns."""

    def hitl(*args: str) -> Result:
        return CliRunner().invoke(cli, ["--db", str(demo_template), "--read-only", *args], catch_exceptions=True)

    data = json.loads(ok(hitl("--json", "sessions", "--limit", "100")))
    ids = [row["id"] for row in (data["sessions"] if isinstance(data, dict) else data)]
    assert {"refund-rejected-1", "labels-partial-1", "review-waiting-1", "deploy-long-1"} <= set(ids)
    for sid in ids:
        text = ok(hitl("show", sid, "--graph"))
        assert "╔═╗ waiting" in text, sid
        wide = [line for line in text.splitlines() if len(line) > 120 and not line.startswith(("invocation ", "state ", "  open: "))]
        assert not wide, (sid, wide)
    joined = ok(hitl("show", "refund-rejected-1", "--graph"))
    assert "approvals@1" in joined and "pay@1" in joined and "▼" in joined
