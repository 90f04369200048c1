"""What the commands an operator runs cold import, and how the process ends.

``hitl --help``, ``hitl sessions``, ``hitl inbox`` and ``hitl resume`` with the
app's code registered (``--app``) are whole processes whose cost is mostly
imports and interpreter exit (``benchmarks/bench_cold.py`` measures them).
Asserted here on the modules a fresh process loaded and on the state it exits
in -- deterministic -- never on times.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from console.cli.plugin_lookup import _no_pydantic_plugins

ROOT = Path(__file__).resolve().parents[2]

# Nothing a cold command uses: the console UI, the answer-schema validator and the PostgreSQL backend.
NEVER = {"textual", "rich", "jsonschema", "psycopg", "psycopg_pool", "engine.store.postgres"}
# What a command reads a hitl.toml with (only when there is one), and what only other paths need.
NOT_WITHOUT_A_CONFIG = {"tomllib", "getpass"}

APP_SOURCE = """
from engine import START, RequestInput, Workflow, node


@node
async def ask(node_input):
    yield RequestInput("ok?")


@node
async def after(node_input):
    return node_input


APP = Workflow("cold", [(START, ask, after)])
"""
"""The app ``hitl resume --app cold=cold_app:APP`` registers: one question, one node after it."""


def run_cli(tmp: Path, *argv: str, path: str = "", env: dict[str, str] | None = None,
            no_site: bool = False) -> tuple[str, set[str], dict[str, Any]]:
    """``hitl ARGV`` in a fresh interpreter (cwd ``tmp``: no hitl.toml there, none in
    its config home; ``path``: more of PYTHONPATH): stdout, the modules it loaded, and its
    threads, frozen objects, the GC collections run inside ``main()`` (their generations),
    whether the Redactor compiled its free-text patterns and the pydantic plugins it looked
    up (None: no lookup) at the end. ``no_site``: without the site module's ``.pth`` hooks (an
    editable install's finder, this machine's certificate bundle), the site-packages on the path
    instead, so that what the process loads is hitl's own doing, as in a plain venv."""
    probe = (
        "import gc, json, sys, threading\n"
        "started, start = [], threading.Thread.start\n"
        "threading.Thread.start = lambda self: (started.append(self.name), start(self))[1]\n"
        "from console.cli import main\n"
        "collections = []\n"
        "gc.callbacks.append(lambda phase, info: phase == 'stop' and collections.append(info['generation']))\n"
        f"sys.argv = ['hitl', *{list(argv)!r}]\n"
        "try:\n    main()\nexcept SystemExit as exc:\n    assert not exc.code, exc.code\n"
        "loader = sys.modules.get('pydantic.plugin._loader')\n"
        "plugins = getattr(loader, '_plugins', None)\n"
        "redact = sys.modules.get('engine.redact')\n"
        "state = {'threads': started, 'frozen': gc.get_freeze_count(), 'collections': collections,\n"
        "         'free_text_patterns': redact and redact._free_text_patterns.cache_info().currsize,\n"
        "         'plugins': None if plugins is None else sorted(plugins),\n"
        "         'plugins_env': __import__('os').environ.get('PYDANTIC_DISABLE_PLUGINS')}\n"
        "print(json.dumps([sorted(sys.modules), state]), file=sys.stderr)\n"
    )
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp), "XDG_CONFIG_HOME": str(tmp / "config"), "USER": "olga",
           "PYTHONPATH": f"{ROOT}:{tmp}{path}", **(env or {})}
    if no_site:
        import site

        env["PYTHONPATH"] += "".join(f":{d}" for d in site.getsitepackages())
    flags = ["-S"] if no_site else []
    out = subprocess.run([sys.executable, *flags, "-c", probe], capture_output=True, text=True, cwd=tmp, env=env,
                         check=False)
    assert out.returncode == 0, out.stderr
    mods, state = json.loads(out.stderr.strip().splitlines()[-1])
    return out.stdout, set(mods), state


