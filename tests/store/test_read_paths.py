"""Stores that cannot be written can still be read; reads never write; files
that are refused are left exactly as they were, without -wal/-shm companions."""

from __future__ import annotations

import asyncio
import shutil
import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner

from console.cli import cli
from engine.errors import StoreError
from engine.store.sqlite import SCHEMA_VERSION, SQLiteStore

from .demo_file import demo_file


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return demo_file(tmp_path_factory.mktemp("read-paths") / "demo.sqlite", long_iterations=2)


def hitl(db: Path | str, *args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, ["--db", str(db), *args])
    assert "Traceback" not in result.output
    return result.exit_code, result.output


def companions(path: Path) -> list[str]:
    return sorted(p.name for p in path.parent.iterdir() if p.name != path.name and p.name.startswith(path.name))


def test_a_store_whose_shm_cannot_be_created_is_still_readable(template: Path, tmp_path: Path) -> None:
    """What a directory the user cannot write does to SQLite (it cannot create
    the -shm index), reproduced as root too: a directory squats on the name."""
    db = tmp_path / "d.sqlite"
    shutil.copy(template, db)
    (tmp_path / "d.sqlite-shm").mkdir()
    before = db.read_bytes()
    for args in (["sessions"], ["--read-only", "show", "refund-waiting-1"], ["events", "refund-waiting-1"]):
        code, output = hitl(db, *args)
        assert code == 0, output
        assert "refund-waiting-1" in output or "order-1001" in output
    assert db.read_bytes() == before

    async def opened() -> int:
        async with SQLiteStore.open(db, read_only=True) as store:  # the aiosqlite driver too
            return (await store.get_session("refund-waiting-1")).last_seq

    assert asyncio.run(opened()) > 0
    code, output = hitl(db, "cancel", "refund-waiting-1", "x")
    assert code == 1 and output.startswith("error: ") and output.count("\n") == 1, output


@pytest.mark.parametrize("kind", ["foreign", "newer"])
def test_a_refused_file_gets_no_companions(template: Path, tmp_path: Path, kind: str) -> None:
    db = tmp_path / "x.sqlite"
    if kind == "foreign":
        conn = sqlite3.connect(db)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("CREATE TABLE notes (a)")
        conn.close()
        needle = "another application"
    else:
        shutil.copy(template, db)
        conn = sqlite3.connect(db)
        conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
        conn.close()
        needle = "newer"
    assert companions(db) == []
    before = db.read_bytes()
    for args in (["sessions"], ["--read-only", "sessions"], ["cancel", "s", "i"]):
        code, output = hitl(db, *args)
        assert code == 1 and needle in output, output
    assert companions(db) == []
    assert db.read_bytes() == before


@pytest.mark.parametrize("args", [["sessions"], ["--read-only", "sessions"], ["resume", "s", "a=1"], ["demo"]])
def test_non_regular_paths_are_refused(args: list[str]) -> None:
    journal = Path("/dev/null-journal")
    existed = journal.exists()
    code, output = hitl("/dev/null", *args)
    assert code == 1 and "not a regular file" in output, output
    assert journal.exists() == existed


def test_a_zero_byte_file_message_fits_the_command(tmp_path: Path) -> None:
    db = tmp_path / "zero.sqlite"
    db.touch()
    code, output = hitl(db, "sessions")
    assert code == 1 and "empty file" in output and "--read-only" not in output, output
    code, output = hitl(db, "--read-only", "sessions")
    assert code == 1 and "empty file" in output
    assert db.read_bytes() == b"" and companions(db) == []


async def test_the_store_refuses_non_regular_paths_itself() -> None:
    with pytest.raises(StoreError, match="not a regular file"):
        await SQLiteStore.open("/dev/null", read_only=True)
