"""A PostgreSQL store behind a connection pooler that refuses session settings at
a connection's start (PgBouncer: "unsupported startup parameter"). The pooler is
played here by refusing those settings before asyncpg connects (PgBouncer itself
is no test dependency; benchmarks/bench_pg_cold.py --pooler runs the real one):
the store connects again with what a pooler takes and gives every new connection
the rest as SET statements -- on its first read where that read carries them --
so the URL's schema, the read-only mode and the lock timeout hold as they do
when connected directly."""

from __future__ import annotations

import asyncio
from typing import Any

import asyncpg
import pytest

from engine import Runner
from engine.errors import ReadOnlyError, StoreError
from engine.models import Content
from engine.store.postgres import SCHEMA_VERSION, PostgresStore, pooler
from tests.contract.builders import pg_fresh_url, user_msg
from tests.engine.test_turn_cost import SIMPLE

from .test_postgres_batch import sent  # noqa: F401 -- fixture
from .test_postgres_deferred_check import _set_version, _waiting, cold_resume_trips


@pytest.fixture
def refused(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Connections refuse every setting a pooler would not take; the names refused, in order."""
    real = asyncpg.create_pool
    seen: list[str] = []

    def like_a_pooler(*args: Any, server_settings: dict[str, str], **kwargs: Any) -> Any:
        extra = sorted(set(server_settings) - pooler.STARTUP)
        if extra:
            seen.append(extra[0])
            raise asyncpg.ProtocolViolationError(f"unsupported startup parameter: {extra[0]}")
        return real(*args, server_settings=server_settings, **kwargs)

    monkeypatch.setattr(asyncpg, "create_pool", like_a_pooler)
    return seen


async def _settings(store: PostgresStore) -> tuple[str, ...]:
    assert store._pool is not None
    async with store._pool.acquire() as conn:
        row = await conn.fetchrow(
            "SELECT current_setting('search_path'), current_setting('lock_timeout'),"
            " current_setting('extra_float_digits'), current_setting('default_transaction_read_only')"
        )
    return tuple(row)


async def test_the_schema_lock_timeout_and_float_digits_hold_behind_a_pooler(refused: list[str]) -> None:
    url = pg_fresh_url()
    schema = url.rsplit("schema=", 1)[1]
    async with PostgresStore.open(url, busy_timeout=2.5) as store:  # a new store: created in its schema
        assert refused == ["extra_float_digits"]
        assert store._session_sets
        async for _ in Runner("app", SIMPLE, store).run("u", "s", Content.from_text("go")):
            pass
        assert await _settings(store) == (schema, "2500ms", "3", "off")
        assert await store.schema_version() == SCHEMA_VERSION
    refused.clear()
    async with PostgresStore.open(url, read_only=True) as reader:
        assert await _settings(reader) == (schema, "5s", "3", "on")
        assert (await reader.get_session("s")).app_name == "app"
        with pytest.raises(ReadOnlyError):  # a write as the connection's first statement: the SETs came first
            await reader.append_event("s", user_msg("i", "no"))
        with pytest.raises(ReadOnlyError):
            await reader.create_session("app", "u", "t")


async def test_a_cold_turn_behind_a_pooler_carries_the_settings_and_the_check_on_its_first_read(
    refused: list[str], sent: list[int]  # noqa: F811
) -> None:
    """No round trip for the settings nor for the schema check: the connection's
    startup (the refused attempt sends nothing here; PgBouncer answers it: one
    more), then the turn's three."""
    opened, turn = await cold_resume_trips(pg_fresh_url(), sent)
    assert (opened, turn) == (1, 3)


async def test_settings_undone_with_a_refused_first_read_are_given_again(refused: list[str]) -> None:
    """A first read that fails rolls back the SET statements in its message: the
    next statement on that connection carries them again. Here the read is
    refused by the schema check (an older store); the writer migrates it, in its
    schema, and the turn goes on there."""
    url = pg_fresh_url()
    schema = url.rsplit("schema=", 1)[1]
    iid = await _waiting(url)
    await _set_version(url, SCHEMA_VERSION - 1)
    async with PostgresStore.open(url, defer_schema_check=True, max_size=1) as store:
        async for _ in Runner("app", SIMPLE, store).run("u", "s", Content.from_responses({iid: True})):
            pass
        assert store.migrated_from == SCHEMA_VERSION - 1
        assert (await _settings(store))[0] == schema
        assert [i.status for i in await store.list_invocations("s")] == ["completed"]


async def test_notifications_arrive_behind_a_pooler(refused: list[str]) -> None:
    url = pg_fresh_url()
    async with PostgresStore.open(url) as store:
        seen: list[tuple[str | None, int | None]] = []
        listener = await store.notifications(lambda s, q: seen.append((s, q)))
        try:
            await store.create_session("app", "u", "s1")
            stored = await store.append_event("s1", user_msg("i1", "hello"))
            for _ in range(200):  # bounded: 10 s
                if ("s1", stored.seq) in seen:
                    break
                await asyncio.sleep(0.05)
            assert ("s1", stored.seq) in seen
        finally:
            await listener.close()


async def test_pooler_session_in_the_url_sends_the_settings_as_sets_from_the_first_connection(
    refused: list[str],
) -> None:
    """No refused first connection to learn it from (over a network, a TCP and
    TLS handshake saved per process)."""
    url = pg_fresh_url() + "&pooler=session"
    schema = url.split("schema=", 1)[1].split("&", 1)[0]
    async with PostgresStore.open(url) as store:
        async for _ in Runner("app", SIMPLE, store).run("u", "s", Content.from_text("go")):
            pass
        assert (await _settings(store))[0] == schema
    assert refused == []
    assert "pooler=session" in store.url  # what messages name is the URL as given (password masked)


@pytest.mark.parametrize("mode", ["transaction", "statement", ""])
async def test_a_pooler_mode_other_than_session_is_refused_with_one_line(mode: str) -> None:
    with pytest.raises(StoreError, match=f"pooler='{mode}' in the store URL: .* session mode only") as e:
        await PostgresStore.open(pg_fresh_url() + f"&pooler={mode}")
    assert "\n" not in str(e.value)
