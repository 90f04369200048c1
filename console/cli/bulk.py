"""``hitl bulk-answer``: one answer for many open interrupts across sessions.

A command of its own rather than ``hitl resume --where``: ``resume`` answers
ids of one session, each with its own value (``ID=JSON``), as one message;
a bulk answer names no session, gives one value to every selected id, and
sends one message per invocation. The filter is the inbox's (the same terms
the console's inbox filter line reads, :func:`engine.bulk.parse_where`)::

    hitl bulk-answer app=refund_approval node=finance_approval 'age>2h' 'amount<50' currency=EUR \\
        --answer '{"approved": true}' --dry-run
    hitl bulk-answer --item SESSION INVOCATION ID ... --answer @approve.json --reason "monthly run"
    hitl bulk-answer --items previewed.json --answer ...   (the --dry-run --json output: exactly those)

Exit 1 when any item is (or, with --dry-run, would be) refused or failed;
the others are still applied and every item is listed.

Items of an app whose code is not registered here (or every item, ``--via
worker``) are validated against the stored schema, appended and left to a
worker of the app: their result is ``queued``; the command then
follows their turns until they settle (``--no-wait``: it returns at once;
``--wait-timeout``: a turn not settled by then is stored and queued, never failed).
"""

from __future__ import annotations

import json
import sys
from contextlib import nullcontext
from typing import TYPE_CHECKING, Any

import click

from console.inputs import MAX_ANSWER_FILE_BYTES, decode, loads, quote_hint, read_bounded
from engine.errors import HitlError, ReadOnlyError
from engine.jsonin import where_invalid

from .loads import resolve_invocation
from .options import _duration, _operator, _opts, app_spec_option, common, open_store, operator_option, reason_option
from .options import via_options as resume_via_options
from .output import fail, out, out_json, run, short

if TYPE_CHECKING:
    from engine.bulk import BulkPlan, Group, ItemPlan, ItemResult, Via
    from engine.redact import Redactor

MAX_ITEMS_FILE_BYTES = 16 * 1024 * 1024


def parse_value(raw: str, red: Redactor) -> Any:
    """``JSON`` or ``@file.json`` -> the answer value; HitlError saying what is wrong."""
    source = "--answer"
    if raw.startswith("@"):
        source = raw[1:]
        raw = decode(read_bounded(source, MAX_ANSWER_FILE_BYTES, "the answer"), f"the answer: {source}")
    try:
        value = loads(raw, f"the answer in {source}")
    except json.JSONDecodeError as exc:
        hint = quote_hint(raw, "--answer ") if source == "--answer" else ""
        raise HitlError(f"the answer is not valid JSON in {source}: {where_invalid(exc)}{hint}") from None
    red.learn_from(value)
    return value


def read_items(path: str) -> list[tuple[str, str, str]]:
    """(session, invocation, id) triples from a ``--dry-run --json`` output (or a
    JSON list of ``{session_id, invocation_id, interrupt_id(s)}``)."""
    raw = decode(read_bounded(path, MAX_ITEMS_FILE_BYTES, "the items file"), f"the items file {path}")
    try:
        doc = loads(raw, f"the items file {path}")
    except json.JSONDecodeError as exc:
        raise HitlError(f"the items file {path} is not JSON: {where_invalid(exc)}") from None
    rows = doc.get("items") if isinstance(doc, dict) else doc
    if not isinstance(rows, list):
        raise HitlError(f"the items file {path} has no list of items (expected the --dry-run --json output)")
    out_: list[tuple[str, str, str]] = []
    for n, row in enumerate(rows, 1):
        ids = row.get("interrupt_ids", [row.get("interrupt_id")]) if isinstance(row, dict) else None
        sid = row.get("session_id") if isinstance(row, dict) else None
        inv = row.get("invocation_id") if isinstance(row, dict) else None
        if not (isinstance(sid, str) and isinstance(inv, str) and isinstance(ids, list)
                and ids and all(isinstance(i, str) and i for i in ids)):
            raise HitlError(f"item {n} of {path} needs session_id, invocation_id and interrupt_id(s)")
        out_ += [(sid, inv, i) for i in ids]
    return out_


def _group_json(g: Group) -> dict[str, Any]:
    return {"session_id": g.session_id, "invocation_id": g.invocation_id, "interrupt_ids": list(g.interrupt_ids),
            "paths": g.paths, "app_name": g.app_name}


def _plan_json(i: ItemPlan) -> dict[str, Any]:
    return {**_group_json(i.group), "verdict": i.verdict, "nodes": i.nodes, "reason": i.reason, "worker": i.worker}


