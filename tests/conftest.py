"""Suite-wide setup for parallel runs (pytest-xdist, as scripts/test runs the suite).

Each worker gets a PostgreSQL server of its own: scripts/services/postgres.sh
starts one per worker (``HITL_TEST_PG_URL_<k>``/``HITL_TEST_PG_CTL_<k>``) and
worker ``gw<k>`` points ``HITL_TEST_PG_URL``/``HITL_TEST_PG_CTL`` at server k
before any test reads them. Schemas already isolate tests' data; a server per
worker also keeps the fault tests (a server restart, pg_stat_activity queries)
from touching another worker's tests.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest


def pytest_configure(config: pytest.Config) -> None:
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    servers = int(os.environ.get("HITL_TEST_PG_SERVERS", "0") or 0)
    if not worker or not servers:
        return  # one process, or a server the caller gave (HITL_TEST_PG_URL): nothing to pick
    k = int(worker.removeprefix("gw"))
    if k >= servers:
        raise pytest.UsageError(
            f"worker {worker} has no PostgreSQL server of its own ({servers} started): run "
            f"HITL_TEST_WORKERS=N bash scripts/test, which starts one server per worker and passes -n N"
        )
    os.environ["HITL_TEST_PG_URL"] = os.environ[f"HITL_TEST_PG_URL_{k}"]
    os.environ["HITL_TEST_PG_CTL"] = os.environ[f"HITL_TEST_PG_CTL_{k}"]


# The slow kinds, marked here from what a test is rather than by hand in every
# module, so a new test of a kind is marked too. `scripts/test --quick` runs
# everything else (`-m "not (browser or postgres or kill or hypothesis)"`).
_KILL_MODULES = {
    "test_crash.py",
    "test_workers.py",
    "test_ack_once.py",
    "test_worker_side.py",
    "test_concurrency.py",
    "test_postgres_reliability.py",
    "test_sqlite_faults.py",
}


_SLOW = {line.strip() for line in (Path(__file__).parent / "slow_tests.txt").read_text(encoding="utf-8").splitlines()
         if line.strip() and not line.startswith("#")}
"""The measured slow tests (tests/slow_tests.txt): marked ``slow``, left out by ``scripts/test --quick``."""


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    root = Path(__file__).parent.parent
    for item in items:
        path = item.path
        if f"{path.relative_to(root).as_posix()}::{getattr(item, 'originalname', item.name)}" in _SLOW:
            item.add_marker(pytest.mark.slow)
        if "browser" in path.parts:
            item.add_marker(pytest.mark.browser)
        if "postgres" in item.nodeid or "postgres" in path.name or "pg" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.postgres)
        if path.name in _KILL_MODULES:
            item.add_marker(pytest.mark.kill)
        if getattr(getattr(item, "obj", None), "is_hypothesis_test", False):
            item.add_marker(pytest.mark.hypothesis)


@pytest.fixture(autouse=True)
def _fresh_answer_policy():
    """Who may answer is process-wide (engine.permissions.use_policy: the CLI, a served
    console and a console set it from their config file): no test leaves its rules behind."""
    yield
    from engine.permissions import reset_policy

    reset_policy()


@pytest.fixture(autouse=True)
def _library_surface():
    """Which surface an action came from is a context variable that an entry point sets
    in the caller's context (the console's app, the CLI's main, a worker): a console or
    CLI test run in this process would otherwise name every later test's writes."""
    from engine import telemetry

    telemetry.set_surface("library")
    yield
    telemetry.set_surface("library")
