"""Cold-process benchmarks: what an operator's ``hitl resume`` actually pays (issue 15).

    python benchmarks/bench_cold.py              # full run (several minutes: builds 100k-event stores)
    python benchmarks/bench_cold.py --quick      # smaller stores, 3 repetitions
    python benchmarks/bench_cold.py --reps 9 --only resume,fresh
    python benchmarks/bench_cold.py --save after.json --before before.json   # before/after columns
    python benchmarks/bench_cold.py --only resume,fresh --sql-time   # + the time inside SQLite calls

For a "before" row set, run this script (copied) in the older tree with ``PYTHONPATH`` naming
it and ``--save before.json``; ``--ab`` (below) runs the whole-process rows of both side by side.

Every measurement runs in a fresh Python process on a fresh copy of a prebuilt,
checkpointed store, at ``synchronous=NORMAL`` and ``FULL``. Repetitions are
interleaved (rep 1 of every row, then rep 2, ...), so that load from other
processes on the machine spreads over all rows alike. Prints, per row, the
median and min-max of the operation's wall time, the median of its CPU time
(this process's user + system time: on a loaded machine the wall time mostly
measures waiting for a core, the CPU time what the operation itself costs),
and the SQL statements and COMMITs the operation sent (counted with the sqlite3 trace callback on the
store's connection; deterministic, unlike the times). A third column, "process cpu", is
the whole child process's user + system time (``getrusage`` of the reaped child:
interpreter start, imports, open, operation, exit): what a cold ``hitl resume``
costs the machine in all, most of it imports.

The store is opened like the CLI opens it (``inline=True``: SQL on the loop's
thread). Timed: the operation only (the resume / run call, iterated to its
end), after the imports and after the store is open -- as the issue's LangGraph
figures time the operation inside the fresh process after its imports; the open
itself is its own row. A ``gc.collect()`` just before the operation keeps
whether a collection lands inside it independent of the setup's allocations
(the same code can otherwise gain or lose one). The fresh copy has no -wal
file, so the operation's first commit starts the WAL, and SQLite syncs the new
WAL header then, also under
``synchronous=NORMAL`` (one fsync per cold process, whatever the store).

Rows:
* resume (answer -> settled turn, 2 trivial nodes) of a session whose history
  holds N events of other, finished invocations (N = 100 / 10,000 / 100,000);
* a new text turn (to its first interrupt) on the same sessions;
* resume after 1 / 10,000 loop iterations of the waiting invocation;
* fresh run to the first interrupt on a new session;
* opening the store;
* ``import engine``, and ``hitl sessions`` to its first line of output on a
  100,000-session store (process start included);
* ``hitl resume`` of the demo store's document sign-off, from process start to
  exit: what an operator waits for (the resume itself is a few ms of it);
* ``hitl --help`` (process start to exit), ``hitl inbox`` to its first line on a
  store of 100,000 sessions with one open interrupt each, and ``hitl resume`` of the
  10,000-event session with its app registered (``--app``), process start to exit;
* ``bulk_load`` of the sessions' histories (in this process, once each);
* bytes per node of a 1,000-node chain (the store file, checkpointed; its seek
  checkpoints' and snapshots' share printed below the table).

The project's modules are byte-compiled first (``compileall``), so that a
child reads ``.pyc`` files like an installed package does, also when
``PYTHONDONTWRITEBYTECODE`` is set. The machine's load average is printed
before and after: on a shared machine, read the min column too.

Exit code is non-zero only on error, never because a target was missed.

Issue 38's whole-process resume: ``python benchmarks/bench_cold.py --only startup,cold --reps 11
--ab /tmp/before --venv /tmp/venvs`` (``git worktree add --detach /tmp/before main``: both trees'
process rows in the same repetitions; ``--venv``: the resume row also run by the installed ``hitl``
of a fresh venv per tree, see cold_venv.py) and ``python benchmarks/profile_cold.py --process
--events 10000 --commands resume,help,sessions,inbox --ab /tmp/before --venv /tmp/venvs``
(instructions, load-independent). Instructions of the whole ``hitl resume --app`` (10,000 events),
main before cold38 (37c9ac7) -> cold38 -> cold51: dev 913.9 -> 882.8 -> 855.4 M; installed in a venv 854.5 ->
812.6 M (cold38 -> cold51); ``--help``/``sessions``/``inbox`` 256/288/303 M; ``hitl start`` (its
plugin lookup spared too) 893.1 -> 848.0 M (~0.2 ms per M quiet). With ``--venv``, three floor rows
too (cold_venv.FLOORS): the venv's interpreter alone, with asyncio, sqlite3, json and click, and with
pydantic's BaseModel as well -- what any resume pays before hitl's first line. Where the installed resume's ~810 M go (each import's marginal count in the
resume's order, without site, GC deferred, exit skipped; approximate): interpreter 28 M; click with
the stdlib it pulls (re, enum, typing, inspect, uuid, datetime) 112 M; the CLI's group and write
modules 68 M; asyncio (ssl, socket, concurrent.futures, logging) 91 M; pydantic with pydantic_core,
annotated_types and typing_extensions 280 M (of it ~900 ``compile()`` calls of string annotations by
``typing.ForwardRef`` for pydantic_core's TypedDicts); engine.models' classes 18 M; the seven turn
validators 100 M (pydantic's schema generator, imported on the first build, most of it); the store's
records and base 31 M; the SQLite store 30 M; the runner, operations, answer gate, app registry 71
M. Python 3.11's dataclasses exec each generated method's source: ~240 compiles at import, ~72 M. pydantic
and the models are ~420 M: the step left is the turn path without pydantic (events as plain classes,
their JSON written by hand, the stored bytes unchanged), ~430 M, ~90 ms.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

# Imported lazily (in functions), so that the child processes measure their own imports.


# --------------------------------------------------------------------------- workflows


def workflows(loop_iterations: int = 1) -> dict[str, Any]:
    """The warm benchmarks' workflows. A resume of the loop runs gate -> back ->
    gate, never spin: the child process resumes with ``loop_iterations=1``."""
    from bench_engine import SIMPLE, ask, loop_workflow

    from engine import START, Workflow

    return {"simple": SIMPLE, "looper": loop_workflow(loop_iterations), "one": Workflow("w", [(START, ask)])}


async def drain(it: Any) -> int:
    n = 0
    async for _ in it:
        n += 1
    return n


# --------------------------------------------------------------------------- building templates


async def build_history(path: Path, n_events: int) -> tuple[float, float]:
    """Session ``big``: ``n_events`` events of finished SIMPLE invocations, then one waiting.
    Returns the seconds ``bulk_load`` took to write the history (wall, CPU of this process)."""
    from engine import Content, Runner, checkpoints
    from engine.models import Session, new_id
    from engine.store.sqlite import SQLiteStore

    wf = workflows()["simple"]
    tpath = path.with_suffix(".template.sqlite")
    store = await SQLiteStore.open(tpath, inline=True)
    runner = Runner("bench", wf, store)
    await drain(runner.run("u", "t", Content.from_text("x")))
    iid = (await store.open_interrupts(session_id="t", limit=1)).items[0].interrupt_id
    await drain(runner.run("u", "t", Content.from_responses({iid: True})))
    template = [s.event for s in await store.events("t")]
    await store.close()
    for suffix in ("", "-wal", "-shm"):
        Path(str(tpath) + suffix).unlink(missing_ok=True)
    events = []
    while len(events) + len(template) <= max(n_events, len(template)):
        inv = new_id()
        events += [ev.model_copy(update={"id": new_id(), "invocation_id": inv}) for ev in template]
    store = await SQLiteStore.open(path, inline=True)
    t, cpu = time.perf_counter(), time.process_time()
    await store.bulk_load([(Session(id="big", app_name="bench", user_id="u"), events)])
    loaded = (time.perf_counter() - t, time.process_time() - cpu)
    # The seek checkpoints the turns that wrote this history would have left
    # (bulk_load writes none): without them the first turn to cross a multiple of
    # 1000 events folds up to 8000 events of backlog, which is not the steady state.
    await checkpoints.rebuild(store, "big")
    runner = Runner("bench", wf, store)
    await drain(runner.run("u", "big", Content.from_text("go")))
    await store.checkpoint()
    await store.close()
    return loaded


async def build_loop(path: Path, iterations: int) -> None:
    from engine import Content, Runner
    from engine.store.sqlite import SQLiteStore

    store = await SQLiteStore.open(path, inline=True)
    await drain(Runner("bench", workflows(iterations)["looper"], store).run("u", "loop", Content.from_text("go")))
    await store.checkpoint()
    await store.close()


async def build_empty(path: Path) -> None:
    from engine.store.sqlite import SQLiteStore

    store = await SQLiteStore.open(path, inline=True)
    await store.checkpoint()
    await store.close()


async def build_many_sessions(path: Path, n_sessions: int, waiting: bool = False) -> None:
    """``n_sessions`` sessions of one user message each; ``waiting``: each has the
    events of a SIMPLE run to its interrupt instead (one open interrupt each: the inbox)."""
    from engine import Content, Runner
    from engine.models import Event, Session, new_id
    from engine.store.sqlite import SQLiteStore

    template = []
    if waiting:
        mem = await SQLiteStore.open(path.with_suffix(".t.sqlite"), inline=True)
        await drain(Runner("bench", workflows()["simple"], mem).run("u", "t", Content.from_text("x")))
        template = [s.event for s in await mem.events("t")]
        await mem.close()

    def gen():
        t0 = time.time() - n_sessions
        for i in range(n_sessions):
            s = Session(id=f"s{i:06d}", app_name=f"app{i % 7}", user_id=f"u{i % 13}", created_at=t0 + i)
            if template:
                inv = new_id()
                yield s, [ev.model_copy(update={"id": new_id(), "invocation_id": inv, "timestamp": t0 + i}) for ev in template]
                continue
            ev = Event(invocation_id=new_id(), author="user", content=Content.from_text("hi"), timestamp=t0 + i)
            yield s, [ev]

    store = await SQLiteStore.open(path, inline=True)
    await store.bulk_load(gen(), batch_size=2000)
    await store.checkpoint()
    await store.close()


async def chain_bytes(path: Path, n_nodes: int) -> dict[str, float]:
    """Bytes per node of an ``n_nodes``-node sequential chain run to its end (one
    turn), the file checkpointed: the store file's size, and the seek checkpoints' and
    snapshots' share of it (``length(data)``)."""
    import sqlite3

    from bench_engine import chain

    from engine import Content, Runner
    from engine.store.sqlite import SQLiteStore

    store = await SQLiteStore.open(path, inline=True)
    await drain(Runner("bench", chain(n_nodes), store).run("u", "seq", Content.from_text("x")))
    await store.checkpoint()
    await store.close()
    conn = sqlite3.connect(path)
    cps = conn.execute("SELECT count(*), coalesce(sum(length(data)), 0) FROM projection_checkpoints").fetchone()
    snaps = conn.execute("SELECT coalesce(sum(length(data)), 0) FROM snapshots").fetchone()[0]
    conn.close()
    return {"per_node": path.stat().st_size / n_nodes, "checkpoints": cps[0], "checkpoint_bytes": cps[1],
            "snapshot_bytes": snaps, "file": path.stat().st_size}


