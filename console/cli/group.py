"""The ``hitl`` click group (without a subcommand: the console) and the entry point.

The commands live in one module per command group, imported when a command of
theirs runs (:class:`LazyGroup`): ``hitl inbox`` does not pay for the imports of
``hitl worker`` or ``hitl serve``. ``hitl --help`` lists them from
:data:`COMMANDS` without importing any (a test keeps that table equal to the
commands' own help).
"""

from __future__ import annotations

import gc
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import click
from click.utils import make_default_short_help

from console.inputs import (
    CheckedGroup,
)
from console.times import use_utc
from engine.errors import HitlError

from .options import _opts, app_spec_option, common
from .output import fail, run

# ---------------------------------------------------------------------- lazy commands
COMMANDS: dict[str, tuple[str, str]] = {
    "audit": ("audit", "Operator writes (answers, re-drives, cancels, imports): who, when, why; newest first."),
    "assign": ("owners", "Assign open interrupts to an operator or a group."),
    "bulk-answer": ("bulk", "Answer many open interrupts across sessions with one answer: one audited message per invocation, the same validation, operator and reason as `hitl resume`."),
    "cancel": ("writes", "Cancel a waiting or failed invocation; its open interrupts close."),
    "claim": ("owners", "Claim open interrupts for yourself (the operator): others are asked before answering them."),
    "copy": ("transfer", "Copy every session of one store into another (e.g."),
    "demo": ("demo", "Build the demo store: the sample apps run through the real Runner."),
    "events": ("reads", "A session's event log, one line per event (--tail follows it)."),
    "export": ("transfer", "Write a session as JSON Lines to stdout (hitl import reads it back)."),
    "import": ("transfer", "Create a session from a `hitl export` file (validated before anything is written)."),
    "inbox": ("reads", "Open interrupts across sessions, oldest first (with --due-within or due<1h: due first)."),
    "link": ("notify", "Print a signed, single-use answer link for one open interrupt, for NAME (the answer page of hitl serve; [notify] public_url and link_secret_env in hitl.toml)."),
    "migrate": ("transfer", "Upgrade the store's schema to this hitl's version (a writer also does it when it opens the store)."),
    "notifications": ("notify", "Notification deliveries, newest first: sent, failing (retried) and failed for good; and how many notifications wait to be sent."),
    "notify": ("notify", "Send the notifications the [notify] rules of hitl.toml ask for (webhook, Slack, e-mail), each once per channel, retried with backoff; hitl notifications lists them."),
    "redrive": ("writes", "Continue a failed or interrupted invocation: completed nodes are kept, never run again."),
    "release": ("owners", "Release open interrupts: nobody owns them any more."),
    "replay": ("replay", "Step through a session's history: each event, its markers and what it changed."),
    "resume": ("writes", "Answer interrupt ids (all or some) and run what they unblock."),
    "serve": ("demo", "Serve the console in a browser: one console per connection, with sign-in and roles."),
    "sessions": ("reads", "List sessions, most recently updated first (an OWNER column once an open interrupt has an owner)."),
    "show": ("reads", "A session's node tree per invocation: runs, statuses, outputs, open interrupts."),
    "start": ("start", "Start a run of APP with the text MESSAGE, here, until it waits or ends."),
    "worker": ("workers", "Run the turns of the apps whose code is registered here (--app NAME=module:attr, or hitl.toml [apps]): answers queued by operators without the code, start and re-drive requests, and turns whose process died mid-run (a killed worker, or an answer run in its own process) when no node is in doubt; with nodes in doubt the turn is held for an acknowledged re-drive (hitl workers says why)."),
    "workers": ("workers", "List the workers recorded in the store (live or stale) and the turns queued per app."),
}
"""Command name -> (module of ``console.cli`` that registers it, its short help as
``hitl --help`` lists it). Adding a command means adding its row here."""


def _import_commands(module: str) -> ModuleType:
    """Import one command module; its commands are the ``click.Command`` objects it
    defines (they are not registered by the module: it never imports this group).
    Plain import statements: code is imported by name only in the app registry."""
    if module == "audit":
        from . import audit
        return audit
    elif module == "bulk":
        from . import bulk
        return bulk
    elif module == "demo":
        from . import demo
        return demo
    elif module == "notify":
        from . import notify
        return notify
    elif module == "owners":
        from . import owners
        return owners
    elif module == "reads":
        from . import reads
        return reads
    elif module == "replay":
        from . import replay
        return replay
    elif module == "start":
        from . import start
        return start
    elif module == "transfer":
        from . import transfer
        return transfer
    elif module == "workers":
        from . import workers
        return workers
    elif module == "writes":
        from . import writes
        return writes
    else:
        raise LookupError(f"no command module {module!r}")


def _command_of(module: ModuleType, name: str) -> click.Command:
    """The command called ``name`` that ``module`` defines."""
    for value in vars(module).values():
        if isinstance(value, click.Command) and value.name == name:
            return value
    raise LookupError(f"console.cli.{module.__name__.rsplit('.', 1)[-1]} defines no command {name!r}")


