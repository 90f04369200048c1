"""What opening a PostgreSQL store costs: the console pays it before its first
paint, every CLI command before its first line."""

from __future__ import annotations

from typing import Any

import pytest

from engine.errors import SchemaUpgradeNeeded, StoreError
from engine.store.postgres import SCHEMA_VERSION, PostgresStore
from tests.contract.builders import pg_fresh_url

from .test_postgres_batch import round_trips, sent  # noqa: F401 -- fixtures


async def test_the_schema_check_of_an_existing_store_is_one_round_trip(round_trips: Any) -> None:  # noqa: F811
    async with PostgresStore.open(pg_fresh_url(), max_size=1) as store:
        assert await store.schema_version() == SCHEMA_VERSION
        assert await round_trips(store.schema_version) == 1


@pytest.mark.parametrize("read_only", [True, False])
async def test_opening_an_existing_store_sends_two_messages(sent: list[int], read_only: bool) -> None:  # noqa: F811
    """The connection's startup, then the schema check as one simple query (no
    statement to prepare); a writer makes no second connection to create its
    schema when the store is there already."""
    url = pg_fresh_url()
    await (await PostgresStore.open(url)).close()
    before = sent[0]
    store = await PostgresStore.open(url, read_only=read_only, min_size=1)
    try:
        assert sent[0] - before == 2
    finally:
        await store.close()


async def test_an_older_or_newer_schema_still_takes_the_slow_path() -> None:
    """The one-query check only says 'current'; anything else is judged as before."""
    url = pg_fresh_url()

    async def set_version(store: PostgresStore, version: int) -> None:
        assert store._pool is not None
        async with store._pool.acquire() as conn:
            await conn.execute("UPDATE hitl_schema SET version = $1", version)

    async with PostgresStore.open(url) as store:
        await set_version(store, SCHEMA_VERSION + 1)
    with pytest.raises(StoreError, match="newer than this hitl-console's"):
        await PostgresStore.open(url)
    async with PostgresStore.open(pg_fresh_url()) as other:
        await set_version(other, SCHEMA_VERSION - 1)  # the last migration is idempotent: run it again
        with pytest.raises(SchemaUpgradeNeeded):
            await PostgresStore.open(other._url, read_only=True)
    async with PostgresStore.open(other._url) as again:
        assert again.migrated_from == SCHEMA_VERSION - 1
        assert await again.schema_version() == SCHEMA_VERSION


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