# --------------------------------------------------------------------------- child side


def _counting(store: Any) -> dict[str, int]:
    counts = {"stmts": 0, "commits": 0}

    def trace(sql: str) -> None:
        counts["stmts"] += 1
        if sql.lstrip().upper().startswith("COMMIT"):
            counts["commits"] += 1

    store._driver._raw.set_trace_callback(trace)
    return counts


async def operation(kind: str, store: Any) -> tuple[Any, str, Any]:
    """(runner, session id, message) of one cold operation on a fresh copy of its
    template (the lookup of the answered id is not part of it)."""
    from engine import Content, Runner

    wfs = workflows()
    if kind in ("resume", "loop"):
        sid = "big" if kind == "resume" else "loop"
        iid = (await store.open_interrupts(session_id=sid, limit=1)).items[0].interrupt_id
        wf = wfs["simple" if kind == "resume" else "looper"]
        return Runner("bench", wf, store), sid, Content.from_responses({iid: True})
    if kind == "text":
        return Runner("bench", wfs["simple"], store), "big", Content.from_text("again")
    if kind == "fresh":
        return Runner("bench", wfs["one"], store), "new-session", Content.from_text("go")
    raise SystemExit(f"unknown child kind {kind}")


class _TimedSQL:
    """The store's connection, timing each ``execute``/``executemany`` (``--sql-time``):
    how much of the operation is spent inside SQLite calls -- compiling, running,
    and the writes and syncs of the COMMITs -- which faster Python around them
    cannot shorten (fewer or simpler statements can)."""

    def __init__(self, raw: Any) -> None:
        self._conn = raw
        self.calls: list[tuple[str, float]] = []

    def _timed(self, method: Any, sql: str, *args: Any) -> Any:
        t = time.perf_counter()
        try:
            return method(sql, *args)
        finally:
            self.calls.append((sql, time.perf_counter() - t))

    def execute(self, sql: str, *args: Any) -> Any:
        return self._timed(self._conn.execute, sql, *args)

    def executemany(self, sql: str, *args: Any) -> Any:
        return self._timed(self._conn.executemany, sql, *args)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._conn, name)

    def summary(self) -> dict[str, float]:
        commits = [dt for sql, dt in self.calls if sql.lstrip().upper().startswith("COMMIT")]
        return {"sql_ms": sum(dt for _, dt in self.calls) * 1e3, "commit1_ms": commits[0] * 1e3 if commits else 0.0}


