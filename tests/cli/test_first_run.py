"""`hitl` with no subcommand on a fresh machine seeds the embedded default
store with the sample sessions, then opens the console on it."""

from __future__ import annotations

import asyncio
from pathlib import Path

from click.testing import CliRunner

import console.app
from console.cli import cli
from engine.store.sqlite import SQLiteStore


def test_first_run_seeds_the_default_store(tmp_path, monkeypatch):
    monkeypatch.delenv("HITL_DB", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    opened: list[Path] = []
    monkeypatch.setattr(console.app, "run_app", lambda path, **kw: opened.append(Path(path)))
    result = CliRunner().invoke(cli, [])
    assert result.exit_code == 0, result.output
    assert "first run: seeding" in result.output
    (path,) = opened
    assert path.is_relative_to(tmp_path) and path.exists()

    async def count() -> int:
        store = await SQLiteStore.open(path, read_only=True)
        try:
            return len((await store.list_sessions(limit=100)).items)
        finally:
            await store.close()

    assert asyncio.run(count()) >= 10
    # second start: nothing is rebuilt
    result = CliRunner().invoke(cli, [])
    assert result.exit_code == 0 and "seeding" not in result.output


def test_read_command_upgrades_an_older_store_once_but_read_only_never_writes(tmp_path):
    from tests.store.test_sqlite_faults import _downgrade_to_v1

    path = tmp_path / "old.sqlite"
    assert CliRunner().invoke(cli, ["--db", str(path), "demo"]).exit_code == 0
    _downgrade_to_v1(path)
    before = path.read_bytes()
    refused = CliRunner().invoke(cli, ["--db", str(path), "--read-only", "sessions"])
    assert refused.exit_code == 1 and "older than" in refused.output
    assert path.read_bytes() == before, "--read-only must not migrate"
    result = CliRunner().invoke(cli, ["--db", str(path), "sessions", "--status", "waiting"])
    assert result.exit_code == 0, result.output
    assert "upgrading" in result.output and "refund-waiting-1" in result.output
