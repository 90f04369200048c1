"""engine.store.tail.follow: every event once, in order -- woken by LISTEN/NOTIFY
on PostgreSQL (the fallback timer set beyond the deadline proves it), by its
timer elsewhere; and after the listener reconnects, nothing is missed."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from engine.store.base import SessionStore
from engine.store.tail import follow
from tests.contract.builders import open_store, user_msg


async def _tail(store: SessionStore, n: int, **kw: float) -> list[int]:
    seqs: list[int] = []
    async for stored in follow(store, "s1", **kw):
        seqs.append(stored.seq)
        if len(seqs) == n:
            break
    return seqs


async def _write(store: SessionStore, n: int) -> None:
    for k in range(n):
        await store.append_event("s1", user_msg("i1", f"m{k}"))
        if k % 7 == 0:
            await asyncio.sleep(0.01)


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
async def test_follow_yields_every_event_once_in_order(kind: str, tmp_path: Path) -> None:
    writer = await open_store(kind, tmp_path)
    await writer.create_session("app", "u", "s1")
    await writer.append_event("s1", user_msg("i1", "before"))
    from tests.contract.builders import location

    reader = await open_store(kind, tmp_path, path=location(writer), read_only=True)
    try:
        # PostgreSQL: the fallback poll never fires within the test, only notifications wake it
        tail = asyncio.ensure_future(asyncio.wait_for(_tail(reader, 41, interval=0.05, fallback=3600), 60))
        await asyncio.sleep(0.1)
        await _write(writer, 40)
        assert await tail == list(range(1, 42))
    finally:
        await reader.close()
        await writer.close()


async def test_hitl_events_tail_on_postgres_prints_new_events(tmp_path: Path) -> None:
    """The CLI's --tail follows a PostgreSQL store through notifications."""
    import os
    import sys

    writer = await open_store("postgres", tmp_path)
    await writer.create_session("app", "u", "s1")
    from tests.contract.builders import location

    url = location(writer)
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "console.cli",
        "--db",
        url,
        "events",
        "s1",
        "--tail",
        "--interval",
        "3600",
        stdout=asyncio.subprocess.PIPE,
        env=env,
    )
    try:
        assert proc.stdout is not None
        await asyncio.sleep(0.5)
        await _write(writer, 5)
        lines = [await asyncio.wait_for(proc.stdout.readline(), 60) for _ in range(5)]
        assert [int(line.split()[0]) for line in lines] == [1, 2, 3, 4, 5]
    finally:
        proc.terminate()  # the child we started
        await proc.wait()
        await writer.close()
