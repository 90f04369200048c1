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
    assert "engine.store.sqlite.store" in mods
    assert "aiosqlite" not in mods  # its driver imports it when a store is opened without inline=True


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
    runner builds those a turn validates when imported, so a turn's timed path
    does not -- and only those: the session and the listing rows a turn never
    validates stay unbuilt (each build is a share of a cold ``hitl resume``)."""
    code = (
        "import engine.runner, engine.models as m, engine.store.records as r\n"
        "turn = (m.FunctionCall, m.FunctionResponse, m.Part, m.Content, m.NodeInfo, m.Event, m.StoredEvent, r.Lease)\n"
        "rest = (m.Session, r.InterruptRecord, r.AuditRecord, r.InvocationSummary, r.SessionSummary)\n"
        "print([c.__pydantic_complete__ for c in turn], [c.__pydantic_complete__ for c in rest])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == f"{[True] * 8} {[False] * 5}"


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


# A command imports its own command module only; `hitl --help` none (issue 38).
COMMAND_MODULES = {
    "console.cli.audit", "console.cli.bulk", "console.cli.demo", "console.cli.notify", "console.cli.reads",
    "console.cli.replay", "console.cli.start", "console.cli.transfer", "console.cli.workers", "console.cli.writes",
    "console.serve",
}


def test_help_imports_no_command_module_and_no_model(demo_db: Path) -> None:
    mods = loaded_by_command(demo_db, "--help")
    assert not COMMAND_MODULES & mods, sorted(COMMAND_MODULES & mods)
    assert not {"pydantic", "asyncio", "sqlite3", "jsonschema"} & mods


@pytest.mark.parametrize(("argv", "own"), [(("sessions",), "console.cli.reads"), (("inbox",), "console.cli.reads"),
                                           (("audit",), "console.cli.audit")])
def test_a_command_imports_only_its_own_command_module(demo_db: Path, argv: tuple[str, ...], own: str) -> None:
    mods = loaded_by_command(demo_db, *argv)
    assert COMMAND_MODULES & mods == {own}


@pytest.mark.parametrize("argv", [("inbox",), ("--json", "inbox"), ("inbox", "--app", "refund_approval", "--limit", "1")])
def test_inbox_on_a_sqlite_file_loads_no_model_and_no_asyncio(demo_db: Path, argv: tuple[str, ...]) -> None:
    """The inbox page of a SQLite file is read with plain sqlite3 into plain rows,
    as `hitl sessions` is: no pydantic (its import and a model build cost more
    than the rest of the command), no asyncio."""
    mods = loaded_by_command(demo_db, *argv)
    assert not {"pydantic", "engine.models", "engine.store.base", "asyncio", "aiosqlite"} & mods


def test_the_command_table_matches_the_commands() -> None:
    """`hitl --help` lists the commands from group.COMMANDS without importing them:
    each row names the module that defines the command and its short help as
    click makes it from the command's own docstring, at every width."""
    code = (
        "import importlib, json\n"
        "from click.utils import make_default_short_help\n"
        "from console.cli.group import COMMANDS, _command_of, cli\n"
        "bad = []\n"
        "for name, (mod, text) in COMMANDS.items():\n"
        "    try: cmd = _command_of(importlib.import_module('console.cli.' + mod), name)\n"
        "    except LookupError: bad.append((name, 'not defined by ' + mod)); continue\n"
        "    for limit in range(10, 300):\n"
        "        if cmd.get_short_help_str(limit) != make_default_short_help(text, limit): bad.append((name, limit)); break\n"
        "extra = set(cli.commands) - set(COMMANDS)\n"
        "print(json.dumps([bad, sorted(extra)]))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert json.loads(out.stdout) == [[], []]


def test_every_command_is_found_by_name_and_listed() -> None:
    from console.cli.group import COMMANDS, cli

    assert set(cli.commands) == set(COMMANDS)
    for name in COMMANDS:
        assert cli.get_command(None, name).name == name  # type: ignore[arg-type]


def test_resume_with_a_plain_valid_answer_does_not_import_jsonschema(demo_db: Path, tmp_path: Path) -> None:
    """The answer is checked by engine.quick_schema (jsonschema is most of a cold
    resume's imports after pydantic); jsonschema only judges what it cannot."""
    import shutil

    db = tmp_path / "demo.sqlite"
    shutil.copyfile(demo_db, db)
    mods = loaded_by_command(db, "resume", "review-waiting-1", 'signoff-q3-security-report={"decision": "approve"}')
    assert "engine.runner" in mods and "jsonschema" not in mods
