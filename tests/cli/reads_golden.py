"""What the long read commands printed before they were made fast, kept as the
reference their output must equal byte for byte (tests/cli/test_reads_identical.py).

    python -m tests.cli.reads_golden     # rewrite tests/cli/golden/reads.json.gz

Run it only when a change is *meant* to change what ``events``, ``show
--all-runs``, ``replay --diff-from`` or ``export`` print, and look at the diff.
It reads the committed demo fixture (sample_sessions/fixtures/demo.sqlite), in
UTC, plain and with extra secret patterns (so masking of values and of the text
repeating them is part of the reference).
"""

from __future__ import annotations

import gzip
import json
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

from click.testing import CliRunner

from sample_sessions.demo import FIXTURE_PATH

GOLDEN = Path(__file__).parent / "golden" / "reads.json.gz"
SESSIONS = {
    "deploy-long-1": 1208,
    "refund-multi-1": 37,
    "contracts-partial-1": 34,
    "labels-partial-1": 187,
    "incident-redriven-1": 23,
    "refund-cancelled-1": 12,
    "refund-completed-1": 23,
    "review-completed-1": 21,
}
"""Session -> its event count in the fixture."""
MASKS = ("--secret-pattern", "amount", "--secret-pattern", "reason", "--secret-pattern", "env",
         "--secret-pattern", "approved", "--secret-pattern", "label")


def cases() -> Iterator[tuple[str, list[str]]]:
    """(name, argv after --db) of every reference output."""
    for sid, total in SESSIONS.items():
        mid = total // 2
        for flags, tag in (((), ""), (MASKS, " masked")):
            for fmt, ftag in (((), ""), (("--json",), " json")):
                pre = ["--utc", *flags, *fmt]
                yield f"{sid}{tag}{ftag} events", [*pre, "events", sid]
                yield f"{sid}{tag}{ftag} events after", [*pre, "events", sid, "--after", str(mid), "--limit", "7"]
                yield f"{sid}{tag}{ftag} show all-runs", [*pre, "show", sid, "--all-runs"]
                yield f"{sid}{tag}{ftag} diff", [*pre, "replay", sid, "--at", str(total), "--diff-from", "1"]
                yield f"{sid}{tag}{ftag} diff mid", [*pre, "replay", sid, "--at", str(mid), "--diff-from", str(mid // 2)]
            yield f"{sid}{tag} export", ["--utc", *flags, "export", sid]


def render(db: Path) -> dict[str, str]:
    """Each case's stdout (and its exit code when not 0) on the store ``db``."""
    from console.cli import cli

    runner = CliRunner()
    got = {}
    for name, argv in cases():
        r = runner.invoke(cli, ["--db", str(db), *argv], catch_exceptions=False)
        got[name] = r.stdout if r.exit_code == 0 else f"exit {r.exit_code}\n{r.stdout}{r.stderr}"
    return got


def fixture_copy(work: Path) -> Path:
    db = work / "demo.sqlite"
    shutil.copy(FIXTURE_PATH, db)
    return db


def main() -> int:
    with tempfile.TemporaryDirectory() as work:
        got = render(fixture_copy(Path(work)))
    GOLDEN.parent.mkdir(exist_ok=True)
    GOLDEN.write_bytes(gzip.compress(json.dumps(got, sort_keys=True, ensure_ascii=False).encode(), mtime=0))
    print(f"{len(got)} outputs, {sum(map(len, got.values())):,} characters -> {GOLDEN}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
