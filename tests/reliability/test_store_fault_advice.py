"""Store faults say what is wrong and what to do (issue 42.5), never a bare
"not a usable database" nor a misleading empty list:

* garbage written into the middle of the file: it is damaged, which part
  SQLite's check found, restore it, export what is still readable first;
* an empty (0-byte) file with another store's -wal beside it: refused before
  SQLite reads (it would drop that -wal and show an empty store), naming the
  side files, nothing changed on disk;
* a sound file with another store's -wal/-shm beside it: the side files are at
  fault (the file alone checks out): move them away.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import sqlite3
from pathlib import Path

import pytest

from engine.store.sqlite import SQLiteStore

from .conftest import Hitl


def _other_store_side_files(tmp_path: Path) -> tuple[Path, Path]:
    """The -wal and -shm of another store, with a commit in the -wal."""
    other = tmp_path / "other.sqlite"

    async def make() -> None:
        store = await SQLiteStore.open(other)
        await store.create_session("app", "u", "from-the-other-store")
        await store.close()

    asyncio.run(make())
    conn = sqlite3.connect(other)
    conn.execute("PRAGMA wal_autocheckpoint=0")
    conn.execute("UPDATE sessions SET user_id = 'carol'")
    conn.commit()
    wal, shm = tmp_path / "stray-wal", tmp_path / "stray-shm"
    shutil.copy(f"{other}-wal", wal)
    shutil.copy(f"{other}-shm", shm)
    conn.close()
    return wal, shm


def _error(result: object) -> str:
    out = getattr(result, "output", "")
    assert getattr(result, "exit_code", 0) == 1 and "Traceback" not in out, out
    lines = [line for line in out.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), out
    return lines[0]


def test_garbage_mid_file_says_damaged_and_what_to_do(hitl: Hitl, db: Path) -> None:
    with open(db, "r+b") as fh:
        fh.seek(10 * 4096 + 100)
        fh.write(bytes(range(256)) * 12)
    line = _error(hitl("inbox"))
    assert f"{db} is damaged" in line and "Page 11" in line, line
    assert "Restore it from a backup" in line and "hitl export SESSION" in line, line
    assert "-wal" not in line  # this reader's own empty side files are not blamed


def test_an_empty_file_beside_another_stores_wal_is_refused_untouched(hitl: Hitl, tmp_path: Path) -> None:
    wal, shm = _other_store_side_files(tmp_path)
    target = tmp_path / "store.sqlite"
    target.write_bytes(b"")
    shutil.copy(wal, f"{target}-wal")
    shutil.copy(shm, f"{target}-shm")
    before = {p.name: p.read_bytes() for p in tmp_path.glob("store.sqlite*")}
    for argv in (["sessions"], ["--read-only", "sessions"], ["migrate"], ["show", "s1"]):
        line = _error(hitl(*argv, db_path=target))
        assert "is an empty file (0 bytes) with store.sqlite-wal and store.sqlite-shm beside it" in line, line
        assert "Restore store.sqlite from a backup, or move store.sqlite-wal and store.sqlite-shm away" in line
    assert {p.name: p.read_bytes() for p in tmp_path.glob("store.sqlite*")} == before  # nothing dropped


@pytest.mark.parametrize("read_only", [False, True])
def test_another_stores_side_files_beside_a_sound_file_are_named(
    hitl: Hitl, db: Path, tmp_path: Path, read_only: bool
) -> None:
    wal, shm = _other_store_side_files(tmp_path)
    shutil.copy(wal, f"{db}-wal")
    shutil.copy(shm, f"{db}-shm")
    line = _error(hitl(*(["--read-only"] if read_only else []), "sessions"))
    assert f"{db.name}-wal and {db.name}-shm beside it" in line and "the file alone is a sound store" in line, line
    assert f"move {db.name}-wal and {db.name}-shm away" in line, line
    os.remove(f"{db}-wal")
    os.remove(f"{db}-shm")
    assert "refund-completed-1" in hitl("sessions").output  # the file itself was never harmed


@pytest.mark.parametrize("read_only", [False, True])
def test_another_applications_side_files_beside_a_store_are_named_not_the_store(
    hitl: Hitl, db: Path, tmp_path: Path, read_only: bool
) -> None:
    """SQLite reads a foreign -wal as the file's last commits: the store then looks
    like another application's database. The side files are at fault, not the file."""
    other = tmp_path / "other.db"
    conn = sqlite3.connect(other)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA wal_autocheckpoint=0")
    conn.execute("CREATE TABLE t (x)")
    conn.execute("INSERT INTO t VALUES (1)")
    conn.commit()
    shutil.copy(f"{other}-wal", f"{db}-wal")
    shutil.copy(f"{other}-shm", f"{db}-shm")
    conn.close()
    line = _error(hitl(*(["--read-only"] if read_only else []), "sessions"))
    assert "is a SQLite database of another application" not in line, line
    assert f"{db.name}-wal and {db.name}-shm beside it" in line and "the file alone is a sound store" in line, line
    assert f"move {db.name}-wal and {db.name}-shm away" in line, line
    os.remove(f"{db}-wal")
    os.remove(f"{db}-shm")
    assert "refund-completed-1" in hitl("sessions").output  # the file itself was never harmed