def _result_json(r: ItemResult) -> dict[str, Any]:
    o = r.outcome
    return {
        **_group_json(r.group), "status": r.status, "reason": r.reason,
        "invocation_status": o.status_after.value if o is not None and o.status_after is not None else None,
        "ran": o.ran if o is not None else [], "event_ids": [e.id for e in o.written] if o is not None else [],
    }


def _plan_line(red: Redactor, i: ItemPlan) -> str:
    g = i.group
    head = f"  {i.verdict:<13} {g.session_id} / {g.invocation_id[:12]}  {', '.join(g.interrupt_ids)}"
    if i.refused:
        return f"{head}: {i.reason}"
    asks = g.records[0].message if g.records else ""
    worker = f"  (a worker of {g.app_name} runs it)" if i.worker else ""
    return f"{head}  {', '.join(i.nodes) or ', '.join(g.paths)}  {short(red.value(asks), 50)}{worker}"


def print_plan(red: Redactor, plan: BulkPlan, where: str) -> None:
    out(red, f"dry run: {plan.summary()} (nothing was written)")
    if where:
        out(red, f"  filter: {where}")
    out(red, f"  answer: {short(red.value(plan.value), 80)}")
    for reason, n in plan.reasons().items():
        out(red, f"  refused x{n}: {reason}")
    for i in plan.items:
        out(red, _plan_line(red, i))


def _bar(total: int, label: str) -> Any:
    """A progress bar on stderr when it is a terminal (else None)."""
    if not sys.stderr.isatty() or total < 2:
        return None
    return click.progressbar(length=total, label=label, file=sys.stderr, show_pos=True)


@click.command("bulk-answer")
@common
@app_spec_option
@click.argument("terms", nargs=-1, metavar="[FILTER]...")
@click.option("--answer", "answer", required=True, metavar="JSON|@FILE", help="The one answer every selected id gets.")
@click.option("--item", "item", multiple=True, nargs=3, metavar="SESSION INVOCATION ID",
              help="An interrupt to answer, named in full (repeatable; instead of or with a filter).")
