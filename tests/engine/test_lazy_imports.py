"""Start-up cost (issue 15): ``import engine`` and the CLI import only what a
command uses. Asserted on the modules a fresh interpreter loaded (deterministic),
not on times (``benchmarks/bench_cold.py`` measures those)."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def loaded_after(code: str) -> set[str]:
    probe = f"import sys; {code}; import json; print(json.dumps(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, cwd=ROOT)
    return set(json.loads(out.stdout))


def test_import_engine_loads_no_submodule() -> None:
    mods = loaded_after("import engine")
    assert not {m for m in mods if m.startswith("engine.")}
    assert "pydantic" not in mods and "jsonschema" not in mods


def test_engine_names_resolve_on_first_use() -> None:
    import engine

    for name in engine.__all__:
        assert getattr(engine, name) is not None, name
    mods = loaded_after("from engine import Runner, Workflow, node")
    assert "engine.runner" in mods and "jsonschema" not in mods


def test_cli_import_skips_what_listing_does_not_use() -> None:
    mods = loaded_after("import console.cli")
    assert not {"jsonschema", "aiosqlite", "textual", "engine.store.sqlite", "engine.store.memory"} & mods


def test_store_backends_load_on_first_use() -> None:
    mods = loaded_after("import engine.store.base")
    assert "aiosqlite" not in mods and "engine.store.memory" not in mods
    mods = loaded_after("from engine.store import SQLiteStore")
    assert "aiosqlite" in mods


# What the listing and show commands never need (issue 15): Rich and Textual (the
# console), jsonschema (answer validation), the runner; a listing no tree code either.
NOT_FOR_SHOW = {
    "rich", "textual", "jsonschema", "engine.runner", "engine.apps",
    # issue 12: nor the node classes (only a dry run's next_runs needs them), or the export format.
    "engine.nodes", "engine.workflow", "engine.store.jsonl",
}
NOT_FOR_LISTING = NOT_FOR_SHOW | {"engine.replay", "engine.views"}


def loaded_by_command(db: Path, *argv: str) -> set[str]:
    """The modules a fresh ``hitl --db DB ARGV`` process loaded (it must succeed)."""
    probe = (
        "import json, sys\n"
        "from console.cli import main\n"
        f"sys.argv = ['hitl', '--db', {str(db)!r}, *{list(argv)!r}]\n"
        "try:\n    main()\nexcept SystemExit as exc:\n    assert not exc.code, exc.code\n"
        "print(json.dumps(sorted(sys.modules)), file=sys.stderr)\n"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, cwd=ROOT)
    return set(json.loads(out.stderr.strip().splitlines()[-1]))


@pytest.fixture(scope="module")
def demo_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from sample_sessions.demo import build_demo_db

    path = tmp_path_factory.mktemp("lazy") / "demo.sqlite"
    asyncio.run(build_demo_db(path))
    return path


@pytest.mark.parametrize(
    ("argv", "never"),
    [
        (("sessions",), NOT_FOR_LISTING),
        (("--json", "sessions"), NOT_FOR_LISTING),
        (("sessions", "--status", "interrupted"), NOT_FOR_LISTING),
        (("show", "incident-waiting-1"), NOT_FOR_SHOW),
        (("--json", "show", "incident-failed-1"), NOT_FOR_SHOW),
    ],
)
def test_listing_and_show_load_no_console_or_runner_code(demo_db: Path, argv: tuple[str, ...], never: set[str]) -> None:
    mods = loaded_by_command(demo_db, *argv)
    tops = {m.split(".")[0] for m in mods} | mods
    assert not never & tops, sorted(never & tops)


def test_importing_the_runner_builds_the_event_models() -> None:
    """The models defer their validators (a listing never builds them); the
    runner builds them when imported, so a turn's timed path does not."""
    code = "import engine.runner, engine.models as m; print(all(c.__pydantic_complete__ for c in (m.Event, m.Content, m.NodeInfo, m.StoredEvent, m.Session)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "True"


@pytest.mark.parametrize("session", ["refund-multi-1", "deploy-long-1"])
def test_show_builds_no_validator(demo_db: Path, session: str) -> None:
    """``hitl show`` of a session whose snapshots are current prints from store
    rows (made without validation) and the snapshots: it builds no pydantic
    validator, which costs more than the rest of the command together, nor
    loads what a build pulls in (pydantic's plugin lookup reads every installed
    package's metadata) (issue 12)."""
    probe = (
        "import sys\n"
        "from console.cli import main\n"
        f"sys.argv = ['hitl', '--db', {str(demo_db)!r}, 'show', {session!r}]\n"
        "try:\n    main()\nexcept SystemExit as exc:\n    assert not exc.code, exc.code\n"
        "from pydantic import BaseModel\n"
        "seen, stack = [], [BaseModel]\n"
        "while stack:\n"
        "    c = stack.pop(); stack.extend(c.__subclasses__())\n"
        "    if c.__module__.startswith(('engine', 'console')) and c.__pydantic_complete__: seen.append(c.__name__)\n"
        "print('BUILT', sorted(seen), 'importlib.metadata' in sys.modules, file=sys.stderr)\n"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, cwd=ROOT)
    assert f"session {session}" in out.stdout
    assert out.stderr.strip().splitlines()[-1] == "BUILT [] False"
