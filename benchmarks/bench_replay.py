"""Replay benchmark (issue 7): stepping and jumping in a 100,000-event session.

    python benchmarks/bench_replay.py           # 100,000 events
    python benchmarks/bench_replay.py --quick   # 20,000 events

The session is what the engine really writes: a deploy-style loop (deploy ->
gate (an interrupt per iteration) -> verify -> route back) answered iteration
by iteration through the Runner, on a MemoryStore (the store is not what is
measured here; loading 100,000 events from SQLite is in bench_console).
Prints medians and p95 of: one step forward, one step back, a jump to a random
position, the next/previous operator action. Target: under 20 ms each.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import sys
import time
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from engine import START, Content, RequestInput, Runner, Workflow, node  # noqa: E402
from engine.replay import Replay  # noqa: E402
from engine.store import MemoryStore  # noqa: E402


@node
async def deploy(ctx, node_input):
    n = ctx.state.get("n", 0) + 1
    ctx.state["n"] = n
    return n


@node
async def gate(node_input):
    yield RequestInput(f"ship build {node_input}?", interrupt_id=f"gate-{node_input}")


@node
async def verify(ctx, node_input):
    ctx.route = "retry"
    return node_input


WF = Workflow("deploy", [(START, deploy, gate, verify), (verify, {"retry": deploy})])


async def build(n_events: int):
    store = MemoryStore()
    runner = Runner("bench", WF, store)
    async for _ in runner.run("u", "s", Content.from_text("go")):
        pass
    i = 1
    while (await store.get_session("s")).last_seq < n_events:
        async for _ in runner.run("u", "s", Content.from_responses({f"gate-{i}": "ok"}), operator="bench"):
            pass
        i += 1
    return await store.events("s")


def timed(fn, repeats: int) -> list[float]:
    out = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t)
    return out


def main(quick: bool) -> int:
    n = 20_000 if quick else 100_000
    t = time.perf_counter()
    events = asyncio.run(build(n))
    build_s = time.perf_counter() - t
    tracemalloc.start()
    r = Replay(events)
    t = time.perf_counter()
    r.seek(len(r))  # first full pass also lays down the checkpoints
    first_pass = time.perf_counter() - t
    mem = tracemalloc.get_traced_memory()[1] / 2**20
    tracemalloc.stop()
    rng = random.Random(7)
    r.seek(len(r) // 2)
    rows = {
        "step forward": timed(lambda: r.step(1), 200),
        "step back": timed(lambda: r.step(-1), 200),
        "jump to a random position": timed(lambda: r.seek(rng.randrange(len(r) + 1)), 200),
        "next operator action": timed(r.next_action, 100),
        "previous operator action": timed(r.prev_action, 100),
    }
    print(f"session: {len(events):,} events (built in {build_s:.1f} s); first pass to the end: "
          f"{first_pass * 1e3:.0f} ms, peak replay memory {mem:.0f} MiB")
    print(f"{'operation':<28} {'median':>10} {'p95':>10}  target")
    print("-" * 60)
    for name, xs in rows.items():
        xs.sort()
        p95 = xs[int(len(xs) * 0.95) - 1]
        print(f"{name:<28} {statistics.median(xs) * 1e3:>8.2f} ms {p95 * 1e3:>7.2f} ms  < 20 ms")
    return 0


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true")
    sys.exit(main(ap.parse_args().quick))
