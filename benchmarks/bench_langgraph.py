"""LangGraph's SQLite checkpointer in the shapes ``bench_cold.py`` measures ours (issue 15).

    python3 -m venv /tmp/lg && /tmp/lg/bin/pip install langgraph langgraph-checkpoint-sqlite
    /tmp/lg/bin/python benchmarks/bench_langgraph.py [--reps 7] [--sizes 100,10000,100000]

LangGraph is not a dependency of this project, so this script runs in a venv of
its own and imports nothing from ``engine``. Run it right after
``python benchmarks/bench_cold.py`` on the same machine: the issue's targets
were set against LangGraph's figures, and on a shared 2-core machine the same
code gives different milliseconds from one day to the next, so only figures
taken together compare.

The same method as ``bench_cold``: every measurement in a fresh process on a
fresh copy of a prebuilt store (the ``-wal`` and ``-shm`` files removed, as a
cleanly closed store leaves them), WAL mode at NORMAL and FULL, and only the
operation is timed -- after the imports (including the three modules of
langchain_core that a first ``invoke`` would import), the graph's compile and
the connection's open, as the issue's figures were taken. Printed per row: the
median wall time [min-max] and the SQL statements and commits of the operation
(the sqlite3 trace callback).

* resume: a two-node graph (``ask`` interrupts, ``after`` runs on the answer)
  resumed with ``Command(resume=True)``, on a thread whose earlier completed
  runs left about N checkpoint and write rows (the counterpart of N events of
  other history in our session);
* fresh: a one-node graph run on a new thread to its first ``interrupt()``.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any


def graphs() -> tuple[Any, Any]:
    from typing import TypedDict

    from langgraph.graph import END, START, StateGraph
    from langgraph.types import interrupt

    class State(TypedDict, total=False):
        x: str
        ans: Any
        out: Any

    def ask(state: State) -> State:
        return {"ans": interrupt({"question": "approve?"})}

    def after(state: State) -> State:
        return {"out": state.get("ans")}

    two = StateGraph(State)
    two.add_node("ask", ask)
    two.add_node("after", after)
    two.add_edge(START, "ask")
    two.add_edge("ask", "after")
    two.add_edge("after", END)
    one = StateGraph(State)
    one.add_node("ask", ask)
    one.add_edge(START, "ask")
    one.add_edge("ask", END)
    return two, one


def connect(db: str, sync: str) -> tuple[sqlite3.Connection, Any]:
    from langgraph.checkpoint.sqlite import SqliteSaver

    conn = sqlite3.connect(db, check_same_thread=False)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute(f"PRAGMA synchronous={sync}")
    return conn, SqliteSaver(conn)


def _rows(conn: sqlite3.Connection) -> int:
    return sum(conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in ("checkpoints", "writes"))


def build(db: str, n_rows: int) -> int:
    """Thread ``big``: completed runs until about ``n_rows`` rows, then one waiting."""
    from langgraph.types import Command

    two, _ = graphs()
    conn, saver = connect(db, "NORMAL")
    saver.setup()
    graph = two.compile(checkpointer=saver)
    cfg = {"configurable": {"thread_id": "big"}}
    while _rows(conn) < n_rows:
        graph.invoke({"x": "go"}, cfg)
        graph.invoke(Command(resume=True), cfg)
    graph.invoke({"x": "go"}, cfg)
    n = _rows(conn)
    conn.close()
    return n


def child(kind: str, db: str, sync: str) -> None:
    # What a first invoke imports (langchain_core's tracers), imported before the
    # clock starts: the operation is timed after its imports, as ours is.
    import langchain_core.tracers.context  # noqa: F401
    import langchain_core.tracers.run_collector  # noqa: F401
    import langchain_core.tracers.stdout  # noqa: F401
    from langgraph.types import Command

    two, one = graphs()
    conn, saver = connect(db, sync)
    graph = (two if kind == "resume" else one).compile(checkpointer=saver)
    stmts: list[str] = []
    conn.set_trace_callback(stmts.append)
    t = time.perf_counter()
    if kind == "resume":
        graph.invoke(Command(resume=True), {"configurable": {"thread_id": "big"}})
    else:
        graph.invoke({"x": "go"}, {"configurable": {"thread_id": "new"}})
    ms = (time.perf_counter() - t) * 1e3
    conn.set_trace_callback(None)
    commits = sum(1 for s in stmts if s.strip().upper() in ("COMMIT", "END"))
    conn.close()
    print(json.dumps({"ms": ms, "stmts": len(stmts), "commits": commits}))


def main(args: argparse.Namespace) -> int:
    sizes = [int(x) for x in args.sizes.split(",")]
    with tempfile.TemporaryDirectory(prefix="bench-langgraph-") as d:
        tmp = Path(d)
        templates: dict[str, tuple[str, Path]] = {}
        for n in sizes:
            path = tmp / f"history-{n}.sqlite"
            rows = build(str(path), n)
            templates[f"resume, {n:,} rows of history ({rows:,})"] = ("resume", path)
        empty = tmp / "empty.sqlite"
        conn, saver = connect(str(empty), "NORMAL")
        saver.setup()
        conn.close()
        templates["fresh run to first interrupt"] = ("fresh", empty)
        print(f"(built the stores; {args.reps} interleaved repetitions)", flush=True)
        results: dict[tuple[str, str], list[dict[str, Any]]] = {}
        for _ in range(args.reps):
            for label, (kind, template) in templates.items():
                for sync in ("NORMAL", "FULL"):
                    run = tmp / "run.sqlite"
                    for suffix in ("", "-wal", "-shm"):
                        Path(str(run) + suffix).unlink(missing_ok=True)
                    shutil.copyfile(template, run)
                    out = subprocess.run(
                        [sys.executable, __file__, "--child", kind, str(run), sync],
                        capture_output=True,
                        text=True,
                        check=False,
                    )
                    if out.returncode != 0:
                        print(f"error: the {kind} child failed:\n{out.stderr.strip()}", file=sys.stderr)
                        return 1
                    results.setdefault((label, sync), []).append(json.loads(out.stdout.strip().splitlines()[-1]))
    from langgraph.version import __version__

    print(f"{'LangGraph ' + __version__ + ', cold process':52s} {'wall time':>24s}  stmts  commits")
    for (label, sync), runs in results.items():
        ms = [r["ms"] for r in runs]
        cell = f"{statistics.median(ms):.2f} ms [{min(ms):.2f}-{max(ms):.2f}]"
        print(f"{label + f' ({sync})':52s} {cell:>24s}  {runs[-1]['stmts']:5d}  {runs[-1]['commits']:7d}")
    return 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["--child"]:
        child(*sys.argv[2:5])
        sys.exit(0)
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=7)
    parser.add_argument("--sizes", default="100,10000,100000", help="rows of history of the resumed thread")
    sys.exit(main(parser.parse_args()))
