"""Workers next to the in-process resume and a reference queue, on SQLite and PostgreSQL.

    python benchmarks/bench_workers.py [--shape one|crash] [--sessions N] [--latency N]
    HITL_TEST_PG_URL=postgresql://... python benchmarks/bench_workers.py   # adds PostgreSQL
    ... --reference /tmp/procr/bin/python   # procrastinate side by side (its own venv)

Before and after, side by side in one run (``git worktree add /tmp/before main``)::

    HITL_BENCH_PG_URL=postgresql://... python benchmarks/bench_workers.py --before /tmp/before \
        --reference /tmp/procr/bin/python --rounds 2

runs each side in a process of its own (this script, importing the other tree's
code), before then after, ``--rounds`` times (interleaved), the reference once a
round, and prints the median of the rounds per row, with the load average.

* answer -> settled latency (p50, p99): an answer queued without the code
  (:func:`engine.handoff.queue_answer`) until the invocation settles, run by one
  worker process that is already waiting (woken by LISTEN on PostgreSQL, by
  the ``data_version`` poll on SQLite) -- next to :func:`engine.operations.answer`
  in the answering process (the app's code there);
* turns per second with 1, 4 and 16 worker processes, concurrency 2 each (or
  ``--concurrency N``, the reference's workers alike; ``hitl worker``'s default is
  4), each started -- its connections warmed, its heartbeat row written -- before
  it is measured, as the reference's are:
  *answered live*, N answers queued one after another while the workers run,
  until every turn settled; *backlog*, N answers queued before the workers are
  let go (as the reference's jobs are deferred before its workers take them) --
  next to N in-process answers one after another in one process; the CPU the
  worker processes used per turn (from /proc, read just before they stop), and
  on PostgreSQL the server's (its processes' CPU, /proc: the server runs here);
* what one worker turn costs the store, counted: N answers queued, then one
  in-process worker serves them all, counted from its first claim (what a
  process does once before -- connecting, warming its connections, its first
  heartbeat -- is no turn's) -- messages sent to the server (round trips)
  and transactions committed on it (PostgreSQL: ``pg_stat_database``, every
  connection of the benchmark's database, reads included), statements and
  commits (SQLite), and that worker's CPU per turn;
* *backlog, warm*: the same, with worker processes that have served a batch
  first (every connection of theirs has run the turn's statements once: what a
  worker that has run for a while is; cold, each new server backend compiles the
  turn's PL/pgSQL functions on its first call, ~20 ms, a cost that grows with
  the number of processes, not of turns);
* with ``--reference PYTHON`` (a venv with procrastinate: see
  ``benchmarks/procrastinate_ref.py``): its no-op jobs per second with the same
  worker process counts on the same server, in the same run, and our ratio.

``--shape one`` (the default): ``prep -> ask -> after``, an answer's turn runs one
node; ``--shape crash``: ``tests.reliability.crash_app`` (one turn: ~20 events, 5
side effects). Numbers are printed, never asserted; the load average is printed
with them (the machine may be shared).
"""

from __future__ import annotations

import argparse
import asyncio
import asyncio.selector_events
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(os.environ.get("HITL_BENCH_TREE") or Path(__file__).resolve().parents[1])
"""The tree whose code is measured (``--before``: another checkout's, in a process of its own)."""
sys.path.insert(0, str(ROOT))


