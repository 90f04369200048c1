"""What one turn costs the store, counted (issue 15): SQL statements and
commits are deterministic, so they are asserted; times are in
``benchmarks/bench_cold.py``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from engine import START, Content, RequestInput, Runner, Workflow, node
from engine.models import new_id
from engine.store.sqlite import SQLiteStore


@node
async def prep(node_input: Any) -> Any:
    return node_input


@node
async def ask(node_input: Any):
    yield RequestInput("ok?", interrupt_id=f"q-{new_id()}")


@node
async def after(node_input: Any) -> Any:
    return node_input


SIMPLE = Workflow("simple", [(START, prep, ask, after)])


async def drain(it: Any) -> list[Any]:
    return [e async for e in it]


class Traced:
    def __init__(self, store: SQLiteStore) -> None:
        self.conn = store._driver._raw  # type: ignore[union-attr]
        self.sql: list[str] = []

    def __enter__(self) -> Traced:
        self.conn.set_trace_callback(self.sql.append)
        return self

    def __exit__(self, *exc: object) -> None:
        self.conn.set_trace_callback(None)

    @property
    def commits(self) -> int:
        return sum(1 for s in self.sql if s.upper().startswith("COMMIT"))

    def matching(self, fragment: str) -> list[str]:
        return [s for s in self.sql if fragment in s]


async def session_with(tmp_path: Path, invocations: int) -> tuple[SQLiteStore, Runner]:
    store = await SQLiteStore.open(tmp_path / f"s{invocations}.sqlite", inline=True)
    runner = Runner("bench", SIMPLE, store)
    for _ in range(invocations):
        await drain(runner.run("u", "s", Content.from_text("x")))
        iid = (await store.open_interrupts(session_id="s", limit=1)).items[0].interrupt_id
        await drain(runner.run("u", "s", Content.from_responses({iid: True})))
    return store, runner


async def test_a_new_text_turn_costs_the_same_however_many_invocations_came_before(tmp_path: Path) -> None:
    counts = []
    for n in (1, 12):
        store, runner = await session_with(tmp_path, n)
        try:
            with Traced(store) as t:
                events = await drain(runner.run("u", "s", Content.from_text("again")))
            # the root's run id counts the earlier invocations, from the stored count
            assert events[1].node_info.path == f"simple@{n + 1}"
            assert not t.matching("ORDER BY started_seq"), "no listing of every invocation"
            counts.append((len(t.sql), t.commits))
        finally:
            await store.close()
    assert counts[0] == counts[1]


async def test_a_resume_reads_the_invocation_once(tmp_path: Path) -> None:
    store, runner = await session_with(tmp_path, 0)
    try:
        await drain(runner.run("u", "s", Content.from_text("x")))
        iid = (await store.open_interrupts(session_id="s", limit=1)).items[0].interrupt_id
        with Traced(store) as t:
            await drain(runner.run("u", "s", Content.from_responses({iid: True})))
        # the snapshot and the events after it, in one statement, once: the
        # transaction that takes the lease proves it current (nothing is read again)
        loads = t.matching("FROM snapshots")
        assert len(loads) == 1 and "UNION ALL" in loads[0], loads
        assert not t.matching("SELECT seq, json FROM events"), "the invocation is not read again"
        assert not t.matching("SELECT 1 FROM sessions"), "no session check: every read found rows"
        assert not t.matching("FROM sessions WHERE id"), "no separate read of the session row"
        # the answered id is bound as a parameter: json_each's first compile in a
        # cold process costs ~170 us more than IN (?)
        (lookup,) = t.matching("FROM interrupts WHERE session_id")
        assert "json_each" not in lookup and f"interrupt_id IN ('{iid}')" in lookup, lookup
        # the lease, the answer, the ask's completion record, the root's start and
        # after's start; after's end and the root's with the snapshot and the release
        assert t.commits == 2, t.sql
        assert len(t.sql) <= 21, t.sql  # was 59 statements in 7 commits, then 25 in 3
        assert "INSERT OR REPLACE INTO leases" in t.sql[t.sql.index("COMMIT") - 1]
        assert "DELETE FROM leases" in t.sql[-2] and "INSERT INTO snapshots" in t.sql[-3]
    finally:
        await store.close()


def chain(k: int) -> Workflow:
    """START -> ask -> n1 -> ... -> nk: a resume runs k nodes after the answer."""

    @node
    async def ask_k(node_input: Any):
        yield RequestInput("go?", interrupt_id=f"k-{new_id()}")

    nodes = [ask_k]
    for i in range(k):

        @node(name=f"n{i + 1}")
        async def step(node_input: Any) -> Any:
            return node_input

        nodes.append(step)
    return Workflow("chain", [(START, *nodes)])


async def test_a_resume_that_runs_k_nodes_commits_at_most_k_plus_2_times(tmp_path: Path) -> None:
    """Each node's start is its own commit (durable before its body runs); its end
    rides on the next node's start, the last end on the lease's release; the
    first node's start rides on the answer's write, which takes the lease."""
    statements = {}
    for k in (1, 2, 5):
        store = await SQLiteStore.open(tmp_path / f"k{k}.sqlite", inline=True)
        try:
            runner = Runner("bench", chain(k), store)
            await drain(runner.run("u", "s", Content.from_text("x")))
            iid = (await store.open_interrupts(session_id="s", limit=1)).items[0].interrupt_id
            with Traced(store) as t:
                events = await drain(runner.run("u", "s", Content.from_responses({iid: True})))
            ran = [e.path for e in events if e.kind == "start" and "/" in (e.path or "")]
            assert len(ran) == k, ran
            assert t.commits <= k + 2, (k, t.commits)
            statements[k] = len(t.sql)
            # every start record is committed before the next one is written
            starts = [i for i, sql in enumerate(t.sql) if sql.startswith("INSERT INTO events") and '"start"' in sql]
            commits = [i for i, sql in enumerate(t.sql) if sql.startswith("COMMIT")]
            assert all(any(a < c < b for c in commits) for a, b in zip(starts, starts[1:], strict=False)), t.sql
            assert (await store.list_invocations("s"))[0].status == "completed"
        finally:
            await store.close()
    assert statements[1] <= 25, statements
    # each further node costs its own commit and a handful of statements, not more
    assert statements[5] - statements[1] <= 4 * 7, statements


async def test_a_new_sessions_first_turn_creates_it_in_its_first_write(tmp_path: Path) -> None:
    """A fresh run on a session that does not exist yet: the session row is
    written in the transaction that takes the lease and writes the first events
    (no commit of its own), and no invocation count is read (it is 0)."""
    store = await SQLiteStore.open(tmp_path / "fresh.sqlite", inline=True)
    try:
        runner = Runner("bench", Workflow("one", [(START, ask)]), store)
        with Traced(store) as t:
            events = await drain(runner.run("u", "new", Content.from_text("go")))
        assert events[-1].node_info.path == "one@1" and events[-1].node_info.status.value == "WAITING"
        first_tx = t.sql[: t.sql.index("COMMIT") + 1]
        assert any(s.startswith("INSERT INTO sessions") for s in first_tx), first_tx
        assert any(s.startswith("INSERT OR REPLACE INTO leases") for s in first_tx), first_tx
        assert not t.matching("invocation_count FROM sessions"), t.sql
        # the first write with the node's start, then its interrupt with the end records and the release
        assert t.commits == 2, t.sql
        assert len(t.sql) <= 21, t.sql  # was 37 statements in 5 commits, then 31 in 4
        session = await store.get_session("new")
        assert (session.app_name, session.user_id, session.last_seq) == ("bench", "u", len(events))
        # a second text turn on it finds it and counts its invocations
        with Traced(store) as t:
            again = await drain(runner.run("u", "new", Content.from_text("again")))
        assert again[1].node_info.path == "one@2", again[1]
        assert not t.matching("INSERT INTO sessions")
    finally:
        await store.close()


async def test_a_fresh_run_races_a_session_created_meanwhile(tmp_path: Path) -> None:
    """The session is created by another writer between the turn's read and its
    first write: the turn fails with ConflictError and writes nothing."""
    import pytest

    from engine.errors import ConflictError

    store = await SQLiteStore.open(tmp_path / "race.sqlite", inline=True)
    try:
        runner = Runner("bench", Workflow("one", [(START, ask)]), store)
        real_get = store.get_session

        async def get_then_create(session_id: str) -> Any:
            try:
                return await real_get(session_id)
            finally:
                await store.create_session("other-app", "v", session_id)

        store.get_session = get_then_create  # type: ignore[method-assign]
        with pytest.raises(ConflictError, match="already exists"):
            await drain(runner.run("u", "racy", Content.from_text("go")))
        store.get_session = real_get  # type: ignore[method-assign]
        assert (await store.get_session("racy")).app_name == "other-app"
        assert await store.events("racy") == []
    finally:
        await store.close()


def test_a_turn_imports_nothing_the_runner_did_not(tmp_path: Path) -> None:
    """What a turn needs is imported with ``engine.runner`` (bench_cold times the
    operation after imports): a fresh run and a resume in a fresh process load no
    engine module, nor pydantic or jsonschema pieces, of their own."""
    import json
    import subprocess
    import sys

    code = f"""
import asyncio, json, sys
from engine import START, Content, RequestInput, Runner, Workflow, node
from engine.store.sqlite import SQLiteStore

@node
async def ask(node_input):
    yield RequestInput("ok?", interrupt_id="q1")

async def main():
    store = await SQLiteStore.open({str(tmp_path / "imports.sqlite")!r}, inline=True)
    runner = Runner("a", Workflow("one", [(START, ask)]), store)
    before = set(sys.modules)
    async for _ in runner.run("u", "s", Content.from_text("go")):
        pass
    async for _ in runner.run("u", "s", Content.from_responses({{"q1": True}})):
        pass
    await store.close()
    print(json.dumps(sorted(set(sys.modules) - before)))

asyncio.run(main())
"""
    root = Path(__file__).resolve().parents[2]
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=root)
    new = json.loads(out.stdout.strip().splitlines()[-1])
    assert not [m for m in new if m.split(".")[0] in ("engine", "pydantic", "pydantic_core", "jsonschema")], new