async def child(kind: str, db: str, sync: str, sql_time: bool = False) -> dict[str, Any]:
    t_import = time.perf_counter()
    from engine import Content, Runner  # noqa: F401 -- timed: what a resume imports
    from engine.store.sqlite import SQLiteStore

    imported = time.perf_counter() - t_import
    t = time.perf_counter()
    store = await SQLiteStore.open(db, synchronous=sync, inline=True)
    opened = time.perf_counter() - t
    runner, sid, message = await operation(kind, store)
    timed = None
    if sql_time:  # the inline driver hands its connection to every unit of work
        timed = store._driver._raw = _TimedSQL(store._driver._raw)
    gc.collect()  # the cyclic GC's timing in the op then depends on the op alone, not on the setup
    counts = _counting(store)
    t, cpu = time.perf_counter(), time.process_time()
    n = await drain(runner.run("u", sid, message))
    dt, dcpu = time.perf_counter() - t, time.process_time() - cpu
    store._driver._raw.set_trace_callback(None)
    await store.close()
    sql = timed.summary() if timed is not None else {}
    return {"ms": dt * 1e3, "cpu_ms": dcpu * 1e3, "open_ms": opened * 1e3, "import_ms": imported * 1e3, "events": n,
            **counts, **sql}


# --------------------------------------------------------------------------- parent side


