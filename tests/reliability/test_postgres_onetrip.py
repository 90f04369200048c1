"""The turn's statements on PostgreSQL carry their values as SQL literals (one
round trip on a new connection, no prepare): every value must reach the server
exactly as given, whatever it holds, and none may change the statement."""

from __future__ import annotations

import types
from typing import Any

import asyncpg
import pytest

from engine import Runner
from engine.errors import StoreError
from engine.models import Content, Event
from engine.store.postgres import PostgresStore, onetrip
from tests.contract.builders import pg_fresh_url, pg_url
from tests.engine.test_turn_cost import SIMPLE
from tests.reliability.pg import count_sent

NASTY = [
    "",
    "plain",
    "it's",
    "''",
    "\\",
    "\\'",
    "back\\slash at the end\\",
    "'); DROP TABLE sessions; --",
    "\\'); DROP TABLE sessions; --",
    "$1 $2 $$ $fn$",
    "\\N",
    "tab\there, newline\nthere, return\r, \b\f\v",
    "E'x'",
    "unicode: é ✓ 🙂 \u2028",
    "{\"json\": [1, \"two\"]}",
    "a,b",
    "{a,b}",
    "NULL",
]


@pytest.fixture
async def conn() -> Any:
    c = await asyncpg.connect(pg_url())
    try:
        yield c
    finally:
        await c.close()


@pytest.mark.parametrize("conforming", ["on", "off"])
async def test_every_value_reaches_the_server_exactly_whatever_it_holds(conn: Any, conforming: str) -> None:
    # A server (or a role) with standard_conforming_strings off reads backslashes
    # in '' strings as escapes: the E'' literals must mean the same there.
    await conn.execute(f"SET standard_conforming_strings = {conforming}")
    # Each value in a statement of its own: a connection's first use of a statement
    # carries literals (its second would bind parameters).
    for i, s in enumerate(NASTY):
        row = await onetrip.fetchrow(
            conn,
            "SELECT $1::text, cardinality($2::text[]), ($2::text[])[1], ($2::text[])[2] IS NULL, $3::text IS NULL"
            f" /* {i} */",
            (s, [s, None], None),
            "titbb",
        )
        assert row == (s, 2, s, True, True), s
    for x in (0.1, 1e300, -2.5e-300, 1796524993.3717165, 3.0, float("inf"), float("-inf")):
        sql = f"SELECT $1::float8, $2::bigint /* {x} */"
        assert await onetrip.fetchrow(conn, sql, (x, 2**62), "fi") == (x, 2**62)
    assert await onetrip.fetch(conn, "SELECT 1 WHERE false", (), "i") == []
    assert await onetrip.fetch(conn, "SELECT ''::text UNION ALL SELECT NULL", (), "t") == [("",), (None,)]


async def test_a_statements_second_use_on_a_connection_binds_its_values_and_returns_the_same(conn: Any) -> None:
    sql = "SELECT $1::text, $2::float8, $3::bigint, cardinality($4::text[]), $5::text IS NULL"
    args = ("it's \\ 'x'", 1796524993.3717165, 7, ["a", None], None)
    first = await onetrip.fetch(conn, sql, args, "tfiib")
    assert await onetrip.fetch(conn, sql, args, "tfiib") == first == [(args[0], args[1], 7, 2, True)]
    # prepared on the server now, the first use was not
    assert await conn.fetchval("SELECT count(*) FROM pg_prepared_statements WHERE statement = $1", sql) == 1


async def test_a_nul_character_is_refused_before_anything_is_sent(conn: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    sent = count_sent(monkeypatch)
    with pytest.raises(StoreError, match="NUL"):
        await onetrip.fetch(conn, "SELECT $1::text", ("a\x00'); DROP TABLE x; --",), "t")
    assert sent[0] == 0


async def test_a_turn_stores_and_reads_back_any_text_exactly() -> None:
    url = pg_fresh_url()
    for i, text in enumerate(NASTY):
        # a new store each time: the turn's statements are a new connection's first (literals)
        async with PostgresStore.open(url) as store:
            runner = Runner("app", SIMPLE, store)
            sid = f"s{i}-{text}"
            async for _ in runner.run("u", sid, Content.from_text(text + "!")):  # a message is never empty
                pass
            iid = (await store.open_interrupts(session_id=sid, limit=1)).items[0].interrupt_id
        async with PostgresStore.open(url) as store:
            runner = Runner("app", SIMPLE, store)
            async for _ in runner.run("u", sid, Content.from_responses({iid: text})):
                pass
            session = await store.get_session(sid)
            assert session.id == sid
            events = await store.events(sid)
            assert events[0].event.content is not None and events[0].event.content.text == text + "!"
            answers = [e.event.content for e in events if e.event.author == "user"]
            assert answers[-1] is not None and answers[-1].parts[0].function_response is not None
            assert answers[-1].parts[0].function_response.response == text
            assert [i.status for i in await store.list_invocations(sid)] == ["completed"]
    async with PostgresStore.open(url) as store:
        with pytest.raises(StoreError):  # refused before sending (literals) or by the server (bound): nothing written
            ev = Event(invocation_id="x", author="u", content=Content.from_text("a"))
            await store.append_event("s0-", ev, lease_owner="a\x00b")
        assert await store.list_leases("s0-") == []


async def test_a_double_reads_back_exactly_when_the_database_default_rounds_it(
    conn: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # extra_float_digits = 0 (a server's, a database's or a role's default) prints
    # a double with 15 digits; the store's connections ask for all of them. The clock
    # is fixed to a time that needs 17 digits: the wall clock's sometimes needs fewer.
    import engine.store.postgres.writes as writes

    monkeypatch.setattr(writes, "time", types.SimpleNamespace(time=lambda: 1796535057.7583812))
    url = pg_fresh_url()
    db = await conn.fetchval("SELECT current_database()")
    await conn.execute(f'ALTER DATABASE "{db}" SET extra_float_digits = 0')
    try:
        async with PostgresStore.open(url) as store:
            created = await store.create_session("app", "u", "s", state={"x": 1})
        async with PostgresStore.open(url) as store:  # a new connection: get_session's first use, as text
            again = await store.get_session("s")
        assert (again.created_at, again.updated_at) == (created.created_at, created.updated_at)
        assert repr(created.created_at) != f"{created.created_at:.15g}"  # it has more digits than 15
    finally:
        await conn.execute(f'ALTER DATABASE "{db}" RESET extra_float_digits')
