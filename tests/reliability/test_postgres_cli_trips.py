"""The round trips of the real ``hitl resume`` and ``hitl start`` against
PostgreSQL, each in a new process as an operator runs it: the connection's
startup and then the command's own messages to the server (asyncpg writes the
socket once per round trip), the closing Terminate not counted. The commands'
checks -- routing, the owner/permission gate, a stale or answered interrupt --
ride on the turn's own reads, so the budget is the turn's: 3 for a resume that
runs one node, 4 for a fresh run of two nodes (3 for one)."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

from tests.contract.builders import pg_fresh_url

from .test_postgres_deferred_check import _invocations, _waiting

ROOT = Path(__file__).resolve().parents[2]
APP = "app=tests.engine.test_turn_cost:SIMPLE"
ONE = "one=tests.reliability.test_postgres_deferred_check:ONE_NODE"

# A new interpreter that counts what it writes to sockets, then runs ``hitl``.
_CHILD = """
import asyncio.selector_events, atexit, os, sys
kinds = []
transport = asyncio.selector_events._SelectorSocketTransport
write = transport.write
def counting(self, data):
    kinds.append(bytes(data[:1]))
    write(self, data)
transport.write = counting
def tell():
    with open(os.environ["HITL_TEST_TRIPS_FILE"], "w") as f:
        f.write(str(sum(1 for k in kinds if k != b"X")))
atexit.register(tell)
sys.argv = ["hitl", *sys.argv[1:]]
from console.cli import main
main()
"""


def cold_cli_trips(tmp: Path, *args: str) -> tuple[int, str]:
    """(messages sent, the output) of ``hitl ARGS`` in a new process."""
    told = tmp / "trips"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
           "HITL_TEST_TRIPS_FILE": str(told)}
    out = subprocess.run([sys.executable, "-c", _CHILD, *args], capture_output=True, text=True, env=env, timeout=120,
                         cwd=ROOT)
    assert out.returncode == 0, out.stderr
    return int(told.read_text()), out.stdout


def test_a_cold_hitl_resume_is_the_startup_and_three_round_trips(tmp_path: Path) -> None:
    url = pg_fresh_url()
    iid = asyncio.run(_waiting(url))
    trips, out = cold_cli_trips(tmp_path, "--db", url, "--app", APP, "resume", "s", f"{iid}=true")
    assert "after@1" in out, out
    assert trips == 1 + 3, trips  # the answer's reads (with the schema check), the first and last write
    assert [i.status for i in asyncio.run(_invocations(url, "s"))] == ["completed"]


def test_a_cold_hitl_start_is_the_startup_and_at_most_four_round_trips(tmp_path: Path) -> None:
    url = pg_fresh_url()
    asyncio.run(_waiting(url, "other"))  # the store exists (creating it is not the budget's)
    for app, name, expected in ((APP, "app", 4), (ONE, "one", 3)):
        sid = f"new-{name}"
        trips, out = cold_cli_trips(tmp_path, "--db", url, "--app", app, "start", name, "--session", sid, "hello")
        assert f"session {sid}" in out, out
        # the session read (with the check), the first write creating it, [prep's end with ask's start,] the last
        assert trips == 1 + expected, (name, trips)
        assert [i.status for i in asyncio.run(_invocations(url, sid))] == ["waiting"]
