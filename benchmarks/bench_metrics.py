"""What a Prometheus scrape of ``/metrics`` costs on a big store: the store
gauges (open interrupts by app and node, queued turns) are aggregates over the
open-interrupt and turn-request indexes (engine/metrics.py), so the scrape
should follow what waits now, not how many sessions the store holds.

    python benchmarks/bench_metrics.py [--sessions 1000000] [--kind postgres|sqlite]
    python benchmarks/bench_metrics.py --on 'postgresql://...&schema=...'   # a store built before

Builds ``--sessions`` sessions with ``bench_store.generate`` (the listing
benchmarks' mix: about a third waiting) into a new schema of
``$HITL_BENCH_PG_URL`` / ``$HITL_TEST_PG_URL`` (or a SQLite file), then times
``engine.metrics.render(store)`` -- the whole exposition, as a scrape gets it --
20 times and prints the median and the worst next to the number of sessions
and open interrupts. Numbers are reported, never asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import bench_store as bs  # noqa: E402

from engine import metrics  # noqa: E402
from engine.store import open_store  # noqa: E402


async def main(ns: argparse.Namespace) -> int:
    if ns.on:
        url = ns.on
    elif ns.kind == "sqlite":
        url = str(Path(tempfile.mkdtemp()) / "metrics.sqlite")
    else:
        base = os.environ.get("HITL_BENCH_PG_URL") or os.environ.get("HITL_TEST_PG_URL")
        if not base:
            sys.exit("set HITL_BENCH_PG_URL or HITL_TEST_PG_URL (source scripts/services/postgres.sh)")
        url = f"{base}{'&' if '?' in base else '?'}schema=bm_{uuid.uuid4().hex[:8]}"
    store = await open_store(url, inline=True)
    try:
        if not ns.on:
            print(f"building {ns.sessions:,} sessions in {url} ...", file=sys.stderr, flush=True)
            t = time.perf_counter()
            await store.bulk_load(bs.generate(ns.sessions), batch_size=1000)
            print(f"built in {time.perf_counter() - t:.0f} s", file=sys.stderr, flush=True)
        await metrics.render(store)  # the statements' first use on the connection
        times = []
        for _ in range(ns.repeats):
            t = time.perf_counter()
            text = await metrics.render(store)
            times.append(time.perf_counter() - t)
        overview = await store.overview(since=0)
        sessions = sum(overview.status_counts.values())
        opened = sum(overview.open_by_app.values())
        lines = sum(1 for line in text.splitlines() if line and not line.startswith("#"))
    finally:
        await store.close()
    print(f"load average (1 min) {os.getloadavg()[0]:.1f}; store {url.split('?')[0]}")
    print(f"{'sessions':>12} {'open interrupts':>16} {'samples':>8} {'scrape p50':>11} {'scrape max':>11}")
    print(f"{sessions:>12,} {opened:>16,} {lines:>8} {statistics.median(times) * 1e3:>9.1f} ms "
          f"{max(times) * 1e3:>8.1f} ms")
    return 0


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sessions", type=int, default=1_000_000)
    ap.add_argument("--kind", choices=("postgres", "sqlite"), default="postgres")
    ap.add_argument("--on", help="time the scrape on an existing store instead of building one")
    ap.add_argument("--repeats", type=int, default=20)
    sys.exit(asyncio.run(main(ap.parse_args())))
