"""Deadlines from the shell: ``hitl notify`` fires one that passed while nothing
ran, ``hitl inbox --due-within`` lists what is due first, ``hitl show`` says the
time left. The deadline here is 0 s (it has passed when the command runs): no
test waits for time to pass."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from click.testing import CliRunner

from console.cli import cli
from engine import START, Content, RequestInput, Runner, Workflow, node
from engine.deadlines import answer
from engine.store import SQLiteStore


@node
async def now(order: str):
    yield RequestInput(f"Approve {order}?", response_schema=bool, interrupt_id="now", deadline=0,
                       on_deadline=answer(False))


@node
async def later(order: str):
    yield RequestInput(f"Check {order}?", response_schema=bool, interrupt_id="later", deadline="2h",
                       on_deadline=answer(True))


async def _fill(db: Path) -> None:
    async with SQLiteStore.open(db) as store:
        async for _ in Runner("quick", Workflow("q", [(START, now)]), store).run("u", "s-now", Content.from_text("o1")):
            pass
        async for _ in Runner("slow", Workflow("w", [(START, later)]), store).run("u", "s-later", Content.from_text("o2")):
            pass


def test_notify_fires_a_deadline_that_passed_while_nothing_ran(tmp_path: Path) -> None:
    db = tmp_path / "d.sqlite"
    asyncio.run(_fill(db))
    (tmp_path / "hitl.toml").write_text("", encoding="utf-8")  # no [notify] rules: it fires deadlines all the same
    r = CliRunner().invoke(cli, ["--db", str(db), "--config", str(tmp_path / "hitl.toml"), "notify", "--once"])
    assert r.exit_code == 0, r.output
    r = CliRunner().invoke(cli, ["--db", str(db), "audit", "--operator", "deadline", "--json"])
    rows = json.loads(r.output)["audit"]
    assert [(x["action"], x["session_id"]) for x in rows] == [("answer", "s-now")]
    r = CliRunner().invoke(cli, ["--db", str(db), "notify", "--once"])  # once: nothing more
    r = CliRunner().invoke(cli, ["--db", str(db), "audit", "--operator", "deadline", "--json"])
    again = json.loads(r.output)["audit"]
    assert len(again) == 1


def test_inbox_due_within_lists_due_first_with_time_left(tmp_path: Path) -> None:
    db = tmp_path / "d.sqlite"
    asyncio.run(_fill(db))
    r = CliRunner().invoke(cli, ["--db", str(db), "inbox", "--due-within", "1h"])
    assert r.exit_code == 0, r.output
    lines = r.output.splitlines()
    assert lines[0].split()[:3] == ["AGE", "DUE", "SESSION"]
    assert len(lines) == 2 and "q@1/now@1" in lines[1] and "due now" in lines[1]
    r = CliRunner().invoke(cli, ["--db", str(db), "inbox", "--due-within", "3h"])
    rows = r.output.splitlines()[1:]
    assert len(rows) == 2 and "s-now" in rows[0] and "due now" in rows[0]  # due first
    assert "s-later" in rows[1] and "1h59m left" in rows[1]
    r = CliRunner().invoke(cli, ["--db", str(db), "show", "s-later"])
    assert "waits on later: Check o2? (1h59m left)" in r.output
    r = CliRunner().invoke(cli, ["--db", str(db), "inbox", "--due-within", "soon"])
    assert r.exit_code == 2 and "is not a duration" in r.output
