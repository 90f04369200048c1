"""What opening a PostgreSQL store costs: the console pays it before its first
paint, every CLI command before its first line."""

from __future__ import annotations

from typing import Any

import pytest

from engine.errors import StoreError
from engine.store.postgres import SCHEMA_VERSION, PostgresStore
from tests.contract.builders import pg_fresh_url

from .test_postgres_batch import round_trips, sent  # noqa: F401 -- fixtures


async def test_the_schema_check_of_an_existing_store_is_one_round_trip(round_trips: Any) -> None:  # noqa: F811
    async with PostgresStore.open(pg_fresh_url(), max_size=1) as store:
        assert await store.schema_version() == SCHEMA_VERSION
        assert await round_trips(store.schema_version) == 1


async def test_opening_an_existing_store_read_only_sends_three_messages(sent: list[int]) -> None:  # noqa: F811
    """The connection's startup, then the schema check's prepare and its execution."""
    url = pg_fresh_url()
    await (await PostgresStore.open(url)).close()
    before = sent[0]
    store = await PostgresStore.open(url, read_only=True, min_size=1)
    try:
        assert sent[0] - before == 3
    finally:
        await store.close()


async def test_a_schema_with_someone_elses_sessions_table_is_refused_untouched() -> None:
    url = pg_fresh_url()
    async with PostgresStore.open(url) as store:  # creates the schema; then make it someone else's
        assert store._pool is not None
        async with store._pool.acquire() as conn:
            # every table of the store's schema (later migrations add more), then a foreign one
            tables = await conn.fetch("SELECT tablename FROM pg_tables WHERE schemaname = current_schema()")
            assert "sessions" in {t["tablename"] for t in tables}
            for t in tables:
                await conn.execute(f'DROP TABLE IF EXISTS "{t["tablename"]}" CASCADE')
            await conn.execute("CREATE TABLE sessions (id int PRIMARY KEY, note text)")
    for read_only in (False, True):
        with pytest.raises(StoreError, match="has a 'sessions' table that is not a hitl-console store's"):
            await PostgresStore.open(url, read_only=read_only)
