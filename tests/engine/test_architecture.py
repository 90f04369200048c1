"""Checks of the code's shape that keep it so: nothing probes a store for an
optional capability except :func:`engine.store.capabilities.capability` (a typed
protocol says what each one is), and no run-time import circle in engine/ or
console/ (imports inside functions count; ``if TYPE_CHECKING:`` ones do not)."""

from __future__ import annotations

import ast
from pathlib import Path

from engine.store import capabilities

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("engine", "console")


def sources() -> list[Path]:
    return sorted(p for pkg in PACKAGES for p in (ROOT / pkg).rglob("*.py"))


def _store_expr(node: ast.expr) -> bool:
    """``store``, ``self.store``, ``self._store``, ``ctx.db``... : something that names a store."""
    text = ast.unparse(node).lower()
    return text.rsplit(".", 1)[-1].lstrip("_") in {"store", "db"}


def capability_methods() -> set[str]:
    kinds = [k for k in vars(capabilities).values() if isinstance(k, type) and getattr(k, "_is_runtime_protocol", False)]
    return {name for kind in kinds for name in capabilities.members(kind)}


def capability_probes(tree: ast.AST, methods: set[str]) -> list[str]:
    """``hasattr``/``getattr`` calls asking a store (or anything) for a capability's method by name."""
    found = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("hasattr", "getattr")):
            continue
        if len(node.args) < 2 or not isinstance(node.args[1], ast.Constant) or not isinstance(node.args[1].value, str):
            continue
        name = node.args[1].value
        if name in methods or (node.func.id == "hasattr" and _store_expr(node.args[0])):
            found.append(f"line {node.lineno}: {ast.unparse(node)}")
    return found


def test_the_scan_finds_a_probe() -> None:
    methods = capability_methods()
    assert {"request_turn", "list_workers", "change_counter", "notifications", "migrate"} <= methods
    tree = ast.parse('if hasattr(store, "list_workers"): pass\nx = getattr(db, "claim_next_turn", None)\n'
                     'hasattr(self._store, "anything")\nhasattr(obj, "__name__")')
    assert [p.split(":")[0] for p in capability_probes(tree, methods)] == ["line 1", "line 2", "line 3"]


def test_no_store_is_probed_with_hasattr() -> None:
    methods = capability_methods()
    allowed = ROOT / "engine" / "store" / "capabilities.py"  # the one place that checks
    found = {
        str(p.relative_to(ROOT)): probes
        for p in sources()
        if p != allowed and (probes := capability_probes(ast.parse(p.read_text()), methods))
    }
    assert found == {}, "use engine.store.capabilities.capability(store, Kind) instead"


# ------------------------------------------------------------------ import circles
def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _type_checking(test: ast.expr) -> bool:
    return ast.unparse(test).endswith("TYPE_CHECKING")


def from_module(node: ast.ImportFrom, package: str) -> str:
    """The absolute name of the module a ``from ... import`` in ``package`` names."""
    base = node.module or ""
    if node.level:
        anchor = package.split(".")
        anchor = anchor[: len(anchor) - (node.level - 1)]
        base = ".".join([*anchor, *([base] if base else [])])
    return base


def _imports(tree: ast.Module, here: str, is_package: bool, known: set[str]) -> set[str]:
    """The project modules ``here`` imports when it runs: at module level and in
    functions, not under ``if TYPE_CHECKING:``. ``from pkg import name`` counts
    as importing ``pkg.name`` when that is a module, else ``pkg``."""
    out: set[str] = set()
    package = here if is_package else here.rpartition(".")[0]

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and _type_checking(node.test):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = from_module(node, package)
            for a in node.names:
                full = f"{base}.{a.name}"
                out.add(full if full in known else base)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return {m for m in out if m in known and m != here}


def import_graph() -> dict[str, set[str]]:
    files = {module_name(p): p for p in sources()}
    known = set(files)
    return {m: _imports(ast.parse(p.read_text()), m, p.name == "__init__.py", known) for m, p in files.items()}


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[list[str]] = []

    def strong(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    import sys

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))
    for v in sorted(graph):
        if v not in index:
            strong(v)
    return found


def test_the_graph_sees_a_circle() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert circles(graph) == [["a", "b", "c"]]
    tree = ast.parse("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from . import b\n"
                     "def f():\n    from .c import x\n")
    assert _imports(tree, "p.a", False, {"p.a", "p.b", "p.c"}) == {"p.c"}


KNOWN: list[list[str]] = []
"""Circles left to break: none. A new circle (an import inside a function counts) fails the test."""


def test_no_import_circle_at_run_time() -> None:
    """A package's ``__init__`` importing its own modules (and they it) is not a circle
    of its own; every other one is."""
    graph = import_graph()
    for mod, deps in graph.items():  # a module importing its package's __init__ is how Python loads it
        graph[mod] = {d for d in deps if not mod.startswith(d + ".")}
    assert sorted(circles(graph)) == sorted(KNOWN)


