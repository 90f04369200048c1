"""PostgreSQL faults: a lock held by another session, a statement timeout, a
connection dropped mid-transaction, the server restarted between two appends,
serialisation failures retried. Each leaves the log contiguous, nothing
half-written, and says what happened in one clear error when it cannot recover."""

from __future__ import annotations

import asyncio
import logging
import os
import shlex
import subprocess
from collections.abc import AsyncIterator
from typing import Any

import asyncpg
import pytest

from engine.errors import StoreError
from engine.store.postgres import PostgresStore
from tests.contract.builders import pg_fresh_url, user_msg


@pytest.fixture
async def url() -> AsyncIterator[str]:
    u = pg_fresh_url()
    async with PostgresStore.open(u) as store:
        await store.create_session("app", "u", "s1")
        await store.append_event("s1", user_msg("i1", "first"))
    yield u


@pytest.fixture
async def monitor(url: str) -> AsyncIterator[asyncpg.Connection]:
    """A connection outside any transaction: pg_stat_activity is a snapshot per transaction."""
    conn = await _raw(url)
    yield conn
    await conn.close()


async def _raw(url: str) -> asyncpg.Connection:
    dsn, schema = url.rsplit("&schema=", 1)
    return await asyncpg.connect(dsn, server_settings={"search_path": schema})


async def _seqs(store: PostgresStore, sid: str = "s1") -> list[int]:
    return [e.seq for e in await store.events(sid)]


async def test_a_lock_held_by_another_session_fails_after_the_busy_timeout(url: str) -> None:
    blocker = await _raw(url)
    tx = blocker.transaction()
    await tx.start()
    await blocker.execute("SELECT 1 FROM sessions WHERE id = 's1' FOR UPDATE")
    async with PostgresStore.open(url, busy_timeout=0.2) as store:
        with pytest.raises(StoreError, match="locked by another session .waited 0.2s"):
            await store.append_event("s1", user_msg("i1", "blocked"))
        await tx.rollback()
        await blocker.close()
        assert await _seqs(store) == [1]  # nothing of the failed append
        assert (await store.append_event("s1", user_msg("i1", "later"))).seq == 2


async def test_a_statement_timeout_cancels_and_writes_nothing(url: str) -> None:
    blocker = await _raw(url)
    tx = blocker.transaction()
    await tx.start()
    await blocker.execute("SELECT 1 FROM sessions WHERE id = 's1' FOR UPDATE")
    async with PostgresStore.open(url, busy_timeout=30, statement_timeout=0.2) as store:
        with pytest.raises(StoreError, match="cancelled .*statement timeout.*nothing of it was stored"):
            await store.append_event("s1", user_msg("i1", "blocked"))
        await tx.rollback()
        await blocker.close()
        assert await _seqs(store) == [1]
        assert (await store.append_event("s1", user_msg("i1", "later"))).seq == 2


async def _wait_for(predicate: Any, what: str, timeout: float = 20.0) -> Any:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        value = await predicate()
        if value:
            return value
        assert loop.time() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.02)


async def test_a_connection_dropped_mid_transaction_rolls_back_and_the_append_lands_once(
    url: str, monitor: asyncpg.Connection
) -> None:
    blocker = await _raw(url)
    tx = blocker.transaction()
    await tx.start()
    await blocker.execute("SELECT 1 FROM sessions WHERE id = 's1' FOR UPDATE")
    async with PostgresStore.open(url, busy_timeout=30) as store:
        append = asyncio.ensure_future(store.append_event("s1", user_msg("i1", "in flight")))

        async def victim() -> int | None:
            return await monitor.fetchval(
                "SELECT pid FROM pg_stat_activity WHERE query LIKE '%SELECT hitl_append%' AND wait_event_type = 'Lock'"
            )

        pid = await _wait_for(victim, "the append to wait on the lock")
        assert await monitor.fetchval("SELECT pg_terminate_backend($1)", pid)
        # The server rolled the append's transaction back; the store notices the
        # lost connection, finds its event was not stored and redoes it -- once.
        await _wait_for(lambda: _retried(store), "the store to notice the dropped connection")
        await tx.rollback()
        stored = await asyncio.wait_for(append, 30)
        await blocker.close()
        assert stored.seq == 2
        events = await store.events("s1")
        assert [e.seq for e in events] == [1, 2]
        assert [e.event.content.text for e in events if e.event.content] == ["first", "in flight"]


