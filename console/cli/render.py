"""Renderers of the shared views (engine.views rows) as the CLI's plain text."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from engine.owners import INTERRUPTED

if TYPE_CHECKING:
    from engine import Projection
    from engine.liveness import InvocationHealth
    from engine.redact import Redactor
    from engine.resume import ResumePlan

from .output import id_list, short


def tree_rows(
    proj: Projection, invocation_id: str, all_runs: bool = False, health: InvocationHealth | None = None
) -> list[dict[str, Any]]:
    """The node tree of one invocation as JSON-ready rows: :func:`engine.views.tree_rows`
    (the console's tree draws the same ones) with each run's output, error and
    interrupts. ``health``: liveness's verdict (interrupted, paths in doubt)."""
    doubt, stopped = (health.in_doubt, health.interrupted) if health is not None else ((), False)
    from engine import views

    return [views.row_json(proj, row) for row in views.tree_rows(proj, invocation_id, all_runs, doubt, stopped)]


def render_tree(rows: list[dict[str, Any]], now: float | None = None) -> list[str]:
    """Plain-text lines of :func:`tree_rows`: node, status, output or error, and
    one ``waits on ID: message`` per open interrupt of the node (with the time
    left when it has a deadline)."""
    from engine.deadlines import time_left

    now = time.time() if now is None else now
    if not rows:
        return ["  (no node has run yet)"]
    width = min(max(len(r["node"]) + 2 * r["depth"] for r in rows), 48)
    lines = []
    for r in rows:
        label = ("  " * r["depth"] + r["node"]).ljust(width)
        waits = [f"waits on {p['id']}: {short(p['message'], 70)}" + (f" ({time_left(p['due_at'], now)})" if "due_at" in p
                 else "") for p in r["pending"]] if r["pending"] else []
        if r.get("in_doubt"):
            detail = "IN DOUBT: started, no end record (its side effects may have happened)"
        elif r["error"]:
            detail = r["error"]
        elif r["output"] is not None:
            detail = short(r["output"], 60)
        else:
            detail = waits.pop(0) if waits else ""
        if r["failed_attempts"] and not r["error"]:
            n = r["failed_attempts"]
            detail += f" (after {n} failed attempt{'s' if n > 1 else ''})"
        if r["earlier_runs"]:
            n = r["earlier_runs"]
            detail += f" (+{n} earlier run{'s' if n > 1 else ''})"
        lines.append(f"  {label}  {r['status']:<9}  {detail}".rstrip())
        if r["answered"]:
            waits.append(f"answered {', '.join(r['answered'])}")
        if waits:  # (most rows of a long tree have none)
            lines += [f"  {' ' * width}  {'':<9}  {w}" for w in waits]
    return lines


def health_line(h: InvocationHealth, session_id: str, notice: str | None = None) -> list[str]:
    """What ``hitl show`` says under an invocation that is running, queued for a
    worker (``notice``: :func:`engine.handoff.worker_notice` when none is alive)
    or stopped mid-run."""
    if h.queued_for is not None:
        lines = [f"  {h.label}: the turn is stored and waits for a worker of {h.queued_for} (hitl workers)"]
        if notice:
            lines.append(f"  {notice}")
        return lines
    if h.interrupted:
        lines = [f"  {INTERRUPTED}: no process is running it (its last turn stopped before it ended)"]
        if h.held:
            lines.append(f"  held by the workers: {' '.join(h.held.split())}")
        if h.in_doubt:
            lines.append(f"  in doubt: {id_list(list(h.in_doubt), 8)} (started, no end record: may have done side effects)")
        ack = " --ack-in-doubt" if h.in_doubt else ""
        lines.append(f"  continue: hitl redrive {session_id} {h.invocation_id}{ack}")
        return lines
    if h.live and h.lease is not None:
        return [f"  running now in {h.lease.holder}"]
    return []


def render_plan(red: Redactor, plan: ResumePlan, session_id: str, next_lines: list[str] | None = None) -> list[str]:
    """``next_lines``: what the auto-completions make runnable (engine.resume.next_runs;
    None when the app's code is not importable)."""
    lines = [f"dry run: session {session_id}, invocation {plan.invocation_id} (nothing was written)"]
    lines.append(f"  answers:    {', '.join(plan.resolves)}")
    width = max([len(c.path) for c in plan.changes] + [10])
    for c in plan.changes:
        detail = f"  output {short(red.value(c.output), 50)}" if c.effect == "auto-complete" else ""
        if c.still_open:
            detail += f"  still waiting for {', '.join(c.still_open)}"
        lines.append(f"  {c.path.ljust(width)}  {c.before.value:>9} -> {c.after.value:<9}  {c.effect}{detail}")
    lines.append(f"  still open: {id_list(plan.still_open, 8)}")
    lines.append(
        "  then:       the invocation re-executes (the nodes above marked re-execute run again with their run ids)"
        if plan.runs_anything
        else "  then:       nothing runs: every answered node keeps waiting for its other ids"
    )
    for line in next_lines or []:
        lines.append(f"  next:       {line}")
    for w in plan.side_effect_warnings:
        lines.append(f"  warning:    {w}")
    return lines


_USER_KINDS = frozenset(("message", "response", "redrive", "cancel"))


def event_summary(data: dict[str, Any], kind: str) -> str:
    """One line of what an event says (no projection needed), from its JSON form
    ``data`` (the stored text parsed, or a masked event's ``model_dump(mode="json",
    exclude_none=True)``) and its ``kind`` (:func:`engine.models.stored_kind`)."""
    if kind in _USER_KINDS:  # (node records, most of a log, skip what only these read)
        meta = data.get("custom_metadata") or {}
        who = f" by {meta['operator']}" if meta.get("operator") else ""
        parts = (data.get("content") or {}).get("parts") or ()
        if kind == "message":
            return f"new invocation: {short(''.join(p['text'] for p in parts if p.get('text')), 60)}"
        if kind == "response":
            answers = (p["function_response"] for p in parts if p.get("function_response") is not None)
            return f"answers {', '.join(fr['id'] for fr in answers)}{who}"
        if kind in ("redrive", "cancel"):
            return f"{kind}{who}" + (f" ({short(meta['reason'], 40)})" if meta.get("reason") else "")
    if kind == "interrupt":
        return f"asks {', '.join(data.get('long_running_tool_ids') or [])}"
    if data.get("error_code"):
        return f"{data['error_code']}: {short(data.get('error_message'), 60)}"
    status = (data.get("node_info") or {}).get("status")
    output = data.get("output")  # (None, half of a log's lines: shortened to nothing)
    if kind == "end" and status:
        return f"{status} {short(output, 50)}".rstrip() if output is not None else f"{status}".rstrip()
    return short(output, 60) if output is not None else ""


def schema_blocks(red: Redactor, schemas: list[tuple[str, Any]], indent: str = "  ") -> list[str]:
    """``--schemas``: each distinct answer schema once, readable (:func:`engine.schema_view.schema_lines`,
    the text the console's editor shows), under the ids it answers; masked by ``red``."""
    import json

    from engine.schema_view import schema_lines

    groups: dict[str, tuple[list[str], Any]] = {}
    for iid, schema in schemas:
        groups.setdefault(json.dumps(schema, sort_keys=True), ([], schema))[0].append(iid)
    lines: list[str] = []
    for ids, schema in groups.values():
        lines.append(f"{indent}answer {id_list(ids, 4)}{f' ({len(ids)} ids)' if len(ids) > 1 else ''}:")
        lines += [f"{indent}  {line}" for line in schema_lines(red.value(schema))]
    return lines

