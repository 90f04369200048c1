"""Write commands: ``hitl resume`` (and its dry run), ``redrive``, ``cancel``."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import click

from console.inputs import (
    MAX_ANSWER_FILE_BYTES,
    decode,
    loads,
    quote_hint,
    read_bounded,
)
from console.text import clean
from engine.errors import HitlError, ReadOnlyError
from engine.jsonin import where_invalid

if TYPE_CHECKING:
    from engine.bulk import Via
    from engine.redact import Redactor

from .loads import resolve_invocation
from .options import (
    _operator,
    _opts,
    app_spec_option,
    common,
    open_store,
    operator_option,
    reason_option,
    via_options,
)
from .output import (  # noqa: F401 (finish, print_step, step_dict, summary_line: re-exported, their old home)
    fail,
    finish,
    interactive,
    out,
    out_json,
    print_step,
    run,
    step_dict,
    stopped_hint,
    summary_line,
)
from .render import render_plan
from .workers import say_queued, settle


# --------------------------------------------------------------------- resume
def parse_answers(pairs: Iterable[str], red: Redactor) -> dict[str, Any]:
    """``ID=JSON`` / ``ID=@file.json`` -> ``{id: value}``; HitlError naming the id."""
    answers: dict[str, Any] = {}
    for pair in pairs:
        iid, eq, raw = pair.partition("=")
        iid = iid.strip()
        if not eq or not iid:
            raise HitlError(f"answer {pair!r} is not ID=JSON (e.g. approve-1=true or approve-1=@answer.json)")
        if iid in answers:
            raise HitlError(f"interrupt {iid} is answered twice on the command line")
        source = "value"
        if raw.startswith("@"):
            source = raw[1:]
            what = f"answer for {iid}"
            raw = decode(read_bounded(source, MAX_ANSWER_FILE_BYTES, what), f"{what}: {source}")
        try:
            answers[iid] = loads(raw, f"answer for {iid} in {source}")
            red.learn_from(answers[iid])  # validation errors may echo it
        except json.JSONDecodeError as exc:
            hint = quote_hint(raw, f"{iid}=") if source == "value" else ""
            raise HitlError(f"answer for {iid} is not valid JSON in {source}: {where_invalid(exc)}{hint}") from None
    return answers


@click.command()
@common
@app_spec_option
@click.argument("session_id", metavar="SESSION")
@click.argument("answers", nargs=-1, metavar="ID=JSON...")
@click.option(
    "--answer", "answer_opts", multiple=True, metavar="ID=JSON", help="An answer (same as a positional ID=JSON)."
)
@click.option("--invocation", metavar="INV", help="The invocation the ids belong to (id or unique prefix).")
@click.option("--dry-run", is_flag=True, help="Show what the answer would resolve and run; write nothing.")
@via_options("answer (stored)")
@operator_option
@reason_option
@click.option("--force", is_flag=True, help="Answer interrupts another operator has claimed.")
def resume(
    session_id: str,
    answers: tuple[str, ...],
    answer_opts: tuple[str, ...],
    invocation: str | None,
    dry_run: bool,
    via: Via,
    no_wait: bool,
    wait_timeout: float,
    operator: str | None,
    reason: str | None,
    force: bool,
) -> None:
    """Answer interrupt ids (all or some) and run what they unblock."""
    red = _opts().redactor()  # the command's one Redactor, handed to what renders
    opts = _opts()
    if not answers and not answer_opts:
        raise click.UsageError("give at least one answer: ID=JSON (or --answer ID=JSON)")

    async def body() -> None:
        from engine import operations
        from engine.routing import routed_to_worker

        values = parse_answers([*answers, *answer_opts], red)
        async with open_store(write=not dry_run, turn=True) as store:
            inv = await resolve_invocation(store, session_id, invocation) if invocation is not None else None
            if dry_run:
                session = await store.get_session(session_id)
                dry = await operations.dry_run(
                    store, session_id, values, inv, app_name=session.app_name, registry=opts.registry
                )
                plan, refusal = dry.plan, dry.refusal  # what the real command would say: it needs the app's code
                if opts.json:
                    out_json(red, {**plan.to_dict(), "changes": red.value(plan.to_dict()["changes"]), "next": dry.next_runs,
                              "would_run": dry.would_run, "refusal": refusal})
                else:
                    for line in render_plan(red, plan, session_id, dry.next_runs):
                        out(red, line)
                if refusal is not None and routed_to_worker(via, session.app_name, opts.registry(), store):
                    out(red, f"the real command would store the answer and leave the turn to a worker of {session.app_name}")
                elif refusal is not None:
                    fail(f"the real command would refuse (nothing would be written): {refusal}")
                return
            if store.read_only:
                raise ReadOnlyError("the store is open read-only (--read-only); nothing was written")
            # Here, or left to a worker (engine.routing: auto = a worker when this process has no
            # code registered for the app). The answer's reads name the session's app, and the
            # gate and the runner use them: the session is not read apart.
            done = await operations.answer(
                store, session_id, values, inv, registry=opts.registry, operator=_operator(operator), reason=reason,
                on_step=lambda step: print_step(red, step, opts.json), force=force,
                via=via, wait=not no_wait, timeout=wait_timeout, on_queued=say_queued(red, opts.json),
            )
            await settle(red, store, done, opts.json, app_name=None, timeout=wait_timeout)

    run(red, body(), on_interrupt=stopped_hint(session_id))


@click.command()
@common
@app_spec_option
@click.argument("session_id", metavar="SESSION")
@click.argument("invocation", metavar="INVOCATION")
@click.option(
    "--ack-in-doubt",
    "ack_in_doubt",
    is_flag=True,
    help="Re-execute nodes in doubt (started, no end record: their side effects may have happened).",
)
@via_options("re-drive")
@operator_option
@reason_option
def redrive(
    session_id: str, invocation: str, ack_in_doubt: bool, via: Via, no_wait: bool, wait_timeout: float,
    operator: str | None, reason: str | None,
) -> None:
    """Continue a failed or interrupted invocation: completed nodes are kept, never run again.

    Nodes in doubt (an interrupted run started them but recorded no end) run
    again only with --ack-in-doubt, which the audit log records."""
    red = _opts().redactor()  # the command's one Redactor, handed to what renders
    opts = _opts()

    async def body() -> None:
        from engine import operations

        async with open_store(write=True) as store:
            session = await store.get_session(session_id)
            inv = await resolve_invocation(store, session_id, invocation)
            done = await operations.redrive(
                store, session_id, inv, registry=opts.registry, operator=_operator(operator), reason=reason,
                acknowledge_in_doubt=ack_in_doubt, session=session, on_step=lambda step: print_step(red, step, opts.json),
                via="local" if store.read_only else via,  # read-only: the engine's own refusal says why not
                wait=not no_wait, timeout=wait_timeout, on_queued=say_queued(red, opts.json),
            )
            await settle(red, store, done, opts.json, app_name=session.app_name, timeout=wait_timeout)

    run(red, body(), on_interrupt=stopped_hint(session_id))


@click.command()
@common
@click.argument("session_id", metavar="SESSION")
@click.argument("invocation", metavar="INVOCATION")
@operator_option
@click.option("--reason", metavar="TEXT", help="Why (required); recorded on the cancel event.")
@click.option("--yes", "-y", is_flag=True, help="Do not ask for confirmation on a terminal.")
def cancel(session_id: str, invocation: str, operator: str | None, reason: str | None, yes: bool) -> None:
    """Cancel a waiting or failed invocation; its open interrupts close. Final:
    asks first on a terminal (unless --yes), and needs a --reason, like the console."""
    red = _opts().redactor()  # the command's one Redactor, handed to what renders
    opts = _opts()

    async def body() -> None:
        from engine import operations
        from engine.models import NodeStatus
        from engine.resume import load_invocation

        async with open_store(write=True) as store:
            await store.get_session(session_id)
            inv = await resolve_invocation(store, session_id, invocation)
            before = await load_invocation(store, session_id, inv)
            closed = [i.id for i in before.open_interrupts(inv)]
            # A finished invocation or a read-only store: the engine's own refusal says why not.
            finished = opts.read_only or before.invocation_status(inv) in (NodeStatus.COMPLETED, NodeStatus.CANCELLED)
            if not finished and (not reason or not reason.strip()):
                fail("a cancel needs a reason: add --reason TEXT (it is recorded with the cancel); nothing was written")
            if not finished and not yes and interactive():
                what = f"; it closes {len(closed)} open interrupt(s)" if closed else ""
                if not click.confirm(clean(f"Cancel invocation {inv} of session {session_id}{what}? This is final"),
                                     default=False):
                    fail("not cancelled: nothing was written")
            done = await operations.cancel(
                store, session_id, inv, operator=_operator(operator), reason=reason, before=before
            )
            done.raise_error()
        if opts.json:
            out_json(red, {"invocation_id": inv, "status": "CANCELLED", "closed": closed, "event_id": done.written[0].id})
        else:
            out(red, f"cancelled invocation {inv}" + (f"; closed {', '.join(closed)}" if closed else ""))

    run(red, body())
