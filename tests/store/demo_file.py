"""The demo store as one SQLite file: built with the pinned clock, its WAL folded
into the main file (``wal_checkpoint(TRUNCATE)``) so a test may copy or compare the
file alone."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

from sample_sessions.demo import FIXTURE_EPOCH, build_demo_db


def demo_file(path: Path, long_iterations: int) -> Path:
    """The demo (no bulk sessions) built at ``path``, WAL checkpointed."""
    asyncio.run(build_demo_db(path, epoch=FIXTURE_EPOCH, long_iterations=long_iterations, sessions=0))
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    return path
