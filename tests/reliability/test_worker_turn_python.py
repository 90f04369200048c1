"""What one worker turn costs the worker process's Python, counted (times are in
``benchmarks/bench_workers.py``): the answers to ``prep -> ask -> after`` are
queued first, then one worker serves them; a turn's cost is the difference
between serving more answers and serving one, so the worker's start and stop
cancel out.

* The worker's loop is not woken by a turn whose last write claimed the next
  request for the slot it leaves (PostgreSQL, a backlog): nothing changed for
  the loop -- the slot is taken again, there is nothing more to claim -- and each
  wake-up is a wait, a timer and a task of the event loop.
* A worker process's turns import nothing: what they use is imported when the
  worker starts, not inside its first turn (a re-drive's check imported the
  console's views, with their replay, for one tuple of statuses: ~15 ms).
* The turn folds each event into its projection once: the first events are
  planned on the turn's own projection (no copy folded separately), and the
  last write's events are the ones its snapshot was computed from (not folded a
  second time once written).
* The start and end records the engine builds are validated once each: their
  ``node_info`` is validated by the event, not built as a ``NodeInfo`` first.
* A workflow waits for its children's ends without ``asyncio.wait`` (two coroutine
  frames and a done and a pending set per wait; a turn waits once per child run).
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from engine.models import Event, NodeInfo
from engine.projection import Projection
from engine.store import open_store
from engine.waker import Waker
from tests.contract.builders import pg_fresh_url
from tests.reliability.test_worker_turn_cost import _queued, _serve


class _Calls:
    """Counts the calls of one function of a class while the test runs (``only``: the
    calls whose arguments it accepts)."""

    def __init__(
        self, monkeypatch: pytest.MonkeyPatch, cls: type, name: str, only: Callable[..., bool] | None = None
    ) -> None:
        self.n = 0
        original = getattr(cls, name)
        counter = self

        def counted(*a: Any, **kw: Any) -> Any:
            counter.n += only is None or only(*a, **kw)
            return original(*a, **kw)

        monkeypatch.setattr(cls, name, counted)


async def _per_turn(store: Any, url: str, calls: _Calls, more: int = 5) -> float:
    """The calls one more queued turn adds (serving ``more`` answers against one)."""
    counts = []
    for n in (1, more):
        await _queued(url, n, f"n{n}-")
        calls.n = 0
        await _serve(store, n)
        counts.append(calls.n)
    return (counts[1] - counts[0]) / (more - 1)


async def backlog_per_turn(counter: Callable[[], _Calls]) -> float:
    """On a new PostgreSQL store whose worker has served its first turns: what one
    more queued turn adds to the count of ``counter()`` (made once warm)."""
    url = pg_fresh_url()
    store = await open_store(url, max_size=2)
    try:
        await _queued(url, 2, "warm")
        await _serve(store, 2)
        return await _per_turn(store, url, counter())
    finally:
        await store.close()


@pytest.mark.postgres
async def test_a_backlog_turn_does_not_wake_the_workers_loop(monkeypatch: pytest.MonkeyPatch) -> None:
    # The wake-ups that say only "a slot is free" (``Waker.poke(news=False)``: a turn
    # ended and left its slot empty), not the loop's waits: a wait can also end at its
    # timeout, which a loaded machine reaches in one run and not the other.
    def freed() -> _Calls:
        return _Calls(monkeypatch, Waker, "poke", only=lambda _waker, *, news=True: not news)

    # Each turn's last write claims the next request for the slot it leaves: only
    # the backlog's last turn wakes the loop to say its slot is free, not every
    # turn (1 per turn on main).
    assert await backlog_per_turn(freed) == 0


async def test_a_worker_turn_folds_each_event_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = str(tmp_path / "folds.sqlite")
    store = await open_store(path)
    try:
        folds = _Calls(monkeypatch, Projection, "apply")
        forks = _Calls(monkeypatch, Projection, "fork")
        per_turn = await _per_turn(store, path, folds, more=3)
        # The invocation read (the snapshot and the answer after it: 2), the turn's
        # first events (the re-drive's user event and the root's start: 2), the node
        # that runs (its start: 1) and the last write (its end and the root's: 2). On
        # main 10: the first events folded into a copy as well, the last ones again
        # once written.
        assert per_turn == 7
        forks.n = 0
        assert await _per_turn(store, path, forks, more=3) == 2  # the turn's own copy, and the last write's (3 on main)
    finally:
        await store.close()


async def test_a_worker_turn_neither_waits_with_asyncio_wait_nor_validates_a_record_twice(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = str(tmp_path / "calls.sqlite")
    store = await open_store(path)
    try:
        calls = {
            "asyncio.wait": _Calls(monkeypatch, asyncio, "wait"),
            "Event": _Calls(monkeypatch, Event, "__init__"),
            "NodeInfo": _Calls(monkeypatch, NodeInfo, "__init__"),
        }
        per_turn = {name: await _per_turn(store, path, counter, more=3) for name, counter in calls.items()}
        # The root workflow's scheduler waited for its child runs' ends with
        # ``asyncio.wait``: 1 per turn on the tree before. The turn's events: the
        # re-drive's user event, the start records of the root and of the node that
        # runs, their end records; on the tree before, each start and end record's
        # NodeInfo was built (validated) first as well: 4 per turn.
        assert per_turn == {"asyncio.wait": 0, "Event": 5, "NodeInfo": 0}
    finally:
        await store.close()


FIRST_TURNS = r"""
import asyncio, json, sys
from engine.store import open_store
from engine.worker import Worker
from tests.reliability.test_worker_turn_cost import APP, SIMPLE

async def main(path):
    store = await open_store(path)
    loaded, results = [], []
    serve = Worker._serve

    async def first(self, *a, **kw):
        if not loaded:
            loaded.append(set(sys.modules))
        return await serve(self, *a, **kw)

    Worker._serve = first
    worker = Worker(store, {APP: SIMPLE}, concurrency=1, heartbeat=600, deadlines=False, on_result=results.append)
    task = asyncio.ensure_future(worker.run())
    for _ in range(3000):
        if len(results) == 2 or task.done():
            break
        await asyncio.sleep(0.01)
    worker.stop()
    await task
    await store.close()
    print(json.dumps({"ran": [r.outcome for r in results], "imported": sorted(set(sys.modules) - loaded[0])}))

asyncio.run(main(sys.argv[1]))
"""
"""A fresh worker process serving two queued answers: the modules imported from its
first turn's start to its exit."""


async def test_a_worker_process_turns_import_nothing(tmp_path: Path) -> None:
    path = str(tmp_path / "first.sqlite")
    await _queued(path, 2, "f")
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")])}
    out = subprocess.run([sys.executable, "-c", FIRST_TURNS, path], capture_output=True, text=True, cwd=root,
                         env=env, timeout=300, check=False)
    assert out.returncode == 0, out.stderr[-2000:]
    got = json.loads(out.stdout.splitlines()[-1])
    assert got["ran"] == ["ran", "ran"]
    # On the tree before: engine.views, engine.replay and engine.markers, inside the first turn.
    assert got["imported"] == []
