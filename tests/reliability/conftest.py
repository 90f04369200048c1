"""Shared fixtures for the reliability suite: the demo store (built once per run,
copied per test), the ``hitl`` CLI runner, and a logical dump of a SQLite file
for "nothing was written" checks."""

from __future__ import annotations

import asyncio
import shutil
import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from console.cli import cli
from sample_sessions.demo import FIXTURE_EPOCH, build_demo_db

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def demo_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("reliability-demo") / "demo.sqlite"
    asyncio.run(build_demo_db(path, epoch=FIXTURE_EPOCH, long_iterations=3, sessions=0))
    return path


@pytest.fixture
def db(demo_template: Path, tmp_path: Path) -> Path:
    """A private copy of the demo store."""
    target = tmp_path / "demo.sqlite"
    shutil.copy(demo_template, target)
    return target


Hitl = Callable[..., Result]


@pytest.fixture
def hitl(db: Path, monkeypatch: pytest.MonkeyPatch) -> Hitl:
    """``hitl(*args)`` against the copied store (``db_path=`` for another one)."""
    monkeypatch.setenv("USER", "tester")
    runner = CliRunner()

    def invoke(*args: str, input: str | bytes | None = None, db_path: Path | None = None) -> Result:
        return runner.invoke(cli, ["--db", str(db_path or db), *args], input=input, catch_exceptions=True)

    return invoke


def logical_dump(path: Path) -> list[str]:
    """Every row of every table of a SQLite file, as SQL text: equal dumps mean
    equal contents (whatever WAL checkpoints did to the file's bytes)."""
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return list(conn.iterdump())
    finally:
        conn.close()
