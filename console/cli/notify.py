"""Notification commands: ``hitl notify`` sends, ``hitl notifications``
lists, ``hitl link`` prints a signed answer link for a runbook."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

import click

from console.times import age

from .options import _opts, common, open_store, watch_options
from .output import fail, log_lines, out, out_json, run, serve_metrics, short, table

if TYPE_CHECKING:
    from engine.notify.config import NotifyConfig


def _config() -> NotifyConfig:
    from engine.errors import HitlError
    from engine.notify.config import load_notify_config

    try:
        return load_notify_config(_opts().config_path())
    except HitlError as exc:
        fail(str(exc))


@click.command("notify")
@common
@click.option("--once", is_flag=True, help="Send what is due now, then exit (else: keep sending until Ctrl-C/SIGTERM).")
@click.option("--poll", type=click.FloatRange(0.05), default=1.0, show_default=True,
              help="Seconds between passes when nothing wakes the sender.")
@click.option("--claim-ttl", type=click.FloatRange(0.1), default=60.0, show_default=True,
              help="Seconds a claimed delivery stays this sender's: a sender killed mid-send is replaced after it.")
@watch_options
def notify(
    once: bool, poll: float, claim_ttl: float, metrics_port: int | None, metrics_host: str, log_format: str
) -> None:
    """Send the notifications the [notify] rules of hitl.toml ask for (webhook, Slack, e-mail),
    each once per channel, retried with backoff; hitl notifications lists them. Also fires
    the deadlines that are due (default answers, failures, reminders, escalations), as workers do."""
    import asyncio
    import signal

    from engine.deadline_sweep import DeadlineSweep
    from engine.notify.sender import Sender

    opts = _opts()
    if opts.read_only:
        fail("hitl notify records each delivery it sends: the store is open read-only (--read-only); nothing was sent")
    config = _config()
    red = opts.redactor()
    from console import logs

    logs.install(red, log_format)

    say = log_lines(red, log_format)

    def said(what: str, row: Any, error: str | None) -> None:
        say(f"notification.{what.replace(' ', '_')}", f"{what:<8} {row.channel:<12} {row.key}" + (f": {error}" if error else ""),
            channel=row.channel, key=row.key)

    async def body() -> None:
        async with open_store(write=True) as store:
            sweep = DeadlineSweep(store, policy=_policy(), on_fired=lambda t, status, outcome: say(
                "deadline.fired", f"deadline {status:<6} {t.name}: {outcome}", key=t.name, outcome=outcome))
            sender = Sender(store, config, redactor=red, on_result=said, claim_ttl=claim_ttl, sweep=sweep)
            if once:
                done = await sender.run_once()
                out(red, f"{len(done.sent)} sent, {len(done.failed)} failed tries "
                         f"({len(done.gave_up)} given up) of {done.due} due")
                return
            stop = asyncio.Event()
            loop = asyncio.get_running_loop()
            for sig in (signal.SIGTERM, signal.SIGINT):
                loop.add_signal_handler(sig, stop.set)
            server = await serve_metrics(store, metrics_host, metrics_port, say, "notify.metrics")
            say("notify.started", f"sending notifications for {len(config.rules)} rule(s) to {len(config.channels)} channel(s);"
                " firing due deadlines")
            try:
                await sender.run(stop, poll=poll)
            finally:
                if server is not None:
                    server.close()

    run(red, body())


def _policy() -> Any:
    """The groups an escalation's ``assign`` step checks its group against ([groups] of hitl.toml)."""
    from engine.errors import HitlError
    from engine.permissions import load_policy

    try:
        return load_policy(_opts().config_path())
    except HitlError as exc:
        fail(str(exc))


@click.command("notifications")
@common
@click.option("--status", type=click.Choice(["pending", "sent", "failed"]), help="Only deliveries in this state.")
@click.option("--limit", type=click.IntRange(1, 10_000), default=50, show_default=True)
def notifications(status: str | None, limit: int) -> None:
    """Notification deliveries, newest first: sent, failing (retried) and failed for good;
    and how many notifications wait to be sent."""
    from engine.notify.facts import collect
    from engine.store.notify import ledger

    config = _config()
    opts = _opts()
    red = opts.redactor()

    async def body() -> None:
        async with open_store(write=False) as store:
            book = ledger(store)
            rows = await book.deliveries(status=status, limit=limit)
            found = await collect(store, config, red) if config.active else []
            finished = await book.finished(sorted({n.key for n in found}))
        waiting = sorted({(n.key, c) for n in found for c in n.channels} - finished)
        failing = sorted({r.channel for r in rows if r.status == "failed"})
        if opts.json:
            out_json(red, {"deliveries": [r.model_dump() for r in rows],
                           "waiting": [{"key": k, "channel": c} for k, c in waiting], "failed_channels": failing})
            return
        now = time.time()
        lines = [[r.status, r.channel, str(r.attempts), age(r.updated_at, now), r.key,
                  short(r.last_error or r.subject, 60)] for r in rows]
        out(red, table(lines, ["STATUS", "CHANNEL", "TRIES", "UPDATED", "KEY", "LAST ERROR / SUBJECT"])
            if lines else "no deliveries recorded")
        out(red, f"{len(waiting)} to send" + (" (hitl notify sends them)" if waiting else ""))
        for name in failing:
            out(red, f"channel {name} has failed deliveries (given up after their attempts): check its [notify.channels]")

    run(red, body())


@click.command("link")
@common
@click.argument("session_id", metavar="SESSION")
@click.argument("interrupt_id", metavar="ID")
@click.option("--to", "to", required=True, metavar="NAME", help="The recipient: the link records NAME as the operator.")
@click.option("--hours", type=click.FloatRange(0.01), default=None, help="Expires after this long (default: link_hours).")
def link(session_id: str, interrupt_id: str, to: str, hours: float | None) -> None:
    """Print a signed, single-use answer link for one open interrupt, for NAME
    (the answer page of hitl serve; [notify] public_url and link_secret_env in hitl.toml)."""
    from console.serve.config import valid_name
    from engine.notify.links import Link, link_url, make_token

    config = _config()
    if not config.link_secret or not config.public_url:
        fail("answer links need [notify] public_url and link_secret_env (or link_secret) in hitl.toml")
    if not valid_name(to):
        fail("--to must be 1-64 printable characters without spaces at the ends")
    red = _opts().redactor()
    seconds = hours * 3600 if hours is not None else config.link_seconds

    async def body() -> int:
        async with open_store(write=False) as store:
            await store.get_session(session_id)
            found = [r for r in await store.lookup_interrupts(session_id, [interrupt_id]) if r.status == "open"]
        if not found:
            fail(f"interrupt {interrupt_id} is not open in session {session_id}: there is nothing to answer")
        return found[0].raised_seq

    raised = run(red, body())
    token = make_token(config.link_secret, Link(session_id, interrupt_id, raised, to, time.time() + seconds))
    click.echo(link_url(config.public_url, token))