def fresh_copy(template: Path, work: Path) -> Path:
    dst = work / "run.sqlite"
    for suffix in ("", "-wal", "-shm"):
        Path(str(dst) + suffix).unlink(missing_ok=True)
    shutil.copyfile(template, dst)
    return dst


def _children_cpu() -> float:
    """User + system seconds of this process's reaped children so far."""
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def _timed_process(cmd: list[str], **kwargs: Any) -> tuple[subprocess.CompletedProcess[str], float, float]:
    """Run ``cmd`` to its exit: (result, wall ms, CPU ms of the whole child process,
    interpreter start and exit included -- getrusage of the reaped child)."""
    cpu0, t = _children_cpu(), time.perf_counter()
    out = subprocess.run(cmd, capture_output=True, text=True, check=False, **kwargs)
    return out, (time.perf_counter() - t) * 1e3, (_children_cpu() - cpu0) * 1e3


def run_child(kind: str, template: Path, work: Path, sync: str, sql_time: bool = False) -> dict[str, Any]:
    db = fresh_copy(template, work)
    out, wall, cpu = _timed_process([sys.executable, __file__, "--child", kind, str(db), sync, *(["sql"] if sql_time else [])])
    if out.returncode != 0:
        raise RuntimeError(f"child {kind} {template.name} {sync} failed:\n{out.stderr}")
    return {**json.loads(out.stdout.strip().splitlines()[-1]), "proc_ms": wall, "proc_cpu_ms": cpu}


IMPORTS = {
    "import engine": "import engine",
    "imports of a resume": "from engine import Content, Runner; from engine.store.sqlite import SQLiteStore",
}
"""Timed in a fresh process: ``import engine`` (lazy: what ``hitl sessions`` pays), and
everything a resume imports (the runner, the models, the SQLite store)."""


def time_import(code: str) -> tuple[float, float]:
    """(wall ms of the import statement in a fresh process, CPU ms of the whole process)."""
    prog = f"import time; t = time.perf_counter(); {code}; print((time.perf_counter() - t) * 1e3)"
    out, _wall, cpu = _timed_process([sys.executable, "-c", prog], cwd=ROOT)
    if out.returncode != 0:
        raise RuntimeError(out.stderr)
    return float(out.stdout.strip()), cpu


AB_TREE: Path | None = None
"""``--ab TREE``: the whole-process rows also run from this tree (and then both sides run
``python -m console.cli`` with PYTHONPATH and cwd set to their own tree)."""


