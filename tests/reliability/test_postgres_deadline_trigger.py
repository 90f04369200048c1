"""PostgreSQL: the deadline trigger calls its PL/pgSQL function only for an
interrupt that may have a rule. Every other interrupt (most) written by a new
backend would otherwise load and compile the function and plan its INSERT --
server CPU on every cold ``hitl start`` that asks a question. Counted with the
server's own function statistics (``track_functions``), not timed."""

from __future__ import annotations

import asyncio
from typing import Any

import asyncpg

from engine import Content, Runner
from engine.store.deadlines import timers
from engine.store.postgres import SCHEMA_VERSION, PostgresStore
from tests.contract.builders import pg_fresh_url
from tests.engine import deadline_app as app
from tests.engine.test_turn_cost import SIMPLE

_OLD_TRIGGER = """CREATE TRIGGER interrupts_deadline_timers AFTER INSERT OR UPDATE OF raised_seq ON interrupts
    FOR EACH ROW EXECUTE FUNCTION hitl_deadline_timers()"""
"""The trigger as schema version 8 created it (its function called for every row)."""


async def _connect(url: str) -> asyncpg.Connection:
    dsn, schema = url.rsplit("&schema=", 1)
    return await asyncpg.connect(dsn, server_settings={"search_path": schema})


async def _calls(url: str) -> dict[str, int]:
    """The calls of the schema's PL/pgSQL functions, once the server has them: a
    backend reports its counts when it exits, so this waits (bounded) until the
    store's closed connection has reported ``hitl_append_many``'s, which every
    turn calls; the other functions' counts come in the same report."""
    schema = url.rsplit("&schema=", 1)[1]
    conn = await _connect(url)
    try:
        for _ in range(1000):
            rows = await conn.fetch(
                "SELECT funcname, calls FROM pg_stat_user_functions WHERE schemaname = $1", schema
            )
            calls = {r[0]: r[1] for r in rows}
            if calls.get("hitl_append_many"):
                return calls
            await asyncio.sleep(0.01)
        raise AssertionError(f"the server never reported the function calls of schema {schema}")
    finally:
        await conn.close()


async def _turns(url: str, *workflows: tuple[str, Any]) -> None:
    """A fresh run of each workflow to its first interrupt, on a store whose
    connections count their function calls."""
    async with PostgresStore.open(f"{url}&track_functions=pl") as store:
        for sid, (app_name, workflow) in enumerate(workflows):
            async for _ in Runner(app_name, workflow, store).run("u", f"s{sid}", Content.from_text("go")):
                pass


async def test_an_interrupt_without_a_rule_does_not_call_the_deadline_function() -> None:
    url = pg_fresh_url()
    await _turns(url, ("app", SIMPLE))  # raises one interrupt, without a deadline
    calls = await _calls(url)
    assert calls.get("hitl_deadline_timers", 0) == 0, calls


async def test_an_interrupt_with_a_rule_still_gets_its_timers() -> None:
    url = pg_fresh_url()
    await _turns(url, ("app", SIMPLE), (app.APP, app.escalating))
    calls = await _calls(url)
    assert calls.get("hitl_deadline_timers") == 1, calls  # the escalating interrupt's only
    async with PostgresStore.open(url) as store:
        assert [(t.session_id, t.step) for t in await timers(store).listing()] == [("s1", 0), ("s1", 1), ("s1", 2)]


async def test_a_version_8_store_is_upgraded_to_the_conditional_trigger() -> None:
    """A store of schema version 8 (its trigger calling the function for every
    row) is upgraded by a writer: the trigger then skips interrupts without a
    rule, and one with a rule still gets its timers."""
    url = pg_fresh_url()
    async with PostgresStore.open(url):
        pass
    conn = await _connect(url)
    try:
        await conn.execute("DROP TRIGGER interrupts_deadline_timers ON interrupts")
        await conn.execute(_OLD_TRIGGER)
        await conn.execute("UPDATE hitl_schema SET version = 8")
    finally:
        await conn.close()
    async with PostgresStore.open(url) as store:
        assert (store.migrated_from, await store.schema_version()) == (8, SCHEMA_VERSION)
    await _turns(url, ("app", SIMPLE), (app.APP, app.escalating))
    assert (await _calls(url)).get("hitl_deadline_timers") == 1
    async with PostgresStore.open(url) as store:
        assert [t.session_id for t in await timers(store).listing()] == ["s1", "s1", "s1"]
