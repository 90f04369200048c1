"""Where a cold process's resume and fresh run spend their work: instruction counts (issue 15).

    python benchmarks/profile_cold.py                  # resume and fresh run, NORMAL
    python benchmarks/profile_cold.py --top 30 --sync FULL
    python benchmarks/profile_cold.py --kinds resume --events 100000   # flat: compare with --events 100
    python benchmarks/profile_cold.py --process --events 10000 --top 25   # a whole `hitl resume --app` process

``bench_cold.py`` times these operations in fresh processes; on a shared
2-core machine a 0.1 ms change drowns in the noise of its medians. This script
runs the same operations (the same stores, workflows and store open as
``bench_cold``'s children) once each under valgrind's callgrind, which counts
the instructions executed -- the same count run after run, whatever else the
machine does -- and only inside the operation: the child runs it inside
``functools.reduce``, the one C function callgrind is told to collect in
(``--toggle-collect``), so the imports, the store open and the exit are left
out. ``PYTHONHASHSEED=0`` keeps dict layouts, and so the counts, repeatable;
a ``gc.collect()`` just before the operation keeps the cyclic GC's timing its own.

Printed per operation: the instructions in all, their split by library
(libpython: the interpreter running our Python code; libsqlite3: SQLite,
statement compiles included; pydantic-core; libc), and the costliest functions.
What instructions do not show is time spent waiting: the fsyncs of the first
commit (``bench_cold``'s wall time has them; ``strace -T`` shows them).

``--process`` counts a whole cold ``hitl resume`` process instead (bench_cold's
"hitl resume, whole process (10,000 events, app registered)" row: interpreter
start, imports, store open, the answer's turn, exit), collected from its first
instruction: what the issue's whole-process target costs, load-independent
(~4.5-5M instructions per ms on this machine). Its split by library shows the
interpreter and imports; ``python -X importtime`` names the modules.
``--commands resume,help,sessions,inbox`` counts the other cold commands too
(``sessions``/``inbox`` on stores of ``--sessions`` sessions, built first: ~1 min),
``--venv DIR`` also counts the resume run by the installed ``hitl`` of a fresh venv per tree (as
users run it: see cold_venv.py), and ``--ab TREE`` counts the same processes of another tree
beside this one's::

    git worktree add --detach /tmp/before main
    python benchmarks/profile_cold.py --process --events 10000 --commands resume,help,sessions,inbox --ab /tmp/before

For a before/after pair of the in-process operations, copy this script into the
older tree as ``bench_cold.py``'s docstring says, and run it there.

Needs valgrind (Debian's ``valgrind`` package; ``callgrind_annotate`` comes with it).
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import gc
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

KINDS = ("resume", "fresh")


def child(kind: str, db: str, sync: str) -> None:
    """Open the store as bench_cold's child does, then run the operation inside functools.reduce."""
    import bench_cold

    from engine.store.sqlite import SQLiteStore

    loop = asyncio.new_event_loop()

    async def setup():
        store = await SQLiteStore.open(db, synchronous=sync, inline=True)
        return (store, *await bench_cold.operation(kind, store))

    store, runner, sid, message = loop.run_until_complete(setup())
    # A full collection first: whether the cyclic GC runs inside the operation then
    # depends on the operation's own allocations, not on how many the setup left
    # pending (an unrelated change to the setup moved one in: +0.4M instructions).
    gc.collect()
    t = time.perf_counter()
    events = functools.reduce(
        lambda _, __: loop.run_until_complete(bench_cold.drain(runner.run("u", sid, message))), [0], 0
    )
    dt = time.perf_counter() - t
    loop.run_until_complete(store.close())
    loop.close()
    print(f"{events} events, {dt * 1e3:.1f} ms under valgrind")


_LINE = re.compile(r"\s*([\d,]+)\s+(?:\([^)]*\)\s+)?(\S.*?)(?:\s+\[(.*)\])?\s*$")


def annotate(out_file: Path) -> tuple[int, Counter[str], Counter[str]]:
    """(total instructions, by library, by function) of a callgrind output file."""
    text = subprocess.run(
        ["callgrind_annotate", "--threshold=100", str(out_file)], capture_output=True, text=True, check=True
    ).stdout
    total = 0
    by_lib: Counter[str] = Counter()
    by_fn: Counter[str] = Counter()
    for line in text.splitlines():
        m = _LINE.match(line)
        if not m or not m.group(1)[0].isdigit():
            continue
        n, name, obj = int(m.group(1).replace(",", "")), m.group(2), m.group(3)
        if name == "PROGRAM TOTALS":
            total = n
            continue
        name = re.sub(r"^/tmp/python-build[^:]*/", "", name)  # pyenv's build directory
        lib = Path(obj).name if obj else "libpython (inlined)"
        lib = re.sub(r"\.cpython-.*|\.so.*", "", lib)
        by_lib[lib] += n
        by_fn[f"{name}  [{lib}]"] += n
    return total, by_lib, by_fn


