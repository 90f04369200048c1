"""The reference queue for ``bench_workers.py``: procrastinate's no-op jobs per second.

procrastinate is not a dependency of this project, so this script runs in a venv
of its own (it imports nothing from ``engine``)::

    python3 -m venv /tmp/procr && /tmp/procr/bin/pip install 'procrastinate==3.10.0' 'psycopg[binary]'
    /tmp/procr/bin/python benchmarks/procrastinate_ref.py postgresql://... --jobs 200 --workers 1 4 16

For each worker count: a fresh schema (procrastinate's own, applied by it), that
many worker processes (concurrency 2 each, or ``--concurrency N``; LISTEN/NOTIFY on, as
the hitl worker processes are run), each ready and waiting before the jobs are deferred in one
batch; the time from the defer until every job is done. Prints one JSON line:
``{"1": jobs/s, "4": ..., "16": ..., "cpu": {"1": worker CPU seconds per job, ...},
"server": {"1": the server's CPU seconds per job, ...}}`` (the server's: its processes'
CPU from /proc, so it must run on this machine).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import multiprocessing
import os
import signal
import time
import uuid
from pathlib import Path
from typing import Any
from urllib.parse import quote


def make_app(conninfo: str) -> Any:
    import procrastinate  # only where this script runs, in its own venv (bench_workers imports cpu() alone)

    app = procrastinate.App(connector=procrastinate.PsycopgConnector(conninfo=conninfo, min_size=1, max_size=4))

    @app.task(name="noop")
    async def noop() -> None:
        return None

    return app


def with_schema(url: str, schema: str) -> str:
    return f"{url}{'&' if '?' in url else '?'}options={quote(f'-csearch_path={schema}')}"


def worker_main(conninfo: str, ready: str, concurrency: int) -> None:
    app = make_app(conninfo)

    async def main() -> None:
        async with app.open_async():
            task = asyncio.ensure_future(app.run_worker_async(concurrency=concurrency, install_signal_handlers=False,
                                                              delete_jobs="never"))
            await asyncio.sleep(0.3)  # its LISTEN is up
            with open(ready, "a", encoding="utf-8") as fh:
                fh.write(f"{os.getpid()}\n")
            stop = asyncio.Event()
            asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
            await stop.wait()
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, TimeoutError):
                await asyncio.wait_for(task, 10)

    asyncio.run(main())


def cpu(pids: list[int | None]) -> float:
    """CPU seconds (user + system) these processes used so far (Linux /proc)."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0.0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += (int(fields[11]) + int(fields[12])) / tick
    return total


def parent_of(pid: int) -> int:
    """A process's parent (Linux /proc): a backend's is its server's postmaster."""
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])


def server_cpu(postmaster: int) -> float:
    """CPU seconds the PostgreSQL server whose postmaster is ``postmaster`` used so
    far: its child processes' (backends, and its own workers), from /proc. A
    process that ended is not counted: read it while the connections are open."""
    children = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError, ValueError, IndexError):
                if parent_of(int(entry.name)) == postmaster:
                    children.append(int(entry.name))
    return cpu(children)


async def run_once(url: str, jobs: int, workers: int, tmp: str, concurrency: int) -> tuple[float, float, float]:
    import psycopg

    schema = f"procr_{uuid.uuid4().hex[:10]}"
    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
        await conn.execute(f"CREATE SCHEMA {schema}")
        cur = await conn.execute("SELECT pg_backend_pid()")
        postmaster = parent_of(int((await cur.fetchone())[0]))  # type: ignore[index]
    conninfo = with_schema(url, schema)
    app = make_app(conninfo)
    async with app.open_async():
        await app.schema_manager.apply_schema_async()
        ready = os.path.join(tmp, f"ready-{schema}")
        ctx = multiprocessing.get_context("spawn")
        procs = [ctx.Process(target=worker_main, args=(conninfo, ready, concurrency), daemon=True) for _ in range(workers)]
        for p in procs:
            p.start()
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if os.path.exists(ready) and len(Path(ready).read_text().split()) >= workers:
                break
            await asyncio.sleep(0.05)
        pids = [p.pid for p in procs if p.pid is not None]
        c0, s0 = cpu(pids), server_cpu(postmaster)
        t0 = time.perf_counter()
        await app.tasks["noop"].batch_defer_async(*({} for _ in range(jobs)))
        async with await psycopg.AsyncConnection.connect(conninfo, autocommit=True) as conn:
            while True:
                cur = await conn.execute("SELECT count(*) FROM procrastinate_jobs WHERE status = 'succeeded'")
                row = await cur.fetchone()
                if row and row[0] >= jobs:
                    break
                await asyncio.sleep(0.01)
        rate = jobs / (time.perf_counter() - t0)
        used, served = (cpu(pids) - c0) / jobs, (server_cpu(postmaster) - s0) / jobs
        for p in procs:
            p.terminate()
        for p in procs:
            p.join(30)
    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
        await conn.execute(f"DROP SCHEMA {schema} CASCADE")
    return rate, used, served


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("url")
    ap.add_argument("--jobs", type=int, default=200)
    ap.add_argument("--workers", type=int, nargs="+", default=[1, 4, 16])
    ap.add_argument("--concurrency", type=int, default=2, help="each worker process's")
    args = ap.parse_args()
    import tempfile

    out: dict[str, object] = {"cpu": {}, "server": {}}
    with tempfile.TemporaryDirectory() as tmp:
        for n in args.workers:
            rate, used, served = asyncio.run(run_once(args.url, args.jobs, n, tmp, args.concurrency))
            out[str(n)] = rate
            out["cpu"][str(n)] = used  # type: ignore[index]
            out["server"][str(n)] = served  # type: ignore[index]
    print(json.dumps(out))


if __name__ == "__main__":
    main()