def tops(mods: set[str]) -> set[str]:
    return mods | {m.split(".")[0] for m in mods}


@pytest.fixture(scope="module")
def waiting(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """A store whose session ``s`` waits on ``ask`` (the interrupt id returned), and
    the app's module beside it (``cold_app:APP``, a copy of this file's app)."""
    import importlib.util

    from engine import Content, Runner
    from engine.store.sqlite import SQLiteStore

    tmp = tmp_path_factory.mktemp("cold")
    (tmp / "cold_app.py").write_text(APP_SOURCE, encoding="utf-8")
    spec = importlib.util.spec_from_file_location("cold_app", tmp / "cold_app.py")
    assert spec is not None and spec.loader is not None
    app = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(app)
    db = tmp / "template.sqlite"

    async def build() -> None:
        store = await SQLiteStore.open(db, inline=True)
        async for _ in Runner("cold", app.APP, store).run("u", "s", Content.from_text("go")):
            pass
        await store.checkpoint()
        await store.close()

    asyncio.run(build())
    conn = sqlite3.connect(db)
    (iid,) = conn.execute("SELECT interrupt_id FROM interrupts WHERE status = 'open'").fetchone()
    conn.close()
    return db, iid


def fresh(template: Path, tmp: Path) -> Path:
    db = tmp / "store.sqlite"
    shutil.copyfile(template, db)
    return db


def test_help_loads_no_store_no_model_no_config_parser(tmp_path: Path) -> None:
    out, mods, state = run_cli(tmp_path, "--help")
    assert "Commands:" in out
    never = NEVER | NOT_WITHOUT_A_CONFIG | {"pydantic", "asyncio", "sqlite3", "socket"}
    assert not tops(mods) & never, sorted(tops(mods) & never)
    assert state["frozen"] > 0  # the exit's collection skips the imports' objects


@pytest.mark.parametrize("command", ["sessions", "inbox"])
def test_a_listing_loads_no_model_no_asyncio_no_config_parser(waiting: tuple[Path, str], tmp_path: Path,
                                                              command: str) -> None:
    out, mods, state = run_cli(tmp_path, "--db", str(fresh(waiting[0], tmp_path)), command)
    assert " s " in f" {out.splitlines()[1]} ", out  # the one session, listed
    never = NEVER | NOT_WITHOUT_A_CONFIG | {"pydantic", "asyncio", "socket", "engine.models"}
    assert not tops(mods) & never, sorted(tops(mods) & never)
    assert state["frozen"] > 0


def test_resume_with_its_app_loads_only_what_a_turn_uses(waiting: tuple[Path, str], tmp_path: Path) -> None:
    """The answer runs here (``--app``): the runner, the models and the SQLite store
    are loaded; the console, the views, the filter grammar of ``[[answer]]`` rules
    (there are none), the worker queue's records, aiosqlite (the CLI runs its SQL
    inline) and a thread pool are not -- and the process starts no thread."""
    db = fresh(waiting[0], tmp_path)
    shutil.copyfile(waiting[0].with_name("cold_app.py"), tmp_path / "cold_app.py")  # importable from the cwd
    out, mods, state = run_cli(tmp_path, "--db", str(db), "--app", "cold=cold_app:APP", "resume", "s",
                               f"{waiting[1]}=true")
    assert "COMPLETED" in out, out
    assert {"engine.runner", "engine.store.sqlite.store", "pydantic"} <= mods  # it did run the turn here
    assert not tops(mods) & (NEVER | NOT_WITHOUT_A_CONFIG), sorted(tops(mods) & (NEVER | NOT_WITHOUT_A_CONFIG))
    skipped = {"engine.views", "engine.bulk_filter", "engine.deadlines", "engine.store.workers", "aiosqlite",
               "concurrent.futures.thread", "engine.apps_doc",
               "engine.store.sqlite.session_rows",  # the sessions page's rows: a turn never lists sessions
               "engine.resume_plan",  # the dry run's plan: a turn does not preview itself
               "engine.answer_rules",  # [[answer]] rules: there are none
               "engine.replay",  # the replay's cursor and diffs: a write prints only its events' markers
               # the other commands' modules and what only they (or the console, a worker, the API) use
               *(f"console.cli.{m}" for m in ("reads", "start", "transfer", "demo", "bulk", "notify", "owners",
                                               "audit", "replay", "graph", "progress")),
               "console.app", "console.logs", "console.metrics_http", "engine.adk", "engine.worker",
               "engine.handoff", "engine.notify", "engine.bulk", "engine.graph_view", "engine.schema_view",
               "engine.store.memory", "engine.store.jsonl", "engine.store.tail", "multiprocessing",
               "concurrent.futures.process", "http.client", "urllib.request"}
    assert not mods & skipped, sorted(mods & skipped)
    assert state["threads"] == []
    assert state["frozen"] > 0
    # Its imports' objects all live on: the GC's first collection waits (console.cli.defer_first_collection),
    # and a one-node turn's command never reaches it.
    assert state["collections"] == []
    # Its output names no secret-like word: the free-text masking patterns were never compiled.
    assert state["free_text_patterns"] == 0
    if _no_pydantic_plugins():  # none installed: pydantic's cache was given that answer (its lookup: below)
        assert state["plugins"] == []
        # ... and importlib.metadata (email, csv, zipfile behind it), which only a lookup reads, is not imported
        assert "importlib.metadata" not in mods and "email" not in mods, sorted(m for m in mods if "metadata" in m)
    assert state["plugins_env"] is None  # the app's child processes inherit the environment as the operator set it
    conn = sqlite3.connect(db)
    statuses = [r[0] for r in conn.execute("SELECT status FROM interrupts")]
    conn.close()
    assert statuses == ["resolved"]


def test_resume_without_site_hooks_loads_no_metadata_and_no_archive_modules(waiting: tuple[Path, str],
                                                                            tmp_path: Path) -> None:
    """As in a plain venv (no ``.pth`` hook importing them first): the resume's process imports
    neither importlib.metadata (with email, zipfile and csv), which only a plugin lookup reads,
    nor shutil (with zlib, bz2 and lzma), which only the store's disk probe after an I/O error uses."""
    db = fresh(waiting[0], tmp_path)
    shutil.copyfile(waiting[0].with_name("cold_app.py"), tmp_path / "cold_app.py")
    out, mods, _state = run_cli(tmp_path, "--db", str(db), "--app", "cold=cold_app:APP", "resume", "s",
                                f"{waiting[1]}=true", no_site=True)
    assert "COMPLETED" in out, out
    unused = {"shutil", "bz2", "lzma", "zipfile", "email", "csv"} | ({"importlib.metadata"} if _no_pydantic_plugins() else set())
    assert not mods & unused, sorted(mods & unused)



@pytest.mark.parametrize("command", ["start", "cancel", "claim", "bulk-answer", "bulk-answer --dry-run"])
def test_other_writing_commands_spare_the_plugin_lookup_as_resume_does(waiting: tuple[Path, str], tmp_path: Path,
                                                                      command: str) -> None:
    """``hitl start`` and ``bulk-answer`` (turns), ``cancel`` and ``claim`` (operator events)
    build validators too, and so does a bulk dry run, which writes nothing but validates the
    answers (the store's opening spares the lookup for a command that writes, runs a turn or says
    it validates): with no plugin installed, pydantic's plugin cache is given that answer, so no
    distribution's metadata is read and importlib.metadata is not imported."""
    db = fresh(waiting[0], tmp_path)
    shutil.copyfile(waiting[0].with_name("cold_app.py"), tmp_path / "cold_app.py")
    conn = sqlite3.connect(db)
    (inv,) = conn.execute("SELECT invocation_id FROM interrupts WHERE status = 'open'").fetchone()
    conn.close()
    argv, said = {
        "start": (["--app", "cold=cold_app:APP", "start", "cold", "--session", "s2", "go"], "WAITING"),
        "cancel": (["cancel", "s", inv, "--reason", "not needed", "--yes"], "cancelled invocation"),
        "claim": (["claim", "s", waiting[1]], "claimed"),
        "bulk-answer": (["--app", "cold=cold_app:APP", "bulk-answer", "--answer", "true", "--item", "s", inv, waiting[1]],
                        "1 applied"),
        "bulk-answer --dry-run": (["bulk-answer", "--answer", "true", "--item", "s", inv, waiting[1], "--dry-run"],
                                  "nothing was written"),
    }[command]
    out, mods, state = run_cli(tmp_path, "--db", str(db), *argv, no_site=True)
    assert said in out, out
    if _no_pydantic_plugins():
        assert state["plugins"] == []
        assert "importlib.metadata" not in mods, sorted(m for m in mods if "metadata" in m)

PLUGIN_SOURCE = """
import os


class Plugin:
    def new_schema_validator(self, schema, schema_type, schema_type_path, schema_kind, config, plugin_settings):
        with open(os.environ["PLUGIN_LOG"], "a", encoding="utf-8") as f:
            f.write(f"{schema_type_path.module}.{schema_type_path.name}\\n")
        return None, None, None


plugin = Plugin()
"""
"""A pydantic plugin that writes down each validator built with it."""


def test_resume_still_uses_an_installed_pydantic_plugin(waiting: tuple[Path, str], tmp_path: Path) -> None:
    """``hitl resume`` spares pydantic its plugin lookup only when no distribution
    declares one: with a plugin installed (a dist-info folder with a ``[pydantic]``
    entry point on the path), the plugin is loaded and sees the turn's validators."""
    site = tmp_path / "site"
    (site / "fakeplug-1.0.dist-info").mkdir(parents=True)
    (site / "fakeplug-1.0.dist-info" / "METADATA").write_text("Metadata-Version: 2.1\nName: fakeplug\nVersion: 1.0\n")
    (site / "fakeplug-1.0.dist-info" / "entry_points.txt").write_text("[console_scripts]\nx = y:z\n\n[pydantic]\nfake = fakeplug:plugin\n")
    (site / "fakeplug.py").write_text(PLUGIN_SOURCE)
    log = tmp_path / "plugin.log"
    db = fresh(waiting[0], tmp_path)
    shutil.copyfile(waiting[0].with_name("cold_app.py"), tmp_path / "cold_app.py")
    out, _mods, state = run_cli(tmp_path, "--db", str(db), "--app", "cold=cold_app:APP", "resume", "s",
                                f"{waiting[1]}=true", path=f":{site}", env={"PLUGIN_LOG": str(log)})
    assert "COMPLETED" in out, out
    assert state["plugins"] == ["fakeplug:plugin"]
    assert "engine.models.Event" in log.read_text().split()


def test_a_spared_plugin_lookup_reads_no_distribution(monkeypatch: pytest.MonkeyPatch) -> None:
    """With no plugin installed, pydantic's first lookup (what building a validator
    runs) reads no distribution's metadata after ``skip_empty_plugin_scan``, and
    finds no plugin; the environment is unchanged. With the variable set by the
    operator, or a plugin installed, pydantic's own lookup runs as before."""
    from pydantic.plugin import _loader

    import console.cli.plugin_lookup as lookup

    reads: list[int] = []
    monkeypatch.setattr(_loader.importlib_metadata, "distributions", lambda: reads.append(1) or [])
    monkeypatch.delenv("PYDANTIC_DISABLE_PLUGINS", raising=False)
    monkeypatch.setattr(_loader, "_plugins", None)
    monkeypatch.setattr(lookup, "_no_pydantic_plugins", lambda: True)
    lookup.skip_empty_plugin_scan()
    assert list(_loader.get_plugins()) == [] and reads == []
    assert "PYDANTIC_DISABLE_PLUGINS" not in os.environ
    for unsure, env in ((False, None), (True, "other")):
        monkeypatch.setattr(_loader, "_plugins", None)
        monkeypatch.setattr(lookup, "_no_pydantic_plugins", lambda unsure=unsure: unsure)
        if env is not None:
            monkeypatch.setenv("PYDANTIC_DISABLE_PLUGINS", env)
        lookup.skip_empty_plugin_scan()
        assert list(_loader.get_plugins()) == [] and len(reads) == 1
        reads.clear()


STAND_IN_PROBE = """
import json, sys
import console.cli.plugin_lookup as lookup
lookup.skip_empty_plugin_scan()
from pydantic.plugin import _loader
spared = ("importlib.metadata" in sys.modules, list(_loader.get_plugins()))
sys.path.append(sys.argv[1])  # a plugin installed after the spared lookup
import importlib.metadata
import pydantic
version = importlib.metadata.version("pydantic") == pydantic.VERSION
_loader._plugins = None  # the answer reset: pydantic's own lookup, through what its loader holds
found = [type(p).__module__ for p in _loader.get_plugins()]
print(json.dumps({"spared": spared, "version": version, "found": found,
                  "same": sys.modules["importlib.metadata"] is importlib.metadata}))
"""


def test_a_spared_lookup_imports_no_metadata_and_a_later_one_still_reads_it(tmp_path: Path) -> None:
    """pydantic's plugin loader imports importlib.metadata when it is imported; with
    the lookup spared it is not imported at all. Imported later by anyone it is the
    real module, and a lookup pydantic runs after all (its answer reset) reads the
    installed distributions through what its loader holds, and finds a plugin."""
    site = tmp_path / "site"
    (site / "fakeplug-1.0.dist-info").mkdir(parents=True)
    (site / "fakeplug-1.0.dist-info" / "METADATA").write_text("Metadata-Version: 2.1\nName: fakeplug\nVersion: 1.0\n")
    (site / "fakeplug-1.0.dist-info" / "entry_points.txt").write_text("[pydantic]\nfake = fakeplug:plugin\n")
    (site / "fakeplug.py").write_text(PLUGIN_SOURCE)
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "PYTHONPATH": str(ROOT), "PLUGIN_LOG": str(tmp_path / "log")}
    out = subprocess.run([sys.executable, "-c", STAND_IN_PROBE, str(site)], capture_output=True, text=True,
                         cwd=tmp_path, env=env, check=False)
    assert out.returncode == 0, out.stderr
    seen = json.loads(out.stdout)
    if _no_pydantic_plugins():
        assert seen["spared"] == [False, []]
    assert seen["version"] and seen["same"]
    assert seen["found"] == ["fakeplug"]


