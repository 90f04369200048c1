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
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join([*anchor, *([base] if base else [])])
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
