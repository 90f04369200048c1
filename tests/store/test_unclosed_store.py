"""A script that opens the SQLite store and never closes it still exits.

aiosqlite's connection thread is not a daemon, so a first workflow script that
forgot ``async with`` / ``close()`` hung at exit forever after printing its
events (seen writing the README's example against ``SQLiteStore.open``). The
store's appends are awaited until committed, so ending that thread at exit loses
nothing: the events are all there afterwards."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

SCRIPT = """
import asyncio, sys
from engine import START, Content, RequestInput, Runner, Workflow, node
from engine.store.sqlite import SQLiteStore

@node
async def ask(node_input):
    yield RequestInput("ok?", response_schema=bool, interrupt_id="ask-1")

async def main():
    store = await SQLiteStore.open(sys.argv[1])  # never closed
    async for _ in Runner("forgetful", Workflow("w", [(START, ask)]), store).run("u", "s1", Content.from_text("go")):
        pass
    print("done", flush=True)

asyncio.run(main())
"""


def test_a_script_that_never_closes_the_store_exits_and_kept_its_events(tmp_path: Path) -> None:
    db = tmp_path / "s.sqlite"
    script = tmp_path / "forgetful.py"
    script.write_text(SCRIPT)
    done = subprocess.run([sys.executable, str(script), str(db)], capture_output=True, text=True, timeout=120)
    assert (done.returncode, done.stdout) == (0, "done\n"), done.stderr
    shown = subprocess.run([sys.executable, "-m", "console.cli", "--db", str(db), "--read-only", "sessions"],
                           capture_output=True, text=True, timeout=120)
    assert shown.returncode == 0, shown.stderr
    assert "s1" in shown.stdout and "waiting" in shown.stdout