def _sibling(name: str) -> Any:
    """This script's neighbour module ``name``, from this script's directory: the
    measuring helpers are this script's, whichever tree's code is measured."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(f"_bench_{name}", Path(__file__).resolve().with_name(f"{name}.py"))
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_REF = _sibling("procrastinate_ref")
proc_cpu, parent_of, proc_server_cpu = _REF.cpu, _REF.parent_of, _REF.server_cpu
from engine import Content, Runner, handoff, operations  # noqa: E402
from engine.apps import AppRegistry  # noqa: E402
from engine.store import open_store  # noqa: E402
from engine.worker import Worker  # noqa: E402
from tests.reliability.worker_procs import APPROVE, context, worker_apps, worker_child  # noqa: E402

COUNTS = (1, 4, 16)


class Shape:
    """The app the workers serve, the answer each session's interrupt takes, and
    each worker's concurrency (the reference's workers get the same)."""

    def __init__(self, name: str, concurrency: int = 2) -> None:
        self.spec = "one" if name == "one" else "crash"
        self.concurrency = concurrency
        [(self.app, self.workflow)] = worker_apps({"app": self.spec}).items()
        self.answers: dict[str, dict[str, Any]] = {}

    async def make_sessions(self, url: str, n: int, prefix: str) -> list[str]:
        store = await open_store(url)
        try:
            runner = Runner(self.app, self.workflow, store)
            sids = []
            for i in range(n):
                sid = f"{prefix}{i:04d}"
                async for _ in runner.run("u", sid, Content.from_text(f"order-{i}")):
                    pass
                sids.append(sid)
            if self.spec == "crash":
                self.answers.update(dict.fromkeys(sids, APPROVE))
            else:
                for sid in sids:
                    rows = (await store.open_interrupts(session_id=sid, limit=10)).items
                    self.answers[sid] = {r.interrupt_id: "yes" for r in rows}
            return sids
        finally:
            await store.close()


def pct(values: list[float], p: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, round(p / 100 * (len(values) - 1)))]


class Pool:
    def __init__(self, url: str, tmp: str, count: int, shape: Shape, *, hold: bool = False) -> None:
        ctx = context()
        ready = os.path.join(tmp, f"ready-{uuid.uuid4().hex[:6]}")
        self.go = f"{ready}.go" if hold else None
        spec = {"db": url, "effects": os.path.join(tmp, "effects"), "concurrency": shape.concurrency, "ready": ready,
                "heartbeat": 1.0, "app": shape.spec, "go": self.go}
        self.procs = [ctx.Process(target=worker_child, args=(spec,), daemon=True) for _ in range(count)]
        for p in self.procs:
            p.start()
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if os.path.exists(ready) and len(Path(ready).read_text().split()) >= count:
                break
            time.sleep(0.05)
        # Ready as the reference's workers are before its jobs are deferred: started and
        # waiting. A worker's row is written after its warm-up, just before its first
        # claim -- waiting for the file alone let 16 workers still warming their
        # connections at the release, their start-up measured as the backlog's.
        asyncio.run(_rows(url, count, deadline))
        time.sleep(0.2)  # their first look at the queue and their listeners are done

    def cpu(self) -> float:
        return proc_cpu([p.pid for p in self.procs])

    def release(self) -> None:
        """Let workers started with ``hold`` run (each starts, then claims)."""
        assert self.go is not None
        Path(self.go).touch()

    def stop(self) -> None:
        for p in self.procs:
            p.terminate()
        for p in self.procs:
            p.join(60)


async def _rows(url: str, count: int, deadline: float) -> None:
    """Wait until ``count`` workers have written their heartbeat row (or ``deadline``)."""
    store = await open_store(url)
    try:
        while time.monotonic() < deadline and len(await store.list_workers()) < count:  # type: ignore[attr-defined]
            await asyncio.sleep(0.05)
    finally:
        await store.close()


async def latency_worker(url: str, sids: list[str], shape: Shape) -> list[float]:
    store = await open_store(url)
    out = []
    try:
        for sid in sids:
            t0 = time.perf_counter()
            done = await handoff.queue_answer(store, sid, shape.answers[sid])
            assert done.error is None, done.error
            state = await handoff.follow(store, sid, done.invocation_id, timeout=60)
            assert state == "settled", state
            out.append(time.perf_counter() - t0)
    finally:
        await store.close()
    return out


async def latency_local(url: str, sids: list[str], shape: Shape) -> list[float]:
    store = await open_store(url)
    registry = AppRegistry()
    registry.register(shape.app, shape.workflow)
    out = []
    try:
        for sid in sids:
            t0 = time.perf_counter()
            done = await operations.answer(store, sid, shape.answers[sid], registry=registry)
            assert done.error is None, done.error
            out.append(time.perf_counter() - t0)
    finally:
        await store.close()
    return out


async def throughput_worker(url: str, sids: list[str], shape: Shape) -> float:
    store = await open_store(url)
    try:
        t0 = time.perf_counter()
        for sid in sids:
            done = await handoff.queue_answer(store, sid, shape.answers[sid])
            assert done.error is None, done.error
        while await store.turn_requests(limit=1):  # type: ignore[attr-defined]
            await asyncio.sleep(0.01)
        return len(sids) / (time.perf_counter() - t0)
    finally:
        await store.close()


async def queue_all(url: str, sids: list[str], shape: Shape) -> None:
    store = await open_store(url)
    try:
        for sid in sids:
            done = await handoff.queue_answer(store, sid, shape.answers[sid])
            assert done.error is None, done.error
    finally:
        await store.close()


async def drained(url: str) -> None:
    store = await open_store(url)
    try:
        while await store.turn_requests(limit=1):  # type: ignore[attr-defined]
            await asyncio.sleep(0.005)
    finally:
        await store.close()


_POSTMASTER: dict[str, int] = {}


def server_cpu(url: str) -> float:
    """CPU seconds the PostgreSQL server of ``url`` used so far (its processes',
    /proc: the server runs here; :func:`benchmarks.procrastinate_ref.server_cpu`).
    0 for SQLite."""
    if not url.startswith("postgres"):
        return 0.0
    if url not in _POSTMASTER:
        import asyncpg

        async def postmaster() -> int:  # the parent of a backend, read while it lives
            conn = await asyncpg.connect(url.split("&schema=")[0].split("?schema=")[0])
            try:
                return parent_of(int(await conn.fetchval("SELECT pg_backend_pid()")))
            finally:
                await conn.close()

        _POSTMASTER[url] = asyncio.run(postmaster())
    return proc_server_cpu(_POSTMASTER[url])


def throughput_backlog(url: str, tmp: str, count: int, sids: list[str], shape: Shape) -> tuple[float, float, float]:
    """Turns/s, worker CPU and server CPU per turn of ``count`` worker processes released on a
    backlog of ``sids``' answers (queued before they go, as the reference's jobs are)."""
    pool = Pool(url, tmp, count, shape, hold=True)
    try:
        asyncio.run(queue_all(url, sids, shape))
        idle, server = pool.cpu(), server_cpu(url)
        t0 = time.perf_counter()
        pool.release()
        asyncio.run(drained(url))
        rate = len(sids) / (time.perf_counter() - t0)
        return rate, (pool.cpu() - idle) / len(sids), (server_cpu(url) - server) / len(sids)
    finally:
        pool.stop()


def throughput_warm(
    url: str, tmp: str, count: int, sids: list[str], warm: list[str], shape: Shape
) -> tuple[float, float, float]:
    """As :func:`throughput_backlog`, with workers that served ``warm``'s answers
    first; stopped (SIGSTOP) while the backlog is queued, then let go (SIGCONT)."""
    pool = Pool(url, tmp, count, shape)
    try:
        asyncio.run(queue_all(url, warm, shape))
        asyncio.run(drained(url))
        for p in pool.procs:
            os.kill(p.pid, signal.SIGSTOP)  # type: ignore[arg-type]
        try:
            asyncio.run(queue_all(url, sids, shape))
        finally:
            idle, server = pool.cpu(), server_cpu(url)
            t0 = time.perf_counter()
            for p in pool.procs:
                os.kill(p.pid, signal.SIGCONT)  # type: ignore[arg-type]
        asyncio.run(drained(url))
        rate = len(sids) / (time.perf_counter() - t0)
        return rate, (pool.cpu() - idle) / len(sids), (server_cpu(url) - server) / len(sids)
    finally:
        pool.stop()


async def throughput_local(url: str, sids: list[str], shape: Shape) -> float:
    t0 = time.perf_counter()
    await latency_local(url, sids, shape)
    return len(sids) / (time.perf_counter() - t0)


class Sent:
    """Messages this process sent over socket transports (asyncpg writes once per round trip)."""

    count = 0

    @classmethod
    def install(cls) -> None:
        transport = asyncio.selector_events._SelectorSocketTransport  # type: ignore[attr-defined]
        write = transport.write

        def counting(self: Any, data: Any) -> None:
            cls.count += 1
            write(self, data)

        transport.write = counting


async def server_commits(url: str) -> int:
    """Transactions committed in the benchmark's database so far (every connection)."""
    import asyncpg

    conn = await asyncpg.connect(url.split("&schema=")[0].split("?schema=")[0])
    try:
        await conn.execute("SELECT pg_stat_clear_snapshot()")
        return int(await conn.fetchval("SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()"))
    finally:
        await conn.close()


