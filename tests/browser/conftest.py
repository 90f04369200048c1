"""Fixtures for the served console: a demo store built once, a served copy per test,
and a headless system Chromium driven by Playwright (never a downloaded browser)."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.cli_runner import copy_of

from .served import hitl_bin

CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


@pytest.fixture(scope="session")
def demo_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The demo store, built once through the real Runner with a pinned clock."""
    path = tmp_path_factory.mktemp("demo") / "demo.sqlite"
    subprocess.run([hitl_bin(), "demo", "--db", str(path), "--clock", "1790000000"], check=True,
                   capture_output=True, timeout=300)
    return path


@pytest.fixture
def store(demo_db: Path, tmp_path: Path) -> Path:
    """A fresh copy of the demo store for one test."""
    return copy_of(demo_db, tmp_path / "store.sqlite")


@pytest.fixture(params=["sqlite", "postgres"])
def any_store(request: pytest.FixtureRequest, demo_db: Path, tmp_path: Path) -> Path | str:
    """The demo store on SQLite (a copy) and on PostgreSQL (a fresh schema on
    $HITL_TEST_PG_URL, built by the same ``hitl demo``). Only a representative few
    tests take this (a sign-in over HTTP, an operator's write, a viewer's refusal):
    every other browser test runs on SQLite alone, so CI pays for a few PG runs only."""
    if request.param == "sqlite":
        return request.getfixturevalue("store")
    from tests.contract.builders import pg_fresh_url

    url = pg_fresh_url()
    subprocess.run([hitl_bin(), "demo", "--db", url, "--clock", "1790000000"], check=True,
                   capture_output=True, timeout=300)
    return url


def chromium_path() -> str | None:
    """$HITL_TEST_CHROMIUM (scripts/services/browser.sh sets it) when set, else the system Chromium."""
    given = os.environ.get("HITL_TEST_CHROMIUM")
    if given:
        return given if Path(given).is_file() else None
    return "/usr/bin/chromium" if Path("/usr/bin/chromium").is_file() else shutil.which("chromium")


@pytest.fixture
def browser_page(tmp_path: Path) -> Iterator[Any]:
    """A page in a fresh headless Chromium profile. Missing browser: skipped, but a failure under CI=true."""
    path = chromium_path()
    if path is None:
        message = "no Chromium (apt-get install chromium, or set HITL_TEST_CHROMIUM)"
        if os.environ.get("CI") == "true":
            pytest.fail(message + ": the browser tests must run in CI")
        pytest.skip(message)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        context = pw.chromium.launch_persistent_context(
            str(tmp_path / "chromium-profile"),
            executable_path=path,
            headless=True,
            args=CHROMIUM_FLAGS,
            viewport={"width": 1400, "height": 860},
        )
        try:
            yield context.pages[0] if context.pages else context.new_page()
        finally:
            context.close()


@pytest.fixture
def shots(request: pytest.FixtureRequest, tmp_path: Path) -> Path:
    """Where a test saves its screenshots: $HITL_TEST_ARTIFACTS/<test>, else the test's tmp dir."""
    root = os.environ.get("HITL_TEST_ARTIFACTS")
    path = Path(root) / request.node.name if root else tmp_path / "screenshots"
    path.mkdir(parents=True, exist_ok=True)
    return path