def report(out_file: Path, label: str, note: str, libs: int, top: int) -> None:
    """Print a callgrind file's total, its split by library and its costliest functions."""
    total, by_lib, by_fn = annotate(out_file)
    print(f"\n{label}: {total:,} instructions{note}")
    for lib, n in by_lib.most_common(libs):
        print(f"  {n / total:6.1%}  {n:>11,}  {lib}")
    print("  costliest functions (self):")
    for fn, n in by_fn.most_common(top):
        print(f"  {n / total:6.1%}  {n:>11,}  {fn[:110]}")


def _process_argv(command: str, stores: dict[str, Path], work: Path) -> list[str]:
    """``hitl``'s arguments for one whole-process command: ``resume`` answers session
    ``big``'s open interrupt (app registered) on a fresh copy of its store; ``help``;
    ``sessions`` and ``inbox`` list the many-session stores (reads: no copy)."""
    import sqlite3

    import bench_cold

    if command == "help":
        return ["--help"]
    if command in ("sessions", "inbox"):
        return ["--db", str(stores[command]), command]
    db = bench_cold.fresh_copy(stores["resume"], work)
    conn = sqlite3.connect(db)
    (iid,) = conn.execute("SELECT interrupt_id FROM interrupts WHERE session_id = 'big' AND status = 'open'").fetchone()
    conn.close()
    return ["--db", str(db), "--app", "bench=bench_engine:SIMPLE", "resume", "big", f"{iid}=true"]


def whole_process(args: argparse.Namespace, tmp: Path) -> int:
    """Callgrind of whole ``hitl`` processes, each from its first instruction: ``resume
    --app`` answering session ``big``'s open interrupt (``--events`` events of history),
    and with ``--commands`` also ``help``, ``sessions`` and ``inbox`` (``--sessions``
    sessions). With ``--ab TREE``, the same processes of that tree too (each side runs
    ``python -m console.cli`` with its own tree on PYTHONPATH), totals side by side."""
    import bench_cold

    commands = args.commands.split(",")
    stores = {"resume": tmp / "hist.sqlite"}
    asyncio.run(bench_cold.build_history(stores["resume"], args.events))
    if "sessions" in commands:
        stores["sessions"] = tmp / "many.sqlite"
        asyncio.run(bench_cold.build_many_sessions(stores["sessions"], args.sessions))
    if "inbox" in commands:
        stores["inbox"] = tmp / "inbox.sqlite"
        asyncio.run(bench_cold.build_many_sessions(stores["inbox"], args.sessions, waiting=True))
    trees = [ROOT, *([args.ab.resolve()] if args.ab else [])]
    for tree in trees:
        subprocess.run([sys.executable, "-m", "compileall", "-q", "engine", "console", "benchmarks"], cwd=tree, check=True)
    work = tmp / "work"
    work.mkdir()
    totals: dict[tuple[str, Path], int] = {}
    for command in commands:
        for tree in trees:
            out = tmp / f"{command}-{len(totals)}.callgrind"
            # side by side, each sees only its own tree (an inherited PYTHONPATH naming this one would
            # put both on the before side's path)
            inherited = [] if args.ab else [os.environ.get("PYTHONPATH", "")]
            path = os.pathsep.join([str(tree), str(tree / "benchmarks"), *inherited])
            cmd = [sys.executable, "-m", "console.cli", *_process_argv(command, stores, work)]
            run = subprocess.run(
                ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", *cmd], capture_output=True, text=True,
                env={**os.environ, "PYTHONHASHSEED": "0", "PYTHONPATH": path, "USER": "bench"}, cwd=tree, check=False,
            )
            if run.returncode != 0 or (command == "resume" and "COMPLETED" not in run.stdout):
                print(f"hitl {command} failed under valgrind:\n{run.stdout[-1000:]}{run.stderr[-2000:]}", file=sys.stderr)
                return 1
            if tree == ROOT:
                label = {"resume": f"hitl resume --app, whole process, {args.events:,} other events",
                         "help": "hitl --help, whole process"}.get(command, f"hitl {command}, whole process, {args.sessions:,} sessions")
                report(out, label, "", 8, args.top)
            totals[(command, tree)] = annotate(out)[0]
    if args.venv:  # the same resume, run by the installed hitl of a venv per tree (see cold_venv)
        import cold_venv

        commands.append("installed")
        for tree in trees:
            hitl = cold_venv.build_venv(args.venv / ("after" if tree == ROOT else "before"), tree)
            folder = cold_venv.app_dir(work)
            out = tmp / f"installed-{len(totals)}.callgrind"
            argv = cold_venv.resume_argv(hitl, bench_cold.fresh_copy(stores["resume"], work))
            python = [str(hitl.with_name("python")), *argv]  # the script's own interpreter, not its shebang's wrapper
            run = subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", *python],
                                 capture_output=True, text=True, env={**cold_venv.resume_env(folder), "PYTHONHASHSEED": "0"},
                                 cwd=folder, check=False)
            if run.returncode != 0 or "COMPLETED" not in run.stdout:
                print(f"installed hitl resume failed under valgrind:\n{run.stdout[-1000:]}{run.stderr[-2000:]}", file=sys.stderr)
                return 1
            totals[("installed", tree)] = annotate(out)[0]
            print(f"\ninstalled hitl resume --app ({'this tree' if tree == ROOT else tree}): {totals[('installed', tree)]:,} instructions")
    if args.ab:
        print(f"\nwhole-process instructions, {args.ab} (before) -> this tree (after):")
        for command in commands:
            b, a = totals[(command, trees[1])], totals[(command, ROOT)]
            print(f"  hitl {command:<9} {b / 1e6:8.1f} M -> {a / 1e6:8.1f} M  ({(a - b) / b:+.1%})")
    return 0