# ------------------------------------------------------------------ the backends' boundaries
BACKENDS = ("engine.store.sqlite", "engine.store.postgres", "engine.store.SQLiteStore", "engine.store.PostgresStore")
SURFACES = ("engine", "console", "sample_sessions")
"""The product's code; tests and benchmarks exercise the backends themselves."""


def imported_names(tree: ast.Module, here: str, is_package: bool) -> list[tuple[int, str]]:
    """(line, absolute module name) of every import in ``tree``, wherever it stands
    (in a function, under ``if TYPE_CHECKING:``): ``from pkg import name`` gives
    both ``pkg`` and ``pkg.name`` (either may be the module)."""
    package = here if is_package else here.rpartition(".")[0]
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = from_module(node, package)
            found.append((node.lineno, base))
            found += [(node.lineno, f"{base}.{a.name}") for a in node.names]
    return found


def _within(name: str, package: str) -> bool:
    return name == package or name.startswith(package + ".")


def boundary_breaks(source: str, here: str, is_package: bool = False) -> list[str]:
    """The imports of module ``here`` that cross a backend's boundary: a PostgreSQL
    module importing the SQLite package, or code outside engine/store importing
    either backend (it opens one with :func:`engine.store.factory.open_store` and
    asks it for more with :mod:`engine.store.capabilities`)."""
    names = imported_names(ast.parse(source), here, is_package)
    if _within(here, "engine.store.postgres"):
        banned: tuple[str, ...] = ("engine.store.sqlite",)
    elif _within(here, "engine.store"):
        return []
    else:
        banned = BACKENDS
    return sorted({f"line {line}: {name}" for line, name in names if any(_within(name, b) for b in banned)})


def test_the_boundary_scan_sees_a_crossing() -> None:
    pg = ("from ..sqlite import _prepare\nfrom ..sql.rows import session_from_row\n"
          "from .. import sqlite\nfrom ..sqlite_notes import x\n")
    assert boundary_breaks(pg, "engine.store.postgres.reads") == [
        "line 1: engine.store.sqlite", "line 1: engine.store.sqlite._prepare", "line 3: engine.store.sqlite",
    ]
    surface = ("from engine.store.factory import open_store\nfrom engine.store.capabilities import capability\n"
               "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from engine.store.postgres import PostgresStore\n"
               "def f():\n    import engine.store.sqlite.listing\n    from engine.store import SQLiteStore, open_store\n")
    assert boundary_breaks(surface, "console.cli.reads") == [
        "line 5: engine.store.postgres", "line 5: engine.store.postgres.PostgresStore",
        "line 7: engine.store.sqlite.listing", "line 8: engine.store.SQLiteStore",
    ]
    assert boundary_breaks(surface, "engine.store.copy") == []  # the store's own modules may


def test_no_postgres_module_imports_sqlite_and_no_surface_imports_a_backend() -> None:
    files = sorted(p for pkg in SURFACES for p in (ROOT / pkg).rglob("*.py"))
    found = {
        str(p.relative_to(ROOT)): breaks
        for p in files
        if (breaks := boundary_breaks(p.read_text(), module_name(p), p.name == "__init__.py"))
    }
    assert found == {}, (
        "shared SQL lives in engine/store/sql/; a surface opens a store with "
        "engine.store.factory.open_store and narrows it with engine.store.capabilities"
    )


def test_no_surface_routes_a_write_or_follows_a_worker_itself() -> None:
    """Whether a write runs here or in a worker, and following the worker's turn, is
    engine.routing's (through engine.operations' ``via=``): no module of the console,
    the CLI, the API or the signed links queues a turn or follows one on its own."""
    own = {"queue_answer", "request_redrive", "request_start", "follow"}
    found = []
    for path in sources():
        name = module_name(path)
        if not name.startswith("console."):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and (node.module or "").endswith("handoff"):
                found += [f"{name}: imports {a.name}" for a in node.names if a.name in own]
            if isinstance(node, ast.Attribute) and node.attr in own and ast.unparse(node.value).endswith("handoff"):
                found.append(f"{name}: {ast.unparse(node)}")
    assert not found, found


def test_no_empty_type_checking_block() -> None:
    """An ``if TYPE_CHECKING: pass`` left behind by a move says nothing: none in the tree."""
    empty = []
    for path in sources():
        for node in ast.walk(ast.parse(path.read_text())):
            if (isinstance(node, ast.If) and ast.unparse(node.test).endswith("TYPE_CHECKING")
                    and all(isinstance(b, ast.Pass) for b in node.body)):
                empty.append(f"{module_name(path)}:{node.lineno}")
    assert not empty, empty


def test_no_module_over_700_lines() -> None:
    """A module a reader can hold: none of the engine's, the console's or the sample apps' is over 700 lines."""
    long = {module_name(p): n for p in sources() if (n := len(p.read_text(encoding="utf-8").splitlines())) > 700}
    assert not long, long
