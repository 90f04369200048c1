"""What the response editor shows around the editors: the dry run, the command, the outcome.

Rendering only. The dry run is :func:`engine.resume_plan.plan_resume` (the very
function behind ``hitl resume --dry-run``); before/after is
:func:`engine.replay.diff` of two projections. The one thing computed here is
:func:`downstream`, which reads the workflow graph (when the app's code can be
imported) to say which nodes an auto-completion makes runnable -- the event log
alone does not know the graph.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Any

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from engine.outcome import Outcome, nothing_written, one_line
from engine.redact import MASK, Redactor
from engine.replay import DiffRow
from engine.resume_plan import ResumePlan

from .format import STATUS_ICON, short, shown, to_json
from .plain import cells

EFFECT_STYLE = {
    "auto-complete": "green",
    "re-execute": "bold cyan",
    "keep waiting": "yellow",
    "re-run": "bold cyan",
}


# ------------------------------------------------------------------ commands
def resume_command(
    session_id: str,
    answers: dict[str, Any],
    invocation_id: str | None = None,
    *,
    operator: str | None = None,
    reason: str | None = None,
    dry_run: bool = False,
) -> str:
    """The ``hitl resume`` command that sends exactly these answers (shell-quoted, copyable)."""
    parts = ["hitl", "resume", session_id]
    parts += [f"{i}={json.dumps(v, ensure_ascii=False, separators=(',', ':'))}" for i, v in answers.items()]
    if invocation_id:
        parts += ["--invocation", invocation_id]
    if dry_run:
        parts.append("--dry-run")
    if operator:
        parts += ["--operator", operator]
    if reason:
        parts += ["--reason", reason]
    return " ".join(shlex.quote(p) for p in parts)


def write_command(
    kind: str, session_id: str, invocation_id: str, *, operator: str | None, reason: str | None, ack: bool = False
) -> str:
    """``hitl redrive`` / ``hitl cancel`` with the same operator, reason and acknowledgement."""
    parts = ["hitl", kind, session_id, invocation_id]
    if ack:
        parts.append("--ack-in-doubt")
    if operator:
        parts += ["--operator", operator]
    if reason:
        parts += ["--reason", reason]
    return " ".join(shlex.quote(p) for p in parts)


# ------------------------------------------------------------------ downstream
# ------------------------------------------------------------------ preview
@dataclass
class Preview:
    """A dry run as the editor shows it."""

    plan: ResumePlan | None = None
    error: str | None = None
    """Why the engine would reject these answers now (nothing is written either way)."""
    downstream: list[str] = field(default_factory=list)
    downstream_note: str | None = None
    """Why downstream nodes are not listed (the app's code is not importable)."""
    command: str = ""


def preview_renderable(preview: Preview | None, *, redactor: Redactor, stale: bool = False) -> RenderableType:
    """The dry run: what resolves, each node's before -> after and effect, what
    becomes runnable, side-effect warnings, what stays open, and the command,
    masked by ``redactor`` (the app's; with --show-secrets it shows everything)."""
    red = redactor
    if preview is None:
        return Text("Dry run: waiting for valid answers…", "dim")
    parts: list[RenderableType] = []
    title = Text("Dry run", "bold")
    title.append(" · nothing is written" + (" · updating…" if stale else ""), "dim")
    parts.append(title)
    if preview.error:
        parts.append(Text(f"✗ {red.text(preview.error)}", "bold red"))
    plan = preview.plan
    if plan is not None:
        t = Table.grid(padding=(0, 1))
        t.add_column(style="dim", no_wrap=True)
        t.add_column(overflow="fold")
        t.add_row(*cells("resolves", ", ".join(plan.resolves)))
        parts.append(t)
        for c in plan.changes:
            line = Text("  ")
            line.append(f"{STATUS_ICON[c.before.value]} {c.before.value} → {STATUS_ICON[c.after.value]} {c.after.value}")
            line.append("  ")
            line.append(c.effect, EFFECT_STYLE.get(c.effect, ""))
            if c.effect == "auto-complete":
                line.append(f" → {short(c.output, 40, red)}", "dim")
            if c.still_open:
                line.append(f" (waits for {', '.join(c.still_open)})", "dim")
            parts.append(Text(c.path, "bold"))
            parts.append(line)
        if preview.downstream:
            parts.append(Text("then", "dim"))
            parts.extend(Text(f"  {line}") for line in preview.downstream)
        elif preview.downstream_note:
            parts.append(Text(preview.downstream_note, "dim"))
        if plan.runs_anything:
            parts.append(Text("→ the invocation re-executes now (re-executed nodes keep their run ids)", "cyan"))
        else:
            parts.append(Text("→ nothing runs: every answered node keeps waiting for its other ids", "bold yellow"))
        for w in plan.side_effect_warnings:
            parts.append(Text(f"⚠ {red.text(w)}", "yellow"))
        still = ", ".join(plan.still_open) if plan.still_open else "none: every id is answered"
        parts.append(Text.assemble(("still open ", "dim"), still))
    if preview.command:
        parts.append(Text("same from a shell (ctrl+o copies):", "dim"))
        parts.append(Text(f"$ {red.text(preview.command)}", "bold"))
    return Group(*parts)


# ------------------------------------------------------------------ outcome
# The engine's Outcome (engine/outcome.py) is the one a write returns, here as everywhere;
# these read it the way the console shows it.
def outcome_error(o: Outcome) -> str | None:
    """The write's error as the console says it (None: none): a failure's message, an
    interruption with how to continue, or the refusal ending in "nothing was written"."""
    if o.error is None:
        return None
    if o.error_kind == "failed":
        return str(o.error)
    if o.error_kind == "interrupted":
        return (f"stopped mid-run after {len(o.written)} events: {one_line(o.error, 300)}; "
                "the invocation is interrupted: continue it with a re-drive (R)")
    return nothing_written(one_line(o.error, 300))


def nothing_ran(o: Outcome) -> bool:
    """An answer was stored and no node ran (a partial answer to a leaf)."""
    return o.kind == "answer" and len(o.written) == 1 and o.error is None and o.approval is None


def shown_open(o: Outcome) -> list[str]:
    """The ids still open after the write, as the outcome names them (an approval short of
    its rule: the ids it answered; nothing written: none)."""
    if not o.written:
        return []
    return list(o.answered) if o.approval is not None else o.still_open


def shown_rows(o: Outcome, red: Redactor) -> list[DiffRow]:
    """The before/after rows, an answered interrupt's saying who answered it and what
    (masked: the diff's text is raw JSON, with no operator), a cancelled one that it closed."""
    if not o.written or o.approval is not None:
        return []
    rows = []
    for row in o.rows:
        itr = (o.after.interrupts.get((o.invocation_id, row.key))
               if row.area == "interrupt" and o.after is not None and o.invocation_id is not None else None)
        if itr is not None and itr.resolved:
            by = f" by {itr.operator}" if itr.operator else ""
            row = replace(row, after=f"answered{by}: {to_json(shown(itr.response, red))}")
        elif itr is not None and itr.cancelled:
            row = replace(row, after="closed (cancelled)")
        rows.append(row)
    return rows


def _value(v: Any, red: Redactor) -> str:
    return "-" if v is None else short(v, 48, red)


def outcome_renderable(o: Outcome, redactor: Redactor, command: str = "") -> RenderableType:
    """Before/after: flags first (nothing ran, failed, interrupted), then node
    statuses, outputs, re-executions and new runs, interrupts, session state
    (masked by ``redactor``, the app's); ``command``: the same write from a shell."""
    red = redactor
    events, error, still_open, rows = len(o.written), outcome_error(o), shown_open(o), shown_rows(o, redactor)
    parts: list[RenderableType] = []
    verb = {"answer": "Answered", "redrive": "Re-drove", "cancel": "Cancelled"}[o.kind]
    head = Text(f"{verb} ", "bold")
    head.append(", ".join(o.answered) if o.answered else f"invocation {o.invocation_id}")
    who = f" by {o.operator}" if o.operator else ""
    why = f" ({red.text(o.reason)})" if o.reason else ""
    head.append(f"{who}{why}", "dim")
    head.append(" ")
    parts.append(head)
    before = o.status_before.value if o.status_before else "-"
    after = o.status_after.value if o.status_after else "-"
    parts.append(
        Text.assemble(
            ("invocation ", "dim"),
            o.invocation_id or "?",  # None: no invocation known yet
            ("  ", ""),
            (f"{STATUS_ICON.get(before, '')} {before} → {STATUS_ICON.get(after, '')} {after}", "bold"),
            (f"  · {events} event{'s' if events != 1 else ''} written", "dim"),
        )
    )
    if o.approval is not None:
        parts.append(Text(f"⏳ Approval recorded: {o.approval}. The answer is applied when the rule is met.",
                          "bold yellow"))
    if nothing_ran(o):
        open_ids = ", ".join(still_open) or "-"
        parts.append(
            Text(f"⚠ Answered, but nothing ran: the answered node keeps waiting for {open_ids}.", "bold yellow")
        )
    if error:
        style = "bold red" if o.error_kind in ("failed", "interrupted") else "bold yellow"
        parts.append(Text(f"✗ {red.text(error)}", style))
    nodes = [r for r in rows if r.area == "node"]
    itrs = [r for r in rows if r.area == "interrupt"]
    state = [r for r in rows if r.area == "state"]
    parts.append(_rows_table("node runs", nodes, red, executions=True))
    if itrs:
        parts.append(_rows_table("interrupts", itrs, red))
    parts.append(_rows_table("session state", state, red) if state else Text("session state  unchanged", "dim"))
    if still_open and not nothing_ran(o):
        parts.append(Text.assemble(("still open  ", "dim"), ", ".join(still_open)))
    if command:
        parts.append(Text.assemble(("same from a shell: ", "dim"), (f"$ {red.text(command)}", "bold")))
    return Group(*parts)


def outcome_line(o: Outcome) -> str:
    """The outcome in one line, for a toast where the full view would be in the way
    (the inbox's work queue): ``Answered a, b in s1: WAITING → COMPLETED · 4 events``."""
    before = o.status_before.value if o.status_before else "-"
    after = o.status_after.value if o.status_after else "-"
    line = f"Answered {', '.join(o.answered) or '-'} in {o.session_id}: {before} → {after}"
    events, error = len(o.written), outcome_error(o)
    line += f" · {events} event{'s' if events != 1 else ''} written"
    if nothing_ran(o):
        line += f" · nothing ran, still open: {', '.join(shown_open(o)) or '-'}"
    if error:
        line += f" · {error}"
    return line


def _rows_table(title: str, rows: Iterable[DiffRow], red: Redactor, *, executions: bool = False) -> RenderableType:
    rows = list(rows)
    t = Table(box=None, padding=(0, 1), show_header=True, header_style="dim", expand=True, title_justify="left")
    t.title = title
    t.title_style = "bold"
    t.add_column("what", overflow="fold", ratio=3)
    t.add_column("before", overflow="fold", ratio=2)
    t.add_column("after", overflow="fold", ratio=2)
    if not rows:
        t.add_row(*cells(Text("no change", "dim"), "", ""))
    for r in rows:
        label = Text(r.key)
        after = Text(_value(r.after, red))
        before = _value(r.before, red)
        if r.area == "state" and not red.show and red.is_secret(r.key):  # a secret-looking state key: its values
            after, before = Text(MASK), MASK
        if r.key.endswith(" executions") and executions:
            label = Text(r.key.removesuffix(" executions"))
            label.append(" re-executed ↻ same run id", "cyan")
            before, after = f"ran {r.before}×", Text(f"ran {r.after}×", "cyan")
        elif r.before is None and isinstance(r.after, str) and r.after.startswith("new run"):
            after = Text(r.after, "bold cyan")
        elif r.key.endswith(" status"):
            after.stylize("bold")
        t.add_row(*cells(label, before, after))
    return t


def selection_summary(selected: list[str], open_ids: list[str], red: Redactor) -> Text:
    """``● 2 selected: a, b · stays open: c`` -- what the message would answer and what not."""
    chosen = [i for i in open_ids if i in selected]
    rest = [i for i in open_ids if i not in selected]
    t = Text()
    t.append(f"● {len(chosen)} of {len(open_ids)} open selected", "bold")
    if chosen:
        t.append(f": {short(', '.join(chosen), 60, red)}")
    t.append("  ·  stays open: ", "dim")
    t.append(short(", ".join(rest), 60, red) if rest else "none", "yellow" if rest else "dim")
    return t
