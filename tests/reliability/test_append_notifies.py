"""On PostgreSQL an append statement notifies ``hitl_events`` once, with its last
seq, not once per event (schema version 10): every listener -- the console's
session screen, ``hitl`` followers, the event tail -- re-reads from the last seq
it saw, so it is woken at each commit exactly as before, by one notification
instead of several. A worker's one-node turn commits twice (its first and last
writes): its listeners are woken twice, as before."""

from __future__ import annotations

import asyncio
from typing import Any

import asyncpg
import pytest

from engine import Runner, handoff
from engine.models import Content
from engine.store import open_store
from engine.store.postgres import SCHEMA_VERSION, PostgresStore
from engine.store.postgres.schema import _APPEND_FN, _APPEND_MANY_FN
from tests.contract.builders import pg_fresh_url
from tests.engine.test_turn_cost import SIMPLE
from tests.reliability.test_worker_turn_cost import _serve

APP = "one_node"
pytestmark = pytest.mark.postgres


async def _heard(store: Any, work: Any) -> list[tuple[str | None, int | None]]:
    """The notifications a listener of ``store`` got while ``work()`` ran (all of
    them: they arrive in commit order, and a sentinel committed after it is awaited)."""
    heard: list[tuple[str | None, int | None]] = []
    listener = await store.notifications(lambda s, q: heard.append((s, q)))
    try:
        await work()
        conn = await asyncpg.connect(store._connect_args["dsn"])
        try:
            await conn.execute("""SELECT pg_notify('hitl_events', '{"s": "sentinel", "q": 1}')""")
        finally:
            await conn.close()
        for _ in range(1000):
            if ("sentinel", 1) in heard:
                break
            await asyncio.sleep(0.01)
        assert heard[-1] == ("sentinel", 1)
        return heard[:-1]
    finally:
        await listener.close()


async def _waiting(store: Any, sid: str) -> str:
    """A session waiting on ``ask``; the open interrupt's id."""
    async for _ in Runner(APP, SIMPLE, store).run("u", sid, Content.from_text("x")):
        pass
    [row] = (await store.open_interrupts(session_id=sid, limit=10)).items
    return str(row.interrupt_id)


async def test_a_worker_turn_wakes_each_listener_once_per_write() -> None:
    store = await open_store(pg_fresh_url())
    try:
        iid = await _waiting(store, "s1")
        done = await handoff.queue_answer(store, "s1", {iid: "yes"})
        assert done.error is None, done.error
        before = (await store.get_session("s1")).last_seq
        heard = await _heard(store, lambda: _serve(store, 1))
        last = (await store.get_session("s1")).last_seq
        appended = [q for s, q in heard if s == "s1" and q is not None and q > 0]
        assert last - before >= 4  # the turn appended several events ...
        assert len(appended) == 2  # ... in two commits: its first write and its last, one wake each
        assert appended[0] < appended[1] == last  # each with its commit's last seq
        assert ("s1", -1) in heard  # and the request's end, for followers
    finally:
        await store.close()


async def test_an_in_process_turn_notifies_once_per_append_statement() -> None:
    store = await open_store(pg_fresh_url())
    try:
        heard = await _heard(store, lambda: _waiting(store, "s1"))
        appended = [q for s, q in heard if s == "s1"]
        last = (await store.get_session("s1")).last_seq
        assert appended and appended[-1] == last
        assert len(appended) < last  # not one per event
        assert appended == sorted(set(appended))
    finally:
        await store.close()


async def test_a_version_9_store_is_upgraded_to_one_notification_per_statement() -> None:
    """A store of schema version 9 (``hitl_append`` notifying every event, without
    the new parameter) is upgraded by a writer, and its appends then notify once."""
    url = pg_fresh_url()
    async with PostgresStore.open(url) as store:
        conn = await asyncpg.connect(store._connect_args["dsn"], server_settings=store._connect_args["server_settings"])
    try:
        await conn.execute("DROP FUNCTION hitl_append(text, bigint, text, double precision, text, text, text,"
                           " double precision, text, text, jsonb, text[], text[], text[], text[], text[], boolean,"
                           " text, text, text, text, text, text, boolean)")
        await conn.execute(_APPEND_FN)
        await conn.execute(_APPEND_MANY_FN)
        await conn.execute("UPDATE hitl_schema SET version = 9")
    finally:
        await conn.close()
    store = await open_store(url)
    try:
        assert (store.migrated_from, await store.schema_version()) == (9, SCHEMA_VERSION)
        heard = await _heard(store, lambda: _waiting(store, "s1"))
        appended = [q for s, q in heard if s == "s1"]
        assert appended and len(appended) < (await store.get_session("s1")).last_seq
    finally:
        await store.close()
