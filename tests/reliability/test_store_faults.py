"""Store faults seen from the runner and the CLI: a full disk (a real
SQLITE_FULL, from a size limit and, as root, from a tiny tmpfs), a database
locked beyond the timeout, corrupted rows, a newer schema, an upgrade.

``tests/store/test_sqlite_faults.py`` covers the same faults at the store API;
these tests add what the operator sees (one clear line, exit code 1), that
nothing is half-written, and that work continues once the fault is gone.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import sqlite3
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from engine import Content, Runner
from engine.errors import StoreError, StoreFullError
from engine.liveness import invocation_health
from engine.models import NodeStatus
from engine.projection import project
from engine.resume import load_invocation
from engine.store.sqlite import SCHEMA_VERSION, SQLiteStore
from tests.cli.conftest import ok, operator_error

from . import crash_app
from .conftest import Hitl, logical_dump

YES = {"approved": True}


async def check_consistent(store: SQLiteStore, session_id: str) -> None:
    """What must hold after any fault: a sound file, a contiguous log, derived
    rows that agree with the log."""
    assert await store.integrity_check() == []
    session = await store.get_session(session_id)
    events = await store.events(session_id)
    assert [e.seq for e in events] == list(range(1, session.last_seq + 1))
    assert len({e.event.id for e in events}) == len(events)
    proj = project([(e.seq, e.event) for e in events])
    index = {r.interrupt_id for r in (await store.open_interrupts(session_id=session_id, limit=1000)).items}
    assert index == {i.id for i in proj.open_interrupts()}
    (summary,) = [s for s in (await store.list_sessions(limit=1000)).items if s.id == session_id]
    assert (summary.event_count, summary.open_interrupts) == (session.last_seq, len(index))
    for inv in await store.list_invocations(session_id):
        status = proj.invocation_status(inv.invocation_id)
        if status is not None and status.is_final:
            assert inv.status == status.value.lower()
        cached = await load_invocation(store, session_id, inv.invocation_id)
        for run in cached.runs(inv.invocation_id):
            assert proj.get(inv.invocation_id, run.path).status is run.status


async def fill_until_full(store: SQLiteStore, runner: Runner, sid: str) -> tuple[StoreFullError, str | None]:
    """Start invocations with a large order and answer them until the store is
    full; returns the error and the invocation it hit (None: a new one)."""
    order = "order-" + "x" * 6000  # every event of a turn carries it
    for _ in range(10_000):
        inv = None
        try:
            first = None
            async for event in runner.run("u", sid, Content.from_text(order)):
                first = first or event
            assert first is not None
            inv = first.invocation_id
            async for _ in runner.run("u", sid, Content.from_responses({"finance": YES, "risk": YES})):
                pass
        except StoreFullError as exc:
            return exc, inv
        except StoreError as exc:  # e.g. an I/O error on a really full disk
            raise AssertionError(f"expected StoreFullError, got {exc!r}") from exc
    raise AssertionError("the store never filled up")


async def recover(store: SQLiteStore, runner: Runner, sid: str) -> None:
    """Continue every unfinished invocation of the session to its end."""
    for inv in [i.invocation_id for i in await store.list_invocations(sid)]:
        for _ in range(4):
            health = await invocation_health(store, sid, inv)
            if health.interrupted:
                async for _ in runner.run("u", sid, invocation_id=inv, acknowledge_in_doubt=True):
                    pass
            elif health.status is NodeStatus.WAITING:
                proj = await load_invocation(store, sid, inv)
                answers = {i.id: YES for i in proj.open_interrupts(inv)}
                async for _ in runner.run("u", sid, Content.from_responses(answers)):
                    pass
            else:
                break
        assert (await invocation_health(store, sid, inv)).status is NodeStatus.COMPLETED, inv


@pytest.fixture
def effects(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "effects.log"
    monkeypatch.setenv("HITL_CRASH_EFFECTS", str(path))
    return path


async def test_disk_full_from_a_size_limit_is_clear_and_leaves_a_consistent_store(tmp_path: Path, effects: Path) -> None:
    path = tmp_path / "db.sqlite"
    async with SQLiteStore.open(path, inline=True) as store:
        runner = Runner(crash_app.APP, crash_app.workflow, store)
        await store.create_session(crash_app.APP, "u", "s")
        pages = await store._call(lambda c: c.execute("PRAGMA page_count").fetchone()[0])
        await store._call(lambda c: c.execute(f"PRAGMA max_page_count = {pages + 40}").fetchone())
        exc, inv = await fill_until_full(store, runner, "s")
        assert "is full" in str(exc) and "nothing of it was stored" in str(exc) and str(path) in str(exc)
        await check_consistent(store, "s")
        if inv is not None:  # the turn that hit the limit stopped: it shows, and nothing else is wrong
            health = await invocation_health(store, "s", inv)
            assert health.interrupted or health.status in (NodeStatus.WAITING, NodeStatus.COMPLETED), health
        # Space freed: the same store continues, every invocation completes.
        await store._call(lambda c: c.execute("PRAGMA max_page_count = 1073741823").fetchone())
        await recover(store, runner, "s")
        await check_consistent(store, "s")
    effects_seen = crash_app.read_effects(effects)
    assert set(effects_seen.values()) <= {1, 2}  # at most the acknowledged in-doubt node ran twice


@pytest.fixture
def tiny_fs(tmp_path: Path) -> Iterator[Path]:
    """A 2 MiB tmpfs (root only): a real ENOSPC under SQLite."""
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("mounting a tmpfs needs root")
    mnt = tmp_path / "tiny"
    mnt.mkdir()
    result = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(mnt)], capture_output=True)
    if result.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {result.stderr.decode().strip()}")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)


async def test_a_really_full_disk(tiny_fs: Path, effects: Path) -> None:
    path = tiny_fs / "db.sqlite"
    ballast = tiny_fs / "ballast"
    async with SQLiteStore.open(path, inline=True) as store:
        runner = Runner(crash_app.APP, crash_app.workflow, store)
        await store.create_session(crash_app.APP, "u", "s")
        free = shutil.disk_usage(tiny_fs).free
        with open(ballast, "wb") as fh:  # leave ~160 KiB for the database and its WAL
            fh.write(b"\0" * max(free - 160 * 1024, 0))
        exc, _ = await fill_until_full(store, runner, "s")
        assert "is full" in str(exc)
        await check_consistent(store, "s")
        ballast.unlink()  # the operator frees space
        await recover(store, runner, "s")
        await check_consistent(store, "s")


def test_cli_on_a_full_disk_exits_1_and_writes_nothing(hitl: Hitl, db: Path, tmp_path: Path) -> None:
    export = tmp_path / "e.jsonl"
    export.write_text(ok(hitl("export", "refund-completed-1")))
    conn = sqlite3.connect(db, isolation_level=None)
    conn.execute("VACUUM")  # no free pages left: any growth needs a new page
    pages = conn.execute("PRAGMA page_count").fetchone()[0]
    conn.close()
    before = logical_dump(db)
    with _max_pages_on_open(pages):
        # One transaction: refused as a whole.
        err = operator_error(hitl("import", str(export), "--as", "copy", "--operator", "ivan"), "is full")
        assert "nothing of it was stored" in err
        assert logical_dump(db) == before
        # A turn: whatever it wrote before the disk filled up stays consistent and shows how to go on.
        note = "n" * 450
        answers = [f'{i}={{"approved": true, "note": "{note}"}}' for i in ("finance-order-1001", "risk-order-1001")]
        operator_error(hitl("resume", "refund-waiting-1", *answers), "is full")
    shown = ok(hitl("show", "refund-waiting-1"))
    if "interrupted mid-run" in shown:  # the answer landed, the rest did not fit
        inv = json.loads(ok(hitl("--json", "show", "refund-waiting-1")))["invocations"][0]["invocation_id"]
        args = ["redrive", "refund-waiting-1", inv] + (["--ack-in-doubt"] if "IN DOUBT" in shown else [])
        ok(hitl(*args))
    else:  # nothing landed: answer again
        ok(hitl("resume", "refund-waiting-1", *answers))
    assert json.loads(ok(hitl("--json", "show", "refund-waiting-1")))["invocations"][0]["health"]["status"] == "COMPLETED"
    ok(hitl("import", str(export), "--as", "copy", "--operator", "ivan"))  # with room again, it works


class _max_pages_on_open:
    """Make every SQLiteStore the CLI opens start with ``PRAGMA max_page_count = n``."""

    def __init__(self, pages: int) -> None:
        self.pages = pages

    def __enter__(self) -> None:
        import engine.store.sqlite.store as mod

        self._orig = mod._setup
        pages = self.pages

        def setup(conn: sqlite3.Connection, *args: Any) -> None:
            self._orig(conn, *args)
            conn.execute(f"PRAGMA max_page_count = {pages}")

        mod._setup = setup

    def __exit__(self, *exc: object) -> None:
        import engine.store.sqlite.store as mod

        mod._setup = self._orig


# ------------------------------------------------------------------ locks


def test_cli_with_the_database_locked_beyond_the_timeout(hitl: Hitl, db: Path) -> None:
    inv = json.loads(ok(hitl("--json", "show", "refund-waiting-1")))["invocations"][0]["invocation_id"]
    before = logical_dump(db)
    holder = sqlite3.connect(db, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        answer = 'finance-order-1001={"approved": true}'
        operator_error(hitl("--busy-timeout", "0.2", "resume", "refund-waiting-1", answer), "locked by another process")
        operator_error(hitl("--busy-timeout", "0.2", "cancel", "refund-waiting-1", inv, "--reason", "r"), "locked", "retry")
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert logical_dump(db) == before
    ok(hitl("resume", "refund-waiting-1", 'finance-order-1001={"approved": true}'))


async def test_a_turn_that_meets_a_lock_stops_cleanly_and_can_be_continued(tmp_path: Path, effects: Path) -> None:
    path = tmp_path / "db.sqlite"
    async with SQLiteStore.open(path, inline=True, busy_timeout=0.1) as store:
        runner = Runner(crash_app.APP, crash_app.workflow, store)
        first = [e async for e in runner.run("u", "s", Content.from_text("order-1"))]
        inv = first[0].invocation_id

        class LockAfter:
            """The store, but another process grabs the write lock after n appends."""

            def __init__(self, n: int) -> None:
                self.n = n
                self.holder: sqlite3.Connection | None = None

            async def append_event(self, *a: Any, **kw: Any) -> Any:
                stored = await store.append_event(*a, **kw)
                self.n -= 1
                if self.n == 0:
                    self.holder = sqlite3.connect(path, isolation_level=None)
                    self.holder.execute("BEGIN IMMEDIATE")
                return stored

            def __getattr__(self, name: str) -> Any:
                return getattr(store, name)

        locker = LockAfter(3)  # mid-turn: its single appends are the starts of nodes that run user code
        locked_runner = Runner(crash_app.APP, crash_app.workflow, locker, lease_ttl=0.3)  # type: ignore[arg-type]
        with pytest.raises(StoreError, match="locked by another process"):
            async for _ in locked_runner.run("u", "s", Content.from_responses({"finance": YES, "risk": YES})):
                pass
        assert locker.holder is not None
        locker.holder.execute("ROLLBACK")
        locker.holder.close()
        # The lock may also have kept the turn from letting its lease lapse: while its
        # process lives, the invocation shows as running until the lease expires.
        await asyncio.sleep(0.35)
        health = await invocation_health(store, "s", inv)
        assert health.interrupted and not health.live, health
        await check_consistent(store, "s")
        await recover(store, runner, "s")
        await check_consistent(store, "s")


# ------------------------------------------------------------------ corrupted rows


def _raw(db: Path) -> sqlite3.Connection:
    return sqlite3.connect(db, isolation_level=None)


@pytest.mark.parametrize("edit", [
    {"node_info": {"x": 1}},  # an event's keys, a node without its path
    {"node_info": "refund@1"},
    {"timestamp": "yesterday"},
    {"author": 7},
    {"content": [1, 2]},
])
def test_events_names_a_row_of_the_wrong_shape_corrupted(hitl: Hitl, db: Path, edit: dict[str, object]) -> None:
    """``hitl events`` reads clean rows as plain JSON; a row that is JSON with only an
    event's keys but the wrong inner shape is still named corrupted, never printed."""
    conn = _raw(db)
    seq, text = conn.execute(
        "SELECT seq, json FROM events WHERE session_id = 'refund-multi-1' AND kind = 'start' ORDER BY seq LIMIT 1"
    ).fetchone()
    conn.execute("UPDATE events SET json = ? WHERE session_id = 'refund-multi-1' AND seq = ?",
                 (json.dumps({**json.loads(text), **edit}), seq))
    conn.close()
    operator_error(hitl("events", "refund-multi-1"), f"event {seq} of session refund-multi-1 is corrupted")


