"""Reads and copies of a long session say how far they got, on stderr, once
they run past a second (issue 42.6); stdout carries the very same bytes.
``$HITL_PROGRESS_AFTER=0`` makes every command "long" here, so the test never
depends on how fast the machine is."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from .conftest import Hitl

SESSION = "deploy-long-1"


def _commands(total: int) -> dict[str, list[str]]:
    return {
        "events": ["events", SESSION],
        "events json": ["--json", "events", SESSION],
        "show all runs": ["show", SESSION, "--all-runs"],
        "replay diff": ["replay", SESSION, "--at", str(total), "--diff-from", "2"],
        "export": ["export", SESSION],
    }


@pytest.fixture
def total(hitl: Hitl) -> int:
    return int(json.loads(hitl("--json", "show", SESSION).stdout)["session"]["last_seq"])


@pytest.mark.parametrize("name", ["events", "events json", "show all runs", "replay diff", "export"])
def test_long_reads_show_progress_on_stderr_only(
    hitl: Hitl, total: int, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    argv = _commands(total)[name]
    monkeypatch.setenv("HITL_PROGRESS_AFTER", "3600")
    quiet = hitl(*argv)
    monkeypatch.setenv("HITL_PROGRESS_AFTER", "0")
    loud = hitl(*argv)
    assert quiet.exit_code == loud.exit_code == 0, loud.output
    assert loud.stdout == quiet.stdout and quiet.stderr == ""  # the data is untouched
    lines = loud.stderr.splitlines()
    assert lines and all(SESSION in line for line in lines), loud.stderr
    assert f"of {total:,} events" in lines[0], lines[0]
    assert "done in" in lines[-1] and f"{total:,}" in lines[-1], loud.stderr


def test_import_shows_progress(hitl: Hitl, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, total: int) -> None:
    export = tmp_path / "s.jsonl"
    export.write_text(hitl("export", SESSION).stdout, encoding="utf-8")
    monkeypatch.setenv("HITL_PROGRESS_AFTER", "0")
    done = hitl("import", str(export), "--as", "copy-1")
    assert done.exit_code == 0, done.output
    assert done.stdout.startswith("imported session copy-1") and f"{total} events" in done.stdout
    lines = done.stderr.splitlines()
    assert lines and "lines" in lines[0] and "done in" in lines[-1] and f"{total + 1:,} lines" in lines[-1], done.stderr