FORMS_PROBE = """
import json, sys
from console.cli.plugin_lookup import _ImportedOnFirstRead
stand_in = sys.modules["importlib.metadata"] = _ImportedOnFirstRead("importlib.metadata")
from importlib.metadata import entry_points, version  # pydantic 2.14's loader
import importlib.metadata as md  # pydantic 2.13's
del sys.modules["importlib.metadata"]
before = "importlib.metadata" in sys.modules
found = [e.value for e in entry_points(group="pydantic")]
import importlib.metadata
import pydantic
print(json.dumps({"before": before, "found": found, "version": version("pydantic") == pydantic.VERSION,
                  "error": md.PackageNotFoundError is importlib.metadata.PackageNotFoundError,
                  "real": sys.modules["importlib.metadata"] is not stand_in}))
"""


def test_the_metadata_stand_in_serves_both_import_forms(tmp_path: Path) -> None:
    """``from importlib.metadata import entry_points`` (pydantic 2.14's loader) and
    ``import importlib.metadata as m`` (2.13's) both take the stand-in without
    importing the module; its functions then read the installed distributions,
    and its other names are the real module's."""
    site = tmp_path / "site"
    (site / "fakeplug-1.0.dist-info").mkdir(parents=True)
    (site / "fakeplug-1.0.dist-info" / "METADATA").write_text("Metadata-Version: 2.1\nName: fakeplug\nVersion: 1.0\n")
    (site / "fakeplug-1.0.dist-info" / "entry_points.txt").write_text("[pydantic]\nfake = fakeplug:plugin\n")
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "PYTHONPATH": f"{ROOT}:{site}"}
    out = subprocess.run([sys.executable, "-c", FORMS_PROBE], capture_output=True, text=True, cwd=tmp_path, env=env,
                         check=False)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == {"before": False, "found": ["fakeplug:plugin"], "version": True, "error": True,
                                      "real": True}


