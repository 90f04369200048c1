"""Start-up cost (issue 15): ``import engine`` and the CLI import only what a
command uses. Asserted on the modules a fresh interpreter loaded (deterministic),
not on times (``benchmarks/bench_cold.py`` measures those)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

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
