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
    kinds = [k for k in vars(capabilities).values() if isinstance(k, type) and getattr(k, "_is_protocol", False)]
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
