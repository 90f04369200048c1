"""``hitl sessions`` on a SQLite file takes the plain-sqlite3 listing (issue 15):
its process imports no pydantic, asyncio, aiosqlite or models, and prints what
the store path prints (``--db sqlite:///PATH`` names the same file and takes the
store path); what the listing cannot read -- an older schema, a bad cursor --
goes the store path and is refused the way it always was."""

from __future__ import annotations

import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from engine.owners import INTERRUPTED
from engine.status import DisplayStatus
from engine.store.sqlite import SCHEMA_VERSION, SQLiteStore

from .conftest import REPO
from .test_fast_listing import _dead_owner, mixed  # noqa: F401 (a fixture)
from .test_liveness import _dead_pid, effects  # noqa: F401 (fixtures the mixed store needs)

HEAVY = ("pydantic", "asyncio", "aiosqlite", "engine.models", "engine.store.base", "engine.liveness")

PROBE = """
import json, sys
from console.cli import main
sys.argv = ['hitl', *json.loads(sys.argv[1])]
code = 0
try:
    main()
except SystemExit as exc:
    code = exc.code or 0
heavy = sorted(m for m in sys.modules if m in HEAVY or m.split('.')[0] in HEAVY)
print(json.dumps({'code': code, 'heavy': heavy}), file=sys.stderr)
"""


def hitl_process(db: str, *argv: str) -> tuple[int, str, str, list[str]]:
    """A fresh ``hitl --db DB ARGV`` process: exit code, stdout, its other stderr, the heavy modules it loaded."""
    code = f"HEAVY = {HEAVY!r}\n{PROBE}"
    proc = subprocess.run(
        [sys.executable, "-c", code, json.dumps(["--db", db, *argv])],
        capture_output=True,
        text=True,
        cwd=REPO,
        env={**{k: v for k, v in os.environ.items() if k != "HITL_DB"}, "USER": "tester"},
    )
    *errs, last = proc.stderr.strip().splitlines()
    status = json.loads(last)
    return status["code"], proc.stdout, "\n".join(errs), status["heavy"]


def comparable(text: str) -> list[list[str]]:
    """The table without its UPDATED ages (they count seconds: two processes may differ)."""
    lines = text.splitlines()
    rows = [line.split()[:-1] if i and line.startswith(ROW_START) else line.split() for i, line in enumerate(lines)]
    assert len(rows) == 1 or any(line.startswith(ROW_START) for line in lines[1:]), text
    return rows


ROW_START = ("x-", "refund-", "review-", "deploy-", "labels-", "incident-", "contracts-", "token=")
"""How the listed sessions' ids begin (the demo store's, the test's)."""


ARGVS = [
    ("sessions",),
    ("--json", "sessions"),
    ("sessions", "--status", "interrupted"),
    ("--json", "sessions", "--status", "interrupted"),
    ("--read-only", "sessions", "--limit", "3"),
    ("sessions", "--text", "x-", "--limit", "1"),
    ("--json", "sessions", "--status", "waiting", "--older-than", "1h"),
]


@pytest.mark.parametrize("argv", ARGVS)
def test_the_fast_path_loads_no_models_and_prints_what_the_store_path_prints(
    mixed: Path,  # noqa: F811
    argv: tuple[str, ...],
) -> None:
    code, fast, err, heavy = hitl_process(str(mixed), *argv)
    assert (code, err) == (0, "") and heavy == [], (err, heavy)
    code, slow, err, heavy = hitl_process(f"sqlite://{mixed}", *argv)
    assert (code, err) == (0, "") and "pydantic" in heavy, "the URL took the store path"
    if "--json" in argv:
        assert json.loads(fast) == json.loads(slow)
    else:
        assert comparable(fast) == comparable(slow)
    if "interrupted" in argv:
        assert "x-stranded" in fast and "x-dead-owner" in fast and "x-live" not in fast
        if "--json" not in argv:
            assert f"{INTERRUPTED}: a turn stopped before it ended" in fast


def test_the_next_page_continues_on_either_path(mixed: Path) -> None:  # noqa: F811
    _, first, _, _ = hitl_process(str(mixed), "sessions", "--limit", "4")
    cursor = re.search(r"^more: --cursor (\S+)$", first, re.M)
    assert cursor, first
    code, fast, _, heavy = hitl_process(str(mixed), "sessions", "--limit", "4", "--cursor", cursor[1])
    _, slow, _, _ = hitl_process(f"sqlite://{mixed}", "sessions", "--limit", "4", "--cursor", cursor[1])
    assert code == 0 and heavy == [] and comparable(fast) == comparable(slow)
    ids = [{line.split()[0] for line in text.splitlines() if line.startswith(ROW_START)} for text in (first, fast)]
    assert len(ids[0]) == len(ids[1]) == 4 and not ids[0] & ids[1]


def test_a_bad_cursor_is_refused_as_before(db: Path) -> None:
    code, out, err, _ = hitl_process(str(db), "sessions", "--cursor", "not-a-cursor")
    assert code == 1 and out == "" and err.startswith("error: invalid page cursor")


def test_an_older_store_is_refused_and_left_as_it_was(db: Path, tmp_path: Path) -> None:
    """Reads never write: a store of an older schema is not listed by the fast path
    (it would read tables of another shape) but refused with the store's line."""
    old = tmp_path / "old.sqlite"
    shutil.copy(db, old)
    conn = sqlite3.connect(old)
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION - 1}")
    conn.close()
    before = old.read_bytes()
    for target in (str(old), f"sqlite://{old}"):
        code, out, err, _ = hitl_process(target, "sessions")
        assert code == 1 and out == "", err
        assert err.startswith(f"error: the store {old} has schema version {SCHEMA_VERSION - 1}, older than"), err
        assert "reads never change it: run `hitl --db" in err and "migrate` to upgrade it" in err
    assert old.read_bytes() == before


async def test_secrets_in_ids_are_masked_on_the_fast_path(db: Path) -> None:
    store = await SQLiteStore.open(db)
    try:
        await store.create_session("leaky", "api_key=sk-live-0123456789", "token=abcdef987654")
    finally:
        await store.close()
    for argv in (("sessions",), ("--json", "sessions")):
        code, out, _, heavy = hitl_process(str(db), *argv, "--app", "leaky")
        assert code == 0 and heavy == []
        assert "leaky" in out and "sk-live-0123456789" not in out and "abcdef987654" not in out, out


def test_every_node_status_is_a_display_status() -> None:
    """(Was a module-level assert in engine.status, which then needed the models.)"""
    from engine.models import NodeStatus

    assert {s.value for s in NodeStatus} <= {d.value for d in DisplayStatus}
