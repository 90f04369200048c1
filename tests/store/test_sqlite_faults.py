"""SQLiteStore under faults: corrupt rows, bad files, locks, old and new
schemas, a writer killed mid-stream, and two processes racing for one answer.

These tests use raw ``sqlite3`` only to damage or inspect files the way the
outside world would; the store itself is always driven through its API.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

import engine.store.sqlite as sqlite_mod
import engine.store.sqlite.schema as sqlite_schema
from engine.errors import CorruptEventError, ReadOnlyError, StoreError
from engine.models import Event, NodeStatus, Session
from engine.store import SQLiteStore
from engine.store.factory import default_db_path
from engine.store.jsonl import ImportFormatError
from engine.store.sqlite import SCHEMA_VERSION

from ..contract.builders import answer, end, interrupt, start, user_msg, waiting_session

REPO = Path(__file__).resolve().parents[2]


async def _store_with_two_sessions(path: Path) -> None:
    async with SQLiteStore.open(path) as store:
        await waiting_session(store, "a", session_id="s1")
        await waiting_session(store, "b", session_id="s2")


def _raw(path: Path) -> sqlite3.Connection:
    return sqlite3.connect(path, isolation_level=None)


def _user_version(path: Path) -> int:
    conn = _raw(path)
    try:
        return conn.execute("PRAGMA user_version").fetchone()[0]
    finally:
        conn.close()


# ---------------------------------------------------------------------- corrupt rows


@pytest.mark.parametrize("garbage", ["{not json", '{"id": "x", "author": 5}', "[]"])
async def test_corrupt_event_row_is_reported_and_other_sessions_load(tmp_path: Path, garbage: str) -> None:
    path = tmp_path / "db.sqlite"
    await _store_with_two_sessions(path)
    conn = _raw(path)
    conn.execute("UPDATE events SET json = ? WHERE session_id = 's1' AND seq = 2", (garbage,))
    conn.close()

    async with SQLiteStore.open(path) as store:
        with pytest.raises(CorruptEventError) as info:
            await store.event_at("s1", 2)
        assert (info.value.session_id, info.value.seq) == ("s1", 2)
        assert "event 2 of session s1 is corrupted" in str(info.value)
        with pytest.raises(CorruptEventError, match="event 2 of session s1"):
            await store.events("s1")
        with pytest.raises(CorruptEventError, match="event 2 of session s1"):
            await store.invocation_events("s1", "inv1")
        try:  # export copies the stored rows as they are: a row that is not JSON is caught there ...
            lines = [line async for line in store.export_session("s1")]
        except CorruptEventError:
            lines = None
        if lines is not None:  # ... one that is JSON but no event reaches the file, and import refuses it by line
            assert garbage.startswith("{") and any(garbage in line for line in lines)
            async with SQLiteStore.open(tmp_path / "other.sqlite") as other:
                with pytest.raises(ImportFormatError, match="line 3"):
                    await other.import_session(lines)
                assert (await other.list_sessions()).items == []
        # What a viewer does instead: the readable events and the list of bad seqs.
        assert [e.seq for e in await store.events("s1", skip_corrupt=True)] == [1, 3, 4]
        assert [e.seq for e in await store.events("s1", skip_corrupt=True, limit=2)] == [1, 3]
        assert [e.seq for e in await store.invocation_events("s1", "inv1", skip_corrupt=True)] == [1, 3, 4]
        assert await store.corrupt_events("s1") == [2]
        assert (await store.event_at("s1", 3)).seq == 3
        # Everything else keeps working.
        assert await store.corrupt_events("s2") == []
        assert len(await store.events("s2")) == 4
        assert {s.id for s in (await store.list_sessions()).items} == {"s1", "s2"}
        assert {r.interrupt_id for r in (await store.open_interrupts()).items} == {"a", "b"}
        assert (await store.get_session("s1")).last_seq == 4
        # And the log stays appendable: derived rows never parse old events.
        stored = await store.append_event("s1", answer("inv1", {"a": 1}))
        assert stored.seq == 5


# ---------------------------------------------------------------------- opening bad files


async def test_missing_file_read_only_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "nothing-here.sqlite"
    with pytest.raises(StoreError, match="no session database at .*nothing-here.sqlite.*--read-only"):
        await SQLiteStore.open(path, read_only=True)
    assert not path.exists()


@pytest.fixture
def make_read_only() -> Iterator[Callable[[Path], None]]:
    """Make a file unwritable even for root (chattr +i), undone after the test."""
    done: list[Path] = []

    def apply(path: Path) -> None:
        if os.geteuid() != 0:
            path.chmod(0o444)
        else:
            result = subprocess.run(["chattr", "+i", str(path)], capture_output=True)
            if result.returncode != 0:
                pytest.skip(f"running as root and chattr +i is not available: {result.stderr.decode().strip()}")
        done.append(path)

    yield apply
    for path in done:
        if os.geteuid() == 0:
            subprocess.run(["chattr", "-i", str(path)], check=False)
        path.chmod(0o644)


async def test_read_only_file_for_a_writer(tmp_path: Path, make_read_only: Callable[[Path], None]) -> None:
    path = tmp_path / "db.sqlite"
    await _store_with_two_sessions(path)
    make_read_only(path)
    with pytest.raises(StoreError, match=r"db\.sqlite is read-only for this user.*--read-only"):
        await SQLiteStore.open(path)
    async with SQLiteStore.open(path, read_only=True) as store:  # browsing still works
        assert {s.id for s in (await store.list_sessions()).items} == {"s1", "s2"}


async def refused_untouched(path: Path, match: str, read_only: bool = False) -> None:
    """Opening ``path`` fails with an error matching ``match``; its bytes are as they were."""
    before = path.read_bytes()
    with pytest.raises(StoreError, match=match):
        await SQLiteStore.open(path, read_only=read_only)
    assert path.read_bytes() == before


@pytest.mark.parametrize("read_only", [False, True])
async def test_not_a_database_is_refused_untouched(tmp_path: Path, read_only: bool) -> None:
    path = tmp_path / "notes.txt"
    path.write_bytes(b"these are my notes, not a database\n" * 200)
    await refused_untouched(path, r"notes\.txt is not a usable SQLite database", read_only=read_only)


async def test_sqlite_file_of_another_application_is_refused_untouched(tmp_path: Path) -> None:
    path = tmp_path / "other.sqlite"
    conn = _raw(path)
    conn.execute("CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT)")
    conn.close()
    await refused_untouched(path, "another application.*customers")


# ---------------------------------------------------------------------- locks


async def test_locked_database_fails_with_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "db.sqlite"
    await _store_with_two_sessions(path)
    holder = _raw(path)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        async with SQLiteStore.open(path, busy_timeout=0.2) as store:
            assert (await store.get_session("s1")).last_seq == 4  # WAL: reads are not blocked
            t0 = time.monotonic()
            with pytest.raises(StoreError, match="locked by another process.*retry") as info:
                await store.append_event("s1", answer("inv1", {"a": 1}))
            assert time.monotonic() - t0 < 3
            assert not isinstance(info.value, ReadOnlyError)
            holder.execute("ROLLBACK")
            assert (await store.append_event("s1", answer("inv1", {"a": 1}))).seq == 5
    finally:
        holder.close()


# ---------------------------------------------------------------------- schema versions


@pytest.mark.parametrize("read_only", [False, True])
async def test_newer_schema_is_refused_and_file_left_unchanged(tmp_path: Path, read_only: bool) -> None:
    path = tmp_path / "db.sqlite"
    await _store_with_two_sessions(path)
    conn = _raw(path)
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    conn.close()
    await refused_untouched(path, f"schema version {SCHEMA_VERSION + 1}, newer.*upgrade hitl-console", read_only=read_only)


async def test_empty_file_is_initialised(tmp_path: Path) -> None:
    path = tmp_path / "empty.sqlite"
    path.touch()
    with pytest.raises(StoreError, match="empty file, not a hitl-console store yet.*command that writes"):
        await SQLiteStore.open(path, read_only=True)
    async with SQLiteStore.open(path) as store:
        await waiting_session(store, "a", session_id="s1")
    assert _user_version(path) == SCHEMA_VERSION


def _downgrade_to_v1(path: Path) -> None:
    """Turn a current file into what schema version 1 wrote: no summary columns
    on sessions and none of their indexes (what migrations 2 and 4 add)."""
    conn = _raw(path)
    indexes = ("sessions_by_updated", "sessions_by_status", "sessions_by_app", "sessions_by_user")
    for index in (*indexes, "sessions_by_oldest_open"):
        conn.execute(f"DROP INDEX {index}")
    for column in ("status", "open_interrupts", "oldest_open_at", "last_event_at", "event_count", "invocation_count"):
        conn.execute(f"ALTER TABLE sessions DROP COLUMN {column}")
    conn.execute("PRAGMA user_version = 1")
    conn.close()


async def test_v1_file_is_upgraded_in_place(tmp_path: Path) -> None:
    path = tmp_path / "db.sqlite"
    async with SQLiteStore.open(path) as store:
        await waiting_session(store, "a", "b", session_id="waits", ts=500.0)
        await store.append_event("waits", answer("inv1", {"a": 1}))
        s = await store.create_session("app", "u", "done")
        for ev in (user_msg("i"), start("i"), end("i", NodeStatus.COMPLETED)):
            await store.append_event(s.id, ev)
        await store.create_session("app", "u", "new")
        s = await store.create_session("app", "u", "two")
        for ev in (user_msg("i"), start("i"), end("i", NodeStatus.FAILED), user_msg("j"), start("j")):
            await store.append_event(s.id, ev)
        expected = (await store.list_sessions(limit=100)).items
    _downgrade_to_v1(path)
    with pytest.raises(StoreError, match="schema version 1, older.*reads never change it.*migrate"):
        await SQLiteStore.open(path, read_only=True)

    async with SQLiteStore.open(path) as store:  # the writer upgrades it
        assert (await store.list_sessions(limit=100)).items == expected
        assert (await store.list_sessions(status="waiting")).items[0].id == "waits"
        assert (await store.append_event("waits", answer("inv1", {"b": 2}))).seq == 6
    assert _user_version(path) == SCHEMA_VERSION
    async with SQLiteStore.open(path, read_only=True) as store:
        (waits,) = (await store.list_sessions(status="waiting")).items  # answers alone do not end the wait
        assert (waits.id, waits.open_interrupts, waits.event_count) == ("waits", 0, 6)


def _tables(path: Path) -> set[str]:
    conn = _raw(path)
    try:
        return {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    finally:
        conn.close()


async def test_adding_a_migration_is_a_list_append(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "db.sqlite"
    await _store_with_two_sessions(path)

    def add_notes(conn: sqlite3.Connection) -> None:
        conn.execute("CREATE TABLE notes (session_id TEXT, text TEXT)")

    monkeypatch.setattr(sqlite_schema, "_MIGRATIONS", [*sqlite_schema._MIGRATIONS, add_notes])
    monkeypatch.setattr(sqlite_schema, "SCHEMA_VERSION", SCHEMA_VERSION + 1)
    async with SQLiteStore.open(path) as store:
        assert len(await store.events("s1")) == 4
    assert _user_version(path) == SCHEMA_VERSION + 1
    assert "notes" in _tables(path)


async def test_a_failing_migration_leaves_the_file_at_its_old_version(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "db.sqlite"
    await _store_with_two_sessions(path)

    def half_done(conn: sqlite3.Connection) -> None:
        conn.execute("CREATE TABLE half (x)")
        raise RuntimeError("disk full, say")

    monkeypatch.setattr(sqlite_schema, "_MIGRATIONS", [*sqlite_schema._MIGRATIONS, half_done])
    monkeypatch.setattr(sqlite_schema, "SCHEMA_VERSION", SCHEMA_VERSION + 1)
    with pytest.raises(StoreError, match=f"to schema version {SCHEMA_VERSION + 1} failed.*disk full.*left at version"):
        await SQLiteStore.open(path)
    assert _user_version(path) == SCHEMA_VERSION
    assert "half" not in _tables(path)


# ---------------------------------------------------------------------- read-only store


async def test_read_only_store_rejects_every_write_and_leaves_file_unchanged(tmp_path: Path) -> None:
    path = tmp_path / "db.sqlite"
    await _store_with_two_sessions(path)
    before = path.read_bytes()
    async with SQLiteStore.open(path, read_only=True) as store:
        lines = [line async for line in store.export_session("s1")]
        writes = [
            store.create_session("app", "u", "new"),
            store.append_event("s1", answer("inv1", {"a": 1})),
            store.put_snapshot("s1", "inv1", 4, {"x": 1}),
            store.import_session(lines, session_id="copy"),
            store.bulk_load([(Session(id="bulk", app_name="a", user_id="u"), [user_msg("i")])]),
        ]
        for coro in writes:
            with pytest.raises(ReadOnlyError, match="read-only; nothing was written"):
                await coro
        assert {r.status for r in await store.lookup_interrupts("s1", ["a"])} == {"open"}
    assert path.read_bytes() == before


# ---------------------------------------------------------------------- processes

KILL_CHILD = """
import asyncio, sys
from engine.models import Content, Event
from engine.store.sqlite import SQLiteStore