def test_the_plugin_look_is_unsure_of_zips_and_eggs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Where importlib.metadata could find a distribution the quick look does not
    read -- inside a zip, an egg -- the look answers "there may be plugins"; a
    dist-info without entry points, an egg-info file and a missing folder are none."""
    (tmp_path / "plain-1.0.dist-info").mkdir()
    (tmp_path / "old.egg-info").write_text("Name: old\n")
    (tmp_path / "other-1.0.dist-info").mkdir()
    (tmp_path / "other-1.0.dist-info" / "entry_points.txt").write_text("[pydantic_other]\nx = y:z\n")
    monkeypatch.setattr(sys, "path", [str(tmp_path), str(tmp_path / "missing")])
    assert _no_pydantic_plugins()
    (tmp_path / "lib.zip").write_bytes(b"PK\x05\x06" + bytes(18))
    monkeypatch.setattr(sys, "path", [str(tmp_path), str(tmp_path / "lib.zip")])
    assert not _no_pydantic_plugins()
    (tmp_path / "thing-1.0-py3.11.egg").mkdir()
    monkeypatch.setattr(sys, "path", [str(tmp_path)])
    assert not _no_pydantic_plugins()
    (tmp_path / "thing-1.0-py3.11.egg").rmdir()
    assert _no_pydantic_plugins()  # the interpreter's own path finder reads what the look reads

    class Finder:  # a finder of its own kind: importlib.metadata asks it for distributions too
        @staticmethod
        def find_distributions(*_: object) -> list[object]:
            return []

    monkeypatch.setattr(sys, "meta_path", [*sys.meta_path, Finder])
    assert not _no_pydantic_plugins()


def test_answer_rules_still_filter_with_the_grammar_imported_late(tmp_path: Path) -> None:
    """``[[answer]]`` rules are parsed with :mod:`engine.bulk_filter`, imported when a
    hitl.toml has rules: a rule's ``where`` still decides who may answer."""
    from engine.permissions import AnswerRule, load_policy

    cfg = tmp_path / "hitl.toml"
    cfg.write_text('[groups]\nfin = ["ann"]\n[[answer]]\napp = "refunds"\nwhere = "amount>100"\nallow = ["@fin"]\n')
    policy = load_policy(cfg)
    (rule,) = policy.rules
    assert rule.matches("refunds", "wf@1/ask@1", {"payload": {"amount": 500}})
    assert not rule.matches("refunds", "wf@1/ask@1", {"payload": {"amount": 50}})
    assert not rule.matches("other", "wf@1/ask@1", {"payload": {"amount": 500}})
    assert AnswerRule().where.empty and AnswerRule().matches("any", "wf@1/ask@1", {})


