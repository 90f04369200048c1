"""Workers (issue 18) next to the in-process resume, on SQLite and PostgreSQL.

    python benchmarks/bench_workers.py [--sessions N] [--latency N]
    HITL_TEST_PG_URL=postgresql://... python benchmarks/bench_workers.py   # adds PostgreSQL

* answer -> settled latency (p50, p99): an answer queued without the code
  (:func:`engine.handoff.queue_answer`) until the invocation settles, run by one
  worker process that is already waiting (woken by LISTEN on PostgreSQL, by
  the ``data_version`` poll on SQLite) -- next to :func:`engine.operations.answer`
  in the answering process (the app's code there);
* turns per second with 1, 4 and 16 worker processes (concurrency 2 each):
  N answers queued at once, until every turn settled -- next to N in-process
  answers one after another in one process.

The app is ``tests.reliability.crash_app`` (one turn: ~20 events, 5 side
effects). Numbers are printed, never asserted. Prints one table, with the
CPU seconds the worker processes used per throughput run (from /proc, read just
before they stop) and the load average when it ended (the machine may be shared).
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
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from engine import Content, Runner, handoff, operations  # noqa: E402
from engine.apps import AppRegistry  # noqa: E402
from engine.store import open_store  # noqa: E402
from tests.reliability import crash_app  # noqa: E402
from tests.reliability.worker_procs import APPROVE, context, worker_child  # noqa: E402

APP = crash_app.APP


def pct(values: list[float], p: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, round(p / 100 * (len(values) - 1)))]


async def make_sessions(url: str, n: int, prefix: str) -> list[str]:
    store = await open_store(url)
    try:
        runner = Runner(APP, crash_app.workflow, store)
        sids = []
        for i in range(n):
            sid = f"{prefix}{i:04d}"
            async for _ in runner.run("u", sid, Content.from_text(f"order-{i}")):
                pass
            sids.append(sid)
        return sids
    finally:
        await store.close()


class Pool:
    def __init__(self, url: str, tmp: str, count: int) -> None:
        ctx = context()
        ready = os.path.join(tmp, f"ready-{uuid.uuid4().hex[:6]}")
        spec = {"db": url, "effects": os.path.join(tmp, "effects"), "concurrency": 2, "ready": ready,
                "heartbeat": 1.0}
        self.procs = [ctx.Process(target=worker_child, args=(spec,), daemon=True) for _ in range(count)]
        for p in self.procs:
            p.start()
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if os.path.exists(ready) and len(Path(ready).read_text().split()) >= count:
                break
            time.sleep(0.05)

    def cpu(self) -> float:
        """CPU seconds (user + system) the worker processes used so far (Linux /proc)."""
        total = 0.0
        tick = os.sysconf("SC_CLK_TCK")
        for p in self.procs:
            try:
                fields = Path(f"/proc/{p.pid}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            total += (int(fields[11]) + int(fields[12])) / tick
        return total

    def stop(self) -> None:
        for p in self.procs:
            p.terminate()
        for p in self.procs:
            p.join(60)


async def latency_worker(url: str, sids: list[str]) -> list[float]:
    store = await open_store(url)
    out = []
    try:
        for sid in sids:
            t0 = time.perf_counter()
            done = await handoff.queue_answer(store, sid, APPROVE)
            assert done.error is None, done.error
            state = await handoff.follow(store, sid, done.invocation_id, timeout=60)
            assert state == "settled", state
            out.append(time.perf_counter() - t0)
    finally:
        await store.close()
    return out


async def latency_local(url: str, sids: list[str]) -> list[float]:
    store = await open_store(url)
    registry = AppRegistry()
    registry.register(APP, crash_app.workflow)
    out = []
    try:
        for sid in sids:
            t0 = time.perf_counter()
            done = await operations.answer(store, sid, APPROVE, registry=registry)
            assert done.error is None, done.error
            out.append(time.perf_counter() - t0)
    finally:
        await store.close()
    return out


async def throughput_worker(url: str, sids: list[str]) -> float:
    store = await open_store(url)
    try:
        t0 = time.perf_counter()
        for sid in sids:
            done = await handoff.queue_answer(store, sid, APPROVE)
            assert done.error is None, done.error
        while await store.turn_requests(limit=1):  # type: ignore[attr-defined]
            await asyncio.sleep(0.01)
        return len(sids) / (time.perf_counter() - t0)
    finally:
        await store.close()


async def throughput_local(url: str, sids: list[str]) -> float:
    t0 = time.perf_counter()
    await latency_local(url, sids)
    return len(sids) / (time.perf_counter() - t0)


def bench(url: str, tmp: str, n_lat: int, n_tp: int) -> dict[str, Any]:
    res: dict[str, Any] = {}
    sids = asyncio.run(make_sessions(url, n_lat, "lw"))
    pool = Pool(url, tmp, 1)
    try:
        lat = asyncio.run(latency_worker(url, sids))
    finally:
        pool.stop()
    res["worker latency"] = lat
    sids = asyncio.run(make_sessions(url, n_lat, "ll"))
    res["local latency"] = asyncio.run(latency_local(url, sids))
    for count in (1, 4, 16):
        sids = asyncio.run(make_sessions(url, n_tp, f"t{count}-"))
        pool = Pool(url, tmp, count)
        try:
            idle = pool.cpu()
            c0 = time.process_time()
            res[f"tp {count}"] = asyncio.run(throughput_worker(url, sids))
            res[f"cpu {count}"] = (pool.cpu() - idle) / n_tp
            res[f"cpu answer {count}"] = (time.process_time() - c0) / n_tp
        finally:
            pool.stop()
    sids = asyncio.run(make_sessions(url, n_tp, "tl"))
    c0 = time.process_time()
    res["tp local"] = asyncio.run(throughput_local(url, sids))
    res["cpu local"] = (time.process_time() - c0) / n_tp
    return res


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--latency", type=int, default=40, help="answers timed one by one")
    ap.add_argument("--sessions", type=int, default=60, help="answers queued at once per throughput run")
    ap.add_argument("--only", choices=["SQLite", "PostgreSQL"], help="one backend")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        targets = {"SQLite": os.path.join(tmp, "bench.sqlite")}
        pg = os.environ.get("HITL_BENCH_PG_URL") or os.environ.get("HITL_TEST_PG_URL")
        if pg:
            targets["PostgreSQL"] = f"{pg}{'&' if '?' in pg else '?'}schema=bw_{uuid.uuid4().hex[:12]}"
        if args.only:
            targets = {args.only: targets[args.only]}
        results = {name: bench(url, tmp, args.latency, args.sessions) for name, url in targets.items()}
    names = list(results)
    print(f"\nworkers vs in-process resume ({args.latency} timed answers, {args.sessions} per throughput run; "
          f"{os.cpu_count()} cores)\n")
    print(f"{'':<42}" + "".join(f"{n:>14}" for n in names))

    def row(label: str, fn: Any) -> None:
        print(f"{label:<42}" + "".join(f"{fn(results[n]):>14}" for n in names))

    ms = lambda v: f"{v * 1000:.1f} ms"  # noqa: E731
    row("answer->settled via worker  p50", lambda r: ms(statistics.median(r["worker latency"])))
    row("answer->settled via worker  p99", lambda r: ms(pct(r["worker latency"], 99)))
    row("answer, run in-process      p50", lambda r: ms(statistics.median(r["local latency"])))
    row("answer, run in-process      p99", lambda r: ms(pct(r["local latency"], 99)))
    for count in (1, 4, 16):
        row(f"turns/s, {count:>2} worker process(es)", lambda r, c=count: f"{r[f'tp {c}']:.1f}")
    row("turns/s, in-process, one after another", lambda r: f"{r['tp local']:.1f}")
    for count in (1, 4, 16):
        row(f"worker CPU per turn, {count:>2} worker(s)", lambda r, c=count: ms(r[f"cpu {c}"]))
        row(f"answering CPU per turn, {count:>2} worker(s)", lambda r, c=count: ms(r[f"cpu answer {c}"]))
    row("CPU per turn, in-process", lambda r: ms(r["cpu local"]))
    print(f"\nload average at the end: {' '.join(f'{v:.2f}' for v in os.getloadavg())}")


if __name__ == "__main__":
    main()
