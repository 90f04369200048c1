"""Worker commands: ``hitl worker`` runs turns for the apps it has
code for; ``hitl workers`` lists them; :func:`resume_via_worker` is ``hitl
resume`` when the app's code is not here (or ``--via worker``)."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

import click

from console.times import age
from engine.errors import HitlError
from engine.store.capabilities import WorkerQueue, capability

from .options import _opts, app_spec_option, common, open_store, watch_options
from .output import fail, id_list, log_lines, out, out_json, run, serve_metrics

if TYPE_CHECKING:
    from collections.abc import Callable

    from engine.operations import Outcome
    from engine.redact import Redactor
    from engine.store.base import SessionStore


# ------------------------------------------------------------------ hitl worker
@click.command("worker")
@common
@app_spec_option
@click.option("--concurrency", type=click.IntRange(1, 256), default=4, show_default=True,
              help="Turns run at once.")
@click.option("--drain-timeout", type=click.FloatRange(0), default=30.0, show_default=True,
              help="Seconds SIGTERM/Ctrl-C lets the current turns finish before stopping them.")
@click.option("--lease-ttl", type=click.FloatRange(0.3), default=None,
              help="Seconds an invocation lease lasts without renewal (default 30).")
@click.option("--heartbeat", type=click.FloatRange(0.05), default=2.0, show_default=True,
              help="Seconds between heartbeats in the store.")
@watch_options
def worker(
    concurrency: int,
    drain_timeout: float,
    lease_ttl: float | None,
    heartbeat: float,
    metrics_port: int | None,
    metrics_host: str,
    log_format: str,
) -> None:
    """Run the turns of the apps whose code is registered here (--app NAME=module:attr,
    or hitl.toml [apps]): answers queued by operators without the code, start and
    re-drive requests, and turns whose process died mid-run (a killed worker, or an
    answer run in its own process) when no node is in doubt; with nodes in doubt
    the turn is held for an acknowledged re-drive (hitl workers says why).

    SIGTERM or Ctrl-C drains: nothing new is claimed, turns not started are
    handed back, running ones get --drain-timeout seconds; then exit 0."""
    import asyncio
    import signal

    from console import logs
    from engine import telemetry
    from engine.liveness import DEFAULT_LEASE_TTL
    from engine.store.factory import open_store as open_target
    from engine.worker import TurnResult, Worker

    opts = _opts()
    red = opts.redactor()
    if opts.read_only:
        fail("hitl worker runs turns, it writes: the store is open read-only (--read-only); nothing was written")
    registry = opts.registry()
    names = [n.partition("=")[0] for n in opts.apps] if opts.apps else registry.names()
    apps: dict[str, Any] = {}
    problems: list[str] = []
    for name in names:
        from engine.apps import parse_spec

        name = parse_spec(name)[0] if ":" in name else name
        try:
            apps[name] = registry.get(name)
        except HitlError as exc:
            problems.append(str(exc))
    if opts.apps and problems:
        fail(problems[0])
    if not apps:
        fail("no app code to serve: register apps with --app NAME=package.module:workflow")
    from engine.deadline_sweep import DeadlineSweep
    from engine.deadlines import check_rules
    from engine.permissions import load_policy

    try:
        check_rules(registry.deadline_rules, apps)  # a rule naming no node of its app: one line, at start
        policy = load_policy(opts.config_path())  # the groups an escalation may assign to
    except HitlError as exc:
        fail(str(exc))

    telemetry.set_surface("worker")
    logs.install(red, log_format)

    say = log_lines(red, log_format)

    def said(result: TurnResult) -> None:
        req = result.request
        line = f"{result.outcome:<8} {req.app_name} {req.session_id} {req.invocation_id} ({req.kind}"
        line += f", {result.events} events)" if result.events else ")"
        if result.detail and result.outcome != "ran":
            line += f": {' '.join(result.detail.split())}"
        say(f"turn.{result.outcome}", line, app=req.app_name, session=req.session_id,
            invocation=req.invocation_id, kind=req.kind, events=result.events)

    async def body() -> None:
        target = opts.db_path()
        kw = {"busy_timeout": 5.0 if opts.busy_timeout is None else opts.busy_timeout, **opts.store_options()}
        store = await open_target(target, read_only=opts.read_only, **kw)
        try:
            w = Worker(
                store, apps, concurrency=concurrency, drain_timeout=drain_timeout, heartbeat=heartbeat,
                lease_ttl=lease_ttl or DEFAULT_LEASE_TTL, on_result=said, deadline_rules=registry.deadline_rules,
                deadlines=DeadlineSweep(store, policy=policy),
            )
            loop = asyncio.get_running_loop()
            for sig in (signal.SIGTERM, signal.SIGINT):
                loop.add_signal_handler(sig, w.stop)
            versions = ", ".join(f"{a} (graph {v})" for a, v in sorted(w.versions.items()))
            server = await serve_metrics(store, metrics_host, metrics_port, say, "worker.metrics")
            say("worker.started", f"{w.name} serving {versions}; concurrency {concurrency}", worker=w.name)
            sending = _notifications(store, red)  # [notify] rules: this worker sends them too (hitl notify)
            try:
                await w.run()
            finally:
                if sending is not None:
                    sending[0].set()
                    await sending[1]
                if server is not None:
                    server.close()
            say("worker.stopped", f"{w.name} drained and stopped", worker=w.name)
        finally:
            await store.close()

    try:
        asyncio.run(body())
    except HitlError as exc:
        fail(red.text(" ".join(str(exc).split())))


def _notifications(store: Any, red: Any) -> tuple[Any, Any] | None:
    """When hitl.toml has [[notify.rules]]: a sender running beside the worker, and
    the event that stops it (engine.notify.sender; hitl notify runs one alone)."""
    import asyncio

    from engine.notify.config import load_notify_config
    from engine.notify.sender import Sender

    config = load_notify_config(_opts().config_path())
    if not config.active:
        return None
    stop = asyncio.Event()
    task = asyncio.ensure_future(Sender(store, config, redactor=red).run(stop))
    out(red, f"sending notifications for {len(config.rules)} rule(s) (hitl notifications lists them)")
    return stop, task


# ------------------------------------------------------------------ hitl workers
@click.command("workers")
@common
@click.option("--all", "show_all", is_flag=True, help="Also list stale workers (killed, or gone without a goodbye).")
def workers(show_all: bool) -> None:
    """List the workers recorded in the store (live or stale) and the turns queued per app."""
    opts = _opts()
    red = opts.redactor()

    async def body() -> None:
        async with open_store(write=False) as store:
            if (q := capability(store, WorkerQueue)) is None:
                fail("this store keeps no workers")
            rows = await q.list_workers()
            queued = await q.turn_requests()
        now = time.time()
        per_app: dict[str, list[int]] = {}
        for r in queued:
            counts = per_app.setdefault(r.app_name, [0, 0])
            counts[1 if r.held else 0] += 1
        shown = [w for w in rows if show_all or w.live(now)]
        if opts.json:
            out_json(red, {
                "workers": [{**w.model_dump(), "live": w.live(now)} for w in shown],
                "queued": {app: {"runnable": c[0], "held": c[1]} for app, c in sorted(per_app.items())},
                "held": [{"session_id": r.session_id, "invocation_id": r.invocation_id, "held": r.held}
                         for r in queued if r.held],
            })
            return
        if not shown:
            out(red, "no live workers" + ("" if show_all else " (--all lists stale ones)"))
        for w in shown:
            live = "live" if w.live(now) else "stale"
            out(red, f"{live:<6} {w.state:<9} {w.host}:{w.pid:<7} apps {', '.join(w.apps)}  "
                     f"heartbeat {age(w.heartbeat_at, now)} ago  turns {len(w.current)}")
        for app, (runnable, held) in sorted(per_app.items()):
            serving = sum(1 for w in rows if w.live(now) and app in w.apps)
            out(red, f"queued {app}: {runnable} runnable, {held} waiting for an acknowledged re-drive; "
                     f"{serving} live worker(s)")

    run(red, body())


# ------------------------------------------------------------------ resume --via worker
def say_queued(red: Redactor, as_json: bool, **extra: Any) -> Callable[[Outcome], None]:
    """``on_queued`` for :mod:`engine.operations`: the line saying the turn was left to
    a worker (or that no worker of the app is alive), printed before the follow starts."""

    def say(done: Outcome) -> None:
        assert done.invocation_id is not None and done.queued is not None
        _say(red, as_json, "queued", done.invocation_id, done.queued, **extra)

    return say


async def settle(red: Redactor, store: SessionStore, done: Outcome, as_json: bool, *, app_name: str | None,
                 timeout: float) -> None:
    """After a write through :mod:`engine.operations`: a turn run here ends with its
    summary (:func:`~console.cli.output.finish`); a turn left to a worker with how the
    follow ended -- settled, still queued after ``timeout``, held, or not followed (--no-wait).
    ``app_name``: the session's app (None: read here, only if a line names it)."""
    from .output import finish

    if done.queued is None:
        await finish(red, store, done, as_json)
        return
    inv = done.invocation_id
    assert inv is not None
    if done.followed is None:
        _say(red, as_json, "queued", inv, f"not waiting (--no-wait): follow it with `hitl events {done.session_id} --tail`")
    elif done.followed == "settled":
        assert done.after is not None
        status = done.after.invocation_status(inv)
        open_ids = [i.id for i in done.after.open_interrupts(inv)]
        _say(red, as_json, "summary", inv,
             f"invocation {inv}: {status.value if status else '?'}" + (f"; open: {id_list(open_ids, 8)}" if open_ids else ""),
             status=status.value if status else None, open=open_ids)
    elif done.followed == "timeout":
        app_name = app_name or (await store.get_session(done.session_id)).app_name
        _say(red, as_json, "queued", inv,
             f"stored and queued for a worker; the turn has not settled after {timeout:g}s "
             f"(it runs when a worker of {app_name} takes it)")
    else:
        _say(red, as_json, "held", inv, f"stored; the turn waits: {done.followed}")


def _say(red: Redactor, as_json: bool, kind: str, inv: str, line: str, **extra: Any) -> None:
    if as_json:
        out_json(red, {"kind": kind, "invocation_id": inv, "message": line, **extra})
    else:
        out(red, line)
