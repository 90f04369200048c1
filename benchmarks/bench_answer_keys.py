"""The response editor's cost per key: the sample session ``labels-partial-1``
(24 open ids, one enum each), answered from the keyboard as an operator does --
``A`` (select every id), ``e`` (open the editor), then one number key per image
(each choice moves the focus on to the next image).

    python benchmarks/bench_answer_keys.py            # 5 repetitions
    python benchmarks/bench_answer_keys.py --reps 9

Each repetition runs the real ``HitlApp`` headless (Textual's ``run_test``) on a
fresh in-memory copy of the sample sessions. A key's time runs from the press
until the console is quiet again: its workers (the dry run) done and their
messages handled -- what an operator waits for before the screen is right.
Prints one table (medians over the repetitions, and the slowest key seen).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

SESSION = "labels-partial-1"


async def quiet(pilot: Any) -> None:
    """The console's workers done and their messages handled."""
    await pilot.app.workers.wait_for_complete()
    await pilot.pause()


async def one_run() -> dict[str, Any]:
    from console.app import HitlApp
    from console.screens.answer import AnswerScreen
    from console.screens.session import SessionScreen
    from engine.store import MemoryStore
    from sample_sessions.demo import FIXTURE_EPOCH, build_demo

    store = MemoryStore()
    await build_demo(store, epoch=FIXTURE_EPOCH, long_iterations=2)
    app = HitlApp(store, poll_interval=None, refresh_interval=None, cursor_blink=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await quiet(pilot)
        app.open_session(SESSION)
        while not (isinstance(app.screen, SessionScreen) and app.screen.proj is not None):
            await pilot.pause()
        await quiet(pilot)
        t = time.perf_counter()
        await pilot.press("A")
        await quiet(pilot)
        await pilot.press("e")
        while not (isinstance(app.screen, AnswerScreen) and app.screen.editors() and app.screen.focused is not None):
            await pilot.pause()
        usable = time.perf_counter() - t  # the first answer has the focus: keys count from here
        while app.screen.filling:
            await pilot.pause()
        await quiet(pilot)
        await quiet(pilot)
        opened = time.perf_counter() - t
        screen = app.screen
        n = len(screen.editors())
        keys = []
        for i in range(n):
            t = time.perf_counter()
            await pilot.press(str(1 + i % 5))
            await quiet(pilot)
            keys.append(time.perf_counter() - t)
        ready = screen.values() is not None  # every id answered: the submit is possible
    return {"ids": n, "usable": usable, "open": opened, "keys": keys, "ready": ready}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=5)
    args = parser.parse_args()
    os.environ.setdefault("USER", "bench")
    with tempfile.TemporaryDirectory(prefix="bench-answer-") as d:
        os.chdir(d)  # the console's config and history files, if any, stay out of the checkout
        runs = [asyncio.run(one_run()) for _ in range(args.reps)]
    if not all(r["ready"] for r in runs):
        print("error: after one key per id the answers were not all valid", file=sys.stderr)
        return 1
    per_key = [statistics.median(r["keys"]) for r in runs]
    rows = [
        ("select all + open the editor: first answer focused", statistics.median(r["usable"] for r in runs)),
        (f"  ... every editor built ({runs[0]['ids']} ids)", statistics.median(r["open"] for r in runs)),
        ("one choice, key to quiet screen (median)", statistics.median(per_key)),
        ("one choice, slowest key of any run", max(max(r["keys"]) for r in runs)),
        (f"all {runs[0]['ids']} choices", statistics.median(sum(r["keys"]) for r in runs)),
    ]
    print(f"response editor, {SESSION}, {args.reps} runs (medians)")
    for label, seconds in rows:
        print(f"  {label:<48} {seconds * 1e3:9.0f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
