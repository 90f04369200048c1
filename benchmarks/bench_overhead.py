"""What tracing costs when it is off: the per-node cost and a cold process's
first turn, counted in instructions (valgrind's callgrind: the same count for
the same code whatever else the machine does), this tree next to another.

    python benchmarks/bench_overhead.py --before /path/to/older/tree [--nodes 300]

For the older tree, e.g. ``git worktree add --detach /tmp/before <commit>``.
Each measurement is a fresh process (``python -c``-style child of this file)
under ``valgrind --tool=callgrind``: a one-node warm-up turn on a MemoryStore
(the cold process: imports, first turn), then, for the per-node row, a turn of
an N-node chain; per node = (with the chain - without) / N. No SDK is
configured: this is the cost of tracing off. Prints one table.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve()
ROOT = HERE.parents[1]


def child(n: int) -> None:
    import asyncio

    from engine import START, Content, Runner, Workflow, node
    from engine.store.memory import MemoryStore

    def chain(k: int) -> Workflow:
        nodes = []
        for i in range(k):

            @node(name=f"n{i}")
            async def f(node_input):  # type: ignore[no-untyped-def]
                return node_input

            nodes.append(f)
        return Workflow("seq", [(START, *nodes)])

    one, big = chain(1), chain(max(n, 1))

    async def main() -> None:
        store = MemoryStore()
        async for _ in Runner("b", one, store).run("u", "warm", Content.from_text("x")):
            pass
        if n:
            async for _ in Runner("b", big, store).run("u", "s", Content.from_text("x")):
                pass

    asyncio.run(main())


def count(tree: Path, n: int) -> int:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    out = subprocess.run(
        ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", sys.executable, str(HERE), "--child", str(n)],
        capture_output=True, text=True, env=env, check=False,
    )
    found = re.search(r"Collected : (\d+)", out.stderr)
    if out.returncode != 0 or not found:
        raise SystemExit(f"error: callgrind run failed:\n{out.stderr[-2000:]}")
    return int(found.group(1))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--before", required=True, type=Path, help="the older tree to compare with")
    ap.add_argument("--nodes", type=int, default=300)
    ns = ap.parse_args()
    if shutil.which("valgrind") is None:
        sys.exit("valgrind is needed (apt-get install valgrind)")
    rows = []
    for label, tree in (("before", ns.before.resolve()), ("this tree", ROOT)):
        print(f"measuring {label} ({tree})", file=sys.stderr, flush=True)
        base, big = count(tree, 0), count(tree, ns.nodes)
        rows.append((label, base, (big - base) / ns.nodes))
    (_, b0, bn), (_, a0, an) = rows
    print(f"{'instructions (callgrind), tracing off':40} {'before':>16} {'this tree':>16} {'change':>8}")
    print(f"{'cold process: imports + first turn':40} {b0:>16,} {a0:>16,} {100 * (a0 - b0) / b0:>+7.1f}%")
    print(f"{'per node (chain of ' + str(ns.nodes) + ')':40} {bn:>16,.0f} {an:>16,.0f} {100 * (an - bn) / bn:>+7.1f}%")
    return 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["--child"]:
        child(int(sys.argv[2]))
        sys.exit(0)
    sys.exit(main())
