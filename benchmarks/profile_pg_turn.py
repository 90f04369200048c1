"""Where the PostgreSQL server's CPU goes in a worker turn: per function, per statement.

    python benchmarks/profile_pg_turn.py --url postgresql://...   [--turns 100] [--tree /tmp/before]

The server must load ``pg_stat_statements`` with ``track_functions=all``,
``pg_stat_statements.track=all`` and ``track_planning=on`` (a throwaway server,
as ``scripts/services/postgres.sh`` starts one, with those ``-c`` options, and
``CREATE EXTENSION pg_stat_statements`` in its database). ``--tree``: measure
another checkout's code (a process of its own, importing that tree).

In a new schema: ``--turns`` (at most 100) sessions of ``prep -> ask -> after`` are run to the
interrupt and answered into the worker queue, then one in-process worker
(one connection, concurrency 1) serves them. The statistics are reset after the
worker's warm-up and its first two turns, so what is printed is warm turns only:

* the functions (``pg_stat_user_functions``): calls and total/self time per turn;
* the statements, top level and nested (``pg_stat_statements``): calls, plans,
  execution and planning time per turn, the largest first;
* the cold first call: a new backend's server CPU (``/proc/<pid>/schedstat``:
  the server runs on this machine) for the turn's first write and last write on
  a scratch session, in a transaction rolled back -- what a worker's warm-up
  costs the server, per connection;

with the load average. Times are the server's own (``clock_gettime``), printed,
never asserted.

``--perf FILE``: also ``perf record`` the worker connection's backend while it
serves the measured turns (``perf report -i FILE --sort sym`` then says which of
the server's C functions the turn's CPU is spent in).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import uuid
from pathlib import Path
from statistics import median
from typing import Any

ROOT = Path(os.environ.get("HITL_BENCH_TREE") or Path(__file__).resolve().parents[1])
sys.path.insert(0, str(ROOT))

import asyncpg  # noqa: E402

from engine.store import open_store  # noqa: E402
from tests.reliability.test_worker_turn_cost import APP, _queued, _serve  # noqa: E402


def _cpu_ns(pid: int) -> int:
    return int(Path(f"/proc/{pid}/schedstat").read_text().split()[0])


async def _cold(url: str, schema: str, backends: int = 5) -> dict[str, float]:
    """A new backend's server CPU for the turn's statements' first calls (ms, the
    median of ``backends`` new backends)."""
    from engine.store.postgres import warm

    cold, again = [], []
    for _ in range(backends):
        conn = await asyncpg.connect(_base(url), server_settings={"search_path": schema})
        try:
            pid = await conn.fetchval("SELECT pg_backend_pid()")
            t0 = _cpu_ns(pid)
            await warm._warm(conn, [APP], "profile")
            t1 = _cpu_ns(pid)
            await warm._warm(conn, [APP], "profile")  # the same again, on the now warm backend
            t2 = _cpu_ns(pid)
        finally:
            await conn.close()
        cold.append((t1 - t0) / 1e6)
        again.append((t2 - t1) / 1e6)
    return {
        "a new backend's warm-up (claim, first and last write, twice; compile and plan included)": median(cold),
        "the same warm-up again on that backend": median(again),
    }


def _server_cpu(data_dir: str) -> dict[int, int]:
    """The CPU (ns) of each process of the server: its postmaster and every process it started."""
    postmaster = int(Path(data_dir, "postmaster.pid").read_text().split()[0])
    cpu = {postmaster: _cpu_ns(postmaster)}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            if int(stat.read_text().rsplit(")", 1)[1].split()[1]) == postmaster:
                cpu[int(stat.parent.name)] = _cpu_ns(int(stat.parent.name))
        except (OSError, ValueError, IndexError):
            continue  # ended meanwhile
    return cpu


def _used(before: dict[int, int], after: dict[int, int]) -> int:
    """The CPU the server's processes used between two readings (a process that
    ended meanwhile is left out: it took its count with it)."""
    return sum(ns - before.get(pid, 0) for pid, ns in after.items())


def _base(url: str) -> str:
    """``url`` without the store's ``schema=`` parameter (asyncpg does not know it)."""
    base, _, query = url.partition("?")
    kept = [p for p in query.split("&") if p and not p.startswith("schema=")]
    return base + ("?" + "&".join(kept) if kept else "")


