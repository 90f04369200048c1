"""Consoles forked from a pre-imported parent: what one more operator costs ``hitl serve``.

Starting ``python -m console.serve.child`` for every browser connection pays the
interpreter start and every import (Textual, the console, the engine, the store
drivers) each time: about 1 s of CPU and 58 MiB per console. Instead, ``hitl
serve`` starts one *fork server* at start-up (``python -m console.serve.forkserver``,
with the environment every console gets): it imports all of that once, draws one
read-only console of the store headless (:func:`warm`: what every console would
otherwise redo -- parsing the CSS, which :func:`share_parsed_css` makes one table
for all apps, the late imports, Textual's and Rich's caches), freezes its objects
out of the garbage collector (so the pages stay shared copy-on-write), and then
waits on a Unix socket. For each connection the web
server sends it the console's argv, its terminal size and three pipe ends
(``SCM_RIGHTS``); it forks, and the child -- a process of its own, as before,
with only that operator's argv -- runs :func:`console.serve.child.main`.

Isolation is what it was: one process per connection, each with its own memory
after the fork, its own pipes, its own ``--operator``; the fork server holds no
session, cookie or secret (it never sees a request), only imported code. The
web server watches a console through a pidfd (it is not its parent) and signals
it by pid, so stopping, terminating and killing work as with a subprocess.

Where fork is not available (not Linux, or the fork server failed to start),
:func:`start_console` falls back to a plain subprocess; ``[serve] fork_consoles
= false`` chooses that always.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import json
import os
import signal
import socket
import subprocess
import sys
import threading
from typing import Any

PRELOAD = (
    "textual.app", "textual.drivers.web_driver", "textual.drivers.headless_driver", "textual.widgets",
    "textual.screen", "textual.pilot", "console.app", "console.serve.child", "console.cli.options", "engine.apps",
    "engine.store.factory", "engine.store.sqlite", "engine.store.sqlite.store", "aiosqlite", "engine.store.postgres",
    "asyncpg",
)
"""Imported once by the fork server (a missing optional one is skipped)."""


# ------------------------------------------------------------------ the fork server process
def serve_forever(control: socket.socket) -> None:
    """Fork a console for each request on ``control`` until it closes (runs in the fork server)."""
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # consoles are reaped by the kernel
    while True:
        try:
            message, fds, _flags, _addr = socket.recv_fds(control, 65536, 3)
        except (OSError, ValueError):
            return
        if not message:
            return
        request = json.loads(message)
        pid = os.fork()
        if pid == 0:  # the console
            control.close()
            _become_console(request, fds)
        for fd in fds:
            os.close(fd)
        control.sendall(json.dumps({"pid": pid}).encode() + b"\n")


def _become_console(request: dict[str, Any], fds: list[int]) -> None:
    code = 1
    try:
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        os.setsid()
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
            os.close(fd)
        os.environ.update(request["env"])
        sys.argv = ["console.serve.child", *request["argv"]]
        gc.enable()
        from console.serve.child import main

        main(request["argv"])
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    except BaseException:  # noqa: BLE001 -- a console's crash ends only that console
        import traceback

        traceback.print_exc()
    finally:
        with contextlib.suppress(Exception):
            sys.stdout.flush()
            sys.stderr.flush()
        os._exit(code)


def share_parsed_css() -> None:
    """Make parsed Textual CSS one table for the whole process (and so, after a fork, for every console).

    Textual caches parsed rules per stylesheet, that is per app: every console would tokenize and
    parse the same widget and app CSS again (about a third of its CPU to first paint). Keyed by the
    CSS text, where it came from and the variables it was parsed with, the rules are the same for
    every console of one server; the warm-up console fills the table before the fork.
    """
    from textual.css.stylesheet import Stylesheet

    parse = Stylesheet._parse_rules
    shared: dict[tuple[Any, ...], Any] = {}

    def parse_once(self: Stylesheet, css: str, read_from: Any, is_default_rules: bool = False,
                   tie_breaker: int = 0, scope: str = "") -> Any:
        key = (css, read_from, is_default_rules, tie_breaker, scope, frozenset(self._variables.items()))
        rules = shared.get(key)
        if rules is None:
            rules = shared[key] = parse(self, css, read_from, is_default_rules, tie_breaker, scope)
        return rules

    # replacing a method on the class is the point: every Stylesheet of the parent shares the parses
    Stylesheet._parse_rules = parse_once  # type: ignore[method-assign]


def warm(argv: list[str], seconds: float = 30.0) -> str | None:
    """Draw one console's first screen, headless and read-only, in this process: what every console
    would otherwise do on its own after the fork (import what its screens use, parse the CSS, fill
    Textual's and Rich's caches) is then done once and shared. ``argv`` is a viewer's console of the
    server's store (no operator, read-only): nothing of any one operator is in the fork server. Returns
    why it did not finish (the consoles then start colder, nothing else changes), or None."""
    import asyncio

    from console.screens.sessions import SessionsScreen
    from console.serve.child import build_app

    async def draw() -> None:
        app = build_app(argv)
        async with app.run_test(size=(120, 36)) as pilot:
            for _ in range(int(seconds / 0.05)):  # bounded: the first page of sessions, drawn
                screen = app.screen
                if isinstance(screen, SessionsScreen) and screen.loaded_once:
                    break
                await pilot.pause(0.05)
            await pilot.pause()

    try:
        asyncio.run(asyncio.wait_for(draw(), seconds))
    except BaseException as exc:  # noqa: BLE001 -- warming is an optimisation; the consoles still start
        return f"{type(exc).__name__}: {str(exc).splitlines()[0][:120] if str(exc) else ''}"
    if threading.active_count() > 1:
        return f"{threading.active_count() - 1} threads still running after the warm-up console"
    return None


def main() -> None:
    """``python -m console.serve.forkserver FD [ARGV-JSON]``: import once, warm up, then fork consoles on request."""
    import importlib

    control = socket.socket(fileno=int(sys.argv[1]))
    for name in PRELOAD:
        with contextlib.suppress(Exception):
            importlib.import_module(name)
    share_parsed_css()
    if len(sys.argv) > 2:
        problem = warm(json.loads(sys.argv[2]))
        if problem:
            print(f"console fork server: warm-up console did not finish ({problem}); consoles start colder",
                  file=sys.stderr, flush=True)
    gc.collect()
    gc.freeze()  # what is imported now stays shared with every console (no refcount-only writes by gc)
    gc.disable()
    control.sendall(b"ready\n")
    serve_forever(control)


# ------------------------------------------------------------------ the web server's side
class ForkedProcess:
    """A forked console as the web server sees it: the subprocess API textual-serve uses."""

    def __init__(self, pid: int, stdin: asyncio.StreamWriter, stdout: asyncio.StreamReader,
                 stderr: asyncio.StreamReader) -> None:
        self.pid = pid
        self.stdin = stdin
        self.stdout = stdout
        self.stderr = stderr
        self.returncode: int | None = None

    def send_signal(self, sig: int) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.pid, sig)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)


class ForkServer:
    """The web server's handle on the fork server process."""

    def __init__(self, env: dict[str, str], python: str = sys.executable, warm: list[str] | None = None) -> None:
        """Start the fork server; ``warm``: the argv (without the interpreter) of a read-only console it
        draws once, headless, before forking any (None: imports only)."""
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        self._process = subprocess.Popen(
            [python, "-m", "console.serve.forkserver", str(theirs.fileno()),
             *([json.dumps(warm)] if warm is not None else [])],
            pass_fds=(theirs.fileno(),), env=env, stdin=subprocess.DEVNULL,
        )
        theirs.close()
        self._control = ours
        self._lock = threading.Lock()
        self._replies = ours.makefile("rb")
        ready = self._replies.readline()
        if ready != b"ready\n":
            self.close()
            raise OSError("the console fork server did not start")

    @property
    def pid(self) -> int:
        return self._process.pid

    def _fork(self, argv: list[str], env: dict[str, str], fds: list[int]) -> int:
        with self._lock:
            socket.send_fds(self._control, [json.dumps({"argv": argv, "env": env}).encode()], fds)
            reply = self._replies.readline()
        if not reply:
            raise OSError("the console fork server has gone")
        return int(json.loads(reply)["pid"])

    async def start(self, argv: list[str], env: dict[str, str]) -> ForkedProcess:
        """Fork a console running ``console.serve.child`` with ``argv`` (without the interpreter)."""
        loop = asyncio.get_running_loop()
        stdin_r, stdin_w = os.pipe()
        stdout_r, stdout_w = os.pipe()
        stderr_r, stderr_w = os.pipe()
        try:
            pid = await asyncio.to_thread(self._fork, argv, env, [stdin_r, stdout_w, stderr_w])
        finally:
            for fd in (stdin_r, stdout_w, stderr_w):
                os.close(fd)
        stdout = asyncio.StreamReader(limit=2**20)
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(stdout), os.fdopen(stdout_r, "rb", 0))
        stderr = asyncio.StreamReader(limit=2**20)
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(stderr), os.fdopen(stderr_r, "rb", 0))
        transport, protocol = await loop.connect_write_pipe(
            lambda: asyncio.streams.FlowControlMixin(), os.fdopen(stdin_w, "wb", 0)
        )
        stdin = asyncio.StreamWriter(transport, protocol, None, loop)
        return ForkedProcess(pid, stdin, stdout, stderr)

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self._control.close()
        with contextlib.suppress(Exception):
            self._process.terminate()
            self._process.wait(5)


if __name__ == "__main__":
    main()
