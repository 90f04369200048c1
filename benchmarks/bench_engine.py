"""Runner-level benchmarks on the SQLite store (issue 3's performance table).

    python benchmarks/bench_engine.py            # full run (about a minute)
    python benchmarks/bench_engine.py --quick    # smaller sizes, fewer samples

Prints one table of medians. Each row names its target. Exit code is non-zero
only on error, never because a target was missed (numbers are for the notes,
not for assertions).

Rows:
* resume overhead (FR message -> settled turn, trivial nodes) on a session
  whose history holds N events of other, finished invocations;
* resume of an invocation that ran 10,000 loop iterations before it waits;
* fresh run to the first interrupt;
* cost per trivial node in a 1,000-node sequential workflow.

"inline" rows open the store with ``SQLiteStore.open(..., inline=True)`` (SQL on
the event loop's thread, for workflow-only processes); the others use the
default aiosqlite connection thread.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from engine import START, Content, RequestInput, Runner, Workflow, node  # noqa: E402
from engine.models import Event, Session, new_id  # noqa: E402
from engine.store.sqlite import SQLiteStore  # noqa: E402


@node
async def prep(node_input):
    return node_input


@node
async def ask(node_input):
    yield RequestInput("ok?", interrupt_id=f"q-{new_id()}")


@node
async def after(node_input):
    return node_input


SIMPLE = Workflow("simple", [(START, prep, ask, after)])


def loop_workflow(iterations: int) -> Workflow:
    @node
    async def spin(ctx, node_input):
        i = (node_input if isinstance(node_input, int) else 0) + 1
        ctx.route = "again" if i < iterations else "done"
        return i

    @node
    async def gate(node_input):
        yield RequestInput("continue?", interrupt_id=f"g-{new_id()}")

    @node
    async def back(ctx, node_input):
        ctx.route = "again"
        return node_input

    return Workflow("looper", [(START, spin), (spin, {"again": spin, "done": gate}), (gate, back, {"again": gate})])


async def open_interrupt(store: SQLiteStore, session_id: str) -> str:
    page = await store.open_interrupts(session_id=session_id, limit=1)
    return page.items[0].interrupt_id


async def answer(runner: Runner, session_id: str, iid: str) -> None:
    async for _ in runner.run("u", session_id, Content.from_responses({iid: True})):
        pass


async def history_template(tmp: Path) -> list[Event]:
    """One finished invocation of SIMPLE, exactly as the engine wrote it."""
    store = await SQLiteStore.open(tmp / "template.sqlite")
    runner = Runner("bench", SIMPLE, store)
    async for _ in runner.run("u", "t", Content.from_text("x")):
        pass
    await answer(runner, "t", await open_interrupt(store, "t"))
    events = [s.event for s in await store.events("t")]
    await store.close()
    return events


def replicate(template: list[Event], n_events: int) -> list[Event]:
    out: list[Event] = []
    while len(out) < n_events:
        inv = new_id()
        for ev in template:
            out.append(ev.model_copy(update={"id": new_id(), "invocation_id": inv}))
    return out[: n_events - n_events % len(template)] or out


async def bench_resume_with_history(tmp: Path, n_events: int, samples: int, sync: str) -> float:
    template = await history_template(tmp)
    path = tmp / f"hist-{n_events}-{sync}.sqlite"
    store = await SQLiteStore.open(path, synchronous=sync)
    session = Session(id="big", app_name="bench", user_id="u")
    await store.bulk_load([(session, replicate(template, n_events))])
    runner = Runner("bench", SIMPLE, store)
    times = []
    for _ in range(samples):
        async for _ in runner.run("u", "big", Content.from_text("go")):
            pass
        iid = await open_interrupt(store, "big")
        t = time.perf_counter()
        await answer(runner, "big", iid)
        times.append(time.perf_counter() - t)
    await store.close()
    return statistics.median(times)


async def bench_resume_after_loop(tmp: Path, iterations: int, samples: int) -> tuple[float, float, int]:
    store = await SQLiteStore.open(tmp / f"loop-{iterations}.sqlite")
    runner = Runner("bench", loop_workflow(iterations), store)
    t = time.perf_counter()
    async for _ in runner.run("u", "loop", Content.from_text("go")):
        pass
    build = time.perf_counter() - t
    times = []
    for _ in range(samples):
        iid = await open_interrupt(store, "loop")
        t = time.perf_counter()
        await answer(runner, "loop", iid)
        times.append(time.perf_counter() - t)
    n = (await store.get_session("loop")).last_seq
    await store.close()
    return statistics.median(times), build, n


async def bench_fresh_run(tmp: Path, samples: int, sync: str, inline: bool = False) -> float:
    store = await SQLiteStore.open(tmp / f"fresh-{sync}-{inline}.sqlite", synchronous=sync, inline=inline)
    runner = Runner("bench", Workflow("w", [(START, ask)]), store)
    times = []
    for i in range(samples):
        t = time.perf_counter()
        async for _ in runner.run("u", f"s{i}", Content.from_text("go")):
            pass
        times.append(time.perf_counter() - t)
    await store.close()
    return statistics.median(times)


def chain(n_nodes: int) -> Workflow:
    """A sequential chain of ``n_nodes`` trivial nodes (each passes its input on)."""
    nodes = []
    for i in range(n_nodes):

        @node(name=f"n{i}")
        async def f(node_input: Any) -> Any:
            return node_input

        nodes.append(f)
    return Workflow("seq", [(START, *nodes)])


async def bench_sequential(tmp: Path, n_nodes: int, sync: str, inline: bool = False) -> tuple[float, float]:
    store = await SQLiteStore.open(tmp / f"seq-{sync}-{inline}.sqlite", synchronous=sync, inline=inline)
    runner = Runner("bench", chain(n_nodes), store)
    t = time.perf_counter()
    count = 0
    async for _ in runner.run("u", "seq", Content.from_text("x")):
        count += 1
    dt = time.perf_counter() - t
    await store.close()
    return dt / n_nodes, count / dt


def row(name: str, value: str, target: str) -> tuple[str, str, str]:
    return (name, value, target)


def ms(x: float) -> str:
    return f"{x * 1e3:.2f} ms"


async def main(quick: bool) -> int:
    samples = 7 if quick else 25
    sizes = [100, 10_000] if quick else [100, 10_000, 100_000]
    loop_n = 1_000 if quick else 10_000
    rows: list[tuple[str, str, str]] = []
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        base = None
        for n in sizes:
            m = await bench_resume_with_history(tmp, n, samples, "NORMAL")
            base = base or m
            rows.append(row(f"resume, {n:,} other events (NORMAL)", ms(m), "< 3 ms, flat"))
        rows.append(row("  ratio largest / 100", f"{m / base:.2f}x", "<= 1.5x"))
        m_full = await bench_resume_with_history(tmp, sizes[-1], samples, "FULL")
        rows.append(row(f"resume, {sizes[-1]:,} other events (FULL)", ms(m_full), "(durability reference)"))
        m, build, n_ev = await bench_resume_after_loop(tmp, loop_n, samples)
        rows.append(row(f"resume after {loop_n:,} loop iterations ({n_ev:,} events)", ms(m), "< 5 ms"))
        rows.append(row(f"  (running the {loop_n:,} iterations)", f"{build:.2f} s", ""))
        modes = [("NORMAL", False), ("FULL", False), ("NORMAL", True), ("FULL", True)]
        for sync, inline in modes:
            label = f"{sync}{', inline' if inline else ''}"
            m = await bench_fresh_run(tmp, samples, sync, inline)
            rows.append(row(f"fresh run to first interrupt ({label})", ms(m), "< 3 ms"))
        for sync, inline in modes:
            label = f"{sync}{', inline' if inline else ''}"
            per, eps = await bench_sequential(tmp, 1_000, sync, inline)
            rows.append(row(f"per node, 1,000-node sequential ({label})", f"{per * 1e3:.3f} ms", "< 0.25 ms"))
            rows.append(row("  events per second", f"{eps:,.0f}", ">= 8,000"))
    w = max(len(r[0]) for r in rows)
    print(f"{'benchmark (median)':<{w}}  {'value':>12}  target")
    print("-" * (w + 30))
    for name, value, target in rows:
        print(f"{name:<{w}}  {value:>12}  {target}")
    return 0


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true")
    sys.exit(asyncio.run(main(ap.parse_args().quick)))
