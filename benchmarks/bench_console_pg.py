"""The console's first paint on 100,000 sessions, PostgreSQL beside SQLite, in one run.

    source scripts/services/postgres.sh && python benchmarks/bench_console_pg.py [--sessions 100000] [--reps 3]

(or HITL_BENCH_PG_URL=postgresql://...). Both stores are filled the same way, with
bench_console.py's sessions (``small_session``: one invocation, 4-8 events, a mix
of endings) through the store's own ``bulk_load``; the PostgreSQL one in a schema
of its own, dropped afterwards. Each measurement is bench_console.py's
``sessions`` child: the real ``HitlApp`` headless in a fresh process, from app
start until its first page of rows is drawn (wall and the console's CPU), then
the summary line. For PostgreSQL it also counts the messages the console sent the
server until first paint (asyncpg writes the socket once per round trip).
Repetitions are interleaved (SQLite, then PostgreSQL). Prints one table (median
[min-max]); numbers are reported, never asserted. Target: first paint <= 400 ms
on both.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(HERE))

import bench_console as bc  # noqa: E402
from bench_pg_cold import pg_base, with_schema  # noqa: E402


async def fill(target: str, n_sessions: int) -> float:
    """``n_sessions`` of bench_console's sessions into the store at ``target``; seconds taken."""
    from engine.store import open_store

    rng = random.Random(7)
    t = time.perf_counter()
    store = await open_store(target)
    try:
        await store.bulk_load(bc.small_session(k, rng) for k in range(n_sessions))
        if hasattr(store, "checkpoint"):
            await store.checkpoint()
    finally:
        await store.close()
    if "://" in target:  # the planner's statistics, as autovacuum gathers them within a minute of the load
        await admin(target, "ANALYZE")
    return time.perf_counter() - t


async def admin(url: str, sql: str) -> None:
    """Housekeeping of the benchmark's own schema (not the store's data: that goes
    through the store's API above)."""
    import asyncpg

    from engine.store.postgres.urls import _split_schema

    dsn, schema = _split_schema(url)
    conn = await asyncpg.connect(dsn, server_settings={"search_path": schema})
    try:
        await conn.execute(sql.format(schema=schema))
    finally:
        await conn.close()


def counted_child(db: str) -> dict[str, Any]:
    """bench_console's ``sessions`` measurement, run in this file's child so it can
    count the round trips the console sends until its first paint."""
    out = subprocess.run([sys.executable, __file__, "--child", db], capture_output=True, text=True, cwd=ROOT,
                         check=False, timeout=300)
    if out.returncode != 0:
        raise RuntimeError(f"child {db} failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


async def child(db: str) -> dict[str, Any]:
    import asyncio.selector_events

    sent = [0]
    paint = [None]
    transport = asyncio.selector_events._SelectorSocketTransport  # type: ignore[attr-defined]
    write = transport.write

    def counting(self: Any, data: Any) -> None:
        sent[0] += 1
        write(self, data)

    transport.write = counting
    painted = bc.painted

    async def painted_counted(app: Any) -> float:
        t = await painted(app)
        if paint[0] is None:
            paint[0] = sent[0]  # the first call is the first paint's
        return t

    bc.painted = painted_counted
    result = await bc.measure_sessions(db)
    result["trips"] = paint[0]
    return result


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sessions", type=int, default=100_000)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ns = ap.parse_args()
    if ns.child:
        print(json.dumps(asyncio.run(child(ns.child))))
        return 0
    url = with_schema(pg_base(), f"bench_console_{uuid.uuid4().hex[:8]}")
    load = os.getloadavg()[0]
    results: dict[str, list[dict[str, Any]]] = {"SQLite": [], "PostgreSQL": []}
    with tempfile.TemporaryDirectory(prefix="bench-console-pg-") as d:
        db = str(Path(d) / "sessions.sqlite")
        gen = {"SQLite": asyncio.run(fill(db, ns.sessions))}
        try:
            gen["PostgreSQL"] = asyncio.run(fill(url, ns.sessions))
            for rep in range(ns.reps):
                print(f"repetition {rep + 1}/{ns.reps}", file=sys.stderr, flush=True)
                results["SQLite"].append(counted_child(db))
                results["PostgreSQL"].append(counted_child(url))
        finally:
            asyncio.run(admin(url, "DROP SCHEMA {schema} CASCADE"))
    print(f"load average (1 min) {load:.1f} at the start, {os.getloadavg()[0]:.1f} at the end; "
          f"{ns.reps} interleaved repetitions, a fresh console process each; {ns.sessions:,} sessions "
          f"(filled in {gen['SQLite']:.0f} s SQLite, {gen['PostgreSQL']:.0f} s PostgreSQL)")

    def cell(rs: list[dict[str, Any]], key: str) -> str:
        v = [r[key] * 1000 for r in rs]
        return f"{statistics.median(v):.0f} ms [{min(v):.0f}-{max(v):.0f}]"

    head = ("store", "first paint", "target", "console CPU to first paint", "round trips to first paint",
            "summary line shown")
    rows = [(name, cell(rs, "first_paint_s"), "<= 400 ms", cell(rs, "first_paint_cpu_s"),
             f"{statistics.median(r['trips'] for r in rs):.0f}" if name == "PostgreSQL" else "-",
             cell(rs, "summary_s")) for name, rs in results.items()]
    widths = [max(len(r[i]) for r in [*rows, head]) for i in range(len(head))]
    for r in (head, *rows):
        print("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