async def main_async(url: str, turns: int, perf: str | None = None) -> dict[str, Any]:
    schema = f"prof_{uuid.uuid4().hex[:12]}"
    surl = f"{url}{'&' if '?' in url else '?'}schema={schema}"
    admin = await asyncpg.connect(_base(url))
    try:
        store = await open_store(surl, max_size=1)
        try:
            await _queued(surl, 2, "warm")
            await _serve(store, 2)
            await _queued(surl, turns, "t")
            await admin.execute("SELECT pg_stat_statements_reset()")
            await admin.execute("SELECT pg_stat_reset()")
            data_dir = await admin.fetchval("SHOW data_directory")
            pid = await store._run(lambda conn: conn.fetchval("SELECT pg_backend_pid()"))  # type: ignore[attr-defined]
            rec = None if perf is None else subprocess.Popen(
                ["perf", "record", "-F", "4999", "-g", "-o", perf, "-p", str(pid)],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            if rec is not None:
                await asyncio.sleep(0.5)  # perf attached
            server0, backend0 = _server_cpu(data_dir), _cpu_ns(pid)
            await _serve(store, turns)
            server1, backend1 = _server_cpu(data_dir), _cpu_ns(pid)
            if rec is not None:
                rec.send_signal(2)
                rec.wait(30)
            await asyncio.sleep(0.6)  # backends flush their function statistics at most every 0.5 s
            await store.close()
            store = None
            await asyncio.sleep(0.2)
            funcs = await admin.fetch(
                "SELECT funcname, calls, total_time, self_time FROM pg_stat_user_functions"
                " WHERE schemaname = $1 ORDER BY self_time DESC", schema,
            )
            stmts = await admin.fetch(
                "SELECT toplevel, calls, plans, total_exec_time, total_plan_time, rows, query"
                " FROM pg_stat_statements WHERE query NOT ILIKE '%pg_stat%' ORDER BY total_exec_time DESC LIMIT 25"
            )
        finally:
            if store is not None:
                await store.close()
        cold = await _cold(surl, schema)
    finally:
        await admin.close()
    return {
        "functions": [[r["funcname"], r["calls"] / turns, r["total_time"] / turns, r["self_time"] / turns] for r in funcs],
        "statements": [
            [r["toplevel"], r["calls"] / turns, r["plans"] / turns, r["total_exec_time"] / turns,
             r["total_plan_time"] / turns, " ".join(r["query"].split())[:110],
             r["toplevel"] and any(f in r["query"] for f in ("hitl_acquire_append(", "hitl_append_release("))]
            for r in stmts
        ],
        "cold": cold,
        "cpu": {"the whole server's CPU per turn": _used(server0, server1) / turns / 1e6,
                "the worker connection's backend CPU per turn": (backend1 - backend0) / turns / 1e6},
    }


def _print(name: str, res: dict[str, Any]) -> None:
    print(f"\n## {name}\n")
    print("| function | calls/turn | total ms/turn | self ms/turn |\n|---|---|---|---|")
    for f, c, t, s in res["functions"]:
        print(f"| {f} | {c:.2f} | {t:.3f} | {s:.3f} |")
    print("\n| top | calls/turn | plans/turn | exec ms/turn | plan ms/turn | statement |\n|---|---|---|---|---|---|")
    for top, c, p, e, pl, q, _write in res["statements"]:
        q = q.replace("|", "\\|")
        print(f"| {'yes' if top else 'no'} | {c:.2f} | {p:.2f} | {e:.3f} | {pl:.3f} | `{q}` |")
    print()
    for k, v in res["cold"].items():
        print(f"- {k}: {v:.2f} ms server CPU")
    for k, v in res["cpu"].items():
        print(f"- {k}: {v:.3f} ms")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--url", required=True)
    ap.add_argument("--turns", type=int, default=100, choices=range(1, 101), metavar="1..100")
    ap.add_argument("--tree", help="another checkout: profiled in a process of its own, first")
    ap.add_argument("--rounds", type=int, default=1, help="before/after pairs, interleaved (the tables: the last)")
    ap.add_argument("--perf", metavar="FILE", help="perf record the worker's backend during the turns (one round)")
    ap.add_argument("--json", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.json:
        print(json.dumps(asyncio.run(main_async(a.url, a.turns, a.perf))))
        return
    runs: dict[str, list[dict[str, Any]]] = {}
    loads: dict[str, list[str]] = {}
    for _ in range(max(1, a.rounds)):
        for label, tree in ([("before", a.tree)] if a.tree else []) + [("this tree", str(ROOT))]:
            env = dict(os.environ, HITL_BENCH_TREE=tree, PYTHONPATH=tree)
            load0 = os.getloadavg()[0]
            extra = ["--perf", a.perf] if a.perf else []
            out = subprocess.run([sys.executable, __file__, "--url", a.url, "--turns", str(a.turns), "--json", *extra],
                                 env=env, check=True, capture_output=True, text=True, cwd=tree).stdout
            runs.setdefault(f"{label} ({tree})", []).append(json.loads(out))
            loads.setdefault(f"{label} ({tree})", []).append(f"{load0:.1f}->{os.getloadavg()[0]:.1f}")
    for name, results in runs.items():
        _print(f"{name}, the last of {len(results)} round(s), load {loads[name][-1]}", results[-1])
    print("\n| per turn, every round (ms) | " + " | ".join(runs) + " |\n|---|" + "---|" * len(runs))
    rows = {
        # (matched on the whole text: a statement's first words need not name its function)
        "the turn's two writes, executed (pg_stat_statements)": lambda r: sum(
            e for _top, _c, _p, e, _pl, _q, write in r["statements"] if write),
        **{k: (lambda r, k=k: r["cpu"][k]) for k in next(iter(runs.values()))[0]["cpu"]},
        **{k: (lambda r, k=k: r["cold"][k]) for k in next(iter(runs.values()))[0]["cold"]},
    }
    for label, fn in rows.items():
        cells = [" / ".join(f"{fn(r):.2f}" for r in results) for results in runs.values()]
        print(f"| {label} | " + " | ".join(cells) + " |")
    print("\nloads (1 min) per run: " + "; ".join(f"{n}: {', '.join(v)}" for n, v in loads.items()))


if __name__ == "__main__":
    main()