def test_cli_on_corrupted_rows(hitl: Hitl, db: Path) -> None:
    invs = [i["invocation_id"] for i in json.loads(ok(hitl("--json", "show", "refund-multi-1")))["invocations"]]
    conn = _raw(db)
    # An event of the first invocation no longer parses.
    seq = conn.execute(
        "SELECT min(seq) FROM events WHERE session_id = 'refund-multi-1' AND invocation_id = ? AND kind = 'end'",
        (invs[0],),
    ).fetchone()[0]
    conn.execute("UPDATE events SET json = '{broken' WHERE session_id = 'refund-multi-1' AND seq = ?", (seq,))
    # `show` reads an invocation from its cached snapshot on: drop that cache, so
    # the damaged row is one it has to read.
    conn.execute("DELETE FROM snapshots WHERE session_id = 'refund-multi-1' AND invocation_id = ?", (invs[0],))
    # A cached snapshot of the second is valid JSON of the wrong shape; the session state of another is garbage.
    conn.execute(
        "INSERT OR REPLACE INTO snapshots (session_id, invocation_id, seq, data) VALUES ('refund-multi-1', ?, 9999, '{\"x\": 1}')",
        (invs[1],),
    )
    conn.execute("UPDATE sessions SET state = 'not json' WHERE id = 'deploy-waiting-1'")
    conn.close()
    # (plain `show` reads each invocation from its snapshot; the whole log is read with --all-runs)
    operator_error(hitl("show", "refund-multi-1", "--all-runs"), f"event {seq} of session refund-multi-1 is corrupted")
    operator_error(hitl("events", "refund-multi-1"), "is corrupted")
    operator_error(hitl("show", "deploy-waiting-1"), "is corrupted", "restore")
    ok(hitl("sessions"))  # listings never parse event rows
    ok(hitl("inbox"))
    ok(hitl("show", "refund-waiting-1"))
    # The other invocations of the damaged session still take answers: a resume reads
    # only its invocation's events, and a damaged cache is treated as no cache.
    inbox = json.loads(ok(hitl("--json", "inbox", "--session", "refund-multi-1")))["interrupts"]
    open_ids = [r["interrupt_id"] for r in inbox if r["invocation_id"] == invs[1]]
    assert open_ids
    ok(hitl("resume", "refund-multi-1", f'{open_ids[0]}={{"approved": true}}'))


