"""The shell commands the console shows beside a write (the outcome's "same from
a shell", the answer editor's copyable command) parse against the real click
group with every option they may carry, and mean what the console did.
(tests/console/test_registry.py parses every ``cli=`` template of the action
registry; this covers the commands built from a write's own values.)"""

from __future__ import annotations

import shlex
from typing import Any

import click
import pytest

from console.actions import ACTIONS
from console.cli import cli
from console.widgets.answer_views import resume_command, write_command


def parse(command: str) -> tuple[str, dict[str, Any]]:
    words = shlex.split(command)
    assert words[0] == "hitl", command
    ctx = cli.make_context("hitl", words[1:])
    args = [*getattr(ctx, "_protected_args", []), *ctx.args]
    sub = cli.get_command(ctx, args[0])
    assert sub is not None, f"no command {args[0]!r} in {command!r}"
    try:
        sub_ctx = sub.make_context(args[0], args[1:], parent=ctx)
    except click.UsageError as exc:
        raise AssertionError(f"{command!r} does not parse: {exc.format_message()}") from exc
    return args[0], sub_ctx.params


@pytest.mark.parametrize("dry_run", [False, True])
def test_the_resume_command_of_an_answer_parses_with_every_option(dry_run: bool) -> None:
    command = resume_command(
        "refund-waiting-1",
        {"finance-order-1001": {"approved": True, "note": "it's fine"}, "risk-order-1001": "a b"},
        "72b1ebac39e8",
        operator="ann o'neil",
        reason="checked; ok",
        dry_run=dry_run,
    )
    name, params = parse(command)
    assert name == "resume"
    assert params["session_id"] == "refund-waiting-1"
    assert params["answers"] == ('finance-order-1001={"approved":true,"note":"it\'s fine"}', 'risk-order-1001="a b"')
    assert params["invocation"] == "72b1ebac39e8" and params["dry_run"] is dry_run
    assert params["operator"] == "ann o'neil" and params["reason"] == "checked; ok"


@pytest.mark.parametrize("kind,ack", [("redrive", False), ("redrive", True), ("cancel", False)])
def test_the_redrive_and_cancel_commands_parse_with_every_option(kind: str, ack: bool) -> None:
    name, params = parse(write_command(kind, "incident-failed-1", "0a1b2c3d", operator="bob", reason="pager back",
                                       ack=ack))
    assert name == kind
    assert (params["session_id"], params["invocation"]) == ("incident-failed-1", "0a1b2c3d")
    assert (params["operator"], params["reason"]) == ("bob", "pager back")
    if kind == "redrive":
        assert params["ack_in_doubt"] is ack


def test_every_cli_command_the_registry_names_exists() -> None:
    """Every subcommand named by a ``cli=`` template is a command of the group
    (the registry test parses each template; this one says which are used)."""
    named = {shlex.split(a.cli)[1] for a in ACTIONS if a.cli}
    assert named - {"--help"} <= set(cli.commands), named - set(cli.commands)
    assert {"sessions", "show", "inbox", "resume", "redrive", "cancel", "events", "replay"} <= named
