"""Owner commands: ``hitl claim``, ``hitl assign``, ``hitl release`` (engine/ownership.py).

Each names interrupt ids of a session, or ``--invocation`` for every open id of
one, and records one audited event per invocation. Someone else's claim is
refused (exit 1, one line saying whose) unless ``--force``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

from .loads import resolve_invocation
from .options import _operator, _opts, common, open_store, operator_option, reason_option
from .output import out, out_json, run

_force_option = click.option("--force", is_flag=True, help="Take over interrupts another operator owns.")
_invocation_option = click.option(
    "--invocation", metavar="INV", help="Every open interrupt of this invocation (id or unique prefix)."
)


def _owner_command(action: str, session_id: str, ids: tuple[str, ...], invocation: str | None,
                   operator: str | None, reason: str | None, force: bool, to: str | None = None) -> None:
    red = _opts().redactor()
    opts = _opts()

    async def body() -> None:
        from engine import ownership
        from engine.permissions import current_policy

        if not ids and invocation is None:
            raise click.UsageError(f"name interrupt ids, or --invocation INV for every open one ({action})")
        async with open_store(write=True) as store:
            inv = await resolve_invocation(store, session_id, invocation) if invocation is not None else None
            fn: Callable[..., Any] = getattr(ownership, action)
            kw: dict[str, Any] = {"to": to} if action == "assign" else {}
            done = await fn(store, session_id, list(ids) or None, invocation_id=inv, operator=_operator(operator),
                            reason=reason, force=force, policy=current_policy(), **kw)
            done.raise_error()
        if opts.json:
            out_json(red, {"action": action, "session_id": session_id, "ids": done.ids, "owner": done.owner,
                           "previous": done.previous, "event_ids": [e.id for e in done.written]})
        else:
            out(red, done.summary())

    run(red, body())


def _register(action: str, doc: str) -> click.Command:
    """``hitl claim`` / ``assign`` (with ``--to``) / ``release``: one command each."""

    def command(session_id: str, ids: tuple[str, ...], invocation: str | None, operator: str | None,
                reason: str | None, force: bool, to: str | None = None) -> None:
        _owner_command(action, session_id, ids, invocation, operator, reason, force, to)

    command.__doc__ = doc
    options = [
        common,
        click.argument("session_id", metavar="SESSION"),
        click.argument("ids", nargs=-1, metavar="[ID...]"),
        *([click.option("--to", "to", required=True, metavar="NAME|@GROUP",
                        help="The operator, or @group of hitl.toml [groups].")] if action == "assign" else []),
        _invocation_option, operator_option, reason_option, _force_option,
    ]
    for option in reversed(options):
        command = option(command)
    return click.command(name=action)(command)


claim = _register("claim", "Claim open interrupts for yourself (the operator): others are asked before answering them.")
assign = _register("assign", "Assign open interrupts to an operator or a group.")
release = _register("release", "Release open interrupts: nobody owns them any more.")
