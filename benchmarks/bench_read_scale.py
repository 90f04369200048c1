"""Read commands on one long session: time and peak memory of each, as a table.

    python benchmarks/bench_read_scale.py                  # builds a ~100k-event session (several minutes)
    python benchmarks/bench_read_scale.py --db big.sqlite  # reuse a store built before
    python benchmarks/bench_read_scale.py --iterations 300 # quicker, ~3k events

The session is the demo's ``deploy-long-1`` (a deploy loop: ~11 events per
iteration), built with ``hitl demo --long-iterations N``. Each command runs as
its own process (what an operator runs), output to /dev/null; the table gives
wall time and the process's peak RSS (``wait4``). Targets from issue 12:
``show`` under 0.5 s and 150 MiB at 100k events, ``events`` in constant memory,
``replay --at N`` folding at most ~1000 events from the nearest seek checkpoint
(engine/checkpoints.py) whatever N; the header line says how many checkpoints
the session has and what writing one costs a turn end. The last row imports the session's export (~36 MB at
100k events) into a copy of the store, under a new id. Commands that run past a
second say how far they got on stderr (issue 42); the table measures them with
``HITL_PROGRESS_AFTER`` as the caller set it. Exits non-zero only on error.

``--before TREE`` compares instead: the five reads a long session made slow
(``show --all-runs``, ``events``, ``replay --diff-from``, ``export``,
``import``) run with the checkout TREE (``git worktree add /tmp/before
COMMIT``) and with this one, interleaved, ``--repeat`` times each; the table
gives the median CPU seconds (user + system: what to compare on a loaded
machine) and wall seconds of both, the ratio and whether the target (at most a
third of the original's time) is met, and the load average before and after::

    python benchmarks/bench_read_scale.py --db big.sqlite --before /tmp/before --repeat 3
    python benchmarks/bench_read_scale.py --db big.sqlite --before /tmp/before --repeat 3 --only import

When the two trees' schemas differ (the original refuses a newer store, this one
reads an older store only once migrated), ``--before-db`` names the original's
copy of the same store: build it with the original tree, then copy it and run
``hitl migrate`` on the copy with this one for ``--db``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SESSION = "deploy-long-1"


def hitl() -> list[str]:
    exe = shutil.which("hitl")
    return [exe] if exe else [sys.executable, "-m", "console.cli"]


def child_env(cache: str) -> dict[str, str]:
    """The commands' environment: bytecode cached (in ``cache``), as an installed
    hitl has it, even where PYTHONDONTWRITEBYTECODE is set (it would add the
    compilation of every module to each start-up)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = cache
    return env


ENV: dict[str, str] | None = None


CWD: Path | None = None
"""Where the commands run: with ``--before``, the tree whose code runs (``python -m``
puts the working directory first on the path, before PYTHONPATH)."""


def measure(argv: list[str]) -> tuple[float, float, float, int]:
    """(wall seconds, CPU seconds, peak MiB, exit code) of one command. CPU time
    (user + system) is what to compare on a loaded machine."""
    start = time.perf_counter()
    with open(os.devnull, "wb") as null:
        proc = subprocess.Popen(argv, stdout=null, stderr=subprocess.PIPE, env=ENV, cwd=CWD)
        _, status, usage = os.wait4(proc.pid, 0)
    elapsed = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    err = proc.stderr.read().decode() if proc.stderr else ""
    if proc.returncode:
        print(f"error: {' '.join(argv[1:])}: {err.strip()}", file=sys.stderr)
    return elapsed, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, proc.returncode


