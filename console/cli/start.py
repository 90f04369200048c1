"""``hitl start APP [--session S] [--user U] MESSAGE``: start a run from the shell.

The run happens in this process (the app's code importable through the app
registry: the sample apps, ``hitl.toml`` ``[apps]``, ``--app NAME=module:attr``)
through :func:`engine.operations.start`, and prints like ``hitl resume``: each
event as it is persisted, then the invocation's status and open ids. Exit 1
with one line when it is refused (nothing written) or a node fails.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

import click

if TYPE_CHECKING:
    from engine.bulk import Via
    from engine.operations import Step

from .options import _opts, app_spec_option, common, open_store, via_options
from .output import out, out_json, print_step, run, stopped_hint
from .workers import say_queued, settle


def _login() -> str:
    return os.environ.get("USER") or os.environ.get("LOGNAME") or "user"


@click.command()
@common
@app_spec_option
@click.argument("app_name", metavar="APP")
@click.argument("message", metavar="MESSAGE")
@click.option("--session", "session_id", metavar="S", help="The session (created if new; default: a new id).")
@click.option("--user", "user_id", metavar="U", help="Its user (default: $USER; an existing session keeps its own).")
@via_options("start")
def start(
    app_name: str, message: str, session_id: str | None, user_id: str | None, via: Via, no_wait: bool,
    wait_timeout: float,
) -> None:
    """Start a run of APP with the text MESSAGE, here, until it waits or ends.

    APP is the name the app is registered under (--app APP=module:workflow or
    hitl.toml [apps]); the session records it, as Runner("APP", ...) would.
    With --via worker, or without the app's code here while a worker of APP is
    alive (hitl workers), the start is queued for a worker and followed until
    it settles. An app nobody serves is refused rather than queued: a mistyped
    name must not wait for a worker that never comes."""
    from engine.models import new_id

    red = _opts().redactor()
    opts = _opts()
    sid = session_id if session_id is not None else f"{app_name}-{new_id()[:8]}"

    async def body() -> None:
        from engine import operations

        started: list[bool] = []

        def step(s: Step) -> None:
            if not started:  # the first event is written: the session exists (a refusal prints one line only)
                started.append(True)
                if opts.json:
                    out_json(red, {"kind": "session", "session_id": sid, "app_name": app_name})
                else:
                    out(red, f"session {sid}  app {app_name}  invocation {s.event.invocation_id}")
            print_step(red, s, opts.json)

        async with open_store(write=True, turn=True) as store:
            done = await operations.start(
                store, app_name, sid, message, user_id=user_id or _login(), registry=opts.registry, on_step=step,
                via="local" if store.read_only else via,  # read-only: the engine's own refusal says why not
                wait=not no_wait, timeout=wait_timeout, on_queued=say_queued(red, opts.json, session_id=sid),
            )
            await settle(red, store, done, opts.json, app_name=app_name, timeout=wait_timeout)

    run(red, body(), on_interrupt=stopped_hint(sid))
