"""Shared fixtures for the reliability suite: the demo store (built once per run,
copied per test), the ``hitl`` CLI runner, and a logical dump of a SQLite file
for "nothing was written" checks."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from engine import Content, Runner
from sample_sessions.demo import FIXTURE_EPOCH, build_demo_db
from tests.cli_runner import Hitl, db, hitl  # noqa: F401  (fixtures over this suite's demo_template)

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def demo_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("reliability-demo") / "demo.sqlite"
    asyncio.run(build_demo_db(path, epoch=FIXTURE_EPOCH, long_iterations=3, sessions=0))
    return path


async def start_orders(runner: Runner, store: Any, n: int) -> dict[str, str]:
    """``n`` sessions ``s00``, ``s01``... each started with an order (``order-<i>``);
    session -> its invocation."""
    out = {}
    for i in range(n):
        sid = f"s{i:02d}"
        async for _ in runner.run("u", sid, Content.from_text(f"order-{i}")):
            pass
        out[sid] = (await store.list_invocations(sid))[0].invocation_id
    return out


def read_commands(session: str) -> dict[str, list[str]]:
    """The CLI commands (by case name) that read ``session`` back, for the tests
    that check no output shows a secret (each adds its own cases)."""
    return {
        "show": ["show", session],
        "show json": ["--json", "show", session],
        "show all": ["show", session, "--all-runs"],
        "events": ["events", session],
        "events json": ["--json", "events", session],
        "replay": ["replay", session],
        "inbox json": ["--json", "inbox", "--session", session],
        "audit json": ["--json", "audit", "--session", session],
        "sessions json": ["--json", "sessions"],
    }


def logical_dump(path: Path) -> list[str]:
    """Every row of every table of a SQLite file, as SQL text: equal dumps mean
    equal contents (whatever WAL checkpoints did to the file's bytes)."""
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return list(conn.iterdump())
    finally:
        conn.close()