def checkpoint_report(db: Path) -> str:
    """The session's seek checkpoints (engine/checkpoints.py), and what writing
    one costs a turn end: one span folded and written, in this process."""
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        n, size = conn.execute(
            "SELECT count(*), coalesce(sum(length(data)), 0) FROM projection_checkpoints WHERE session_id = ?",
            (SESSION,),
        ).fetchone()
    except sqlite3.OperationalError:
        return "no checkpoints table (a store from before them: `hitl migrate` it)"
    finally:
        conn.close()
    with tempfile.TemporaryDirectory(prefix="hitl-bench-ckpt-") as work:
        copy = Path(work) / "c.sqlite"
        src, dst = sqlite3.connect(db), sqlite3.connect(copy)
        src.backup(dst)
        src.close()
        last = dst.execute("SELECT max(seq) FROM projection_checkpoints WHERE session_id = ?", (SESSION,)).fetchone()[0]
        dst.execute("DELETE FROM projection_checkpoints WHERE session_id = ? AND seq = ?", (SESSION, last))
        dst.commit()
        dst.close()
        probe = (
            "import asyncio, sys, time\n"
            "from engine.checkpoints import catch_up\n"
            "from engine.store.sqlite import SQLiteStore\n"
            "async def go():\n"
            "    async with SQLiteStore.open(sys.argv[1]) as s:\n"
            "        t = time.perf_counter(); k = await catch_up(s, sys.argv[2]); print(k, time.perf_counter() - t)\n"
            "asyncio.run(go())\n"
        )
        out = subprocess.run([sys.executable, "-c", probe, str(copy), SESSION], capture_output=True, text=True, env=ENV)
        written, seconds = out.stdout.split() if out.returncode == 0 else ("?", "nan")
    return (
        f"{n} seek checkpoints ({size / 2**20:.1f} MiB); a turn end that writes one "
        f"({written} written) took {float(seconds) * 1000:.0f} ms"
    )


def print_table(header: tuple[str, ...], rows: list[tuple[str, ...]]) -> None:
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    print("  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)))
    print("  ".join("-" * w for w in widths))
    for r in rows:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)))


TARGET = 3.0
"""Each compared read runs in at most 1/TARGET of the original's time (issue 42.6)."""


def tree_command(tree: Path) -> tuple[list[str], dict[str, str]]:
    """How to run the CLI of the checkout ``tree``: argv prefix and environment
    (and :data:`CWD`, set to ``tree``)."""
    global CWD
    assert ENV is not None
    CWD = tree
    return [sys.executable, "-m", "console.cli"], {**ENV, "PYTHONPATH": str(tree), "HITL_TEST_NO_INSTALL": "1"}


