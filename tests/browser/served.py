"""A real ``hitl serve`` in a subprocess, on a copy of the demo store, with a test hitl.toml."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from argon2 import PasswordHasher

# Cheap parameters: verification cost is carried by each hash, and tests sign in a lot.
HASHER = PasswordHasher(time_cost=1, memory_cost=1024, parallelism=1)
PASSWORDS = {"alice": "correct horse battery", "val": "viewer pass 42"}
"""alice is an operator, val a viewer."""


def write_config(directory: Path, *, extra: str = "", max_failed: int = 3) -> Path:
    path = directory / "hitl.toml"
    path.write_text(
        f"""[serve]
title = "hitl console (test)"
max_failed_signins = {max_failed}
signin_window_seconds = 600
{extra}
[serve.operators.alice]
role = "operator"
password_hash = "{HASHER.hash(PASSWORDS["alice"])}"

[serve.operators.val]
role = "viewer"
password_hash = "{HASHER.hash(PASSWORDS["val"])}"
""",
        encoding="utf-8",
    )
    return path


def hitl_bin() -> str:
    found = shutil.which("hitl", path=str(Path(sys.executable).parent)) or shutil.which("hitl")
    assert found, "the hitl console script is not installed in this environment"
    return found


@dataclass
class Served:
    """A running ``hitl serve``: its URL, its store, its log lines."""

    url: str
    db: Path | str | None
    process: subprocess.Popen[str]
    lines: list[str] = field(default_factory=list)

    def log(self) -> str:
        return "".join(self.lines)

    def wait_log(self, needle: str, timeout: float = 20.0) -> None:
        deadline = time.monotonic() + timeout
        while needle not in self.log():
            if time.monotonic() > deadline:
                raise AssertionError(f"{needle!r} never appeared in the server log:\n{self.log()}")
            time.sleep(0.05)

    def wait_count(self, needle: str, count: int, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while self.log().count(needle) < count:
            if time.monotonic() > deadline:
                raise AssertionError(f"{needle!r} not {count} times in the server log:\n{self.log()}")
            time.sleep(0.05)


@contextmanager
def serve(db: Path | str | None, *args: str, cwd: Path, env: dict[str, str] | None = None) -> Iterator[Served]:
    """``hitl serve --db DB --port 0 ARGS`` until the block ends; waits for its "serving ... on URL" line.
    ``db`` None: no --db (the store from $HITL_DB or hitl.toml)."""
    proc = subprocess.Popen(
        [hitl_bin(), "serve", *(["--db", str(db)] if db is not None else []), "--port", "0", *args],
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, **(env or {})},
    )
    assert proc.stderr is not None
    served = Served("", db, proc)

    def drain() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            served.lines.append(line)

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    deadline = time.monotonic() + 60
    try:
        while not served.url:
            for line in list(served.lines):
                if line.startswith("serving ") and " on http" in line:
                    served.url = line.split(" on ", 1)[1].split(" ", 1)[0].rstrip("/")
            if proc.poll() is not None and not served.url:
                raise AssertionError(f"hitl serve exited {proc.returncode}:\n{served.log()}")
            if time.monotonic() > deadline:
                raise AssertionError(f"hitl serve did not start:\n{served.log()}")
            time.sleep(0.05)
        yield served
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        reader.join(30)  # its last lines (written as it stopped) are in the log once the block ends


def label(db: Path | str) -> str:
    """How the served pages name the store (a path as is, a URL with its password masked)."""
    from engine.store.factory import store_label

    return store_label(db)


class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: object, **kwargs: object) -> None:
        return None


def request(
    url: str, *, data: bytes | None = None, headers: dict[str, str] | None = None
) -> tuple[int, dict[str, str], str]:
    """One HTTP request, redirects not followed: (status, headers, body)."""
    opener = urllib.request.build_opener(NoRedirect)
    req = urllib.request.Request(url, data=data, headers=headers or {})
    try:
        with opener.open(req, timeout=30) as resp:
            return resp.status, dict(resp.headers), resp.read().decode("utf-8", "replace")
    except urllib.error.HTTPError as err:
        return err.code, dict(err.headers), err.read().decode("utf-8", "replace")