async def main():
    store = await SQLiteStore.open(sys.argv[1])
    n = 0
    while True:
        ev = Event(invocation_id="inv", author="user", content=Content.from_text(f"m{n}"), state_delta={"n": n})
        stored = await store.append_event("s1", ev)
        print(stored.seq, ev.id, n, flush=True)
        n += 1

asyncio.run(main())
"""


def _child(script: str, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", script, *args],
        cwd=REPO,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


async def test_writer_killed_mid_stream_loses_no_acknowledged_event(tmp_path: Path) -> None:
    path = tmp_path / "db.sqlite"
    async with SQLiteStore.open(path) as store:
        await store.create_session("app", "u", "s1")
    child = _child(KILL_CHILD, str(path))
    acks: list[tuple[int, str, int]] = []
    try:
        assert child.stdout is not None
        while len(acks) < 300:
            line = child.stdout.readline()
            if not line:
                pytest.fail(f"the writer died early: {child.stderr.read() if child.stderr else ''}")
            seq, eid, n = line.split()
            acks.append((int(seq), eid, int(n)))
        child.send_signal(signal.SIGKILL)
        rest, _ = child.communicate(timeout=30)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    assert child.returncode == -signal.SIGKILL
    for line in rest.splitlines(keepends=True):  # acks printed before the kill landed
        if line.endswith("\n") and len(parts := line.split()) == 3:
            acks.append((int(parts[0]), parts[1], int(parts[2])))

    async with SQLiteStore.open(path) as store:
        assert await store.integrity_check() == []
        session = await store.get_session("s1")
        events = await store.events("s1")
        assert [e.seq for e in events] == list(range(1, session.last_seq + 1))
        assert session.last_seq >= acks[-1][0]
        for seq, eid, _ in acks:
            assert events[seq - 1].event.id == eid
        assert session.state == {"n": session.last_seq - 1}
        (summary,) = (await store.list_sessions()).items
        assert summary.event_count == session.last_seq
        assert (await store.append_event("s1", user_msg("inv"))).seq == session.last_seq + 1


RACE_CHILD = """
import asyncio, os, sys, time
from engine.errors import AlreadyResolvedError
from engine.models import Content, Event
from engine.store.sqlite import SQLiteStore

