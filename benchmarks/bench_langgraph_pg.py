"""LangGraph's PostgreSQL checkpointer (``AsyncPostgresSaver``) in the shapes
``bench_pg_cold.py`` measures ours: the peer half of that benchmark (issue 38).

    python3 -m venv /tmp/lgpg && /tmp/lgpg/bin/pip install langgraph langgraph-checkpoint-postgres 'psycopg[binary]'
    /tmp/lgpg/bin/python benchmarks/bench_langgraph_pg.py build CONNINFO SCHEMA ROWS [THREAD]
    /tmp/lgpg/bin/python benchmarks/bench_langgraph_pg.py child resume|fresh CONNINFO SCHEMA [THREAD]

Run by ``bench_pg_cold.py --langgraph-python /tmp/lgpg/bin/python``, not by hand:
LangGraph is not a dependency of this project, so this file imports nothing from
``engine`` and runs in a venv of its own. ``build`` fills a schema with thread
``big``: completed runs until about ROWS checkpoint and write rows, then one run
waiting at its ``interrupt()``. ``child`` is one cold process: after the imports
and the graph's compile, it times the connection's open and one operation --
``resume`` (``Command(resume=True)`` on ``big``: ``after`` runs) or ``fresh`` (a
new thread to its first interrupt) -- and prints JSON: its ms (wall), cpu (this process's CPU ms) and server (its
server backend's CPU ms, when the server runs on this machine).

SCHEMA ``-`` means the database's default schema: through PgBouncer, which takes
no ``options`` (nor ``search_path``) at a connection's start, the pooled runs use
one database's tables and a thread of their own per measurement (THREAD, default
``big``; a fresh run's thread is THREAD-new). With ``BENCH_NO_SERVER_CPU`` set
(behind a pooler, whose backend pid is not the server's) server is null.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_langgraph import graphs  # noqa: E402 -- the same two graphs as the SQLite peer's


def _conninfo(base: str, schema: str) -> str:
    if schema == "-":
        return base
    sep = "&" if "?" in base else "?"
    return f"{base}{sep}options=-csearch_path%3D{schema}"


async def build(base: str, schema: str, n_rows: int, thread: str = "big") -> int:
    import psycopg
    from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
    from langgraph.types import Command

    if schema != "-":
        async with await psycopg.AsyncConnection.connect(base, autocommit=True) as conn:
            await conn.execute(f'CREATE SCHEMA IF NOT EXISTS "{schema}"')
    two, _ = graphs()
    async with AsyncPostgresSaver.from_conn_string(_conninfo(base, schema)) as saver:
        await saver.setup()
        graph = two.compile(checkpointer=saver)
        cfg = {"configurable": {"thread_id": thread}}

        async def rows() -> int:
            async with await psycopg.AsyncConnection.connect(_conninfo(base, schema)) as c:
                cur = await c.execute(
                    "SELECT (SELECT count(*) FROM checkpoints WHERE thread_id = %s)"
                    " + (SELECT count(*) FROM checkpoint_writes WHERE thread_id = %s)", (thread, thread)
                )
                return int((await cur.fetchone())[0])

        while await rows() < n_rows:
            for _ in range(max(1, (n_rows - await rows()) // 12)):
                await graph.ainvoke({"x": "go"}, cfg)
                await graph.ainvoke(Command(resume=True), cfg)
        await graph.ainvoke({"x": "go"}, cfg)
        return await rows()


async def child(kind: str, base: str, schema: str, thread: str = "big") -> dict[str, Any]:
    import langchain_core.tracers.context  # noqa: F401 -- what a first invoke imports, before the clock
    import langchain_core.tracers.run_collector  # noqa: F401
    import langchain_core.tracers.stdout  # noqa: F401
    from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
    from langgraph.types import Command

    two, one = graphs()
    graph_def = two if kind == "resume" else one
    t, cpu = time.perf_counter(), time.process_time()
    async with AsyncPostgresSaver.from_conn_string(_conninfo(base, schema)) as saver:
        graph = graph_def.compile(checkpointer=saver)
        if kind == "resume":
            await graph.ainvoke(Command(resume=True), {"configurable": {"thread_id": thread}})
        else:
            await graph.ainvoke({"x": "go"}, {"configurable": {"thread_id": f"{thread}-new"}})
        ms = (time.perf_counter() - t) * 1e3
        cpu_ms = (time.process_time() - cpu) * 1e3
        server = None if os.environ.get("BENCH_NO_SERVER_CPU") else backend_cpu_ms(saver.conn.info.backend_pid)
    return {"ms": ms, "cpu": cpu_ms, "server": server}


def backend_cpu_ms(pid: int) -> float | None:
    """bench_pg_cold.py's (this file imports nothing of ours): a local server
    process's CPU since it started, else None."""
    try:
        with open(f"/proc/{pid}/schedstat") as f:
            return int(f.read().split()[0]) / 1e6
    except (OSError, ValueError, IndexError):
        return None


if __name__ == "__main__":
    if sys.argv[1] == "build":
        print(json.dumps({"rows": asyncio.run(build(sys.argv[2], sys.argv[3], int(sys.argv[4]), *sys.argv[5:6]))}))
    elif sys.argv[1] == "child":
        print(json.dumps(asyncio.run(child(sys.argv[2], sys.argv[3], sys.argv[4], *sys.argv[5:6]))))
    else:
        sys.exit(__doc__)
