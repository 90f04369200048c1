"""A turn's first write is deferred to the start of its first node that runs
user code (engine/runner.py, ``_open_fast``): the lease, the answer (or the
message), the root's start and that node's start cost one commit. Until then
only engine code runs, on the invocation's projection with the first events
folded in at the seqs they are expected to get.

When the write finds something else -- other invocations of the session
appended since the invocation was read, the invocation itself moved on, its
lease held by another process -- the turn is still right: refolded at the real
seqs, or started again the long way, with nothing written twice.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from engine import START, Content, RequestInput, Runner, Workflow, node
from engine.liveness import new_owner
from engine.models import NodeStatus
from engine.projection import project
from engine.resume import load_invocation
from engine.store.sqlite import SQLiteStore

from .test_turn_cost import SIMPLE, Traced, drain


async def _waiting(store: SQLiteStore, runner: Runner, sid: str) -> tuple[str, str]:
    """Start an invocation of SIMPLE; (its id, its open interrupt id)."""
    events = await drain(runner.run("u", sid, Content.from_text("go")))
    inv = events[0].invocation_id
    page = await store.open_interrupts(session_id=sid, limit=10)
    (iid,) = [i.interrupt_id for i in page.items if i.invocation_id == inv]
    return inv, iid


async def test_an_answer_after_other_invocations_appended_is_folded_at_its_real_seqs(tmp_path: Path) -> None:
    store = await SQLiteStore.open(tmp_path / "s.sqlite", inline=True)
    try:
        runner = Runner("app", SIMPLE, store)
        a, a_iid = await _waiting(store, runner, "s")
        await _waiting(store, runner, "s")  # b: the session's last events are not a's
        a_last = (await load_invocation(store, "s", a)).position
        session_last = (await store.get_session("s")).last_seq
        assert session_last > a_last  # the seqs the answer gets are not a's next ones
        with Traced(store) as t:
            events = await drain(runner.run("u", "s", Content.from_responses({a_iid: True})))
        assert t.commits == 2, t.sql
        assert [e.kind for e in events] == ["response", "end", "start", "start", "end", "end"]
        stored = [s for s in await store.events("s") if s.event.invocation_id == a]
        assert [s.seq for s in stored if s.seq > a_last][0] == session_last + 1
        # the snapshot the turn wrote is the fold of what is stored, at the stored seqs
        snap = await store.get_snapshot("s", a)
        assert snap is not None
        rebuilt = project([(s.seq, s.event) for s in stored])
        assert snap[0] == stored[-1].seq
        assert snap[1] == rebuilt.compact(a).to_dict()
        assert rebuilt.invocation_status(a) is NodeStatus.COMPLETED
        assert [r.path for r in rebuilt.runs(a)] == ["simple@1", "simple@1/prep@1", "simple@1/ask@1", "simple@1/after@1"]
    finally:
        await store.close()


async def test_an_answer_racing_another_turn_of_its_invocation_waits_and_runs_once(tmp_path: Path) -> None:
    """The deferred write finds the invocation's lease held by another process:
    the turn waits for it the long way and then answers; the node runs once."""
    calls: list[Any] = []

    @node
    async def ask2(node_input: Any):
        yield RequestInput("a?", interrupt_id="one")
        yield RequestInput("b?", interrupt_id="two")

    @node
    async def after(node_input: Any) -> Any:
        calls.append(node_input)
        return node_input

    wf = Workflow("w", [(START, ask2, after)])
    store = await SQLiteStore.open(tmp_path / "race.sqlite", inline=True)
    try:
        runner = Runner("app", wf, store, lease_wait=5.0)
        events = await drain(runner.run("u", "s", Content.from_text("go")))
        inv = events[0].invocation_id
        other = new_owner()  # another process's turn of the same invocation
        await store.acquire_lease("s", inv, other, 30.0)

        async def let_go() -> None:
            await asyncio.sleep(0.05)
            await store.release_lease("s", inv, other)

        releaser = asyncio.ensure_future(let_go())
        resumed = await drain(runner.run("u", "s", Content.from_responses({"one": 1, "two": 2})))
        await releaser
        assert [e.kind for e in resumed].count("response") == 1
        assert calls == [{"one": 1, "two": 2}]
        proj = await load_invocation(store, "s", inv)
        assert proj.invocation_status(inv) is NodeStatus.COMPLETED
        assert await store.list_leases("s") == []
    finally:
        await store.close()


async def test_a_nested_workflows_start_rides_on_its_first_childs(tmp_path: Path) -> None:
    """A nested Workflow's body is engine code: its start record needs to be
    durable only before its first child runs user code, whose start carries it."""

    @node
    async def ask(node_input: Any):
        yield RequestInput("ok?", interrupt_id="q")

    inner = Workflow("inner", [(START, ask)])
    store = await SQLiteStore.open(tmp_path / "nested.sqlite", inline=True)
    try:
        runner = Runner("app", Workflow("outer", [(START, inner)]), store)
        with Traced(store) as t:
            events = await drain(runner.run("u", "s", Content.from_text("go")))
        assert [(e.kind, e.path) for e in events[:4]] == [
            ("message", None),
            ("start", "outer@1"),
            ("start", "outer@1/inner@1"),
            ("start", "outer@1/inner@1/ask@1"),
        ]
        # the message, both workflows' starts and ask's start; then the interrupt,
        # the three end records, the snapshot and the release
        assert t.commits == 2, t.sql
        first_tx = t.sql[: t.sql.index("COMMIT")]
        assert sum('"outer@1/inner@1/ask@1"' in s and '"start"' in s for s in first_tx) == 1, first_tx
        assert (await store.list_invocations("s"))[0].status == "waiting"
    finally:
        await store.close()