def _hitl(tree: Path | None = None) -> tuple[list[str], dict[str, str], Path | None]:
    """(argv, environment, cwd) of the ``hitl`` command as an operator runs it (the console
    script beside this Python); with ``--ab``, ``python -m console.cli`` of ``tree``
    (this one when None), so that both sides start the same way."""
    env = dict(os.environ)
    if AB_TREE is None:
        hitl = Path(sys.executable).with_name("hitl")
        return ([str(hitl)] if hitl.exists() else [sys.executable, "-m", "console.cli"]), env, None
    tree = tree or ROOT
    return [sys.executable, "-m", "console.cli"], {**env, "PYTHONPATH": f"{tree}{os.pathsep}{tree / 'benchmarks'}"}, tree


def time_hitl_sessions(db: Path, tree: Path | None = None) -> tuple[float, float]:
    """(ms from process start to the first line of output, CPU ms of the whole process)."""
    return time_first_line(db, "sessions", tree=tree)


DEMO_RESUME = ("review-waiting-1", 'signoff-q3-security-report={"decision": "approve"}')
"""The demo store's document sign-off, answered: three nodes re-execute, one more runs, the invocation completes."""


def time_hitl_resume(db: Path, tree: Path | None = None) -> tuple[float, float]:
    """(ms from process start to its exit, CPU ms of the whole process) of ``hitl resume``
    on the demo store, the way an operator answers: what they wait for, imports included."""
    hitl, env, cwd = _hitl(tree)
    out, wall, cpu = _timed_process([*hitl, "--db", str(db), "resume", *DEMO_RESUME], env={**env, "USER": "bench"}, cwd=cwd)
    if out.returncode != 0 or "COMPLETED" not in out.stdout:
        raise RuntimeError(f"hitl resume failed ({out.returncode}):\n{out.stdout}\n{out.stderr}")
    return wall, cpu


def time_hitl_help(tree: Path | None = None) -> tuple[float, float]:
    """(ms from process start to exit, CPU ms of the whole process) of ``hitl --help``."""
    hitl, env, cwd = _hitl(tree)
    out, wall, cpu = _timed_process([*hitl, "--help"], env=env, cwd=cwd)
    if out.returncode != 0 or "Commands:" not in out.stdout:
        raise RuntimeError(f"hitl --help failed ({out.returncode}):\n{out.stderr}")
    return wall, cpu


def time_first_line(db: Path, *argv: str, tree: Path | None = None) -> tuple[float, float]:
    """(ms from process start to the first line of ``hitl ARGV``'s output, CPU ms of the whole process)."""
    hitl, env, cwd = _hitl(tree)
    cpu0, t = _children_cpu(), time.perf_counter()
    p = subprocess.Popen([*hitl, "--db", str(db), *argv], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=cwd)
    assert p.stdout is not None
    first = p.stdout.readline()
    dt = time.perf_counter() - t
    p.communicate()
    if p.returncode != 0 or not first:
        raise RuntimeError(f"hitl {' '.join(argv)} failed ({p.returncode})")
    return dt * 1e3, (_children_cpu() - cpu0) * 1e3


def time_hitl_resume_app(db: Path, tree: Path | None = None) -> tuple[float, float]:
    """(ms from process start to exit, CPU ms of the whole process) of ``hitl resume``
    answering the open interrupt of session ``big`` (10,000 events of history), its
    app's code registered with ``--app``: the SIMPLE workflow's two nodes run."""
    import sqlite3

    conn = sqlite3.connect(db)
    (iid,) = conn.execute("SELECT interrupt_id FROM interrupts WHERE session_id = 'big' AND status = 'open'").fetchone()
    conn.close()
    hitl, env, cwd = _hitl(tree)
    env["USER"] = "bench"
    if AB_TREE is None:
        env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "benchmarks"), os.environ.get("PYTHONPATH", "")])
    cmd = [*hitl, "--db", str(db), "--app", "bench=bench_engine:SIMPLE", "resume", "big", f"{iid}=true"]
    out, wall, cpu = _timed_process(cmd, env=env, cwd=cwd)
    if out.returncode != 0 or "COMPLETED" not in out.stdout:
        raise RuntimeError(f"hitl resume failed ({out.returncode}):\n{out.stdout}\n{out.stderr}")
    return wall, cpu


VENVS: dict[Path | None, Path] = {}
"""``--venv``: a venv's ``hitl`` with this tree installed (key None), and --ab's (AB_TREE): cold_venv."""


def time_installed_resume(db: Path, tree: Path | None = None) -> tuple[float, float]:
    """``time_hitl_resume_app``'s process, run as users run it: the installed ``hitl`` of a venv."""
    import cold_venv

    folder = cold_venv.app_dir(db.parent)
    out, wall, cpu = _timed_process(cold_venv.resume_argv(VENVS[tree], db), env=cold_venv.resume_env(folder), cwd=folder)
    if out.returncode != 0 or "COMPLETED" not in out.stdout:
        raise RuntimeError(f"installed hitl resume failed ({out.returncode}):\n{out.stdout}\n{out.stderr}")
    return wall, cpu


