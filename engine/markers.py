"""Markers: why an event matters -- an answer, an auto-completion, a re-execution,
a failure -- for the replay timeline (:mod:`engine.replay`) and the lines a write
prints (``hitl resume``). Apart from the replay so that a write, which prints
each event's markers, does not load the replay's cursor, diffs and their
dataclasses.
"""

from __future__ import annotations

from dataclasses import dataclass

from .models import Event, NodeStatus
from .projection import Change, Projection


@dataclass
class Marker:
    """Why an event matters, for the replay timeline."""

    kind: str
    """interrupt · answer · auto-complete · pending · re-execute · fresh-run ·
    error (one attempt raised; it may be retried) · failure (the run FAILED) ·
    redrive · cancel"""
    path: str | None
    text: str


def markers_for(event: Event, change: Change, after: Projection) -> list[Marker]:
    """Explain one applied event. An auto-completion is explained at the answer
    that causes it (its completion record follows in the same transaction; logs
    written before those records existed have only the answer)."""
    out: list[Marker] = []
    inv = event.invocation_id
    kind = event.kind
    meta = event.custom_metadata or {}
    who = ""
    if meta.get("operator"):
        who = f" by {meta['operator']}"
    if meta.get("reason"):
        who += f" ({meta['reason']})"
    if kind == "response":
        ids = ", ".join(fr.id for fr in event.function_responses)
        out.append(Marker("answer", None, f"answer to {ids}{who}"))
        for path in change.auto_completed:
            out.append(Marker("auto-complete", path, f"{path} auto-completed from the answer"))
        for path in sorted(change.paths):
            run = after.get(inv, path)
            if run is not None and run.status is NodeStatus.PENDING:
                out.append(Marker("pending", path, f"{path} will re-execute (PENDING)"))
    elif kind in ("redrive", "cancel"):
        out.append(Marker(kind, None, f"{kind}{who}"))
    elif kind == "interrupt":
        ids = ", ".join(event.long_running_tool_ids or [])
        out.append(Marker("interrupt", event.path, f"{event.path} asks for input: {ids}"))
    elif kind == "start" and event.path:
        run = after.get(inv, event.path)
        if run is not None and run.starts > 1:
            out.append(Marker("re-execute", event.path, f"{event.path} re-executes with the same run id"))
        elif run is not None and run.run_id != "1":
            out.append(Marker("fresh-run", event.path, f"{event.path}: fresh run {run.run_id} (new dispatch)"))
    elif kind == "error":
        attempt = event.node_info.attempt if event.node_info else None
        out.append(
            Marker("error", event.path, f"{event.path} attempt {attempt or 1} raised {event.error_code}: {event.error_message}")
        )
    elif kind == "end" and event.node_info and event.node_info.status is NodeStatus.FAILED:
        out.append(Marker("failure", event.path, f"{event.path} failed: {event.error_code}: {event.error_message}"))
    return out
