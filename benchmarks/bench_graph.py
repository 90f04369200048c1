"""The graph view's cost: building the graph from a projection
(:func:`engine.graph_view.invocation_graph`) and drawing it
(:func:`console.graph_render.plain_lines`, grandalf's layout included), per demo
session and for synthetic wide workflows (a fan-out of N parallel nodes, which
the layout has to order; a parallel worker of N items, which folds to one node).

    python benchmarks/bench_graph.py            # prints a table; exits non-zero only on error

Times are the median of 5 runs, CPU time of this process (the machine is shared).
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from console.graph_render import plain_lines  # noqa: E402
from engine import START, Content, ParallelWorker, RequestInput, Runner, Workflow, node  # noqa: E402
from engine.graph_view import invocation_graph  # noqa: E402
from engine.projection import Projection  # noqa: E402
from engine.store import MemoryStore  # noqa: E402
from engine.store.sqlite import SQLiteStore  # noqa: E402
from sample_sessions.demo import build_demo_db  # noqa: E402


def cpu(fn, reps: int = 5) -> float:
    times = []
    for _ in range(reps):
        t = time.process_time()
        fn()
        times.append(time.process_time() - t)
    return statistics.median(times) * 1000


async def projection_of(store, sid: str) -> Projection:
    proj = Projection()
    for se in await store.events(sid):
        proj.apply(se.event, se.seq)
    return proj


def wide(n: int) -> Workflow:
    @node
    async def start(x):
        return x

    def leaf(k: int):
        @node(name=f"step_{k:03d}")
        async def f(x):
            yield RequestInput("ok?", response_schema=bool, interrupt_id=f"w-{k}")

        return f

    return Workflow("wide", [(START, start, tuple(leaf(k) for k in range(n)))])


def worker(n: int) -> Workflow:
    @node
    async def items(x):
        return list(range(n))

    @node
    async def item(x):
        yield RequestInput("ok?", response_schema=bool, interrupt_id=f"i-{x}")

    return Workflow("batch", [(START, items, ParallelWorker(item, name="each"))])


async def synthetic(wf: Workflow) -> Projection:
    store = MemoryStore()
    async for _ in Runner("bench", wf, store).run("u", "s", Content.from_text("go")):
        pass
    return await projection_of(store, "s")


async def main() -> None:
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "demo.sqlite"
        await build_demo_db(db)
        async with SQLiteStore.open(db, read_only=True) as store:
            for s in (await store.list_sessions(limit=100)).items:
                proj = await projection_of(store, s.id)
                inv = list(proj.invocations)[-1]
                rows.append((s.id, proj.position, proj, inv))
    for label, wf in (("fan-out 10 nodes", wide(10)), ("fan-out 40 nodes", wide(40)),
                      ("worker 1000 items", worker(1000))):
        proj = await synthetic(wf)
        rows.append((label, proj.position, proj, list(proj.invocations)[-1]))
    print(f"{'session':<24} {'events':>7} {'nodes':>6} {'edges':>6} {'graph ms':>9} {'draw ms':>8} {'cols':>5} {'rows':>5}")
    for label, events, proj, inv in rows:
        g = invocation_graph(proj, inv)
        lines = plain_lines(g)
        g_ms = cpu(lambda proj=proj, inv=inv: invocation_graph(proj, inv))
        d_ms = cpu(lambda g=g: plain_lines(g))
        width = max((len(line) for line in lines), default=0)
        print(f"{label:<24} {events:>7} {len(g.nodes):>6} {len(g.edges):>6} {g_ms:>9.1f} {d_ms:>8.1f} {width:>5} {len(lines):>5}")


if __name__ == "__main__":
    asyncio.run(main())
