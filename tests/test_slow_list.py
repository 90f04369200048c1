"""tests/slow_tests.txt names tests that exist: a renamed or removed test cannot leave a
line behind that marks nothing (or, renamed back, something else)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_every_listed_slow_test_exists() -> None:
    lines = [line.strip() for line in (ROOT / "tests" / "slow_tests.txt").read_text(encoding="utf-8").splitlines()
             if line.strip() and not line.startswith("#")]
    assert lines
    missing = []
    for line in lines:
        path, name = line.split("::")
        source = (ROOT / path).read_text(encoding="utf-8") if (ROOT / path).is_file() else ""
        if not re.search(rf"^(async )?def {re.escape(name)}\(", source, re.M):
            missing.append(line)
    assert not missing, missing
