"""PostgreSQL's streaming import: the events of an export are COPYed chunk by
chunk while the next chunk is parsed, all in one transaction. These tests make
the chunks tiny so that every file spans many of them, and check that the
result is the batch path's, that a bad line in a late chunk (or a truncated
file) leaves nothing behind, and that nobody sees a half-imported session."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from engine.errors import ConflictError, SessionNotFoundError
from engine.store.jsonl import ImportFormatError
from engine.store.postgres import PostgresStore
from engine.store.postgres import bulk as pg_bulk
from tests.reliability import test_postgres_batch as batch_tests

from .pg import copy_demo, pg_dump

pytestmark = pytest.mark.usefixtures("small_chunks")


@pytest.fixture
def small_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pg_bulk, "_IMPORT_CHUNK", 2)


async def _demo(template: Path) -> tuple[str, str, list[str]]:
    """A schema holding the demo store, its longest session and that session's export."""
    url = await copy_demo(template)
    async with PostgresStore.open(url, read_only=True) as store:
        longest = max((await store.list_sessions(limit=1000)).items, key=lambda s: s.event_count)
        assert longest.event_count >= 8, longest  # spans several chunks of 2
        return url, longest.id, [line async for line in store.export_session(longest.id)]


async def test_a_chunked_import_writes_what_appending_one_by_one_writes(demo_template: Path) -> None:
    await batch_tests.test_import_writes_exactly_what_appending_one_by_one_writes(demo_template)


@pytest.mark.parametrize("where", ["bad line in a late chunk", "truncated file"])
async def test_a_bad_file_found_late_writes_nothing_and_the_store_stays_usable(where: str, demo_template: Path) -> None:
    url, sid, lines = await _demo(demo_template)
    n = len(lines) - 1
    async with PostgresStore.open(url) as store:
        bad = list(lines)
        if where == "truncated file":
            bad = bad[:-1]  # the header's count is checked after the last line
        else:
            bad[n - 1] = bad[n - 1].replace(f'{{"seq":{n - 1},', f'{{"seq":{n + 5},')
            assert bad[n - 1] != lines[n - 1]
        before = await pg_dump(url)
        with pytest.raises(ImportFormatError):
            await store.import_session(bad, session_id="copy")
        assert await pg_dump(url) == before
        copied = await store.import_session(lines, session_id="copy")
        assert copied.last_seq == n
        assert [e.event.id for e in await store.events("copy")] == [e.event.id for e in await store.events(sid)]


async def test_an_existing_session_is_a_conflict_and_is_left_as_it_was(demo_template: Path) -> None:
    url, _sid, lines = await _demo(demo_template)
    async with PostgresStore.open(url) as store:
        before = await pg_dump(url)
        with pytest.raises(ConflictError, match="already exists"):
            await store.import_session(lines)
        assert await pg_dump(url) == before


async def test_nobody_sees_a_session_whose_import_is_still_running(demo_template: Path) -> None:
    """The import is held after its first chunks were written: another store (a
    reader on another connection) sees no session, no events and no inbox entry
    until it commits."""
    url, sid, lines = await _demo(demo_template)
    n = len(lines) - 1
    reached, go = threading.Event(), threading.Event()
    async with PostgresStore.open(url) as store, PostgresStore.open(url, read_only=True) as reader:
        before = {r.interrupt_id for r in (await reader.open_interrupts(limit=1000)).items}

        def held() -> Iterator[str]:
            for k, line in enumerate(lines):
                if k == 7:  # 3 chunks parsed, at least 2 COPYed
                    reached.set()
                    assert go.wait(60)
                yield line

        task = asyncio.ensure_future(store.import_session(held(), session_id="copy"))
        try:
            assert await asyncio.to_thread(reached.wait, 60)
            with pytest.raises(SessionNotFoundError):
                await reader.get_session("copy")
            assert "copy" not in {s.id for s in (await reader.list_sessions(limit=1000)).items}
            assert {r.interrupt_id for r in (await reader.open_interrupts(limit=1000)).items} == before
        finally:
            go.set()
        copied = await task
        assert copied.last_seq == n
        assert (await reader.get_session("copy")).last_seq == n
