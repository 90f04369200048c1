"""A disk with no room left, for real and without root: each ``hitl`` runs as
its own process with ``RLIMIT_FSIZE = 0`` (``ulimit -f 0``), so the kernel
refuses to grow any file (EFBIG), exactly what ENOSPC does to SQLite's -wal
and -shm files. (``PRAGMA max_page_count``, SQLITE_FULL proper, is covered in
test_store_faults.py.)

Reads still work (they fall back to the immutable read path, also once an
earlier reader left empty -wal/-shm files); every write exits 1 with the
disk-full line, never "disk I/O error", and the file is byte-identical."""

from __future__ import annotations

import json
import os
import resource
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import logical_dump

HITL = [str(Path(sys.executable).with_name("hitl"))]
if not Path(HITL[0]).exists():  # pragma: no cover -- not installed as a script
    HITL = [sys.executable, "-c", "from console.cli import main; main()"]


def _no_room() -> None:
    resource.setrlimit(resource.RLIMIT_FSIZE, (0, resource.getrlimit(resource.RLIMIT_FSIZE)[1]))


def full(db: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``hitl --db DB ARGS`` in a process that cannot grow any file."""
    env = {**os.environ, "USER": "tester", "HITL_DB": ""}
    return subprocess.run(
        [*HITL, "--db", str(db), *args], capture_output=True, text=True, preexec_fn=_no_room, env=env, timeout=120
    )


@pytest.fixture
def store(db: Path) -> Path:
    conn = sqlite3.connect(db, isolation_level=None)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    for suffix in ("-wal", "-shm"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)
    return db


def test_reads_work_and_writes_say_the_disk_is_full(store: Path, tmp_path: Path) -> None:
    export = tmp_path / "e.jsonl"
    with open(export, "w") as fh:
        subprocess.run([*HITL, "--db", str(store), "export", "refund-completed-1"], stdout=fh, check=True)
    before_bytes = store.read_bytes()
    before = logical_dump(store)

    # Reads, twice each: the first one may leave empty -wal/-shm files behind.
    for _ in range(2):
        shown = full(store, "show", "refund-waiting-1")
        assert shown.returncode == 0, shown.stderr
        assert "session refund-waiting-1" in shown.stdout and "WAITING" in shown.stdout
        listed = full(store, "sessions")
        assert listed.returncode == 0 and "refund-waiting-1" in listed.stdout, listed.stderr
        logged = full(store, "--json", "events", "refund-waiting-1")
        assert logged.returncode == 0, logged.stderr
        assert json.loads(logged.stdout.splitlines()[0])["seq"] == 1

    inv = json.loads(full(store, "--json", "show", "refund-waiting-1").stdout)["invocations"][0]["invocation_id"]
    writes = [
        ("resume", "refund-waiting-1", 'finance-order-1001={"approved": true}'),
        ("cancel", "refund-waiting-1", inv, "--reason", "no room"),
        ("import", str(export), "--as", "copy", "--operator", "ivan"),
    ]
    for argv in writes:
        result = full(store, *argv)
        assert result.returncode == 1, (argv, result.stdout, result.stderr)
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1, (argv, result.stderr)  # one line, no traceback
        assert lines[0].startswith(f"error: the disk holding {store} is full"), (argv, lines[0])
        assert "nothing was written" in lines[0] and "disk I/O error" not in lines[0], lines[0]
    assert store.read_bytes() == before_bytes
    assert logical_dump(store) == before

    # Room again: the same commands work.
    for suffix in ("-wal", "-shm"):
        Path(f"{store}{suffix}").unlink(missing_ok=True)
    ok = subprocess.run([*HITL, "--db", str(store), *writes[0]], capture_output=True, text=True)
    assert ok.returncode == 0, ok.stderr
    assert shutil.disk_usage(store.parent).free > 0