# ------------------------------------------------------------------ schema versions


def test_cli_on_a_store_from_a_newer_version(hitl: Hitl, db: Path) -> None:
    conn = _raw(db)
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    conn.close()
    before = db.read_bytes()
    for args in (["sessions"], ["--read-only", "show", "refund-waiting-1"], ["resume", "refund-waiting-1", "x=1"]):
        operator_error(hitl(*args), f"schema version {SCHEMA_VERSION + 1}", "upgrade hitl-console")
    assert db.read_bytes() == before


async def test_upgrade_from_schema_2_backfills_the_audit_log(db: Path) -> None:
    async with SQLiteStore.open(db, read_only=True) as store:
        expected = (await store.audit_log(limit=1000)).items
    assert {r.action for r in expected} == {"answer", "redrive", "cancel"}  # the demo's operator writes
    conn = _raw(db)
    for stmt in (
        "DROP TABLE audit",
        "DROP TABLE leases",
        "PRAGMA user_version = 2",
    ):
        conn.execute(stmt)
    conn.close()
    with pytest.raises(StoreError, match="schema version 2, older"):
        await SQLiteStore.open(db, read_only=True)
    async with SQLiteStore.open(db) as store:  # the writer upgrades in place
        assert (await store.audit_log(limit=1000)).items == expected
        assert await store.list_leases("refund-waiting-1") == []
    async with SQLiteStore.open(db) as store:  # idempotent: nothing is added twice
        assert (await store.audit_log(limit=1000)).items == expected