async def main():
    store = await SQLiteStore.open(sys.argv[1])
    print("ready", flush=True)
    while not os.path.exists(sys.argv[2]):
        time.sleep(0.001)
    ev = Event(invocation_id="inv1", author="user", content=Content.from_responses({"a": sys.argv[3]}))
    try:
        stored = await store.append_event("s1", ev)
        print("ok", stored.seq, ev.id, flush=True)
    except AlreadyResolvedError as e:
        print("already", e.ids, flush=True)
    await store.close()

asyncio.run(main())
"""


async def test_two_processes_answering_one_interrupt_exactly_one_wins(tmp_path: Path) -> None:
    path = tmp_path / "db.sqlite"
    go = tmp_path / "go"
    async with SQLiteStore.open(path) as store:
        await waiting_session(store, "a", session_id="s1")
    children = [_child(RACE_CHILD, str(path), str(go), f"answer-{n}") for n in range(3)]
    try:
        for child in children:
            assert child.stdout is not None
            assert child.stdout.readline().strip() == "ready", child.stderr.read() if child.stderr else ""
        go.touch()
        outputs = [child.communicate(timeout=60)[0].split() for child in children]
    finally:
        for child in children:
            if child.poll() is None:
                child.kill()
                child.wait()
    winners = [out for out in outputs if out[0] == "ok"]
    losers = [out for out in outputs if out[0] == "already"]
    assert len(winners) == 1 and len(losers) == 2, outputs
    _, seq, event_id = winners[0]
    async with SQLiteStore.open(path) as store:
        (row,) = await store.lookup_interrupts("s1", ["a"])
        assert (row.status, row.resolved_by, row.resolved_seq) == ("resolved", event_id, int(seq))
        assert [e.seq for e in await store.events("s1")] == [1, 2, 3, 4, 5]


async def test_two_stores_in_one_process_conflict_on_expected_seq(tmp_path: Path) -> None:
    path = tmp_path / "db.sqlite"
    async with SQLiteStore.open(path) as a, SQLiteStore.open(path) as b:
        await waiting_session(a, "x", session_id="s1")
        seen = (await b.get_session("s1")).last_seq
        await a.append_event("s1", user_msg("inv2"), expected_seq=seen)
        with pytest.raises(sqlite_mod.ConflictError, match="now at event 5, expected 4"):
            await b.append_event("s1", user_msg("inv3"), expected_seq=seen)
        results = await asyncio.gather(
            a.append_event("s1", answer("inv1", {"x": 1})),
            b.append_event("s1", answer("inv1", {"x": 2})),
            return_exceptions=True,
        )
        assert sorted(type(r).__name__ for r in results) == ["AlreadyResolvedError", "StoredEvent"]


# ---------------------------------------------------------------------- opening and plumbing


async def test_default_path_and_directory_creation(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HITL_DB", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert default_db_path() == tmp_path / "home" / ".local" / "share" / "hitl-console" / "hitl.sqlite"
    target = tmp_path / "deep" / "er" / "hitl.sqlite"
    monkeypatch.setenv("HITL_DB", str(target))
    assert default_db_path() == target
    async with SQLiteStore.open() as store:
        assert store.path == target
        await store.create_session("app", "u", "s1")
    assert target.exists()


async def test_open_styles_and_closed_store(tmp_path: Path) -> None:
    path = tmp_path / "db.sqlite"
    store = await SQLiteStore.open(path, synchronous="full")
    async with store:
        await store.create_session("app", "u", "s1")
    with pytest.raises(StoreError, match="is closed"):
        await store.get_session("s1")
    await store.close()  # idempotent
    with pytest.raises(ValueError, match="synchronous"):
        await SQLiteStore.open(path, synchronous="sometimes")
    with pytest.raises(StoreError, match="is a directory"):
        await SQLiteStore.open(tmp_path)


async def test_fallback_without_aiosqlite_internals(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sqlite_mod._AiosqliteDriver, "available", staticmethod(lambda: False))
    async with SQLiteStore.open(tmp_path / "db.sqlite") as store:
        assert isinstance(store._driver, sqlite_mod._ThreadDriver)
        sid = await waiting_session(store, "a")
        results = await asyncio.gather(
            *(store.append_event(sid, answer("inv1", {"a": n})) for n in range(4)), return_exceptions=True
        )
        assert sorted(type(r).__name__ for r in results) == ["AlreadyResolvedError"] * 3 + ["StoredEvent"]
        assert [e.seq for e in await store.events(sid)] == [1, 2, 3, 4, 5]


async def test_bulk_load_writes_through_the_append_path(tmp_path: Path) -> None:
    def sessions() -> Iterator[tuple[Session, list[Event]]]:
        for n in range(7):
            inv = f"inv{n}"
            events = [user_msg(inv), start(inv), interrupt(inv, f"q{n}", ts=100.0 + n), end(inv, NodeStatus.WAITING)]
            yield Session(id=f"s{n}", app_name="app", user_id="u", created_at=50.0), events

    async with SQLiteStore.open(tmp_path / "db.sqlite") as store:
        assert await store.bulk_load(sessions(), batch_size=3) == 28
        page = await store.list_sessions(status="waiting", limit=100)
        assert len(page.items) == 7 and all(s.open_interrupts == 1 and s.created_at == 50.0 for s in page.items)
        inbox = (await store.open_interrupts(limit=3)).items
        assert [r.interrupt_id for r in inbox] == ["q0", "q1", "q2"]
        with pytest.raises(sqlite_mod.ConflictError):
            await store.bulk_load(sessions())
        assert len((await store.list_sessions(limit=100)).items) == 7
