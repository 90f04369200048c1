"""An ADK 2.x workflow (a docs sample, imports changed only) operated with the headless commands:
registered with ``--app``, started with ``hitl start``, answered with ``hitl resume``, shown with ``hitl show``."""

from __future__ import annotations

import asyncio
from pathlib import Path

from click.testing import CliRunner

from console.cli import cli
from engine.store.sqlite import SQLiteStore

APP = ["--app", "docs=tests.adk_compat.samples.human_input_get_started:root_agent"]


def _hitl(db: Path, *args: str) -> str:
    result = CliRunner().invoke(cli, ["--db", str(db), *APP, *args], catch_exceptions=True)
    assert result.exit_code == 0, f"{args} exited {result.exit_code}: {result.output}"
    return result.output


def _open_ids(db: Path, session: str) -> list[str]:
    async def read() -> list[str]:
        async with SQLiteStore.open(db, read_only=True) as store:
            return [r.interrupt_id for r in (await store.open_interrupts(session_id=session)).items]

    return asyncio.run(read())


def test_an_adk_sample_is_started_answered_and_shown_with_hitl(tmp_path: Path) -> None:
    db = tmp_path / "adk.sqlite"
    started = _hitl(db, "start", "docs", "--session", "s1", "--user", "ann", "go")
    assert "WAITING; open: " in started.splitlines()[-1]
    (iid,) = _open_ids(db, "s1")
    answered = _hitl(db, "resume", "s1", f"{iid}=21", "--operator", "ann", "--reason", "doc example")
    assert "COMPLETED" in answered.splitlines()[-1]
    shown = _hitl(db, "show", "s1")
    assert "step2@1" in shown and "42" in shown