def test_a_malformed_config_is_still_one_line_for_each_reader(tmp_path: Path) -> None:
    """Each reader of hitl.toml still turns a TOML syntax error into its own message
    (tomllib is imported only when a file is parsed, its error caught as the ValueError it is)."""
    from engine.apps import AppRegistry, default_operator
    from engine.errors import HitlError
    from engine.redact import load_patterns
    from engine.store.factory import store_config

    bad = tmp_path / "hitl.toml"
    bad.write_text("[secrets\npatterns = 3\n")
    for read in (load_patterns, store_config, AppRegistry().load_config):
        with pytest.raises(HitlError, match="cannot (be )?read.*Expected ']'"):
            read(bad)
    assert default_operator(bad) == default_operator(tmp_path / "missing.toml")  # falls back to $USER


DEFER_PROBE = """
import gc, json, sys
from console.cli import defer_first_collection
gc.set_threshold(*{before})
if {own} is not None:
    gc.callbacks.append(lambda phase, info: phase == "start" and gc.set_threshold(*{own}))
defer_first_collection(gen0=5_000)
during = gc.get_threshold()
hooked = len(gc.callbacks)
seen = []
if {later}:
    gc.callbacks.append(lambda phase, info: seen.append(phase))
keep = [[] for _ in range(20_000)]  # enough new objects for a collection at the deferred threshold
print(json.dumps({{"during": during, "after": gc.get_threshold(), "hooked": hooked, "left": len(gc.callbacks),
                   "starts": seen.count("start"), "stops": seen.count("stop")}}))
"""