@click.option("--items", "items_file", metavar="FILE", help="The items of a --dry-run --json output: exactly those.")
@click.option("--node", metavar="NAME", help="Filter: a node of this name raised it (or runs the node that did).")
@click.option("--older-than", "older_than", callback=_duration, metavar="AGE", help="Filter: raised before now - AGE (2h, 1d).")
@click.option("--text", metavar="TEXT", help="Filter: the interrupt's message contains TEXT (case-insensitive).")
@click.option("--session", "session_id", metavar="SESSION", help="Filter: only this session.")
@click.option("--dry-run", is_flag=True, help="Show what each invocation would do and list the items; write nothing.")
@resume_via_options("answers (stored)")  # hitl resume's --via / --no-wait / --wait-timeout
@operator_option
@reason_option
def bulk_answer(
    terms: tuple[str, ...],
    answer: str,
    item: tuple[tuple[str, str, str], ...],
    items_file: str | None,
    node: str | None,
    older_than: float | None,
    text: str | None,
    session_id: str | None,
    dry_run: bool,
    via: Via,  # click.Choice of exactly these
    no_wait: bool,
    wait_timeout: float,
    operator: str | None,
    reason: str | None,
) -> None:
    """Answer many open interrupts across sessions with one answer: one audited
    message per invocation, the same validation, operator and reason as `hitl resume`.

    FILTER terms (the console inbox's filter line): app=NAME node=NAME session=ID
    age>2h text=WORDS (or bare words), and payload fields FIELD<VALUE, =, !=, <=, >=, >
    and ~ (contains), e.g. amount<50 currency=EUR. Every term must hold. Run
    with --dry-run first; exit 1 if any item is refused (the others are applied).
    In a shell, quote the terms with < or > ('amount<50'), or use --older-than 2h."""
    from engine import bulk

    red = _opts().redactor()
    opts = _opts()

    async def body() -> None:
        value = parse_value(answer, red)
        base = bulk.Where(node=node, older_than=older_than, text=text, session=session_id)
        where = bulk.parse_where(terms, base)
        refs = [bulk.ItemRef(*t) for t in item]
        if items_file is not None:
            refs += [bulk.ItemRef(*t) for t in read_items(items_file)]
        if where.empty and not refs:
            raise click.UsageError(
                "give a filter (e.g. node=finance_approval amount<50 age>2h) or --item/--items: "
                "an empty filter would answer every open interrupt"
            )
        async with open_store(write=not dry_run, validates=True) as store:  # a dry run validates the answers too
            if store.read_only and not dry_run:
                raise ReadOnlyError("the store is open read-only (--read-only); nothing was written")
            groups = [] if where.empty else bulk.group(await bulk.select(store, where))
            if refs:
                groups = bulk.merge(groups, await bulk.items(store, [await _full(store, r) for r in refs]))
            if not groups:
                fail(f"no open interrupt matches {str(where) or 'the items'}: nothing was written")
            if dry_run:
                await _dry(store, groups, value, str(where))
                return
            await _submit(store, groups, value, _operator(operator), reason)

    async def _full(store: Any, ref: Any) -> Any:
        """The ref with its invocation id completed from a unique prefix (as `hitl resume --invocation`);
        one that does not resolve stays as given, and its answer is refused saying why."""
        try:
            return bulk.ItemRef(ref.session_id, await resolve_invocation(store, ref.session_id, ref.invocation_id),
                                ref.interrupt_id)
        except HitlError:
            return ref

    async def _dry(store: Any, groups: list[Group], value: Any, where_text: str) -> None:
        bar = _bar(len(groups), "dry run")
        with bar if bar is not None else nullcontext():
            plan = await bulk.dry_run(store, groups, value, registry=opts.registry, via=via,
                                      on_progress=(lambda n, t: bar.update(1)) if bar is not None else None)
        if opts.json:
            out_json(red, {"kind": "dry_run", "summary": plan.summary(), "filter": where_text,
                           "counts": {v: plan.count(v) for v in bulk.VERDICTS}, "answer": red.value(plan.value),
                           "items": [_plan_json(i) for i in plan.items]})
        else:
            print_plan(red, plan, where_text)
        if plan.refused:
            fail(f"{len(plan.refused)} of {len(plan.items)} invocations would be refused (listed above); "
                 "nothing was written")

    async def _submit(store: Any, groups: list[Group], value: Any, who: str | None, why: str | None) -> None:
        bar = _bar(len(groups), "answering")

        def told(r: ItemResult, n: int, total: int) -> None:
            if bar is not None:
                bar.update(1)
            elif opts.json:
                out_json(red, {"kind": "item", **_result_json(r)})
            else:
                out(red, "  " + r.line())

        def notice(line: str) -> None:  # before anything is sent: no worker serves an app of the batch
            _said("notice", line)

        with bar if bar is not None else nullcontext():
            done = await bulk.submit(store, groups, value, registry=opts.registry, operator=who, reason=why,
                                     on_result=told, via=via, on_notice=notice)
        if bar is not None:  # the lines waited for the bar to finish
            for r in done.results:
                (out_json(red, {"kind": "item", **_result_json(r)}) if opts.json else out(red, "  " + r.line()))
        if opts.json:
            out_json(red, {"kind": "summary", "batch": done.batch, "summary": done.summary(),
                           "counts": {s: done.count(s) for s in bulk.RESULT_STATUSES}})
        else:
            out(red, done.summary())
        queued = [r for r in done.results if r.status == "queued"]
        if queued and no_wait:
            _said("queued", f"not waiting (--no-wait): {len(queued)} turn{'s' * (len(queued) != 1)} left to workers; "
                            f"follow them with `hitl show SESSION` or `hitl audit` (batch {done.batch})")
        elif queued:
            await _follow_all(store, queued, wait_timeout)
        if not done.ok:
            bad = done.not_applied
            fail(f"{len(bad)} of {len(done.results)} invocations were not applied (listed above); "
                 f"the other {len(done.results) - len(bad)} were (batch {done.batch}: hitl audit)")

    def _said(kind: str, line: str, **extra: Any) -> None:
        if opts.json:
            out_json(red, {"kind": kind, "message": line, **extra})
        else:
            out(red, line)

    async def _follow_all(store: Any, queued: list[ItemResult], timeout: float) -> None:
        """Follow the queued turns (one after the other, one deadline for all) until each settles."""
        import asyncio

        from engine.routing import follow_outcome

        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        waiting = 0
        for r in queued:
            g = r.group
            left = max(deadline - loop.time(), 0.0)
            done_here = r.outcome
            assert done_here is not None and done_here.after is not None  # a queued answer: written, then left
            state = await follow_outcome(store, done_here, after_seq=done_here.after.position, timeout=left)
            if state == "settled":
                st = done_here.after.invocation_status(g.invocation_id)
                word = st.value if st is not None else "?"
                _said("settled", f"  settled  {g.label} -> {word}", session_id=g.session_id,
                      invocation_id=g.invocation_id, status=word)
            elif state == "timeout":
                waiting += 1
            else:
                _said("held", f"  held     {g.label}: the turn waits: {state}", session_id=g.session_id,
                      invocation_id=g.invocation_id)
        if waiting:
            apps = ", ".join(sorted({r.group.app_name or "?" for r in queued}))
            _said("queued", f"stored and queued for a worker; {waiting} turn{'s' * (waiting != 1)} not settled after "
                            f"{timeout:g}s (they run when a worker of {apps} takes them)")

    run(red, body())


__all__ = ["bulk_answer", "parse_value", "read_items"]
