"""A PostgreSQL store opened with its schema check deferred (what ``hitl resume``
and ``hitl start`` do): the open sends only the connection's startup, and the
turn's first read carries the check on the server. A store that is not current
-- newer, older, missing, someone else's -- is judged at that read exactly as an
eager open judges it: refused with the same line and left untouched, created,
or migrated and then used."""

from __future__ import annotations

from typing import Any

import pytest

from engine import START, Runner, Workflow
from engine.errors import SchemaUpgradeNeeded, SessionNotFoundError, StoreError
from engine.models import Content
from engine.store.postgres import SCHEMA_VERSION, PostgresStore
from engine.store.postgres.core import _Core
from tests.cli.conftest import operator_error
from tests.contract.builders import pg_fresh_url
from tests.engine.test_turn_cost import SIMPLE, ask

from .test_postgres_batch import sent  # noqa: F401 -- fixture
from .test_postgres_safety import _raw_dump, hitl

ONE_NODE = Workflow("w", [(START, ask)])
"""A fresh run whose one node interrupts (the benchmark's fresh run)."""


async def _waiting(url: str, sid: str = "s") -> str:
    """A store at ``url`` with session ``sid`` waiting at SIMPLE's interrupt; its id."""
    async with PostgresStore.open(url) as store:
        async for _ in Runner("app", SIMPLE, store).run("u", sid, Content.from_text("go")):
            pass
        return (await store.open_interrupts(session_id=sid, limit=1)).items[0].interrupt_id


async def cold_resume_trips(url: str, sent: list[int]) -> tuple[int, int]:  # noqa: F811
    """(messages the open sent, messages the turn sent) of a new store of ``url``
    opened as ``hitl resume`` opens it, answering SIMPLE's interrupt."""
    iid = await _waiting(url)
    before = sent[0]
    async with PostgresStore.open(url, defer_schema_check=True) as store:
        opened = sent[0] - before
        events = [e async for e in Runner("app", SIMPLE, store).run("u", "s", Content.from_responses({iid: True}))]
        turn = sent[0] - before - opened
        assert any(e.node_info and e.node_info.path.endswith("/after@1") for e in events)
    return opened, turn


async def _set_version(url: str, version: int) -> None:
    async with PostgresStore.open(url, migrate=False) as store:
        assert store._pool is not None
        async with store._pool.acquire() as conn:
            await conn.execute("UPDATE hitl_schema SET version = $1", version)


async def test_a_cold_resume_is_three_round_trips_and_a_fresh_run_four_with_the_open(sent: list[int]) -> None:  # noqa: F811
    """Issue 38's budget for the cold first turn of a new process, the open
    included: the connection's startup, then the turn's own round trips -- the
    schema check rides on its first read."""
    url = pg_fresh_url()
    opened, resume = await cold_resume_trips(url, sent)
    assert opened == 1, opened  # the startup message: no schema check of its own
    assert resume == 3, resume  # the interrupts with the invocation (and the check), the first and last write
    for workflow, expected in ((ONE_NODE, 3), (SIMPLE, 4)):
        before = sent[0]
        async with PostgresStore.open(url, defer_schema_check=True) as store:
            async for _ in Runner("app", workflow, store).run("u", f"new-{expected}", Content.from_text("go")):
                pass
            # the session read (with the check), the first write creating it, [prep's end
            # with ask's start,] the last write
            assert sent[0] - before - 1 == expected, (workflow.name, sent[0] - before)
        assert [i.status for i in await _invocations(url, f"new-{expected}")] == ["waiting"]


async def _invocations(url: str, sid: str) -> list[Any]:
    async with PostgresStore.open(url, read_only=True) as store:
        return await store.list_invocations(sid)


async def test_the_check_is_sent_once_then_the_store_runs_unchecked(sent: list[int]) -> None:  # noqa: F811
    url = pg_fresh_url()
    await _waiting(url)
    async with PostgresStore.open(url, defer_schema_check=True, max_size=1) as store:
        with pytest.raises(SessionNotFoundError):  # an answer that says no still checked the schema
            await store.get_session("nobody")
        assert not store._schema_unchecked
        for expected in (2, 1):  # the second use prepares the statement, the third runs it: no check any more
            before = sent[0]
            assert (await store.get_session("s")).app_name == "app"
            assert sent[0] - before == expected


@pytest.mark.parametrize("first", ["get_session", "lookup_interrupts", "answer_reads", "list_sessions"])
async def test_a_newer_schema_is_refused_at_the_first_read_with_the_open_line_and_left_untouched(first: str) -> None:
    """Each read that carries the check, and one that does not (it checks first,
    the slow way), refuses a newer store as an eager open does."""
    url = pg_fresh_url()
    iid = await _waiting(url)
    await _set_version(url, SCHEMA_VERSION + 1)
    before = await _raw_dump(url)
    with pytest.raises(StoreError, match=f"schema version {SCHEMA_VERSION + 1}, newer.*left untouched") as eager:
        await PostgresStore.open(url)
    calls = {
        "get_session": lambda s: s.get_session("s"),
        "lookup_interrupts": lambda s: s.lookup_interrupts("s", [iid]),
        "answer_reads": lambda s: s.answer_reads("s", [iid]),
        "list_sessions": lambda s: s.list_sessions(limit=5),
    }
    for read_only in (False, True):
        async with PostgresStore.open(url, read_only=read_only, defer_schema_check=True) as store:
            with pytest.raises(StoreError) as deferred:
                await calls[first](store)
            assert str(deferred.value) == str(eager.value)
            with pytest.raises(StoreError, match="newer"):  # and again: it stays refused
                await calls[first](store)
    assert await _raw_dump(url) == before


