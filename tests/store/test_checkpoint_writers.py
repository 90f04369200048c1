"""Who writes seek checkpoints (engine/checkpoints.py) and who never does:
a turn end that crossed a multiple of EVERY writes them (a turn that did not
pays not one statement); import and copy rebuild them from the events, never
from the file; reads never write one (``--read-only`` or not); a store from
before the migration is refused by reads with the migrate hint (as any older
store), replays by folding once migrated, and gets checkpoints at its next turn
end that crosses a multiple."""

from __future__ import annotations

import asyncio
import json
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from console.cli import cli
from engine import Content, Runner, checkpoints
from engine.store.copy import copy_store
from engine.store.sqlite import SCHEMA_VERSION, SQLiteStore
from engine.store.sqlite.schema import _MIGRATIONS, _migrate_projection_checkpoints
from tests.engine.test_turn_cost import Traced, chain, drain

from .demo_file import demo_file

EVERY = 10


@pytest.fixture(autouse=True)
def small_spans(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(checkpoints, "EVERY", EVERY)
    monkeypatch.setattr(checkpoints, "BYTES_PER_EVENT", 10**9)  # one every EVERY exactly (not stretched)


def rows(db: Path, session: str | None = None) -> list[tuple[str, int]]:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return conn.execute(
            "SELECT session_id, seq FROM projection_checkpoints"
            + (" WHERE session_id = ?" if session else "")
            + " ORDER BY session_id, seq",
            (session,) if session else (),
        ).fetchall()
    finally:
        conn.close()


def hitl(db: Path, *args: str) -> str:
    result = CliRunner().invoke(cli, ["--db", str(db), *args])
    assert result.exit_code == 0, result.output
    return result.output


async def long_turn(db: Path, k: int) -> tuple[int, int]:
    """A session whose resume runs ``k`` nodes in one turn: (seq before that turn, after)."""
    store = await SQLiteStore.open(db, inline=True)
    try:
        runner = Runner("bench", chain(k), store)
        await drain(runner.run("u", "s", Content.from_text("x")))
        before = (await store.get_session("s")).last_seq
        iid = (await store.open_interrupts(session_id="s", limit=1)).items[0].interrupt_id
        await drain(runner.run("u", "s", Content.from_responses({iid: True})))
        return before, (await store.get_session("s")).last_seq
    finally:
        await store.close()


def test_a_long_turn_writes_the_checkpoints_it_crossed(tmp_path: Path) -> None:
    db = tmp_path / "s.sqlite"
    before, after = asyncio.run(long_turn(db, 20))
    assert before < EVERY < after  # the first turn (the ask) crossed none
    assert rows(db) == [("s", n) for n in range(EVERY, after + 1, EVERY)]


async def test_a_turn_that_crosses_no_multiple_pays_nothing(tmp_path: Path) -> None:
    store = await SQLiteStore.open(tmp_path / "s.sqlite", inline=True)
    try:
        runner = Runner("bench", chain(1), store)
        with Traced(store) as t:
            await drain(runner.run("u", "s", Content.from_text("x")))  # 5 events: 1..5
        assert (await store.get_session("s")).last_seq < EVERY
        assert not t.matching("projection_checkpoints"), t.sql
    finally:
        await store.close()


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return demo_file(tmp_path_factory.mktemp("ckpt") / "demo.sqlite", long_iterations=6)


def replay_json(db: Path, session: str, at: int, *flags: str) -> Any:
    return json.loads(hitl(db, *flags, "--json", "replay", session, "--at", str(at)))


def test_import_rebuilds_them_from_the_events(demo: Path, tmp_path: Path) -> None:
    db = tmp_path / "d.sqlite"
    shutil.copy(demo, db)
    export = tmp_path / "long.jsonl"
    export.write_text(hitl(db, "export", "deploy-long-1"))
    assert "projection_checkpoints" not in export.read_text()  # derived data is not exported
    hitl(db, "import", str(export), "--as", "copy-1", "--reason", "test")
    last = json.loads(hitl(db, "--json", "show", "copy-1"))["session"]["last_seq"]
    assert last > 3 * EVERY
    assert rows(db, "copy-1") == [("copy-1", n) for n in range(EVERY, last + 1, EVERY)]
    for at in (1, EVERY, EVERY + 1, last // 2, last):
        got, want = replay_json(db, "copy-1", at), replay_json(db, "deploy-long-1", at)
        assert got["invocations"] == want["invocations"] and got["open"] == want["open"], at


async def test_copy_rebuilds_them_in_the_target(demo: Path, tmp_path: Path) -> None:
    src = await SQLiteStore.open(demo, read_only=True)
    dst = await SQLiteStore.open(tmp_path / "copy.sqlite")
    try:
        await copy_store(src, dst, source_label="demo", ids=["deploy-long-1"], operator="t")
        last = (await dst.get_session("deploy-long-1")).last_seq
    finally:
        await src.close()
        await dst.close()
    assert rows(tmp_path / "copy.sqlite") == [("deploy-long-1", n) for n in range(EVERY, last + 1, EVERY)]


def strip_checkpoints(db: Path) -> None:
    """Make ``db`` a file of the schema version before the checkpoints' migration."""
    conn = sqlite3.connect(db)
    with conn:
        conn.execute("DROP TABLE projection_checkpoints")
    conn.execute(f"PRAGMA user_version = {_MIGRATIONS.index(_migrate_projection_checkpoints)}")
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()


@pytest.mark.parametrize("flags", [(), ("--read-only",)])
def test_reads_never_write_a_checkpoint(demo: Path, tmp_path: Path, flags: tuple[str, ...]) -> None:
    db = tmp_path / "d.sqlite"
    shutil.copy(demo, db)
    conn = sqlite3.connect(db)
    with conn:
        conn.execute("DELETE FROM projection_checkpoints")  # every one is due
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    before = db.read_bytes()
    last = json.loads(hitl(db, *flags, "--json", "show", "deploy-long-1"))["session"]["last_seq"]
    for at in (1, last // 2, last):
        replay_json(db, "deploy-long-1", at, *flags)
    hitl(db, *flags, "events", "deploy-long-1")
    assert db.read_bytes() == before
    assert rows(db) == []


def test_a_store_from_before_the_migration_replays_then_migrates(demo: Path, tmp_path: Path) -> None:
    db = tmp_path / "old.sqlite"
    shutil.copy(demo, db)
    want = {}
    last = json.loads(hitl(db, "--json", "show", "deploy-long-1"))["session"]["last_seq"]
    for at in (1, EVERY + 1, last // 2, last):
        want[at] = replay_json(db, "deploy-long-1", at)
    strip_checkpoints(db)
    before = db.read_bytes()
    for flags in ((), ("--read-only",)):  # reads never migrate: they say so, in one line
        result = CliRunner().invoke(cli, ["--db", str(db), *flags, "replay", "deploy-long-1", "--at", "2"])
        assert result.exit_code == 1 and "older than this hitl-console" in result.output, result.output
        assert "migrate" in result.output and "Traceback" not in result.output
    assert db.read_bytes() == before  # not migrated by a read
    assert f"-> {SCHEMA_VERSION}" in hitl(db, "migrate")
    assert rows(db) == []  # derived data: not computed by the migration
    for at, frame in want.items():  # no checkpoint: every position folded from event 1
        assert replay_json(db, "deploy-long-1", at) == frame, at
    # The next turn that crosses a multiple catches the session up (a few spans at a time).
    async def turn() -> int:
        async with SQLiteStore.open(db) as store:
            await checkpoints.after_turn(store, "deploy-long-1", 0, last)
            return len(rows(db, "deploy-long-1"))

    written = asyncio.run(turn())
    assert written == min(checkpoints.CATCH_UP_SPANS, last // EVERY)
    for at, frame in want.items():
        assert replay_json(db, "deploy-long-1", at) == frame, at


async def test_a_turn_end_folds_a_bounded_number_of_events(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A session far behind on checkpoints (bulk-loaded, or from before them)
    whose spans are stretched by the checkpoints' size: one turn end folds its
    first span and then at most CATCH_UP_SPANS * EVERY events, not
    CATCH_UP_SPANS stretched spans (a resume of a 100k-event session folded
    ~57k events, tens of seconds)."""
    from engine.models import NodeStatus
    from tests.contract.test_seek_checkpoints import Script

    monkeypatch.setattr(checkpoints, "BYTES_PER_EVENT", 4)  # spans of ~100+ events after the first
    store = await SQLiteStore.open(tmp_path / "s.sqlite", inline=True)
    try:
        s = await store.create_session("app", "u")
        maker = Script()
        events = [ev for _ in range(300) for ev in maker.events(("iter", "i1", NodeStatus.COMPLETED))]
        await store.append_events(s.id, events)
        last = (await store.get_session(s.id)).last_seq
        read = 0
        events_of = store.events

        async def counting(*a: Any, **kw: Any) -> Any:
            nonlocal read
            page = await events_of(*a, **kw)
            read += len(page)
            return page

        monkeypatch.setattr(store, "events", counting)
        await checkpoints.after_turn(store, s.id, 0, last)
        written = rows(tmp_path / "s.sqlite", s.id)
        assert written and written[0] == (s.id, EVERY)  # it did catch up
        assert read <= EVERY + checkpoints.CATCH_UP_SPANS * EVERY, read  # the first span, then the budget
        before = len(written)
        await checkpoints.after_turn(store, s.id, 0, last)  # the next turn end goes on from there
        assert len(rows(tmp_path / "s.sqlite", s.id)) >= before
    finally:
        await store.close()


async def test_a_span_stretched_past_the_budget_is_still_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A checkpoint so large that the next one is due more than the turn end's
    budget (CATCH_UP_SPANS * EVERY events) later: a due turn end still writes it.
    Before, the budget stopped the fold short of it every time: nothing written,
    the same events folded again at each later crossing, for ever."""
    from engine.models import NodeStatus
    from tests.contract.test_seek_checkpoints import Script

    monkeypatch.setattr(checkpoints, "CATCH_UP_SPANS", 1)  # budget: EVERY events
    store = await SQLiteStore.open(tmp_path / "s.sqlite", inline=True)
    try:
        s = await store.create_session("app", "u")
        maker = Script()
        for _ in range(60):
            await store.append_events(s.id, maker.events(("iter", "i1", NodeStatus.COMPLETED)))
        last = (await store.get_session(s.id)).last_seq
        assert await checkpoints.catch_up(store, s.id, spans=1) == 1  # the first one, at EVERY
        first, size = await store.last_projection_checkpoint(s.id)
        monkeypatch.setattr(checkpoints, "BYTES_PER_EVENT", max(1, size // (3 * EVERY)))  # next: ~3 budgets on
        due = first + checkpoints._gap(size)
        assert due - first > checkpoints.CATCH_UP_SPANS * EVERY and due <= last
        await checkpoints.after_turn(store, s.id, first, last)  # crossed multiples of EVERY: due
        assert rows(tmp_path / "s.sqlite", s.id) == [(s.id, first), (s.id, due)]
    finally:
        await store.close()
