"""A cold process's turn on PostgreSQL, side by side with LangGraph's PostgreSQL
checkpointer, in one run on one server (issue 38).

    source scripts/services/postgres.sh      # or HITL_BENCH_PG_URL=postgresql://...
    python benchmarks/bench_pg_cold.py [--reps 9] [--sizes 100,10000] \\
        [--langgraph-python /tmp/lgpg/bin/python] [--before /tmp/before]

Every ``hitl resume`` or ``hitl start`` against PostgreSQL is the first turn of a
new process on a new connection, whose statements are not prepared yet: that is
what this measures. Each measurement is a fresh child process, on a schema built
for it (ours: a bulk-loaded session whose history holds N events of other,
finished invocations, waiting at an interrupt; LangGraph's: a thread with about N
checkpoint and write rows, waiting at ``interrupt()``). After the imports, the
child times opening the store (connection, schema check) plus one operation --
resume (answer -> settled turn: one node runs) or a fresh run on a new session
to its first interrupt -- and counts the messages it sent the server (asyncpg
writes the socket once per round trip). Repetitions are interleaved (ours, then
LangGraph's, shape by shape), so load from elsewhere spreads over both columns.

``--before`` names another checkout (``git worktree add --detach /tmp/before
main``): its store is measured too, in the same interleaved repetitions, as a
column of its own -- before and after side by side in one run.

LangGraph runs in its own venv (``bench_langgraph_pg.py`` beside this file,
which imports nothing of ours); without ``--langgraph-python`` its column is
left out. Prints three tables (medians): wall time [min-max] with the round
trips, CPU (the client's and the server backend's, when the server runs on this
machine), and the profile of our cold turn -- the backend's CPU per round trip:
its start with the schema check (``open``), then each statement. Numbers are
reported, never asserted -- the round-trip counts, deterministic, are asserted
by tests/reliability/test_postgres_batch.py.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(os.environ.get("HITL_BENCH_ROOT") or Path(__file__).resolve().parents[1])
"""The tree whose ``engine`` is measured (``--before`` runs children on another)."""
HERE = Path(__file__).resolve().parent


def pg_base() -> str:
    url = os.environ.get("HITL_BENCH_PG_URL") or os.environ.get("HITL_TEST_PG_URL")
    if not url:
        sys.exit("set HITL_BENCH_PG_URL or HITL_TEST_PG_URL (source scripts/services/postgres.sh)")
    return url


def with_schema(base: str, schema: str) -> str:
    return f"{base}{'&' if '?' in base else '?'}schema={schema}"


def backend_cpu_ms(pid: int) -> float | None:
    """The CPU a server process has used since it started (its whole life: a new
    connection's backend, so its startup and every statement), when the server
    runs on this machine; else None."""
    try:
        with open(f"/proc/{pid}/schedstat") as f:
            return int(f.read().split()[0]) / 1e6
    except (OSError, ValueError, IndexError):
        return None


# ------------------------------------------------------------------ ours


async def build_ours(url: str, n_events: int, tmp: Path) -> None:
    """Session ``big``: ``n_events`` events of finished invocations, then SIMPLE waiting."""
    sys.path.insert(0, str(ROOT))
    sys.path.insert(0, str(HERE))
    importlib.import_module("engine.store")  # ROOT's, before bench_engine puts this file's tree first on the path
    import bench_engine as be

    from engine import Content, Runner
    from engine.models import Session
    from engine.store import open_store

    template = await be.history_template(tmp)
    store = await open_store(url, inline=True)
    try:
        history = be.replicate(template, n_events) if n_events else []
        await store.bulk_load([(Session(id="big", app_name="bench", user_id="u"), history)])
        async for _ in Runner("bench", be.SIMPLE, store).run("u", "big", Content.from_text("go")):
            pass
    finally:
        await store.close()


async def child_ours(kind: str, url: str) -> dict[str, Any]:
    import asyncio.selector_events

    sys.path.insert(0, str(ROOT))
    sys.path.insert(0, str(HERE))
    importlib.import_module("engine.store")  # ROOT's, before bench_engine puts this file's tree first on the path
    import bench_engine as be

    from engine import START, Content, Runner, Workflow
    from engine.store import open_store

    sent = [0]
    backend: list[int] = []
    """The pid of the backend serving the store, once it is open."""
    marks: list[tuple[str, float | None]] = []
    """(the statement sent, the backend's CPU just before): the profile's steps."""
    transport = asyncio.selector_events._SelectorSocketTransport  # type: ignore[attr-defined]
    write = transport.write

    def counting(self: Any, data: Any) -> None:
        sent[0] += 1
        if backend:  # the turn's statements are sequential: what the backend did since is the previous one's
            marks.append((_statement_name(bytes(data[:300])), backend_cpu_ms(backend[0])))
        write(self, data)

    transport.write = counting
    workflow = be.SIMPLE if kind == "resume" else Workflow("w", [(START, be.ask)])
    # Before the clock, on a connection of its own: the interrupt's id, and the
    # store's modules imported (as a resume's imports come before its clock).
    peek = await open_store(url, inline=True, read_only=True)
    iid = (await peek.open_interrupts(session_id="big", limit=1)).items[0].interrupt_id
    await peek.close()
    before = sent[0]
    t, cpu = time.perf_counter(), time.process_time()
    store = await open_store(url, inline=True)
    opened = sent[0] - before
    backend.append(_server_pid(store))
    marks.append(("open", backend_cpu_ms(backend[0])))  # the backend's start and the schema check
    runner = Runner("bench", workflow, store)
    if kind == "resume":
        async for _ in runner.run("u", "big", Content.from_responses({iid: True})):
            pass
    else:
        async for _ in runner.run("u", f"new-{uuid.uuid4().hex[:8]}", Content.from_text("go")):
            pass
    ms = (time.perf_counter() - t) * 1e3
    cpu_ms = (time.process_time() - cpu) * 1e3
    trips = sent[0] - before
    server = backend_cpu_ms(backend[0])  # after the clock: the backend that served the turn
    marks.append(("", server))
    steps = None
    if all(cpu is not None for _, cpu in marks):
        # each statement's backend CPU: from its mark to the next one's
        steps = [(marks[0][0], marks[0][1])] + [
            (name, nxt - cpu) for (name, cpu), (_, nxt) in zip(marks[1:], marks[2:], strict=False)  # type: ignore[operator]
        ]
    await store.close()
    return {"ms": ms, "cpu": cpu_ms, "server": server, "trips": trips, "open": opened, "steps": steps}


def _server_pid(store: Any) -> int:
    """The pid of the backend of the store's one open connection (asking the
    pool for a connection would add a round trip on its release)."""
    [pid] = [h._con.get_server_pid() for h in store._pool._holders if h._con is not None]
    return int(pid)


def _statement_name(message: bytes) -> str:
    """A short name for a message the store sent: the hitl_ function it calls,
    else the start of its statement."""
    text = message.decode("utf-8", "replace")
    call = re.search(r"\b(hitl_[a-z_]+)\(", text)
    if call:
        return call[1]
    words = re.sub(r"^.*?COPY \(|^[^A-Za-z]*", "", text, count=1).split()
    return " ".join(words[:3])


# ------------------------------------------------------------------ driver


def _open_trips(results: list[dict[str, Any]]) -> str:
    """The round trips of opening the store (the same every time)."""
    return f"{statistics.median(r['open'] for r in results):.0f}"


def _child(argv: list[str], env: dict[str, str] | None = None) -> dict[str, Any]:
    out = subprocess.run(argv, capture_output=True, text=True, check=False, env=env)
    if out.returncode != 0:
        raise SystemExit(f"error: {' '.join(argv[:3])} failed:\n{out.stderr.strip()[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=9)
    ap.add_argument("--sizes", default="100,10000", help="events (ours) / rows (LangGraph) of history")
    ap.add_argument("--langgraph-python", help="a venv's python with langgraph-checkpoint-postgres")
    ap.add_argument("--before", help="another checkout of this project, measured as a column of its own")
    ns = ap.parse_args()
    base = pg_base()
    sizes = [int(x) for x in ns.sizes.split(",")]
    lg = ns.langgraph_python
    trees = {"ours": str(ROOT)}
    if ns.before:
        trees["before"] = str(Path(ns.before).resolve())
    shapes: list[tuple[str, str, int]] = [(f"resume, {n:,} events of history", "resume", n) for n in sizes]
    shapes.append(("fresh run to first interrupt", "fresh", 0))
    results: dict[tuple[str, str], list[dict[str, Any]]] = {}
    load = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="bench-pg-cold-") as d:
        tmp = Path(d)
        for rep in range(ns.reps):
            print(f"repetition {rep + 1}/{ns.reps}", file=sys.stderr, flush=True)
            for label, kind, n in shapes:
                for name, tree in trees.items():
                    env = {**os.environ, "PYTHONPATH": tree, "HITL_BENCH_ROOT": tree}
                    url = with_schema(base, f"b_{kind}_{uuid.uuid4().hex[:10]}")
                    _child([sys.executable, __file__, "--build", str(n), url, str(tmp)], env)
                    results.setdefault((label, name), []).append(
                        _child([sys.executable, __file__, "--child", kind, url], env)
                    )
                if lg:
                    lg_schema = f"lg_{kind}_{uuid.uuid4().hex[:10]}"
                    if kind == "resume":
                        _child([lg, str(HERE / "bench_langgraph_pg.py"), "build", base, lg_schema, str(n)])
                    else:
                        _child([lg, str(HERE / "bench_langgraph_pg.py"), "build", base, lg_schema, "0"])
                    results.setdefault((label, "lg"), []).append(
                        _child([lg, str(HERE / "bench_langgraph_pg.py"), "child", kind, base, lg_schema])
                    )
    print(f"load average (1 min) {load:.1f} at the start, {os.getloadavg()[0]:.1f} at the end; "
          f"{ns.reps} interleaved repetitions, a fresh process and schema each")
    head: tuple[str, ...] = ("cold process: open + operation", "ours (PostgresStore)", "round trips: open + turn")
    if ns.before:
        head += ("before (--before)", "round trips: open + turn")
    head += ("LangGraph (AsyncPostgresSaver)", "LG / ours")
    rows = []
    for label, _, _ in shapes:
        cells: list[str] = []
        for name in trees:
            ours = results[(label, name)]
            o = [r["ms"] for r in ours]
            cells.append(f"{statistics.median(o):.1f} ms [{min(o):.1f}-{max(o):.1f}]")
            cells.append(f"{_open_trips(ours)} + {statistics.median(r['trips'] - r['open'] for r in ours):.0f}")
        o = [r["ms"] for r in results[(label, "ours")]]
        if lg:
            g = [r["ms"] for r in results[(label, "lg")]]
            lcell = f"{statistics.median(g):.1f} ms [{min(g):.1f}-{max(g):.1f}]"
            ratio = f"{statistics.median(g) / statistics.median(o):.2f}x"
        else:
            lcell, ratio = "-", "-"
        rows.append((label, *cells, lcell, ratio))
    _table(head, rows)
    # CPU: what load from elsewhere disturbs least. The client process's, and the
    # server backend's that served it (its whole life: startup and statements).
    names = [*trees, *(["lg"] if lg else [])]
    title = {"ours": "ours", "before": "before", "lg": "LangGraph"}
    cpu_rows = []
    for label, _, _ in shapes:
        cells = []
        for name in names:
            rs = results[(label, name)]
            servers = [r["server"] for r in rs if r.get("server") is not None]
            server = f"{statistics.median(servers):.1f}" if servers else "-"
            total = f"{statistics.median(r['cpu'] + r['server'] for r in rs):.1f}" if len(servers) == len(rs) else "-"
            cells.append(f"{statistics.median(r['cpu'] for r in rs):.1f} + {server} = {total} ms")
        if lg and all(r.get("server") is not None for n in ("ours", "lg") for r in results[(label, n)]):
            tot = {n: statistics.median(r["cpu"] + r["server"] for r in results[(label, n)]) for n in ("ours", "lg")}
            cells.append(f"{tot['lg'] / tot['ours']:.2f}x")
        elif lg:
            cells.append("-")
        cpu_rows.append((label, *cells))
    print()
    head = ("CPU, client + server backend (median)", *(title[n] for n in names), *(["LG / ours"] if lg else []))
    _table(head, cpu_rows)
    print()
    _profile(shapes, results, list(trees))
    return 0


def _profile(shapes: list[tuple[str, str, int]], results: dict[tuple[str, str], list[dict[str, Any]]],
             trees: list[str]) -> None:
    """Where a cold turn's server time goes: the backend's CPU per round trip
    (median), ``open`` being its start and the schema check."""
    rows = []
    for label, _, _ in shapes:
        for name in trees:
            steps = [r["steps"] for r in results[(label, name)] if r.get("steps")]
            if not steps or len({len(s) for s in steps}) != 1:
                continue
            cells = [f"{s[0]}: {statistics.median(x[i][1] for x in steps):.2f}" for i, s in enumerate(steps[0])]
            rows.append((f"{label} ({name})", "; ".join(cells)))
    if rows:
        _table(("server backend CPU per round trip, ms (median)", "statement: CPU"), rows)


def _table(head: tuple[str, ...], rows: list[tuple[str, ...]]) -> None:
    widths = [max(len(r[i]) for r in [*rows, head]) for i in range(len(head))]
    print("  ".join(h.ljust(w) for h, w in zip(head, widths, strict=True)))
    for r in rows:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)))


if __name__ == "__main__":
    if sys.argv[1:2] == ["--build"]:
        asyncio.run(build_ours(sys.argv[3], int(sys.argv[2]), Path(sys.argv[4])))
        print("{}")
        sys.exit(0)
    if sys.argv[1:2] == ["--child"]:
        print(json.dumps(asyncio.run(child_ours(sys.argv[2], sys.argv[3]))))
        sys.exit(0)
    sys.exit(main())
