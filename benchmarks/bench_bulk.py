"""Bulk answers (issue 16): keystrokes and time for "approve the 40 refunds
under 50 EUR older than 2 h", one by one versus the inbox's bulk answer.

    python benchmarks/bench_bulk.py            # both console flows + engine timings
    python benchmarks/bench_bulk.py --quick    # 5 refunds one by one instead of 40

Both flows run for real in the console (Textual's Pilot, the store of
tests/bulk_store.py) and every keystroke is counted; the store is checked
afterwards. "One by one" is today's path from the inbox: arrow to the
refund's row, ``e`` (session editor on that id), ``f7`` (select the
template), type the answer, ``ctrl+s`` (confirm), ``ctrl+s`` (submit), ``esc``
(close the outcome), ``esc`` (back to the inbox). The arrow presses are a lower
bound: an operator first has to find the row among the other 58 open
interrupts, and the unfiltered inbox does not say which are under 50 EUR.
Exit code is non-zero only on error.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from console.screens.answer import AnswerScreen  # noqa: E402
from console.screens.answer_dialogs import OutcomeScreen  # noqa: E402
from console.screens.inbox import InboxScreen  # noqa: E402
from engine import bulk  # noqa: E402
from engine.store import MemoryStore  # noqa: E402
from engine.store.sqlite import SQLiteStore  # noqa: E402
from sample_sessions.demo import FIXTURE_EPOCH  # noqa: E402
from tests import bulk_store  # noqa: E402
from tests.console.conftest import make_app, settle  # noqa: E402
from tests.console.test_bulk_answer import Keys  # noqa: E402

ANSWER = '{"approved": true}'


async def until(pilot: Any, predicate: Any) -> None:
    for _ in range(2000):
        if predicate():
            return
        await pilot.pause(0.01)
    raise AssertionError("the console did not get there")


async def one_by_one(n: int) -> tuple[int, float]:
    store = MemoryStore()
    built = await bulk_store.build(store, FIXTURE_EPOCH)
    wanted = [f"finance-{o}" for o in bulk_store.SMALL[:n]]
    app = make_app(store, clock=lambda: built.now, registry=bulk_store.registry())
    t0 = time.perf_counter()
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        keys = Keys(pilot)
        await keys("i")
        inbox = app.screen
        assert isinstance(inbox, InboxScreen)
        for iid in wanted:
            table = inbox.query_one("#inbox-table")
            target = next(i for i, r in enumerate(inbox.rows) if r.interrupt_id == iid)
            step = "down" if target > table.cursor_row else "up"  # type: ignore[attr-defined]
            await keys(*[step] * abs(target - table.cursor_row))  # type: ignore[attr-defined]
            assert inbox.selected is not None and inbox.selected.interrupt_id == iid
            await keys("e")
            assert isinstance(app.screen, AnswerScreen)
            await keys("f7", *ANSWER, "ctrl+s", "ctrl+s")
            await until(pilot, lambda: isinstance(app.screen, OutcomeScreen))
            await keys("escape", "escape")
            assert app.screen is inbox
            await settle(pilot)
    elapsed = time.perf_counter() - t0
    still = {r.interrupt_id for r in (await store.open_interrupts(limit=1000)).items}
    assert not any(i in still for i in wanted), "one by one: not every refund was answered"
    return keys.count, elapsed


async def in_bulk() -> tuple[int, float]:
    store = MemoryStore()
    built = await bulk_store.build(store, FIXTURE_EPOCH)
    app = make_app(store, clock=lambda: built.now, registry=bulk_store.registry())
    t0 = time.perf_counter()
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        keys = Keys(pilot)
        await keys("i", "slash", *bulk_store.FILTER, "enter", "a", "b", *ANSWER, "ctrl+s", "ctrl+s")
        await until(pilot, lambda: getattr(app.screen, "result", None) is not None)
    elapsed = time.perf_counter() - t0
    still = {r.interrupt_id for r in (await store.open_interrupts(limit=1000)).items}
    assert not any(f"finance-{o}" in still for o in bulk_store.SMALL), "bulk: not every refund was answered"
    return keys.count, elapsed


async def engine_rows(tmp: Path) -> list[tuple[str, float]]:
    """select / dry run / submit of the 40 on SQLite, through engine.bulk."""
    rows = []
    async with SQLiteStore.open(tmp / "bulk.sqlite") as store:
        built = await bulk_store.build(store, FIXTURE_EPOCH)
        reg = bulk_store.registry()
        t = time.perf_counter()
        groups = bulk.group(await bulk.select(store, bulk.parse_where(bulk_store.FILTER), now=built.now))
        rows.append(("select the 40 (filter incl. amount<50)", time.perf_counter() - t))
        t = time.perf_counter()
        plan = await bulk.dry_run(store, groups, bulk_store.APPROVE, registry=reg)
        rows.append(("dry run, 40 invocations", time.perf_counter() - t))
        assert plan.count("auto-complete") == 40
        t = time.perf_counter()
        done = await bulk.submit(store, groups, bulk_store.APPROVE, registry=reg, operator="bench")
        rows.append(("submit, 40 invocations (one answer each)", time.perf_counter() - t))
        assert done.ok
    return rows


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    n = 5 if ap.parse_args().quick else 40
    single, _ = asyncio.run(one_by_one(n))
    many, _ = asyncio.run(in_bulk())
    per = single / n
    # (the Pilot's own wall time is left out: it waits for the screen after every key, so it measures the harness)
    print(f"{'approve the 40 refunds under 50 EUR older than 2 h':<58} {'keystrokes':>10}")
    print(f"{f'one by one, measured over {n}':<58} {single:>10}")
    if n != 40:
        print(f"{'one by one, 40 (per refund x 40)':<58} {round(per * 40):>10}")
    print(f"{'bulk: i / FILTER enter a b ANSWER ctrl+s ctrl+s':<58} {many:>10}")
    typed = f"  of which typed: the filter ({len(bulk_store.FILTER)}) and the answer ({len(ANSWER)})"
    print(f"{typed:<58} {len(bulk_store.FILTER) + len(ANSWER):>10}")
    print()
    with tempfile.TemporaryDirectory() as d:
        print(f"{'engine.bulk on SQLite':<58} {'seconds':>10}")
        for name, s in asyncio.run(engine_rows(Path(d))):
            print(f"{name:<58} {s:>10.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
