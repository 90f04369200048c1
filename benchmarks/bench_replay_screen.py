"""Replay screen benchmark (issue 7): what one key costs in the console on a
100,000-event session.

    python benchmarks/bench_replay_screen.py           # 100,000 events
    python benchmarks/bench_replay_screen.py --quick   # 20,000 events

The session is the one ``bench_replay.py`` builds (a deploy loop the engine
really ran, one interrupt and one answer per iteration), in a MemoryStore. The
real ``HitlApp`` runs headless on its Replay screen; each row times the
screen's ``seek`` -- the replay move plus every widget update it causes (tree,
details, event panel, state, log cursor, timeline) -- and the paint that
follows (``pilot.pause``). Engine-only numbers are in ``bench_replay.py``.
Prints one table; exits non-zero only on an error.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_replay import build  # noqa: E402

from console.app import HitlApp  # noqa: E402
from console.screens.replay import ReplayScreen, ReplaySource  # noqa: E402
from engine.store import MemoryStore  # noqa: E402


async def run(n: int) -> int:
    t = time.perf_counter()
    events = await build(n)
    build_s = time.perf_counter() - t
    store = MemoryStore()
    await store.create_session("bench", "u", "s")
    for se in events:
        await store.append_event("s", se.event)
    app = HitlApp(store, poll_interval=None, refresh_interval=None, cursor_blink=False, replay=ReplaySource("s"))
    rng = random.Random(7)
    t = time.perf_counter()
    async with app.run_test(size=(120, 35)) as pilot:
        while not (isinstance(app.screen, ReplayScreen) and app.screen.frame is not None):
            await pilot.pause(0.01)
        open_s = time.perf_counter() - t
        screen = app.screen
        assert isinstance(screen, ReplayScreen)
        screen.seek(len(events) // 2)
        await pilot.pause()

        async def timed(move, repeats: int) -> tuple[list[float], list[float]]:
            seek, paint = [], []
            for _ in range(repeats):
                t0 = time.perf_counter()
                move()
                t1 = time.perf_counter()
                await pilot.pause()
                seek.append(t1 - t0)
                paint.append(time.perf_counter() - t0)
            return seek, paint

        rows = {
            "step forward": await timed(lambda: screen.action_step(1), 40),
            "step back": await timed(lambda: screen.action_step(-1), 40),
            "jump to a random position": await timed(lambda: screen.seek(rng.randrange(len(events) + 1)), 40),
            "next operator action": await timed(screen.action_next_action, 30),
            "previous operator action": await timed(screen.action_prev_action, 30),
        }
    print(
        f"session: {len(events):,} events (built in {build_s:.1f} s); replay screen open (app start, read, first frame): "
        f"{open_s * 1e3:.0f} ms"
    )
    print(f"{'operation':<28} {'seek median':>12} {'seek p95':>10} {'+paint median':>14}  target")
    print("-" * 76)
    for name, (seek, paint) in rows.items():
        seek.sort()
        p95 = seek[int(len(seek) * 0.95) - 1]
        print(
            f"{name:<28} {statistics.median(seek) * 1e3:>9.2f} ms {p95 * 1e3:>7.2f} ms "
            f"{statistics.median(paint) * 1e3:>11.2f} ms  < 20 ms"
        )
    return 0


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true")
    sys.exit(asyncio.run(run(20_000 if ap.parse_args().quick else 100_000)))