async def test_a_turn_on_a_newer_schema_writes_nothing() -> None:
    url = pg_fresh_url()
    iid = await _waiting(url)
    await _set_version(url, SCHEMA_VERSION + 1)
    before = await _raw_dump(url)
    for content, sid in ((Content.from_responses({iid: True}), "s"), (Content.from_text("go"), "fresh")):
        async with PostgresStore.open(url, defer_schema_check=True) as store:
            with pytest.raises(StoreError, match="newer than this hitl-console's"):
                async for _ in Runner("app", SIMPLE, store).run("u", sid, content):
                    pass
    assert await _raw_dump(url) == before


async def test_an_older_schema_is_migrated_by_the_turn_then_resumed() -> None:
    """A store left at the previous version (its last migration is idempotent: run
    again) and one without the turn's functions (version 2): the first read is
    refused on the server, the writer migrates, and the turn goes on."""
    url = pg_fresh_url()
    iid = await _waiting(url)
    await _set_version(url, SCHEMA_VERSION - 1)
    async with PostgresStore.open(url, read_only=True, defer_schema_check=True) as reader:
        with pytest.raises(SchemaUpgradeNeeded, match=f"schema version {SCHEMA_VERSION - 1}, older"):
            await reader.answer_reads("s", [iid])
    async with PostgresStore.open(url, defer_schema_check=True) as store:
        async for _ in Runner("app", SIMPLE, store).run("u", "s", Content.from_responses({iid: True})):
            pass
        assert store.migrated_from == SCHEMA_VERSION - 1
        assert await store.schema_version() == SCHEMA_VERSION
        assert [i.status for i in await store.list_invocations("s")] == ["completed"]

    url = pg_fresh_url()
    iid = await _waiting(url)
    async with PostgresStore.open(url) as store:
        assert store._pool is not None
        async with store._pool.acquire() as conn:
            await conn.execute("DROP FUNCTION hitl_acquire_append")
            await conn.execute("DROP FUNCTION hitl_append_release")
            await conn.execute("UPDATE hitl_schema SET version = 2")
    async with PostgresStore.open(url, defer_schema_check=True) as store:
        async for _ in Runner("app", SIMPLE, store).run("u", "s", Content.from_responses({iid: True})):
            pass
        assert store.migrated_from == 2
        assert [i.status for i in await store.list_invocations("s")] == ["completed"]


async def test_a_new_store_is_created_by_the_first_turn_and_refused_to_a_reader() -> None:
    url = pg_fresh_url()  # a schema that does not exist yet
    async with PostgresStore.open(url, read_only=True, defer_schema_check=True) as reader:
        with pytest.raises(StoreError, match="has no hitl-console store yet"):
            await reader.get_session("s")
    async with PostgresStore.open(url, defer_schema_check=True) as store:
        async for _ in Runner("app", SIMPLE, store).run("u", "s", Content.from_text("go")):
            pass
        assert store.migrated_from == 0
    assert [i.status for i in await _invocations(url, "s")] == ["waiting"]


async def test_someone_elses_sessions_table_is_refused_at_the_first_read() -> None:
    url = pg_fresh_url()
    async with PostgresStore.open(url) as store:
        assert store._pool is not None
        async with store._pool.acquire() as conn:
            tables = await conn.fetch("SELECT tablename FROM pg_tables WHERE schemaname = current_schema()")
            for t in tables:
                await conn.execute(f'DROP TABLE IF EXISTS "{t["tablename"]}" CASCADE')
            await conn.execute("CREATE TABLE sessions (id int PRIMARY KEY, note text)")
    async with PostgresStore.open(url, defer_schema_check=True) as store:
        with pytest.raises(StoreError, match="has a 'sessions' table that is not a hitl-console store's"):
            await store.get_session("s")


async def test_a_unit_of_work_that_says_it_carries_the_check_and_does_not_is_a_bug() -> None:
    url = pg_fresh_url()
    await _waiting(url)
    async with PostgresStore.open(url, defer_schema_check=True) as store:

        async def prepared_first(conn: Any) -> Any:
            return await conn.fetchval("SELECT 1")

        with pytest.raises(AssertionError, match="did not"):
            await _Core._run(store, prepared_first, carries_check=True)


def test_hitl_resume_and_start_refuse_a_newer_store_with_the_open_line() -> None:
    url = pg_fresh_url()

    async def setup() -> tuple[str, dict[str, Any]]:
        iid = await _waiting(url)
        await _set_version(url, SCHEMA_VERSION + 1)
        return iid, await _raw_dump(url)

    import asyncio

    iid, before = asyncio.run(setup())
    app = ["--app", "app=tests.engine.test_turn_cost:SIMPLE"]
    operator_error(hitl("--db", url, *app, "resume", "s", f"{iid}=true"), f"schema version {SCHEMA_VERSION + 1}",
                   "upgrade hitl-console")
    operator_error(hitl("--db", url, *app, "start", "app", "hello"), f"schema version {SCHEMA_VERSION + 1}",
                   "upgrade hitl-console")
    assert asyncio.run(_raw_dump(url)) == before