FIRST_CLAIM: dict[str, float] = {}
"""The counters when :func:`turn_cost`'s worker first claimed."""


def _from_first_claim(store: Any, sql: list[str]) -> None:
    """Count a worker's turns from its first claim: what it does once per process
    before (connecting, warming its connections, its first heartbeat and sweep)
    is not a turn's cost."""
    for name in ("claim_next_turn", "claim_and_read"):  # whichever the worker claims with
        claim = getattr(store, name, None)
        if claim is None:
            continue

        async def first(*a: Any, _name: str = name, _claim: Any = claim, **kw: Any) -> Any:
            for other in ("claim_next_turn", "claim_and_read"):
                store.__dict__.pop(other, None)  # the store's own methods from now on
            FIRST_CLAIM.update(sent=Sent.count, cpu=time.process_time())
            del sql[:]
            return await _claim(*a, **kw)

        setattr(store, name, first)


async def turn_cost(url: str, sids: list[str], shape: Shape) -> dict[str, float]:
    """One in-process worker (``shape.concurrency``) serves ``sids``' answers, queued before it starts."""
    await queue_all(url, sids, shape)
    pg = url.startswith("postgres")
    wstore = await open_store(url, inline=True)  # SQLite: on this thread, so its statements can be traced
    sql: list[str] = []
    results: list[Any] = []
    worker = Worker(wstore, {shape.app: shape.workflow}, concurrency=shape.concurrency, heartbeat=60, deadlines=False,
                    on_result=results.append)
    if not pg:
        wstore._driver._raw.set_trace_callback(sql.append)  # type: ignore[attr-defined]
    await asyncio.sleep(0.5 if pg else 0.05)  # let the statistics collector settle
    c0 = await server_commits(url) if pg else 0
    _from_first_claim(wstore, sql)
    task = asyncio.ensure_future(worker.run())
    while len(results) < len(sids) and not task.done():
        await asyncio.sleep(0.002)
    cpu, sent = time.process_time() - FIRST_CLAIM["cpu"], Sent.count - FIRST_CLAIM["sent"]
    worker.stop()
    await task
    await wstore.close()
    await asyncio.sleep(0.6 if pg else 0)  # pg_stat_database is updated at most every 500 ms
    n = len(sids)
    out = {"cpu": cpu / n, "outcomes": float(sum(r.outcome == "ran" for r in results))}
    if pg:
        out["round trips"] = sent / n
        out["commits"] = (await server_commits(url) - c0 - 1) / n
    else:
        out["statements"] = sum(1 for s in sql if not s.upper().startswith(("BEGIN", "COMMIT", "PRAGMA"))) / n
        out["commits"] = sum(1 for s in sql if s.upper().startswith("COMMIT")) / n
    return out


