"""What the CLI and reliability suites (and the browser's) share: a per-test copy of
a demo store built once, and ``hitl(*args)``, the real CLI run in-process against it.

``db`` and ``hitl`` are fixtures a suite's conftest imports; they copy the
``demo_template`` fixture that conftest defines (each suite builds the demo it needs)."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from console.cli import cli

Hitl = Callable[..., Result]


def copy_of(template: Path, target: Path) -> Path:
    """``template`` copied to ``target``: a test writes to its copy, never to the shared one."""
    shutil.copy(template, target)
    return target


@pytest.fixture
def db(demo_template: Path, tmp_path: Path) -> Path:
    """A private copy of the demo store (tests may write to it)."""
    return copy_of(demo_template, tmp_path / "demo.sqlite")


@pytest.fixture
def hitl(db: Path, monkeypatch: pytest.MonkeyPatch) -> Hitl:
    """``hitl(*args)`` against the copied store as operator ``tester`` (``db_path=``
    for another store; ``input=`` feeds stdin)."""
    monkeypatch.setenv("USER", "tester")
    return hitl_on(db)


def hitl_on(db: Path) -> Hitl:
    """``hitl(*args)``: the CLI run in-process on ``db`` (``db_path=`` for another
    store; ``input=`` feeds stdin), its exit and output in a click ``Result``."""
    runner = CliRunner()

    def invoke(*args: str, input: str | bytes | None = None, db_path: Path | None = None) -> Result:
        return runner.invoke(cli, ["--db", str(db_path or db), *args], input=input, catch_exceptions=True)

    return invoke
