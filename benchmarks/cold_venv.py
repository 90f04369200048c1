"""``hitl`` as users run it: a fresh venv with the tree installed as a wheel (bench_cold's ``--venv``).

The dev rows of ``bench_cold.py`` run ``python -m console.cli`` from a checkout,
in an interpreter whose site loads this environment's ``.pth`` hooks (an
editable install's finder, a certificate bundle) before the first line of
hitl. A user's ``pip install hitl-console`` has none of them: the package is
byte-compiled in ``site-packages`` and ``hitl`` is the console script pip
wrote. This module builds such a venv per tree (``python -m venv``, then ``pip
install TREE``: not editable; the dependencies from the package index, kept
between runs, the tree itself reinstalled each run) and runs its ``hitl
resume --app`` on the same 10,000-event store as the dev row.

The app is registered from a module of its own (:func:`app_source`: the same
``simple`` workflow as ``bench_engine.SIMPLE``), not ``bench_engine``, which
would put the checkout on ``sys.path`` and import the benchmark's argparse and
statistics too: the row is the installed package's process and nothing else.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def app_source() -> str:
    """``bench_engine.SIMPLE``'s nodes and workflow, cut from that file's source, importing only the engine."""
    text = Path(__file__).with_name("bench_engine.py").read_text(encoding="utf-8")
    start = text.index("@node\nasync def prep")
    end = text.index("\n", text.index("SIMPLE = Workflow("))
    return "from engine import START, RequestInput, Workflow, node\nfrom engine.models import new_id\n\n\n" + text[start:end + 1]


def build_venv(venv: Path, tree: Path) -> Path:
    """``venv`` with ``tree`` installed from its source as a wheel (created, or reused with
    the tree reinstalled); returns its ``hitl`` script."""
    python = venv / "bin" / "python"
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "-q", str(tree)], check=True)
    else:  # the dependencies stay; this tree's code is what is measured
        subprocess.run([str(python), "-m", "pip", "install", "-q", "--no-deps", "--force-reinstall", str(tree)], check=True)
    return venv / "bin" / "hitl"


def app_dir(work: Path) -> Path:
    """A directory holding the app's module (``cold_venv_app:SIMPLE``)."""
    folder = work / "venv-app"
    folder.mkdir(exist_ok=True)
    (folder / "cold_venv_app.py").write_text(app_source(), encoding="utf-8")
    return folder


def resume_argv(hitl: Path, db: Path) -> list[str]:
    """The installed ``hitl resume --app`` answering session ``big``'s open interrupt."""
    import sqlite3

    conn = sqlite3.connect(db)
    (iid,) = conn.execute("SELECT interrupt_id FROM interrupts WHERE session_id = 'big' AND status = 'open'").fetchone()
    conn.close()
    return [str(hitl), "--db", str(db), "--app", "bench=cold_venv_app:SIMPLE", "resume", "big", f"{iid}=true"]


def resume_env(folder: Path) -> dict[str, str]:
    """The environment of the installed process: no PYTHONPATH of the checkout's (the app is
    found from the cwd, ``folder``, as ``--app`` finds an operator's module)."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "HITL_TEST_NO_INSTALL")}
    return {**env, "USER": "bench"}


FLOORS = {
    "floor: the venv's interpreter, nothing imported": "pass",
    "floor: + asyncio, sqlite3, json, click": "import asyncio, json, sqlite3, click",
    "floor: + pydantic's BaseModel (the models' base)": "import asyncio, json, sqlite3, click; from pydantic import BaseModel",
}
"""What any ``hitl resume`` process pays before a line of hitl runs: the interpreter, the
standard modules and the CLI framework every command uses, and pydantic, which the
models are built on (DESIGN.md: "pydantic v2 models"). Each a fresh process of the
venv's own interpreter (``-c CODE``), the row's CPU being the whole process's."""


def floor_argv(hitl: Path, code: str) -> list[str]:
    """The venv's interpreter (beside its ``hitl`` script) running ``code``."""
    return [str(hitl.with_name("python")), "-c", code]