def bench(url: str, tmp: str, n_lat: int, n_tp: int, shape: Shape) -> dict[str, Any]:
    res: dict[str, Any] = {}
    sids = asyncio.run(shape.make_sessions(url, n_tp, "cost"))
    res["cost"] = asyncio.run(turn_cost(url, sids, shape))
    sids = asyncio.run(shape.make_sessions(url, n_lat, "lw"))
    pool = Pool(url, tmp, 1, shape)
    try:
        lat = asyncio.run(latency_worker(url, sids, shape))
    finally:
        pool.stop()
    res["worker latency"] = lat
    sids = asyncio.run(shape.make_sessions(url, n_lat, "ll"))
    res["local latency"] = asyncio.run(latency_local(url, sids, shape))
    for count in COUNTS:
        sids = asyncio.run(shape.make_sessions(url, n_tp, f"t{count}-"))
        pool = Pool(url, tmp, count, shape)
        try:
            idle = pool.cpu()
            c0 = time.process_time()
            res[f"tp {count}"] = asyncio.run(throughput_worker(url, sids, shape))
            res[f"cpu {count}"] = (pool.cpu() - idle) / n_tp
            res[f"cpu answer {count}"] = (time.process_time() - c0) / n_tp
        finally:
            pool.stop()
    for count in COUNTS:
        sids = asyncio.run(shape.make_sessions(url, n_tp, f"b{count}-"))
        res[f"tpb {count}"], res[f"cpub {count}"], res[f"srvb {count}"] = throughput_backlog(url, tmp, count, sids, shape)
    for count in COUNTS:
        warm = asyncio.run(shape.make_sessions(url, 4 * count, f"ww{count}-"))
        sids = asyncio.run(shape.make_sessions(url, n_tp, f"w{count}-"))
        res[f"tpw {count}"], res[f"cpuw {count}"], res[f"srvw {count}"] = throughput_warm(
            url, tmp, count, sids, warm, shape
        )
    sids = asyncio.run(shape.make_sessions(url, n_tp, "tl"))
    c0 = time.process_time()
    res["tp local"] = asyncio.run(throughput_local(url, sids, shape))
    res["cpu local"] = (time.process_time() - c0) / n_tp
    return res