async def test_a_turns_first_and_last_writes_dropped_mid_transaction_land_once(
    url: str, monitor: asyncpg.Connection
) -> None:
    """acquire_and_append and append_and_release (one statement each) after a
    dropped connection: rolled back by the server, redone once by the store,
    with their lease taken and released as if nothing had happened."""
    async with PostgresStore.open(url, busy_timeout=30) as store:
        for query, call in (
            (
                "%, hitl_acquire_append(%",
                lambda: store.acquire_and_append("s1", "i1", [user_msg("i1", "first write")], owner="me", ttl=60),
            ),
            (
                "%SELECT hitl_append_release%",
                lambda: store.append_and_release(
                    "s1", "i1", [user_msg("i1", "last write")], owner="me", snapshot=(3, {"k": 3})
                ),
            ),
        ):
            blocker = await _raw(url)
            tx = blocker.transaction()
            await tx.start()
            await blocker.execute("SELECT 1 FROM sessions WHERE id = 's1' FOR UPDATE")
            store.retries = 0
            write = asyncio.ensure_future(call())

            async def victim(query: str = query) -> int | None:
                return await monitor.fetchval(
                    "SELECT pid FROM pg_stat_activity WHERE query LIKE $1 AND wait_event_type = 'Lock'", query
                )

            pid = await _wait_for(victim, f"{query} to wait on the lock")
            assert await monitor.fetchval("SELECT pg_terminate_backend($1)", pid)
            await _wait_for(lambda: _retried(store), "the store to notice the dropped connection")
            await tx.rollback()
            await blocker.close()
            await asyncio.wait_for(write, 30)
        events = await store.events("s1")
        assert [e.seq for e in events] == [1, 2, 3]
        assert [e.event.content.text for e in events if e.event.content] == ["first", "first write", "last write"]
        assert await store.get_lease("s1", "i1") is None
        assert await store.get_snapshot("s1", "i1") == (3, {"k": 3})