def fmt(values: list[float], unit: str = "ms") -> str:
    med = statistics.median(values)
    return f"{med:7.2f} {unit} [{min(values):.2f}-{max(values):.2f}]"


def _med(values: list[float]) -> float:
    return statistics.median(values)


def main(args: argparse.Namespace) -> int:
    quick = args.quick
    sizes = [100, 10_000] if quick else [100, 10_000, 100_000]
    loop_n = 1_000 if quick else 10_000
    n_sessions = 10_000 if quick else 100_000
    reps = args.reps or (3 if quick else 7)
    only = set(args.only.split(",")) if args.only else None

    def wanted(group: str) -> bool:
        return only is None or group in only

    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="bench-cold-") as d:
        tmp = Path(d)
        work = tmp / "work"
        work.mkdir()
        t = time.perf_counter()
        templates: dict[str, Path] = {}
        bulk: dict[int, tuple[float, float]] = {}
        for tree in (ROOT, *([AB_TREE] if AB_TREE is not None else [])):
            subprocess.run([sys.executable, "-m", "compileall", "-q", "engine", "console", "benchmarks"], cwd=tree, check=True)
        if args.venv:
            import cold_venv

            for tree in (None, *([AB_TREE] if AB_TREE is not None else [])):
                VENVS[tree] = cold_venv.build_venv(args.venv / ("after" if tree is None else "before"), tree or ROOT)
        print(f"(load average before: {' '.join(f'{x:.2f}' for x in load_before)})", flush=True)
        if wanted("resume") or wanted("text") or wanted("bulk") or wanted("cold"):
            for n in sizes if wanted("resume") or wanted("text") or wanted("bulk") else [10_000]:
                templates[f"hist-{n}"] = tmp / f"hist-{n}.sqlite"
                bulk[n] = asyncio.run(build_history(templates[f"hist-{n}"], n))
        if wanted("loop"):
            for n in (1, loop_n):
                templates[f"loop-{n}"] = tmp / f"loop-{n}.sqlite"
                asyncio.run(build_loop(templates[f"loop-{n}"], n))
        templates["empty"] = tmp / "empty.sqlite"
        asyncio.run(build_empty(templates["empty"]))
        if wanted("startup"):
            templates["many"] = tmp / "many.sqlite"
            asyncio.run(build_many_sessions(templates["many"], n_sessions))
            from sample_sessions.demo import build_demo_db

            templates["demo"] = tmp / "demo.sqlite"
            asyncio.run(build_demo_db(templates["demo"]))
            templates["inbox"] = tmp / "inbox.sqlite"
            asyncio.run(build_many_sessions(templates["inbox"], n_sessions, waiting=True))
        if wanted("storage"):
            storage = asyncio.run(chain_bytes(tmp / "chain.sqlite", 1_000))
        print(f"(built the stores in {time.perf_counter() - t:.1f} s; {reps} interleaved repetitions)", flush=True)

        # (label, kind, template key); each at NORMAL and FULL
        cases: list[tuple[str, str, str]] = []
        if wanted("resume"):
            cases += [(f"resume, {n:,} other events", "resume", f"hist-{n}") for n in sizes]
        if wanted("text"):
            cases += [(f"new text turn, {n:,} events", "text", f"hist-{n}") for n in sizes]
        if wanted("loop"):
            cases += [(f"resume after {n:,} loop iterations", "loop", f"loop-{n}") for n in (1, loop_n)]
        if wanted("fresh"):
            cases.append(("fresh run to first interrupt", "fresh", "empty"))
        results: dict[tuple[str, str], list[dict[str, Any]]] = {}
        startup: dict[str, list[tuple[float, float]]] = {}
        other: dict[str, list[tuple[float, float]]] = {}  # --ab: the same rows from the other tree

        def process_row(rep: int, name: str, measure: Any, *args: Any) -> None:
            """One repetition of a whole-process row; with --ab, the other tree's beside it
            (which goes first alternates, so neither always meets the warmer cache)."""
            sides = [(startup, None)] + ([(other, AB_TREE)] if AB_TREE is not None else [])
            for into, tree in sides if rep % 2 == 0 else sides[::-1]:
                into.setdefault(name, []).append(measure(*[a() if callable(a) else a for a in args], tree))

        for rep in range(reps):
            for label, kind, key in cases:
                for sync in ("NORMAL", "FULL"):
                    results.setdefault((label, sync), []).append(run_child(kind, templates[key], work, sync, args.sql_time))
            if wanted("startup"):
                for name, code in IMPORTS.items():
                    startup.setdefault(f"{name} (fresh process)", []).append(time_import(code))
                process_row(rep, f"hitl sessions, first line ({n_sessions:,} sessions)", time_hitl_sessions,
                            lambda: fresh_copy(templates["many"], work))
                process_row(rep, "hitl resume, whole process (demo sign-off)", time_hitl_resume,
                            lambda: fresh_copy(templates["demo"], work))
                process_row(rep, "hitl --help, whole process", time_hitl_help)
                process_row(rep, f"hitl inbox, first line ({n_sessions:,} sessions, 1 open each)",
                            lambda db, tree: time_first_line(db, "inbox", tree=tree),
                            lambda: fresh_copy(templates["inbox"], work))
            if (wanted("resume") or wanted("cold")) and "hist-10000" in templates:
                process_row(rep, "hitl resume, whole process (10,000 events, app registered)", time_hitl_resume_app,
                            lambda: fresh_copy(templates["hist-10000"], work))
                if VENVS:
                    process_row(rep, "the same, installed: a venv's hitl (wheel)", time_installed_resume,
                                lambda: fresh_copy(templates["hist-10000"], work))
                    for name, code in cold_venv.FLOORS.items():  # the same venv, whichever tree it holds
                        out, wall, cpu = _timed_process(cold_venv.floor_argv(VENVS[None], code), cwd=work)
                        startup.setdefault(name, []).append((wall, cpu) if out.returncode == 0 else sys.exit(out.stderr))

    # One record per row: what --save writes and --before reads back.
    rows: list[dict[str, Any]] = []
    for label, _kind, _key in cases:
        for sync in ("NORMAL", "FULL"):
            rs = results[(label, sync)]
            rows.append(
                {
                    "name": f"{label} ({sync})",
                    "wall": [r["ms"] for r in rs],
                    "cpu": [r["cpu_ms"] for r in rs],
                    "proc_cpu": [r["proc_cpu_ms"] for r in rs],
                    "stmts": "/".join(map(str, sorted({r["stmts"] for r in rs}))),
                    "commits": "/".join(map(str, sorted({r["commits"] for r in rs}))),
                    **({"sql": [r["sql_ms"] for r in rs], "commit1": [r["commit1_ms"] for r in rs]} if args.sql_time else {}),
                }
            )
    if results:
        opens = [r["open_ms"] for rs in results.values() for r in rs]
        rows.append({"name": "store open (all rows)", "wall": opens})
    for name, values in startup.items():
        rows.append({"name": name, "wall": [w for w, _ in values], "proc_cpu": [c for _, c in values]})
    if wanted("storage"):
        rows.append({"name": "bytes per node, 1,000-node chain (target <= 1,400)", "value": storage["per_node"],
                     "detail": f"{storage['checkpoints']:.0f} checkpoints {storage['checkpoint_bytes'] / 1e3:.0f} KB,"
                               f" snapshots {storage['snapshot_bytes'] / 1e3:.0f} KB, file {storage['file'] / 1e3:.0f} KB"})
    for n, (seconds, cpu) in bulk.items():  # once each, in this process (SIMPLE invocations, ~8 events each)
        rows.append({"name": f"bulk_load, one {n:,}-event session (once)", "wall": [seconds * 1e3], "cpu": [cpu * 1e3]})
    load_after = os.getloadavg()
    for row in rows:
        if "detail" in row:
            print(f"({row['name']}: {row['detail']})")
    if args.save:
        Path(args.save).write_text(json.dumps({"rows": rows, "load": [load_before, load_after], "reps": reps}, indent=1))
    before = {r["name"]: r for r in json.loads(Path(args.before).read_text())["rows"]} if args.before else {}
    if AB_TREE is not None:  # printed as "before": the other tree's whole-process rows of this same run
        print(f"(--ab: 'before' is {AB_TREE}, its whole-process rows interleaved with this tree's)")
        before = {name: {"name": name, "wall": [w for w, _ in v], "proc_cpu": [c for _, c in v]} for name, v in other.items()}
    print_table(rows, before)
    print(f"(load average after: {' '.join(f'{x:.2f}' for x in load_after)})")
    return 0