def reference(python: str, url: str, jobs: int, concurrency: int) -> dict[str, Any]:
    """procrastinate's no-op jobs/s on the same server (its own venv: procrastinate_ref.py)."""
    script = Path(__file__).with_name("procrastinate_ref.py")
    done = subprocess.run(
        [python, str(script), url, "--jobs", str(jobs), "--concurrency", str(concurrency), "--workers", *map(str, COUNTS)],
        capture_output=True, text=True, timeout=900, check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"the reference queue failed:\n{done.stderr[-2000:]}")
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def measure(args: argparse.Namespace, pg: str | None, shape: Shape) -> dict[str, Any]:
    """This tree's results per backend, and the load average after each."""
    with tempfile.TemporaryDirectory() as tmp:
        targets = {"SQLite": os.path.join(tmp, "bench.sqlite")}
        if pg:
            targets["PostgreSQL"] = f"{pg}{'&' if '?' in pg else '?'}schema=bw_{uuid.uuid4().hex[:12]}"
        if args.only:
            targets = {args.only: targets[args.only]}
        out: dict[str, Any] = {}
        for name, url in targets.items():
            out[name] = bench(url, tmp, args.latency, args.sessions, shape)
            out[name]["load"] = os.getloadavg()
        return out


def side(tree: str, argv: list[str]) -> dict[str, Any]:
    """This script's results with ``tree``'s code, in a process of its own."""
    with tempfile.NamedTemporaryFile(suffix=".json") as fh:
        env = {**os.environ, "HITL_BENCH_TREE": tree, "PYTHONPATH": tree}
        # In the tree's directory: the worker processes are forked by multiprocessing's
        # forkserver, which puts its working directory first on sys.path -- run from
        # another checkout, the "before" side's workers imported that checkout's code.
        script = str(Path(__file__).resolve())
        subprocess.run([sys.executable, script, *argv, "--json", fh.name], env=env, check=True, timeout=3600, cwd=tree)
        return dict(json.loads(Path(fh.name).read_text()))


