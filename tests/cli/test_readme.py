"""The README's examples run as written (so they cannot rot): its first example
on a SQLite file, and the section "Your own workflow in the console" -- the
module and the hitl.toml it shows are written to a fresh directory, and each
command of its shell block runs there with the installed ``hitl``."""

from __future__ import annotations

import asyncio
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from engine.store.sqlite import SQLiteStore

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")
BLOCK = re.compile(r"```(\w+)\n(.*?)```", re.S)


def section(title: str) -> str:
    start = README.index(f"## {title}\n")
    end = README.find("\n## ", start + 3)
    return README[start : end if end != -1 else None]


def blocks(text: str) -> list[tuple[str, str]]:
    return [(m.group(1), m.group(2)) for m in BLOCK.finditer(text)]


def write_files(text: str, where: Path) -> list[str]:
    """Python and TOML blocks whose first line is ``# NAME`` are the file NAME."""
    names = []
    for lang, body in blocks(text):
        first = body.splitlines()[0]
        if lang in ("python", "toml") and first.startswith("# "):
            name = first[2:].split()[0]
            (where / name).write_text(body, encoding="utf-8")
            names.append(name)
    return names


def env_for(tmp: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("HITL_DB", "XDG_CONFIG_HOME", "PYTHONPATH")}
    env["HOME"] = str(tmp / "home")  # no user config of the machine's
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    return env


def run(cmd: list[str], cwd: Path) -> str:
    done = subprocess.run(cmd, cwd=cwd, env=env_for(cwd), capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, f"{shlex.join(cmd)} exited {done.returncode}\n{done.stdout}\n{done.stderr}"
    return done.stdout


def session_rows(db: Path) -> dict[str, str]:
    async def read() -> dict[str, str]:
        async with SQLiteStore.open(db, read_only=True) as store:
            return {r.id: r.status for r in (await store.list_sessions(limit=10)).items}

    return asyncio.run(read())


@pytest.fixture
def here(tmp_path: Path) -> Path:
    (tmp_path / "home").mkdir()
    return tmp_path


def test_the_first_example_leaves_a_session_the_console_opens(here: Path) -> None:
    text = section("A workflow that interrupts and is resumed")
    assert "MemoryStore()" not in "".join(body for _, body in blocks(text))
    assert write_files(text, here) == ["refund_demo.py"]
    printed = run([sys.executable, "refund_demo.py"], here)
    assert "end refund@1/pay@1 paid: approved=True" in printed
    assert session_rows(here / "refunds.sqlite") == {"s1": "completed"}
    shown = run(["hitl", "--db", "refunds.sqlite", "show", "s1"], here)
    assert "pay@1      COMPLETED  paid: approved=True" in shown


def test_your_own_workflow_in_the_console_runs_as_written(here: Path) -> None:
    text = section("Your own workflow in the console")
    assert write_files(text, here) == ["myflows.py", "hitl.toml"]
    (shell,) = [body for lang, body in blocks(text) if lang == "bash"]
    outputs = []
    for line in shell.splitlines():
        command = line.split("  #", 1)[0].strip()
        if command:
            words = shlex.split(command)
            assert words[0] == "hitl", command
            outputs.append(run(words, here))
    start, graph, answer, shown = outputs
    assert "WAITING; open: approve-order-7" in start
    assert "╔═ refund@1 · ◆ WAITING" in graph and "waits on approve-order-7" in graph
    assert "answer to approve-order-7 by ann (receipt checked)" in answer
    assert "refund@1     COMPLETED  paid" in shown and "pay@1      COMPLETED  paid" in shown
    # on a SQLite file on disk, as the section says: what the console opens
    assert session_rows(here / "refunds.sqlite") == {"order-7": "completed"}
