"""A demo store built once per test session (fixed clock, short loop), copied per test."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import Result

from sample_sessions.demo import FIXTURE_EPOCH, build_demo_db
from tests.cli_runner import Hitl, db, hitl  # noqa: F401  (fixtures over this suite's demo_template)

LONG_ITERATIONS = 6
BULK = 12


@pytest.fixture(scope="session")
def demo_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("demo") / "demo.sqlite"
    asyncio.run(build_demo_db(path, epoch=FIXTURE_EPOCH, long_iterations=LONG_ITERATIONS, sessions=BULK))
    return path


def ok(result: Result) -> str:
    assert result.exit_code == 0, (
        f"exit {result.exit_code}\nstdout: {result.stdout}\nstderr: {result.stderr}\n{result.exception!r}"
    )
    return result.stdout


def operator_error(result: Result, *needles: str) -> str:
    """Exit 1, one line on stderr containing every needle, no traceback."""
    assert result.exit_code == 1, (
        f"exit {result.exit_code}\nstdout: {result.stdout}\nstderr: {result.stderr}\n{result.exception!r}"
    )
    assert isinstance(result.exception, SystemExit), f"not a clean exit: {result.exception!r}"
    err = result.stderr.strip()
    assert "Traceback" not in result.output
    assert err.startswith("error: ") and "\n" not in err, err
    for needle in needles:
        assert needle in err, f"{needle!r} not in {err!r}"
    return err


def json_lines(text: str) -> list[Any]:
    return [json.loads(line) for line in text.splitlines() if line.strip()]
