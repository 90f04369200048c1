"""`hitl` with no subcommand on a fresh machine seeds the embedded default
store with the sample sessions, then opens the console on it."""

from __future__ import annotations

import asyncio
import os
import tempfile
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


def test_reads_never_upgrade_an_older_store_hitl_migrate_does(tmp_path):
    from tests.store.test_sqlite_faults import _downgrade_to_v1

    path = tmp_path / "old.sqlite"
    assert CliRunner().invoke(cli, ["--db", str(path), "demo"]).exit_code == 0
    _downgrade_to_v1(path)
    before = path.read_bytes()
    for args in (["--read-only", "sessions"], ["sessions", "--status", "waiting"], ["show", "refund-waiting-1"]):
        refused = CliRunner().invoke(cli, ["--db", str(path), *args])
        assert refused.exit_code == 1 and "older than this hitl-console" in refused.output, refused.output
        assert "hitl --db" in refused.output and "migrate" in refused.output
        assert path.read_bytes() == before, f"{args} must not migrate"
    migrated = CliRunner().invoke(cli, ["--db", str(path), "migrate"])
    assert migrated.exit_code == 0 and "from schema version 1" in migrated.output, migrated.output
    result = CliRunner().invoke(cli, ["--db", str(path), "sessions", "--status", "waiting"])
    assert result.exit_code == 0, result.output
    assert "refund-waiting-1" in result.output
    again = CliRunner().invoke(cli, ["--db", str(path), "migrate"])
    assert again.exit_code == 0 and "already at schema version" in again.output


def test_hitl_migrate_takes_the_file_by_its_sqlite_url_too(tmp_path):
    from tests.store.test_sqlite_faults import _downgrade_to_v1

    path = tmp_path / "old.sqlite"
    assert CliRunner().invoke(cli, ["--db", str(path), "demo"]).exit_code == 0
    _downgrade_to_v1(path)
    for url in (f"sqlite://{path}", f"sqlite:{os.path.relpath(path)}"):
        migrated = CliRunner().invoke(cli, ["--db", url, "migrate"])
        assert migrated.exit_code == 0, migrated.output
    assert "already at schema version" in migrated.output
    missing = CliRunner().invoke(cli, ["--db", f"sqlite://{tmp_path}/none.sqlite", "migrate"])
    assert missing.exit_code == 1 and f"no session database at {tmp_path}/none.sqlite" in missing.output
    assert not (tmp_path / "none.sqlite").exists()


def test_the_first_run_message_keeps_its_words_at_80_columns(monkeypatch):
    with tempfile.TemporaryDirectory(dir="/tmp") as short_home:  # a path that fits a line, a message that does not
        home = Path(short_home)
        monkeypatch.delenv("HITL_DB", raising=False)
        monkeypatch.setenv("HOME", str(home))
        monkeypatch.setenv("COLUMNS", "80")
        monkeypatch.setattr(console.app, "run_app", lambda path, **kw: None)
        result = CliRunner().invoke(cli, [])
    assert result.exit_code == 0, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    # the terminal would break a longer line mid-word (or mid-path)
    assert all(len(line) <= 80 for line in lines), lines
    words = " ".join(lines).split()
    assert words[:3] == ["first", "run:", "seeding"] and "sample" in words
    assert any(str(home) in line for line in lines)  # the path whole, to copy
