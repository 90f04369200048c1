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
        snapshots = t.matching("FROM snapshots")
        assert len(snapshots) == 1, snapshots  # once, not again under the lease
        reads = t.matching("SELECT seq, json FROM events")
        # after the snapshot once, and under the lease only what came after that
        # read: never the invocation from its start again
        assert len(reads) == 2 and not any(r.endswith("seq > 0 ORDER BY seq") for r in reads), reads
        # the session is checked only by reads that came back empty (here: the
        # events after the snapshot, twice; no lease row yet, twice)
        assert len(t.matching("SELECT 1 FROM sessions")) == 4
        # today: lease, answer, root start, after start, after end, root end,
        # release of the lease with the snapshot (was 8 commits, 68 statements;
        # 55 before the auto-completed leaf's completion record rode in the
        # answer's transaction, DESIGN.md 3.2: that record's append is 4 more)
        assert t.commits == 7
        assert len(t.sql) == 59, t.sql
        assert "FROM snapshots" not in t.sql[-2] and "DELETE FROM leases" in t.sql[-2]
        assert "INSERT INTO snapshots" in t.sql[-3]
    finally:
        await store.close()
