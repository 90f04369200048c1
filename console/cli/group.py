"""The ``hitl`` click group (without a subcommand: the console) and the entry point."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import click

from console.inputs import (
    CheckedGroup,
)
from console.times import use_utc
from engine.errors import HitlError

from .options import _opts, app_spec_option, common
from .output import fail, run


# ---------------------------------------------------------------------- group
@click.group(cls=CheckedGroup, invoke_without_command=True, context_settings={"help_option_names": ["-h", "--help"]})
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
        from sample_sessions.demo import build_demo_db

        click.echo(f"first run: seeding {path} with the sample sessions ...", err=True)
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
    """Console-script entry point."""
    from engine.telemetry import set_surface

    _tolerant_streams()
    set_surface("cli")  # the console, when it opens, says "console"
    try:
        cli(prog_name="hitl")
    except BrokenPipeError:  # `hitl export X | head`
        sys.stderr.close()
        sys.exit(0)


def _tolerant_streams() -> None:
    """Text the terminal's encoding cannot show is printed escaped (``\\u2014``),
    never a UnicodeEncodeError: a latin-1 or ASCII locale then still shows every
    session (``--json`` is ASCII there: :func:`console.cli.output.json_text`)."""
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            reconfigure(errors="backslashreplace")
