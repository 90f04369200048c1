"""Every snapshot file belongs to a test that still exists.

syrupy fails a one-process run on an unused snapshot, but not a pytest-xdist run
(each worker sees only part of the suite), and scripts/test runs workers. This
keeps the part of that check that matters: a renamed or deleted snapshot test
cannot leave its old SVG behind, looking like a screen that is still tested.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

HERE = Path(__file__).parent
SNAPSHOTS = HERE / "__snapshots__"


def defined_functions(module: Path) -> set[str]:
    tree = ast.parse(module.read_text())
    return {n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)}


def test_every_snapshot_file_has_its_test() -> None:
    files = sorted(SNAPSHOTS.rglob("*.svg"))
    assert files, f"no snapshots under {SNAPSHOTS}"
    orphans = []
    for svg in files:
        module = HERE / f"{svg.parent.name}.py"
        # test_x.svg, test_x[param].svg, test_x.1.svg (a second snapshot in one test)
        name = re.sub(r"(\[.*\])?(\.\d+)?$", "", svg.stem)
        if not module.is_file() or name not in defined_functions(module):
            orphans.append(str(svg.relative_to(HERE)))
    assert not orphans, f"snapshots whose test is gone (delete them, or run --snapshot-update): {orphans}"