def _defer(before: tuple[int, int, int], own: tuple[int, int, int] | None = None, later: bool = False) -> dict[str, Any]:
    """``defer_first_collection`` in a fresh interpreter whose thresholds were ``before``
    (``own``: something sets these at the first collection; ``later``: a callback added
    after it counts the collections' phases): the thresholds in between and after enough
    allocations for a collection, and the callbacks it left."""
    code = DEFER_PROBE.format(before=before, own=own, later=later)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT,
                         env={**os.environ, "PYTHONPATH": str(ROOT)}, check=False)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def test_the_first_collection_waits_then_the_thresholds_are_the_interpreters_again() -> None:
    """Deferred, not switched off: the first collection comes after ``gen0`` new objects
    (not 700), and from then on the GC runs with the thresholds it had."""
    got = _defer((700, 10, 10))
    assert got["during"] == [5_000, 10, 10]
    assert got["after"] == [700, 10, 10]
    assert got["left"] == got["hooked"] - 1  # the last callback: it removed itself


def test_a_callback_added_after_the_deferral_sees_every_collection_whole() -> None:
    """The GC calls its callbacks by index: the deferral's own, ended at the first
    collection's stop, must not make the next callback miss that stop."""
    got = _defer((700, 10, 10), later=True)
    assert got["starts"] >= 1  # it did collect
    assert got["starts"] == got["stops"]
    assert got["after"] == [700, 10, 10]
    assert got["left"] == got["hooked"] + 1  # the deferral's callback stays (inert), the later one too


