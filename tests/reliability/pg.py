"""PostgreSQL fixtures for the reliability suites: fresh schemas on the test
server (``$HITL_TEST_PG_URL``, started by scripts/services/postgres.sh) and the
demo store copied into one."""

from __future__ import annotations

import asyncio
import asyncio.selector_events
from pathlib import Path
from typing import Any

import pytest

from engine.store.copy import copy_store
from engine.store.postgres import PostgresStore
from engine.store.sqlite import SQLiteStore
from tests.contract.builders import pg_fresh_url

TABLES = ("sessions", "events", "invocations", "interrupts", "snapshots", "leases", "audit", "hitl_schema")


async def copy_demo(template: Path) -> str:
    """A fresh schema holding a copy of the demo store; returns its URL."""
    url = pg_fresh_url()
    async with SQLiteStore.open(template, read_only=True) as src, PostgresStore.open(url) as dst:
        await copy_store(src, dst, source_label="demo")
    return url


async def pg_dump(url: str) -> dict[str, Any]:
    """Every row of every table, for 'nothing was written' checks."""
    async with PostgresStore.open(url, read_only=True) as store:
        assert store._pool is not None
        async with store._pool.acquire() as conn:
            return {t: sorted(map(tuple, await conn.fetch(f"SELECT * FROM {t}")), key=repr) for t in TABLES}


def run(coro: Any) -> Any:
    return asyncio.run(coro)


def count_sent(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """``sent[0]``: how many messages this process sends over socket transports from
    now on (asyncpg writes once per round trip: a statement and its Sync)."""
    sent = [0]
    transport = asyncio.selector_events._SelectorSocketTransport  # type: ignore[attr-defined]
    write = transport.write

    def counting(self: Any, data: Any) -> None:
        sent[0] += 1
        write(self, data)

    monkeypatch.setattr(transport, "write", counting)
    return sent
