"""Ordinary non-ASCII text on a terminal whose encoding cannot show it (a
latin-1 or ASCII locale): every command prints, never a UnicodeEncodeError
traceback. Human lines show what the encoding lacks as escapes; ``--json`` is
ASCII JSON there (it decodes back to the exact text); ``hitl export`` is UTF-8
whatever the locale, so ``hitl import`` reads back exactly what was stored.

Real processes (``python -m console.cli``), since the encoding is the
process's own (``PYTHONIOENCODING`` sets it as a locale would)."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from engine.store.sqlite import SQLiteStore

REPO = Path(__file__).resolve().parents[2]
STATE = {"note": "disque plein à 91 % — 東京 😀"}
USER = "jürgen-東"


def add_session(db: Path, session_id: str, state: dict[str, str]) -> None:
    """A session of ``USER`` (not ASCII) with ``state`` in the store at ``db``."""

    async def add() -> None:
        store = await SQLiteStore.open(db)
        try:
            await store.create_session("document_review", USER, session_id, state=state)
        finally:
            await store.close()

    asyncio.run(add())


@pytest.fixture
def unicode_db(db: Path) -> Path:
    """The demo store plus ``uni-1``: a session whose user and state are not ASCII."""
    add_session(db, "uni-1", STATE)
    return db


def hitl_in(encoding: str, db: Path, *argv: str) -> subprocess.CompletedProcess[bytes]:
    env = {k: v for k, v in os.environ.items() if k != "HITL_DB"}
    env.update(PYTHONIOENCODING=encoding, USER="tester")
    return subprocess.run(
        [sys.executable, "-W", "error::DeprecationWarning", "-m", "console.cli", "--db", str(db), *argv],
        capture_output=True,
        cwd=REPO,
        env=env,
        timeout=120,
    )


def succeeded(proc: subprocess.CompletedProcess[bytes]) -> bytes:
    err = proc.stderr.decode("utf-8", "replace")
    assert proc.returncode == 0 and "Traceback" not in err, f"exit {proc.returncode}: {err}"
    return proc.stdout


@pytest.mark.parametrize("encoding", ["latin-1", "ascii", "utf-8"])
def test_show_and_sessions_print_in_any_terminal_encoding(unicode_db: Path, encoding: str) -> None:
    # (under ASCII, click itself writes UTF-8: an ASCII locale is mostly a misconfigured one)
    shown = succeeded(hitl_in(encoding, unicode_db, "show", "uni-1")).decode(
        "utf-8" if encoding == "ascii" else encoding
    )
    assert shown.startswith("session uni-1")
    state_line = next(line for line in shown.splitlines() if line.startswith("state"))
    if encoding == "latin-1":  # what latin-1 has is shown as is, the rest as escapes
        assert "disque plein à 91 % \\u2014 \\u6771\\u4eac \\U0001f600" in state_line
    listed = succeeded(hitl_in(encoding, unicode_db, "sessions", "--user", USER))
    assert b"uni-1" in listed


@pytest.mark.parametrize("encoding", ["latin-1", "ascii", "utf-8"])
def test_json_output_decodes_to_the_exact_text_in_any_terminal_encoding(unicode_db: Path, encoding: str) -> None:
    raw = succeeded(hitl_in(encoding, unicode_db, "--json", "show", "uni-1"))
    if encoding != "utf-8":
        assert raw.isascii()  # readable in any ASCII-based encoding, by any JSON reader
    data = json.loads(raw.decode("utf-8"))
    assert data["session"]["state"] == STATE and data["session"]["user_id"] == USER


def test_export_is_utf8_in_a_latin1_terminal_and_imports_back_exactly(unicode_db: Path, tmp_path: Path) -> None:
    exported = succeeded(hitl_in("latin-1", unicode_db, "export", "uni-1"))
    header = json.loads(exported.decode("utf-8").splitlines()[0])
    assert header["session"]["state"] == STATE
    path = tmp_path / "uni.jsonl"
    path.write_bytes(exported)
    succeeded(hitl_in("latin-1", unicode_db, "import", str(path), "--as", "uni-2"))
    again = json.loads(succeeded(hitl_in("utf-8", unicode_db, "--json", "show", "uni-2")))
    assert again["session"]["state"] == STATE and again["session"]["user_id"] == USER


def test_copy_shows_its_progress_without_deprecated_click_calls(unicode_db: Path, tmp_path: Path) -> None:
    # -W error::DeprecationWarning (hitl_in): a call Click 9 removes fails the command here
    target = tmp_path / "copy.sqlite"
    proc = hitl_in("utf-8", unicode_db, "copy", "--from", str(unicode_db), "--to", str(target))
    succeeded(proc)
    assert b"copying" in proc.stderr
    shown = json.loads(succeeded(hitl_in("utf-8", target, "--json", "show", "uni-1")))
    assert shown["session"]["state"] == STATE


def test_secrets_stay_masked_in_ascii_json(db: Path) -> None:
    # --json in a latin-1 terminal escapes non-ASCII text: the redactor, which runs on
    # the printed JSON, must still find the secrets' keys and values there
    add_session(db, "sec-1", {"password": "été-東京", "api_key": 'ab"c', "note": "token=sekrit-東"})
    for encoding in ("latin-1", "utf-8"):
        raw = succeeded(hitl_in(encoding, db, "--json", "show", "sec-1"))
        assert json.loads(raw.decode("utf-8"))["session"]["state"] == {
            "password": "***",
            "api_key": "***",
            "note": "token=***",
        }
        assert b"sekrit" not in raw and "東京".encode() not in raw and b"\\u6771\\u4eac" not in raw