async def test_a_turns_first_write_that_committed_before_the_connection_broke_is_not_redone(
    url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The reply lost, not the write: the store finds the first event stored, and
    returns the lease and state it wrote instead of writing them again."""
    from engine.store.postgres import ConnectionLostError

    async with PostgresStore.open(url) as store:
        run = store._run
        broken = [True]

        async def lose_the_reply(fn: Any, **kw: Any) -> Any:
            result = await run(fn, **kw)
            if broken[0] and kw.get("reconnect") is False:
                broken[0] = False
                raise ConnectionLostError("the reply was lost")
            return result

        monkeypatch.setattr(store, "_run", lose_the_reply)
        lease, written, state = await store.acquire_and_append(
            "s1", "i1", [user_msg("i1", "once", state_delta={"x": 1})], owner="me", ttl=60
        )
        assert not broken[0]
        assert [w.seq for w in written] == [2] and await _seqs(store) == [1, 2]
        assert lease == await store.get_lease("s1", "i1") and lease.owner == "me"
        assert state == {"x": 1}
        broken[0] = True
        [last] = await store.append_and_release("s1", "i1", [user_msg("i1", "end")], owner="me")
        assert not broken[0]
        assert last.seq == 3 and await _seqs(store) == [1, 2, 3]
        assert await store.get_lease("s1", "i1") is None


async def _retried(store: PostgresStore) -> bool:
    return store.retries > 0


def _pg_ctl(*args: str) -> None:
    ctl = os.environ.get("HITL_TEST_PG_CTL")
    if not ctl:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail("CI=true but HITL_TEST_PG_CTL is unset: run the tests via scripts/test")
        pytest.skip("restarting the server needs HITL_TEST_PG_CTL (set by scripts/services/postgres.sh)")
    # No pipes: the restarted server would inherit them and never close them.
    subprocess.run(
        [*shlex.split(ctl), *args], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=120
    )


async def test_the_server_restarted_between_two_appends(url: str) -> None:
    async with PostgresStore.open(url, min_size=2) as store:
        assert (await store.append_event("s1", user_msg("i1", "before"))).seq == 2
        seen: list[tuple[str | None, int | None]] = []
        listener = await store.notifications(lambda s, q: seen.append((s, q)))
        await asyncio.to_thread(_pg_ctl, "restart", "-m", "fast", "-w", "-t", "60")
        # Every pooled connection died with the old server: the next append
        # reconnects and lands; the listener reconnects and says so (None, None).
        assert (await store.append_event("s1", user_msg("i1", "after"))).seq == 3
        assert await _seqs(store) == [1, 2, 3]

        async def reconnected() -> bool:
            return (None, None) in seen

        await _wait_for(reconnected, "the listener to reconnect")
        assert (await store.append_event("s1", user_msg("i1", "notified"))).seq == 4

        async def notified() -> bool:
            return ("s1", 4) in seen

        await _wait_for(notified, "the notification of seq 4")
        await listener.close()


async def test_a_server_down_for_seconds_is_waited_for_and_said_once(
    url: str, caplog: pytest.LogCaptureFixture
) -> None:
    """A unit of work that finds the server gone waits for it (a restart or a
    failover takes seconds on a busy machine; five quick tries, 0.75 s, failed a
    ``hitl resume`` under load), says so once past two seconds, and lands when it
    is back; past ``reconnect_for`` it fails with the one-line error."""
    caplog.set_level(logging.WARNING, logger="engine.store.postgres.core")
    async with PostgresStore.open(url) as store, PostgresStore.open(url) as brief:
        brief.reconnect_for = 0.3
        assert (await store.append_event("s1", user_msg("i1", "before"))).seq == 2
        assert (await brief.append_event("s1", user_msg("i1", "brief"))).seq == 3
        await asyncio.to_thread(_pg_ctl, "stop", "-m", "fast", "-w", "-t", "60")
        try:
            with pytest.raises(StoreError, match="lost the connection to .*check that the server runs, then retry"):
                await brief.append_event("s1", user_msg("i1", "given up"))
            append = asyncio.ensure_future(store.append_event("s1", user_msg("i1", "while down")))

            async def said() -> bool:
                return "reconnecting (for up to" in caplog.text

            await _wait_for(said, "the store to say it is reconnecting")
            assert store.retries > 5  # past the five tries that were all it had
        finally:
            await asyncio.to_thread(_pg_ctl, "restart", "-w", "-t", "60")  # restart: with the options it had
        assert (await asyncio.wait_for(append, 60)).seq == 4
        assert await _seqs(store) == [1, 2, 3, 4]  # the given-up append stored nothing
    lost = [r.getMessage() for r in caplog.records if "lost" in r.getMessage()]
    assert len(lost) == 2, lost  # said once while waiting, once when restored
    assert "reconnecting (for up to 2" in lost[0] and "is restored; nothing was lost" in lost[1], lost
    assert "Traceback" not in caplog.text


async def test_serialization_failures_are_retried(url: str, monitor: asyncpg.Connection) -> None:
    # Under SERIALIZABLE, an append whose snapshot predates a concurrent update of
    # its session row fails with SQLSTATE 40001; the store redoes it.
    serializable = url + "&default_transaction_isolation=serializable"
    async with PostgresStore.open(serializable, max_size=6, busy_timeout=60) as store:
        blocker = await _raw(url)
        tx = blocker.transaction()
        await tx.start()
        await blocker.execute("UPDATE sessions SET updated_at = updated_at WHERE id = 's1'")
        appends = [asyncio.ensure_future(store.append_event("s1", user_msg("i1", f"m{k}"))) for k in range(4)]

        async def waiting() -> bool:
            n = await monitor.fetchval(
                "SELECT count(*) FROM pg_stat_activity WHERE query LIKE '%SELECT hitl_append%'"
                " AND wait_event_type = 'Lock'"
            )
            return n == 4

        await _wait_for(waiting, "four appends waiting on the session row")
        await tx.commit()
        await blocker.close()
        stored = await asyncio.wait_for(asyncio.gather(*appends), 60)
        assert sorted(s.seq for s in stored) == [2, 3, 4, 5]
        assert await _seqs(store) == [1, 2, 3, 4, 5]
        assert store.retries >= 1