def compare(db: Path, before: Path, repeat: int, before_db: Path | None = None, only: list[str] | None = None) -> int:
    """The five slow reads, ``before`` and this tree interleaved: a table of medians.
    ``before_db``: the original tree's copy of the store (default ``db``);
    ``only``: the commands to run (their first word: show, events, replay, export, import)."""
    import statistics

    global ENV
    db = db.resolve()  # the commands run in their trees
    dbs = {"original": (before_db or db).resolve(), "now": db}
    now = Path(__file__).resolve().parents[1]
    trees = {"original": before.resolve(), "now": now}
    base_env = ENV
    last = json.loads(subprocess.run([sys.executable, "-m", "console.cli", "--db", str(db), "--json", "show", SESSION],
                                     check=True, capture_output=True, env={**ENV, "PYTHONPATH": str(now)}, cwd=now).stdout)
    events = last["session"]["last_seq"]
    cases = [
        ("show --all-runs", ["show", SESSION, "--all-runs"]),
        ("events", ["events", SESSION]),
        (f"replay --at {events} --diff-from 100", ["replay", SESSION, "--at", str(events), "--diff-from", "100"]),
        ("export", ["export", SESSION]),
    ]
    load_before = os.getloadavg()
    results: dict[tuple[str, str], list[tuple[float, float]]] = {}
    failed = 0
    with tempfile.TemporaryDirectory(prefix="hitl-bench-compare-") as work:
        export = Path(work) / "session.jsonl"
        with open(export, "wb") as fh:
            subprocess.run([sys.executable, "-m", "console.cli", "--db", str(db), "export", SESSION], check=True,
                           stdout=fh, env={**ENV, "PYTHONPATH": str(now)}, cwd=now)
        size = export.stat().st_size / 2**20
        for tag, tree in trees.items():  # warm each tree's bytecode, not counted
            argv, ENV = tree_command(tree)
            measure([*argv, "--db", str(dbs[tag]), "events", SESSION, "--limit", "1"])
            ENV = base_env
        todo = [*cases, (f"import ({size:.0f} MB file)", None)]
        if only:
            todo = [(name, args) for name, args in todo if name.split()[0] in only]
        for _ in range(repeat):
            for name, args in todo:
                for tag, tree in trees.items():
                    argv, ENV = tree_command(tree)
                    if args is None:  # into a consistent copy of the store, -wal included
                        target = Path(work) / f"copy-{tag}.sqlite"
                        src, dst = sqlite3.connect(dbs[tag]), sqlite3.connect(target)
                        src.backup(dst)
                        src.close()
                        dst.close()
                        cmd = [*argv, "--db", str(target), "import", str(export), "--as", "bench-import", "--reason", "b"]
                    else:
                        cmd = [*argv, "--db", str(dbs[tag]), *args]
                    seconds, cpu, _mib, code = measure(cmd)
                    ENV = base_env
                    failed += code != 0
                    results.setdefault((name, tag), []).append((cpu, seconds))
                    if args is None:
                        for p in Path(work).glob(f"copy-{tag}.sqlite*"):
                            p.unlink()
    load_after = os.getloadavg()
    print(f"\n{SESSION}: {events:,} events; original = {trees['original']}, now = {now}; median of {repeat}, "
          f"load average {load_before[0]:.1f} before, {load_after[0]:.1f} after\n")
    header = ("command", "original cpu s", "now cpu s", "ratio", f"target {TARGET:.0f}x", "original wall s", "now wall s")
    rows = []
    for name in dict.fromkeys(n for n, _ in results):
        o = results[(name, "original")]
        n = results[(name, "now")]
        o_cpu, n_cpu = statistics.median(c for c, _ in o), statistics.median(c for c, _ in n)
        ratio = o_cpu / n_cpu if n_cpu else float("inf")
        rows.append((name, f"{o_cpu:.2f}", f"{n_cpu:.2f}", f"{ratio:.1f}x", "met" if ratio >= TARGET else "NOT met",
                     f"{statistics.median(w for _, w in o):.2f}", f"{statistics.median(w for _, w in n):.2f}"))
    print_table(header, rows)
    return 1 if failed else 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--db", type=Path, help="an existing store with deploy-long-1 (else one is built)")
    ap.add_argument("--iterations", type=int, default=9100, help="loop iterations when building (~11 events each)")
    ap.add_argument("--before", type=Path, metavar="TREE", help="compare the five slow reads with this checkout")
    ap.add_argument("--repeat", type=int, default=3, help="with --before: runs of each command per tree")
    ap.add_argument("--before-db", type=Path, metavar="PATH",
                    help="with --before: the original tree's copy of --db, when it cannot read --db's schema")
    ap.add_argument("--only", action="append", choices=["show", "events", "replay", "export", "import"],
                    help="with --before: only this command (repeatable)")
    args = ap.parse_args()
    global ENV
    cache = tempfile.mkdtemp(prefix="hitl-bench-pyc-")
    ENV = child_env(cache)
    if args.before is not None:
        if args.db is None:
            ap.error("--before needs --db (a store with a long deploy-long-1: build one with hitl demo --long-iterations)")
        try:
            return compare(args.db, args.before, args.repeat, args.before_db, args.only)
        finally:
            shutil.rmtree(cache, ignore_errors=True)
    base = hitl()
    measure([*base, "--help"])  # warm the bytecode cache (the store's modules: below)
    tmp = None
    db = args.db
    if db is None:
        tmp = tempfile.mkdtemp(prefix="hitl-bench-read-")
        db = Path(tmp) / "long.sqlite"
        t0 = time.perf_counter()
        subprocess.run([*base, "--db", str(db), "demo", "--long-iterations", str(args.iterations)], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        print(f"built {db} in {time.perf_counter() - t0:.1f} s")
    try:
        count = subprocess.run([*base, "--db", str(db), "--json", "show", SESSION], check=True, capture_output=True)
        events = json.loads(count.stdout)["session"]["last_seq"]
        mid = events // 2 + 997 if events > 4000 else max(1, events // 2 + 7)  # far from a checkpoint
        for warm in (["show", SESSION], ["replay", SESSION, "--at", "1"], ["events", SESSION, "--limit", "1"]):
            measure([*base, "--db", str(db), *warm])  # the bytecode of the read paths, not counted
        cases = [
            ("hitl --help (start-up)", ["--help"]),
            ("sessions", ["sessions"]),
            ("show", ["show", SESSION]),
            ("show --json", ["--json", "show", SESSION]),
            ("show --all-runs", ["show", SESSION, "--all-runs"]),
            ("events --limit 100", ["events", SESSION, "--limit", "100"]),
            ("events (all)", ["events", SESSION]),
            ("events --json (all)", ["--json", "events", SESSION]),
            ("replay --at 100", ["replay", SESSION, "--at", "100"]),
            ("replay --at 1", ["replay", SESSION, "--at", "1"]),
            (f"replay --at {events // 2}", ["replay", SESSION, "--at", str(events // 2)]),
            (f"replay --at {mid} (mid-span)", ["replay", SESSION, "--at", str(mid)]),
            (f"--read-only replay --at {mid}", ["--read-only", "replay", SESSION, "--at", str(mid)]),
            (f"--json replay --at {mid}", ["--json", "replay", SESSION, "--at", str(mid)]),
            (f"replay --at {events - 1}", ["replay", SESSION, "--at", str(events - 1)]),
            (f"replay --at {events}", ["replay", SESSION, "--at", str(events)]),
            (f"replay --at {events} --diff-from 100", ["replay", SESSION, "--at", str(events), "--diff-from", "100"]),
            ("export", ["export", SESSION]),
        ]
        rows = []
        failed = 0
        for name, argv in cases:
            seconds, cpu, mib, code = measure([*base, "--db", str(db), *argv])
            failed += code != 0
            rows.append((name, f"{seconds:.2f}", f"{cpu:.2f}", f"{mib:.0f}", "ok" if code == 0 else f"exit {code}"))
        with tempfile.TemporaryDirectory(prefix="hitl-bench-import-") as work:
            export = Path(work) / "session.jsonl"
            with open(export, "wb") as fh:
                subprocess.run([*base, "--db", str(db), "export", SESSION], check=True, stdout=fh)
            target = Path(work) / "copy.sqlite"
            src, dst = sqlite3.connect(db), sqlite3.connect(target)  # a consistent copy, -wal included
            src.backup(dst)
            src.close()
            dst.close()
            size = export.stat().st_size / 2**20
            argv = ["--db", str(target), "import", str(export), "--as", "bench-import", "--reason", "bench"]
            seconds, cpu, mib, code = measure([*base, *argv])
            failed += code != 0
            result = "ok" if code == 0 else f"exit {code}"
            rows.append((f"import ({size:.0f} MB file)", f"{seconds:.2f}", f"{cpu:.2f}", f"{mib:.0f}", result))
        ckpt = checkpoint_report(db)
        print(f"\nread commands on {SESSION}: {events:,} events; {ckpt}\n")
        header = ("command", "seconds", "cpu s", "peak MiB", "result")
        print_table(header, rows)
        return 1 if failed else 0
    finally:
        shutil.rmtree(cache, ignore_errors=True)
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
