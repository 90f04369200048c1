"""A cold process's turn on PostgreSQL, side by side with LangGraph's PostgreSQL
checkpointer, in one run on one server (issue 38).

    source scripts/services/postgres.sh      # or HITL_BENCH_PG_URL=postgresql://...
    python benchmarks/bench_pg_cold.py [--reps 9] [--sizes 100,10000] \\
        [--langgraph-python /tmp/lgpg/bin/python] [--before /tmp/before] [--pooler]

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
by tests/reliability/test_postgres_batch.py and test_postgres_deferred_check.py.
Our child opens the store as ``hitl resume`` and ``hitl start`` do (the schema
check deferred to the turn's first read, where the tree has that option). A last
table gives the real commands, ``hitl resume --app`` and ``hitl start``, each a new
process: their round trips (their own reads included), asserted by
tests/reliability/test_postgres_cli_trips.py, and the command's time after the
CLI's import (``--cli-only``: just that table).

``--pooler``: how teams run PostgreSQL. PgBouncer (``apt-get install pgbouncer``;
the benchmark's own, never a test's) is started in session mode in front of the
same server (its Unix socket, as scripts/services/postgres.sh starts it), and
every measurement is also made through it -- ours and LangGraph's -- as columns
beside the direct ones. Through a pooler the server backend is a pooled one,
warm from earlier clients (PgBouncer resets its session state between them), and
its pid is not the client's to see, so no server CPU is given. LangGraph's
schema travels as an ``options`` startup parameter, which PgBouncer refuses: its
pooled runs use the default schema of a database of their own, a thread per
measurement. Our URL says ``pooler=session``, as a team's would. The
``--before`` tree is tried through the pooler once, and its answer printed. LangGraph's round trips are counted in one extra run per shape
and route under strace (its sends on the socket, the closing Terminate not
counted), when strace is installed.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlsplit

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
    import inspect

    sys.path.insert(0, str(ROOT))
    sys.path.insert(0, str(HERE))
    importlib.import_module("engine.store")  # ROOT's, before bench_engine puts this file's tree first on the path
    import bench_engine as be

    from engine import START, Content, Runner, Workflow
    from engine.store import open_store
    from engine.store.postgres import PostgresStore

    # As `hitl resume` / `hitl start` open it, in a tree that has the option.
    turn = {"defer_schema_check": True} if "defer_schema_check" in inspect.signature(PostgresStore.open).parameters else {}

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
    store = await open_store(url, inline=True, **turn)
    opened = sent[0] - before
    if not os.environ.get("BENCH_NO_SERVER_CPU"):  # behind a pooler the pid is not the server's
        backend.append(_server_pid(store))
    marks.append(("open", backend_cpu_ms(backend[0]) if backend else None))  # the backend's start (and the schema check)
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
    server = backend_cpu_ms(backend[0]) if backend else None  # after the clock: the backend that served the turn
    marks.append(("", server))
    steps = None
    if all(cpu is not None for _, cpu in marks):
        # each statement's backend CPU: from its mark to the next one's
        steps = [(marks[0][0], marks[0][1])] + [
            (name, nxt - cpu) for (name, cpu), (_, nxt) in zip(marks[1:], marks[2:], strict=False)  # type: ignore[operator]
        ]
    await store.close()
    return {"ms": ms, "cpu": cpu_ms, "server": server, "trips": trips, "open": opened, "steps": steps}


def child_cli(kind: str, url: str) -> dict[str, Any]:
    """The real ``hitl resume --app`` (answering ``big``'s interrupt) or ``hitl start``
    (SIMPLE, a new session) in this new process: the messages it sent the server,
    the connection's startup included, the closing Terminate not (as LangGraph's)."""
    import asyncio.selector_events

    sys.path.insert(0, str(ROOT))
    sys.path.insert(0, str(HERE))
    importlib.import_module("engine.store")
    from console.cli import main as hitl
    from engine.store import open_store

    async def peek() -> str:  # the interrupt's id, on a connection of its own, before the count
        store = await open_store(url, inline=True, read_only=True)
        try:
            return (await store.open_interrupts(session_id="big", limit=1)).items[0].interrupt_id
        finally:
            await store.close()

    app = ["--db", url, "--app", "bench=bench_engine:SIMPLE"]
    argv = [*app, "resume", "big", f"{asyncio.run(peek())}=true"] if kind == "resume" else \
        [*app, "start", "bench", "--session", f"new-{uuid.uuid4().hex[:8]}", "hello"]
    kinds: list[bytes] = []
    transport = asyncio.selector_events._SelectorSocketTransport  # type: ignore[attr-defined]
    write = transport.write

    def counting(self: Any, data: Any) -> None:
        kinds.append(bytes(data[:1]))
        write(self, data)

    transport.write = counting
    sys.argv = ["hitl", *argv]
    t, cpu = time.perf_counter(), time.process_time()
    try:
        hitl()
    except SystemExit as exc:
        if exc.code:
            raise
    ms, cpu_ms = (time.perf_counter() - t) * 1e3, (time.process_time() - cpu) * 1e3
    return {"trips": sum(1 for k in kinds if k != b"X"), "ms": ms, "cpu": cpu_ms}


def _cli_table(trees: dict[str, str], base: str, reps: int) -> None:
    """The real CLI commands, each a new process: their round trips (deterministic)
    and the command's wall and CPU time after the CLI's import (medians of ``reps``
    interleaved runs, a fresh schema each)."""
    runs: dict[tuple[str, str], list[dict[str, Any]]] = {}
    kinds = (("`hitl resume --app` (one node runs)", "resume"), ("`hitl start` (two nodes to the interrupt)", "start"))
    with tempfile.TemporaryDirectory(prefix="bench-pg-cli-") as d:
        for _ in range(reps):
            for _, kind in kinds:
                for name, tree in trees.items():
                    env = {**os.environ, "PYTHONPATH": tree, "HITL_BENCH_ROOT": tree}
                    url = with_schema(base, f"b_cli_{uuid.uuid4().hex[:10]}")
                    _child([sys.executable, __file__, "--build", "100", url, d], env)
                    runs.setdefault((kind, name), []).append(_child([sys.executable, __file__, "--cli", kind, url], env))
    rows = []
    for label, kind in kinds:
        cells = []
        for name in trees:
            rs = runs[(kind, name)]
            ms = [r["ms"] for r in rs]
            cells += [f"1 + {rs[0]['trips'] - 1}", f"{statistics.median(ms):.1f} ms [{min(ms):.1f}-{max(ms):.1f}]",
                      f"{statistics.median(r['cpu'] for r in rs):.1f} ms"]
        rows.append((label, *cells))
    print()
    head = ("the real CLI, cold process (after its import)",)
    for name in trees:
        head += (f"{name}: round trips (startup + command)", "wall", "CPU")
    _table(head, rows)


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


def start_pgbouncer(base: str) -> tuple[str, Callable[[], None]]:
    """PgBouncer in session mode in front of ``base``'s server (a Unix socket);
    the URL through it (without a schema) and how to stop it."""
    exe = shutil.which("pgbouncer") or "/usr/sbin/pgbouncer"
    if not os.path.exists(exe):
        sys.exit("--pooler needs pgbouncer (apt-get install -y pgbouncer)")
    parts = urlsplit(base)
    query = dict(parse_qsl(parts.query))
    host = query.get("host") or parts.hostname or "/var/run/postgresql"
    port = query.get("port") or parts.port or 5432
    user = parts.username or os.environ.get("USER", "postgres")
    d = Path(tempfile.mkdtemp(prefix="bench-pgbouncer-"))
    d.chmod(0o755)
    (d / "userlist.txt").write_text(f'"{user}" ""\n')
    ini = d / "pgbouncer.ini"
    ini.write_text(
        f"[databases]\n* = host={host} port={port}\n[pgbouncer]\nlisten_addr =\nlisten_port = 6432\n"
        f"unix_socket_dir = {d}\nauth_type = trust\nauth_file = {d}/userlist.txt\npool_mode = session\n"
        f"max_client_conn = 100\ndefault_pool_size = 10\nlogfile = {d}/pgbouncer.log\npidfile = {d}/pgbouncer.pid\n"
    )
    cmd = [exe, "-d", str(ini)]
    if os.geteuid() == 0:  # PgBouncer refuses to run as root
        shutil.chown(d, "postgres")
        for f in d.iterdir():
            shutil.chown(f, "postgres")
        cmd = ["runuser", "-u", "postgres", "--", *cmd]
    subprocess.run(cmd, check=True)
    for _ in range(100):
        if (d / ".s.PGSQL.6432").exists() and (d / "pgbouncer.pid").exists():
            break
        time.sleep(0.05)
    else:
        sys.exit(f"pgbouncer did not start: {(d / 'pgbouncer.log').read_text()[-500:]}")
    pid = int((d / "pgbouncer.pid").read_text())

    def stop() -> None:
        os.kill(pid, signal.SIGTERM)
        for _ in range(100):
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                break
            time.sleep(0.05)
        shutil.rmtree(d, ignore_errors=True)

    return f"postgresql://{user}@{parts.path}?host={d}&port=6432", stop


def _database(base: str, name: str, drop: bool = False) -> str:
    """``base`` naming the database ``name``, created (or dropped) on its server."""
    import asyncpg

    async def run() -> None:
        dsn, _, q = base.partition("?")
        conn = await asyncpg.connect(dsn + ("?" + q if q else ""))
        try:
            await conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)' if drop else f'CREATE DATABASE "{name}"')
        finally:
            await conn.close()

    asyncio.run(run())
    parts = urlsplit(base)
    return base.replace(parts.path, f"/{name}", 1) if parts.path else base


def _lg_trips(argv: list[str]) -> int | None:
    """The messages a LangGraph child sends the server (its socket sends, less the
    Terminate at the end), under strace; None without strace."""
    if not shutil.which("strace"):
        return None
    with tempfile.NamedTemporaryFile(prefix="bench-lg-strace-", suffix=".txt") as f:
        subprocess.run(["strace", "-f", "-qq", "-e", "trace=sendto", "-s", "6", "-o", f.name, *argv],
                       capture_output=True, check=True)
        lines = [x for x in Path(f.name).read_text().splitlines() if "sendto(" in x]
    return sum(1 for x in lines if '"X\\0\\0\\0\\4"' not in x)


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
    ap.add_argument("--pooler", action="store_true", help="also through PgBouncer (session mode) on the same server")
    ap.add_argument("--cli-only", action="store_true", help="only the real CLI commands' round trips")
    ns = ap.parse_args()
    base = pg_base()
    sizes = [int(x) for x in ns.sizes.split(",")]
    lg = ns.langgraph_python
    trees = {"ours": str(ROOT)}
    if ns.before:
        trees["before"] = str(Path(ns.before).resolve())
    if ns.cli_only:
        print(f"load average (1 min) {os.getloadavg()[0]:.1f}")
        _cli_table(trees, base, ns.reps)
        return 0
    shapes: list[tuple[str, str, int]] = [(f"resume, {n:,} events of history", "resume", n) for n in sizes]
    shapes.append(("fresh run to first interrupt", "fresh", 0))
    results: dict[tuple[str, str], list[dict[str, Any]]] = {}
    lg_trips: dict[tuple[str, str], int | None] = {}
    stops: list[Callable[[], None]] = []
    # route -> (our base URL, LangGraph's base URL, its schema or "-")
    routes: dict[str, tuple[str, str, bool]] = {"": (base, base, True)}
    before_pooled = None
    load = os.getloadavg()[0]
    try:
        if ns.pooler:
            pooled, stop = start_pgbouncer(base)
            stops.append(stop)
            lg_db = f"bench_lg_pool_{uuid.uuid4().hex[:8]}"
            lg_pooled = _database(pooled, lg_db)
            stops.append(lambda: _database(base, lg_db, drop=True))
            # ours told by the URL that a pooler is there (no refused first connection)
            routes[" pooled"] = (pooled + "&pooler=session", lg_pooled, False)
        with tempfile.TemporaryDirectory(prefix="bench-pg-cold-") as d:
            tmp = Path(d)
            if ns.pooler and ns.before:
                before_pooled = _try_before_pooled(trees["before"], pooled, tmp)
            for rep in range(ns.reps):
                print(f"repetition {rep + 1}/{ns.reps}", file=sys.stderr, flush=True)
                for label, kind, n in shapes:
                    for route, (ours_base, lg_base, lg_schemas) in routes.items():
                        for name, tree in trees.items():
                            if route and name != "ours":
                                continue  # the before tree cannot connect through the pooler
                            env = {**os.environ, "PYTHONPATH": tree, "HITL_BENCH_ROOT": tree}
                            if route:
                                env["BENCH_NO_SERVER_CPU"] = "1"
                            url = with_schema(ours_base, f"b_{kind}_{uuid.uuid4().hex[:10]}")
                            _child([sys.executable, __file__, "--build", str(n), url, str(tmp)], env)
                            results.setdefault((label, name + route), []).append(
                                _child([sys.executable, __file__, "--child", kind, url], env)
                            )
                        if lg:
                            results.setdefault((label, "lg" + route), []).append(
                                _lg_once(lg, kind, n, lg_base, lg_schemas, route, count=False)
                            )
                            if rep == 0:
                                lg_trips[(label, "lg" + route)] = _lg_once(lg, kind, n, lg_base, lg_schemas, route,
                                                                           count=True)["trips"]
    finally:
        for stop in stops:  # the pooler, then LangGraph's database behind it
            stop()
    print(f"load average (1 min) {load:.1f} at the start, {os.getloadavg()[0]:.1f} at the end; "
          f"{ns.reps} interleaved repetitions, a fresh process and schema each")
    if before_pooled is not None:
        print(f"the --before tree through PgBouncer: {before_pooled}")
    for route in routes:
        _wall_table(shapes, results, lg_trips, [n for n in trees if not route or n == "ours"], route, bool(lg))
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
    _cli_table(trees, base, ns.reps)
    return 0


def _lg_once(lg: str, kind: str, n: int, lg_base: str, own_schemas: bool, route: str, *, count: bool) -> dict[str, Any]:
    """One LangGraph measurement on a state built for it (a schema of its own, or
    through the pooler a thread of its own); with ``count``, its round trips instead."""
    tag = uuid.uuid4().hex[:10]
    schema, thread = (f"lg_{kind}_{tag}", "big") if own_schemas else ("-", f"t{tag}")
    script = str(HERE / "bench_langgraph_pg.py")
    _child([lg, script, "build", lg_base, schema, str(n if kind == "resume" else 0), thread])
    argv = [lg, script, "child", kind, lg_base, schema, thread]
    env = {**os.environ, **({"BENCH_NO_SERVER_CPU": "1"} if route else {})}
    if count:
        return {"trips": _lg_trips(argv)}
    return _child(argv, env)


def _try_before_pooled(tree: str, pooled: str, tmp: Path) -> str:
    """What the ``--before`` tree says when it opens a store through the pooler."""
    env = {**os.environ, "PYTHONPATH": tree, "HITL_BENCH_ROOT": tree}
    url = with_schema(pooled, f"b_try_{uuid.uuid4().hex[:10]}")
    out = subprocess.run([sys.executable, __file__, "--build", "0", url, str(tmp)], capture_output=True, text=True,
                         check=False, env=env)
    if out.returncode == 0:
        return "works"
    return (out.stderr.strip().splitlines() or ["failed"])[-1][:300]


def _wall_table(shapes: list[tuple[str, str, int]], results: dict[tuple[str, str], list[dict[str, Any]]],
                lg_trips: dict[tuple[str, str], int | None], names: list[str], route: str, lg: bool) -> None:
    """Wall time [min-max] and round trips (open + turn, the open counting the
    connection's startup) of each column, and LangGraph's over ours."""
    where = "through PgBouncer (session mode)" if route else "direct"
    head: tuple[str, ...] = (f"cold process: open + operation, {where}",)
    title = {"ours": "ours (PostgresStore)", "before": "before (--before)"}
    for name in names:
        head += (title[name], "round trips: open + turn")
    if lg:
        head += ("LangGraph (AsyncPostgresSaver)", "round trips", "LG / ours")
    rows = []
    for label, _, _ in shapes:
        cells: list[str] = []
        for name in names:
            ours = results[(label, name + route)]
            o = [r["ms"] for r in ours]
            cells.append(f"{statistics.median(o):.1f} ms [{min(o):.1f}-{max(o):.1f}]")
            cells.append(f"{_open_trips(ours)} + {statistics.median(r['trips'] - r['open'] for r in ours):.0f}")
        if lg:
            o = [r["ms"] for r in results[(label, "ours" + route)]]
            g = [r["ms"] for r in results[(label, "lg" + route)]]
            trips = lg_trips.get((label, "lg" + route))
            cells += [f"{statistics.median(g):.1f} ms [{min(g):.1f}-{max(g):.1f}]", "-" if trips is None else str(trips),
                      f"{statistics.median(g) / statistics.median(o):.2f}x"]
        rows.append((label, *cells))
    print()
    _table(head, rows)


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
    if sys.argv[1:2] == ["--cli"]:
        result = child_cli(sys.argv[2], sys.argv[3])
        print(json.dumps(result))
        sys.exit(0)
    if sys.argv[1:2] == ["--child"]:
        print(json.dumps(asyncio.run(child_ours(sys.argv[2], sys.argv[3]))))
        sys.exit(0)
    sys.exit(main())