def main(args: argparse.Namespace) -> int:
    import bench_cold

    if not (shutil.which("valgrind") and shutil.which("callgrind_annotate")):
        print("profile_cold needs valgrind and callgrind_annotate (apt-get install valgrind)", file=sys.stderr)
        return 2
    if args.process:
        with tempfile.TemporaryDirectory(prefix="profile-cold-") as d:
            return whole_process(args, Path(d))
    with tempfile.TemporaryDirectory(prefix="profile-cold-") as d:
        tmp = Path(d)
        templates = {"resume": tmp / "hist.sqlite", "fresh": tmp / "empty.sqlite"}
        asyncio.run(bench_cold.build_history(templates["resume"], args.events))
        asyncio.run(bench_cold.build_empty(templates["fresh"]))
        subprocess.run([sys.executable, "-m", "compileall", "-q", "engine", "benchmarks"], cwd=ROOT, check=True)
        work = tmp / "work"
        work.mkdir()
        for kind in args.kinds.split(","):
            db = bench_cold.fresh_copy(templates[kind], work)
            out = tmp / f"{kind}.callgrind"
            run = subprocess.run(
                [
                    "valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", "--collect-atstart=no",
                    "--toggle-collect=functools_reduce", sys.executable, __file__, "--child", kind, str(db), args.sync,
                ],
                capture_output=True, text=True, env={**os.environ, "PYTHONHASHSEED": "0"}, check=False,
            )
            if run.returncode != 0:
                print(f"{kind}: the child failed:\n{run.stderr[-2000:]}", file=sys.stderr)
                return 1
            label = f"resume, {args.events:,} other events" if kind == "resume" else "fresh run to first interrupt"
            report(out, f"{label} ({args.sync})", f" ({run.stdout.strip()})", 6, args.top)
    return 0


if __name__ == "__main__":
    if len(sys.argv) >= 2 and sys.argv[1] == "--child":
        child(sys.argv[2], sys.argv[3], sys.argv[4])
        sys.exit(0)
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kinds", default=",".join(KINDS), help="comma-separated: resume,fresh")
    ap.add_argument("--sync", default="NORMAL", choices=("NORMAL", "FULL"))
    ap.add_argument("--events", type=int, default=100, help="events of other invocations before the resume")
    ap.add_argument("--top", type=int, default=15, help="how many functions to list")
    ap.add_argument("--process", action="store_true", help="a whole hitl resume --app process instead (see above)")
    ap.add_argument("--commands", default="resume", help="with --process: comma-separated resume,help,sessions,inbox")
    ap.add_argument("--sessions", type=int, default=100_000, help="sessions of the stores sessions and inbox list")
    ap.add_argument("--ab", type=Path, help="with --process: another tree (e.g. main's worktree), counted beside")
    ap.add_argument("--venv", type=Path, help="with --process: a folder for venvs (kept between runs); also counts the"
                    " resume run by the installed hitl of a venv with the tree (and --ab's) installed as a wheel")
    sys.exit(main(ap.parse_args()))
