"""One browser connection's console process: ``python -m console.serve.child``.

textual-serve starts this for every websocket (with Textual's web driver in
the environment); it runs the very console ``hitl`` runs, on the server's
store and options, for the signed-in operator: ``--operator NAME`` pins the
name recorded on every write, ``--read-only`` (the viewer role, or the
server's own ``--read-only``) opens the store read-only and disables every
write key, which then says ``--read-only-reason``.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import inspect
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

DRAWN_NICE = 5
"""Once its first screen is drawn, a console runs at a lower CPU priority than the web server and
the consoles still starting (the server's start queue bounds those), so a sign-in or a new
console is served first while fifty consoles sit open."""

READY = "hitl_ready"
"""The meta message a served console sends once its first screen is drawn (the server's start
queue then lets the next console start: :mod:`console.serve.starts`)."""

SCREENSHOTS_PER_CONSOLE = 10
"""Screenshots one browser connection may save on the server's disk (the palette's screenshot)."""


def build_argv(
    python: str,
    *,
    db: str | Path,
    read_only: bool,
    config: str | None,
    apps: Sequence[str],
    show_secrets: bool,
    secret_patterns: Sequence[str],
    operator: str | None,
    read_only_reason: str | None,
) -> list[str]:
    """The command line of one connection's console (an argv list: no shell, names are data;
    every value is given as ``--option=VALUE``, so a name starting with ``-`` stays a value)."""
    argv = [python, "-m", "console.serve.child", f"--db={db}"]
    if read_only:
        argv.append("--read-only")
    if config:
        argv.append(f"--config={config}")
    for spec in apps:
        argv.append(f"--app={spec}")
    if show_secrets:
        argv.append("--show-secrets")
    for pattern in secret_patterns:
        argv.append(f"--secret-pattern={pattern}")
    if operator:
        argv.append(f"--operator={operator}")
    if read_only_reason:
        argv.append(f"--read-only-reason={read_only_reason}")
    return argv


def build_app(argv: Sequence[str] | None = None) -> Any:
    """The console ``argv`` describes (not yet running): what :func:`main` runs, and what the
    fork server draws once, headless, to warm every console's first screen."""
    parser = argparse.ArgumentParser(prog="console.serve.child")
    parser.add_argument("--db", required=True)
    parser.add_argument("--read-only", action="store_true")
    parser.add_argument("--config")
    parser.add_argument("--app", action="append", default=[])
    parser.add_argument("--show-secrets", action="store_true")
    parser.add_argument("--secret-pattern", action="append", default=[])
    parser.add_argument("--operator")
    parser.add_argument("--read-only-reason")
    args = parser.parse_args(argv)

    from engine.apps import AppRegistry
    from engine.store.factory import is_url

    from ..app import HitlApp
    from ..cli.options import Options

    return served_console(HitlApp)(
        db_path=args.db if is_url(args.db) else Path(args.db),
        store_options=Options(config=args.config).store_options(),
        screenshot_limit=SCREENSHOTS_PER_CONSOLE,
        read_only=args.read_only,
        registry=AppRegistry.from_options(args.app, args.config),
        show_secrets=args.show_secrets,
        secret_patterns=tuple(args.secret_pattern),
        operator=args.operator,
        read_only_reason=args.read_only_reason,
    )


@functools.cache
def served_console(base: type[Any]) -> type[Any]:
    """The console class a browser connection runs: ``base`` that tells textual-serve (a meta
    message) when its first screen is drawn -- the sessions list's first page, or its error.
    One class per process (the fork server's warm-up and its consoles share it)."""

    css = getattr(base, "CSS_PATH", None)

    class ServedConsole(base):
        if isinstance(css, str):  # Textual resolves a relative path beside the class that names it
            CSS_PATH = str(Path(inspect.getfile(base)).parent / css)
        _announced = False

        def _announce(self) -> None:
            if not self._announced:
                self._announced = True
                # two refreshes on: a callback may run on an update tick that drew nothing new
                self.call_after_refresh(self.call_after_refresh, self._say_drawn)

        def _say_drawn(self) -> None:
            write_meta = getattr(self._driver, "write_meta", None)
            if write_meta is not None:  # the web driver (headless, as in the warm-up, has none)
                write_meta({"type": READY})
                with contextlib.suppress(OSError):
                    os.nice(DRAWN_NICE)

        def on_sessions_loaded(self) -> None:  # bubbled up from the sessions screen
            self._announce()

        def on_store_failed(self) -> None:
            self._announce()

    return ServedConsole


def main(argv: Sequence[str] | None = None) -> None:
    build_app(argv).run()


if __name__ == "__main__":
    main()
