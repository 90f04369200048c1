"""schemathesis against a live ``hitl serve`` (the real command, a copy of the
demo store, a service token from hitl.toml): every operation but the endless
streams, fuzzed and walked through its links; no 5xx, and every response
matches the OpenAPI document (status, content type, body schema)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.browser.served import HASHER, serve

pytestmark = pytest.mark.hypothesis  # schemathesis is hypothesis underneath: a slow kind (not in --quick)

TOKEN = "schemathesis-token-5d1e"
CHECKS = "not_a_server_error,response_schema_conformance,content_type_conformance,status_code_conformance"


@pytest.fixture
def store(demo_db: Path, tmp_path: Path) -> Path:
    path = tmp_path / "store.sqlite"
    shutil.copy(demo_db, path)
    return path


def test_schemathesis_finds_no_server_error_and_no_response_outside_the_document(store: Path, tmp_path: Path) -> None:
    pytest.importorskip("schemathesis")
    config = tmp_path / "hitl.toml"
    config.write_text(f'[serve.operators.bot]\nrole = "operator"\ntoken_hash = "{HASHER.hash(TOKEN)}"\n',
                      encoding="utf-8")
    with serve(store, "--config", str(config), cwd=tmp_path) as served:
        done = subprocess.run(
            [sys.executable, "-m", "schemathesis.cli", "run", f"{served.url}/api/v1/openapi.json",
             "--checks", CHECKS, "--exclude-path-regex", "stream", "-H", f"Authorization: Bearer bot:{TOKEN}",
             "--max-examples", "10", "--seed", "1", "--workers", "1", "--request-timeout", "60"],
            capture_output=True, text=True, timeout=900, cwd=tmp_path,
        )
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-2000:]
    assert " passed" in done.stdout and "failed" not in done.stdout.split("SUMMARY")[-1]
    # The API logs any exception it did not expect ("API ... failed", then a 500): none.
    # (aiohttp's own parser logs the malformed requests schemathesis probes with, e.g. a NUL
    # in a header, and answers 400 before any route runs: not the API's.)
    log = served.log()
    assert "hitl.serve.api ERROR" not in log, log[-4000:]