def median_of(rounds: list[Any]) -> Any:
    """Per key, the median of the rounds' values (lists: pooled)."""
    first = rounds[0]
    if isinstance(first, dict):
        return {k: median_of([r[k] for r in rounds]) for k in first if all(k in r for r in rounds)}
    if isinstance(first, list) and first and isinstance(first[0], (int, float)) and len(first) > 3:
        return [v for r in rounds for v in r]  # samples (latencies): pooled
    if isinstance(first, (list, tuple)):
        return [median_of([r[i] for r in rounds]) for i in range(len(first))]
    return statistics.median(rounds) if isinstance(first, (int, float)) else first


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--latency", type=int, default=40, help="answers timed one by one")
    ap.add_argument("--sessions", type=int, default=200, help="answers queued at once per throughput run")
    ap.add_argument("--only", choices=["SQLite", "PostgreSQL"], help="one backend")
    ap.add_argument("--shape", choices=["one", "crash"], default="one",
                    help="one: an answer's turn runs one node (default); crash: the crash app's ~20-event turn")
    ap.add_argument("--reference", metavar="PYTHON", default=os.environ.get("HITL_BENCH_PROCRASTINATE"),
                    help="the python of a venv with procrastinate: its jobs/s side by side (PostgreSQL)")
    ap.add_argument("--before", metavar="TREE", help="a checkout of the code before: measured side by side")
    ap.add_argument("--rounds", type=int, default=1, help="with --before: before/after pairs, interleaved")
    ap.add_argument("--concurrency", type=int, default=2,
                    help="each worker process's, ours and the reference's alike (hitl worker's default: 4)")
    ap.add_argument("--json", metavar="PATH", help=argparse.SUPPRESS)  # one side's results (--before)
    args = ap.parse_args()
    Sent.install()
    shape = Shape(args.shape, args.concurrency)
    pg = os.environ.get("HITL_BENCH_PG_URL") or os.environ.get("HITL_TEST_PG_URL")
    if args.json:
        Path(args.json).write_text(json.dumps(measure(args, pg, shape)))
        return
    sides: dict[str, list[dict[str, Any]]] = {}
    refs: list[dict[str, Any]] = []
    want_ref = args.reference and pg and args.only != "SQLite"
    argv = [f"--latency={args.latency}", f"--sessions={args.sessions}", f"--shape={args.shape}",
            f"--concurrency={args.concurrency}"]
    argv += [f"--only={args.only}"] if args.only else []
    for _ in range(max(1, args.rounds) if args.before else 1):
        if args.before:
            sides.setdefault("before", []).append(side(args.before, argv))
            sides.setdefault("after", []).append(side(str(Path(__file__).resolve().parents[1]), argv))
        else:
            sides.setdefault("", []).append(measure(args, pg, shape))
        if want_ref:
            refs.append(reference(args.reference, pg, args.sessions, args.concurrency))
    ref = median_of(refs) if refs else None
    results = {f"{name} {label}".strip(): r for label, rounds in sides.items()
               for name, r in median_of(rounds).items()}
    print_table(args, results, ref, rounds=len(next(iter(sides.values()))))