def _cell(row: dict[str, Any] | None, key: str) -> str:
    if row is not None and "value" in row:  # a size, measured once
        return f"{row['value']:,.0f} B" if key == "wall" else ""
    if row is None or not row.get(key):
        return ""
    values = row[key]
    if row["name"].startswith("bulk_load"):
        return f"{values[0] / 1e3:.2f} s"
    if key == "wall":
        return fmt(values).strip()
    return f"{_med(values):.2f} ms"


def print_table(rows: list[dict[str, Any]], before: dict[str, dict[str, Any]]) -> None:
    """Median [min-max] wall time of the operation, median CPU time of the operation
    (this process's user + system time during it), median CPU time of the whole child
    process (getrusage: interpreter start, imports, open, operation, exit), statements
    and COMMITs; with ``before``, the same columns of the earlier run beside them."""
    cols = [("wall", "wall time"), ("cpu", "op cpu"), ("proc_cpu", "process cpu")]
    if any(r.get("sql") for r in rows):
        cols += [("sql", "in SQLite"), ("commit1", "1st COMMIT")]
    header = ["cold process (median [min-max])"]
    for _key, title in cols:
        header += [f"before {title}", title] if before else [title]
    header += ["stmts before/after", "commits before/after"] if before else ["stmts", "commits"]
    table = [header]
    for row in rows:
        old = before.get(row["name"])
        line = [row["name"]]
        for key, _title in cols:
            line += [_cell(old, key), _cell(row, key)] if before else [_cell(row, key)]
        for key in ("stmts", "commits"):
            now = row.get(key, "")
            line.append(f"{old.get(key, '')} -> {now}" if before and old and now else now)
        table.append(line)
    widths = [max(len(r[i]) for r in table) for i in range(len(header))]
    for i, line in enumerate(table):
        print("  ".join(c.ljust(w) if j == 0 else c.rjust(w) for j, (c, w) in enumerate(zip(line, widths, strict=True))))
        if i == 0:
            print("-" * (sum(widths) + 2 * (len(widths) - 1)))
    # The flatness targets: ratios of medians (CPU: what the operation costs; wall: what is waited for).
    by_name = {r["name"]: r for r in rows}
    pairs = []
    for sync in ("NORMAL", "FULL"):
        for small, large in (("resume, 100 other events", "resume, 100,000 other events"),
                             ("new text turn, 100 events", "new text turn, 100,000 events"),
                             ("resume after 1 loop iterations", "resume after 10,000 loop iterations")):
            a, b = by_name.get(f"{small} ({sync})"), by_name.get(f"{large} ({sync})")
            if a and b:
                pairs.append((f"{large} / {small} ({sync})", a, b))
    if pairs:
        print()
        print("flatness (large / small, ratio of medians; target <= 1.2):")
        for name, a, b in pairs:
            print(f"  {name}: wall {_med(b['wall']) / _med(a['wall']):.2f}x, op cpu {_med(b['cpu']) / _med(a['cpu']):.2f}x")