def test_deferring_leaves_an_operators_own_gc_settings() -> None:
    """A threshold of 0 (collection off), one already laxer than the deferral, or one
    set by someone else before the first collection is left as it is."""
    assert _defer((0, 10, 10))["after"] == [0, 10, 10]
    assert _defer((50_000, 5, 5))["during"] == [50_000, 5, 5]
    assert _defer((700, 10, 10), own=(1_234, 7, 7))["after"] == [1_234, 7, 7]


def test_the_console_scripts_import_loads_nothing_before_main() -> None:
    """``from console.cli import main`` (the ``hitl`` script's first line) loads no
    command-line code: click and the group load inside ``main()``, after it deferred
    the GC's first collection; the package's names still resolve, to the same objects."""
    probe = (
        "import json, sys\n"
        "from console.cli import main\n"
        "before = sorted(m for m in sys.modules if m.split('.')[0] in ('click', 'console', 'engine', 'pydantic'))\n"
        "import console.cli as pkg, console.cli.output as output, console.times as times\n"
        "print(json.dumps([before, pkg.age is times.age, pkg.fail is output.fail, callable(pkg.cli)]))\n"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=ROOT,
                         env={**os.environ, "PYTHONPATH": str(ROOT)}, check=False)
    assert out.returncode == 0, out.stderr
    before, same_age, same_fail, has_cli = json.loads(out.stdout)
    assert before == ["console", "console.cli"]
    assert same_age and same_fail and has_cli