class LazyCommands(dict):
    """The group's ``commands``: looking a command up imports the module that
    registers it; listing them all imports every one (click's own lookups, and
    code that iterates ``cli.commands``, see every command either way)."""

    def _load(self, name: str) -> None:
        entry = COMMANDS.get(name)
        if entry is not None and not dict.__contains__(self, name):
            dict.__setitem__(self, name, _command_of(_import_commands(entry[0]), name))

    def _load_all(self) -> None:
        for name in COMMANDS:
            self._load(name)

    def get(self, name: str, default: Any = None) -> Any:
        self._load(name)
        return super().get(name, default)

    def __getitem__(self, name: str) -> Any:
        self._load(name)
        return super().__getitem__(name)

    def __contains__(self, name: object) -> bool:
        return name in COMMANDS or super().__contains__(name)

    def __iter__(self) -> Iterator[str]:
        self._load_all()
        return super().__iter__()

    def __len__(self) -> int:
        self._load_all()
        return super().__len__()

    def keys(self) -> Any:
        self._load_all()
        return super().keys()

    def values(self) -> Any:
        self._load_all()
        return super().values()

    def items(self) -> Any:
        self._load_all()
        return super().items()


class LazyGroup(CheckedGroup):
    """The ``hitl`` group: commands imported on first use (:class:`LazyCommands`)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.commands = LazyCommands(self.commands)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """click's listing, from :data:`COMMANDS` (importing no command module)."""
        limit = formatter.width - 6 - max(len(name) for name in COMMANDS)
        rows = [(name, make_default_short_help(text, limit)) for name, (_mod, text) in sorted(COMMANDS.items())]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


# ---------------------------------------------------------------------- group
@click.group(cls=LazyGroup, invoke_without_command=True, context_settings={"help_option_names": ["-h", "--help"]})
@common
@app_spec_option
@click.version_option(package_name="hitl-console", prog_name="hitl")
@click.pass_context
def cli(ctx: click.Context) -> None:
    """Operate human-in-the-loop workflows: without a subcommand, open the console.

    \b
    Config (hitl.toml: [apps], [console], [secrets], [store], [serve]): --config FILE,
    else the first that exists of ./hitl.toml and $XDG_CONFIG_HOME/hitl/hitl.toml
    (~/.config/hitl/hitl.toml when XDG_CONFIG_HOME is unset).
    """
    use_utc(_opts().utc)  # --utc before the subcommand (after it, its own callback sets it)
    if ctx.invoked_subcommand is not None:
        return
    opts = _opts()
    try:
        from console.app import run_app
    except ModuleNotFoundError as exc:
        if exc.name not in ("console.app", "console"):
            raise
        fail("the console UI (console/app.py) is not installed in this build; use the subcommands (hitl --help)")
    try:
        config = opts.console_config()
    except HitlError as exc:
        fail(str(exc))
    path = opts.db_path()
    if isinstance(path, Path) and not path.exists() and not opts.db and not os.environ.get("HITL_DB") and not opts.read_only:
        # First run on the embedded default store: seed it with the sample
        # sessions so the console opens on something real to triage.
        import shutil
        import textwrap

        from sample_sessions.demo import build_demo_db

        # wrapped here, at word boundaries: the terminal would break the line mid-word (or mid-path)
        width = shutil.get_terminal_size().columns
        words = textwrap.wrap("first run: seeding the default store with the sample sessions ...", width)
        click.echo("\n".join([*words, f"  {path}"]), err=True)
        run(opts.redactor(), build_demo_db(path))
    run_app(
        path,
        read_only=opts.read_only,
        store_options=opts.store_options(),
        registry=config.registry,
        show_secrets=opts.show_secrets,
        secret_patterns=config.secret_patterns,
        config=config,
    )


def main() -> None:
    """The CLI's body (:func:`console.cli.main`, the console script, defers the GC's
    first collection before it imports this module)."""
    from engine.telemetry import set_surface

    _tolerant_streams()
    set_surface("cli")  # the console, when it opens, says "console"
    try:
        cli(prog_name="hitl")
    except BrokenPipeError:  # `hitl export X | head`
        sys.stderr.close()
        sys.exit(0)
    finally:
        # The interpreter's exit runs the cyclic GC over every object the imports
        # made (a quarter of a short command's CPU after a resume's imports);
        # frozen, they are skipped. Exit still runs atexit handlers, flushes the
        # streams and closes files; only unreachable cycles are left to the OS.
        gc.freeze()


def _tolerant_streams() -> None:
    """Text the terminal's encoding cannot show is printed escaped (``\\u2014``),
    never a UnicodeEncodeError: a latin-1 or ASCII locale then still shows every
    session (``--json`` is ASCII there: :func:`console.cli.output.json_text`)."""
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            reconfigure(errors="backslashreplace")