if __name__ == "__main__":
    if len(sys.argv) >= 2 and sys.argv[1] == "--child":
        print(json.dumps(asyncio.run(child(sys.argv[2], sys.argv[3], sys.argv[4], sql_time=sys.argv[5:] == ["sql"]))))
        sys.exit(0)
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--reps", type=int, default=0, help="repetitions per row (default 7, --quick 3)")
    ap.add_argument("--only", help="comma-separated groups: resume,text,loop,fresh,startup,bulk,storage,"
                    "cold (only the whole-process hitl resume --app row, of the 10,000-event store)")
    ap.add_argument("--save", help="write the measurements to this JSON file (for a later --before)")
    ap.add_argument("--before", help="a --save file of an earlier run (e.g. the previous commit): printed beside")
    ap.add_argument("--ab", type=Path, help="another tree (e.g. `git worktree add --detach /tmp/before main`): its"
                    " whole-process rows run in the same repetitions, alternating with this tree's, printed as 'before'")
    ap.add_argument("--venv", type=Path, help="a folder for venvs (kept between runs): also the resume --app row"
                    " run by the installed hitl of a venv with the tree (and --ab's) installed as a wheel")
    ap.add_argument(
        "--sql-time", action="store_true",
        help="also time each SQL call of the op: columns 'in SQLite' (their sum) and '1st COMMIT' (a Python proxy"
        " on the connection adds ~1 us per call to the op)",
    )
    parsed = ap.parse_args()
    if parsed.ab is not None:
        AB_TREE = parsed.ab.resolve()
    sys.exit(main(parsed))