def print_table(args: argparse.Namespace, results: dict[str, Any], ref: dict[str, Any] | None, *, rounds: int) -> None:
    names = list(results)
    print(f"\nworkers vs in-process resume, shape {args.shape!r} ({args.latency} timed answers, "
          f"{args.sessions} per throughput run; concurrency {args.concurrency} per worker process; "
          f"{os.cpu_count()} cores; median of {rounds} round(s))\n")
    width = max(14, *(len(n) + 2 for n in names))
    print(f"{'':<46}" + "".join(f"{n:>{width}}" for n in names))

    def row(label: str, fn: Any) -> None:
        cells = []
        for n in names:
            try:
                cells.append(fn(results[n]))
            except KeyError:
                cells.append("-")
        print(f"{label:<46}" + "".join(f"{c:>{width}}" for c in cells))

    def pg(r: dict[str, Any]) -> bool:
        return any(r is results[n] for n in names if n.startswith("PostgreSQL"))

    ms = lambda v: f"{v * 1000:.1f} ms"  # noqa: E731
    row("answer->settled via worker  p50", lambda r: ms(statistics.median(r["worker latency"])))
    row("answer->settled via worker  p99", lambda r: ms(pct(r["worker latency"], 99)))
    row("answer, run in-process      p50", lambda r: ms(statistics.median(r["local latency"])))
    row("answer, run in-process      p99", lambda r: ms(pct(r["local latency"], 99)))
    for count in COUNTS:
        row(f"turns/s, {count:>2} worker process(es), answered live", lambda r, c=count: f"{r[f'tp {c}']:.1f}")
    for count in COUNTS:
        row(f"turns/s, {count:>2} worker process(es), backlog", lambda r, c=count: f"{r[f'tpb {c}']:.1f}")
        if ref is not None:
            row(f"  reference jobs/s, {count:>2}, backlog", lambda r, c=count: f"{ref[str(c)]:.1f}" if pg(r) else "-")
            row(f"  ours / reference, {count:>2}",
                lambda r, c=count: f"{r[f'tpb {c}'] / ref[str(c)]:.2f}x" if pg(r) else "-")
    for count in COUNTS:
        row(f"turns/s, {count:>2} worker process(es), backlog, warm", lambda r, c=count: f"{r[f'tpw {c}']:.1f}")
    row("turns/s, in-process, one after another", lambda r: f"{r['tp local']:.1f}")
    for count in COUNTS:
        row(f"worker CPU per turn, {count:>2} worker(s), live", lambda r, c=count: ms(r[f"cpu {c}"]))
    for count in COUNTS:
        row(f"worker CPU per turn, {count:>2} worker(s), backlog", lambda r, c=count: ms(r[f"cpub {c}"]))
    for count in COUNTS:
        row(f"worker CPU per turn, {count:>2} worker(s), warm", lambda r, c=count: ms(r[f"cpuw {c}"]))
    for count in COUNTS:
        row(f"server CPU per turn, {count:>2} worker(s), backlog", lambda r, c=count: ms(r[f"srvb {c}"]) if pg(r) else "-")
    for count in COUNTS:
        row(f"server CPU per turn, {count:>2} worker(s), warm", lambda r, c=count: ms(r[f"srvw {c}"]) if pg(r) else "-")
    if ref is not None:
        for count in COUNTS:
            row(f"reference worker CPU per job, {count:>2}", lambda r, c=count: ms(ref["cpu"][str(c)]) if pg(r) else "-")
        for count in COUNTS:
            row(f"reference server CPU per job, {count:>2}",
                lambda r, c=count: ms(ref["server"][str(c)]) if pg(r) and "server" in ref else "-")
    for count in COUNTS:
        row(f"answering CPU per turn, {count:>2} worker(s)", lambda r, c=count: ms(r[f"cpu answer {c}"]))
    row("CPU per turn, in-process", lambda r: ms(r["cpu local"]))
    row("one worker, in-process: CPU per turn", lambda r: ms(r["cost"]["cpu"]))
    row("  round trips per turn (PostgreSQL)", lambda r: f"{r['cost']['round trips']:.2f}")
    row("  statements per turn (SQLite)", lambda r: f"{r['cost']['statements']:.2f}")
    row("  commits per turn (server-wide on PostgreSQL)", lambda r: f"{r['cost']['commits']:.2f}")
    row("load average after (1, 5, 15 min)", lambda r: " ".join(f"{v:.1f}" for v in r["load"]))
    print(f"\nload average at the end: {' '.join(f'{v:.2f}' for v in os.getloadavg())}")


if __name__ == "__main__":
    main()
