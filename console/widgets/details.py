"""The details pane: the selected node run, the selected invocation or the
selected event as pretty JSON. Rendering only; the projection says what is true."""

from __future__ import annotations

from typing import Any, ClassVar

from rich.console import Group, RenderableType
from rich.json import JSON
from rich.padding import Padding
from rich.style import Style
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll

from engine.deadlines import due_at, rule_of, time_left
from engine.models import NodeStatus, StoredEvent
from engine.projection import Interrupt, NodeRun, Projection
from engine.redact import Redactor
from engine.schema_view import schema_text
from engine.views import approval_progress, display_status, waits_below

from ..text import clean, literal
from .drawn import Drawn, DrawnLines
from .format import STATUS_CLASSES, STATUS_ICON, date_time, status_class
from .plain import Static
from .preview import cut_note, preview_json


def _json(value: Any, red: Redactor) -> RenderableType:
    """A bounded preview (:mod:`console.widgets.preview`): a pane never lays out a
    megabyte; what was left out is said in place, and how to see it all."""
    text, cut = preview_json(value, red)
    try:
        body: RenderableType = JSON(text, indent=2)
    except Exception:  # noqa: BLE001 -- a repr() fallback is not JSON
        body = Text(text)
    if not cut:
        return body
    return Group(body, Text(cut_note(), style="dim italic"))


Styles = dict[str, Style]
"""Component-class styles of the Details widget (colours live in app.tcss)."""


def _s(st: Styles, key: str) -> Style:
    return st.get(key, Style())


def _fields(rows: list[tuple[str, RenderableType | str]], st: Styles) -> Table:
    t = Table.grid(padding=(0, 1))
    t.add_column(style=_s(st, "details--key"), no_wrap=True)
    t.add_column(overflow="fold")
    for k, v in rows:
        t.add_row(k, literal(v) if isinstance(v, str) else v)
    return t


def _status_text(status: str, st: Styles) -> Text:
    return Text(f"{STATUS_ICON[status]} {status}", style=_s(st, status_class(status)))


def _run_status(run: NodeRun, st: Styles, interrupted: bool, in_doubt: frozenset[str]) -> Text:
    shown = display_status(run, interrupted, in_doubt)
    text = _status_text(shown.value, st)
    if shown.value != run.status.value:
        text.append(f"  (the log says {run.status.value}; no process runs it)", _s(st, "details--dim"))
    return text


def _interrupt_block(
    itr: Interrupt, st: Styles, red: Redactor, now: float | None = None, app_name: str | None = None
) -> RenderableType:
    head = Text()
    if itr.cancelled:
        head.append("⊘ ", _s(st, "status--cancelled"))
    elif itr.resolved:
        head.append("✓ ", _s(st, "status--completed"))
    else:
        head.append("◆ ", _s(st, "status--waiting"))
    head.append(clean(itr.id), _s(st, "details--title"))
    head.append(clean(f"  {itr.name}"), _s(st, "details--dim"))
    rows: list[tuple[str, RenderableType | str]] = []
    if itr.message:
        rows.append(("message", itr.message))
    payload = itr.args.get("payload") if isinstance(itr.args, dict) else None
    if payload is not None:
        rows.append(("payload", _json(payload, red)))
    other = {k: v for k, v in (itr.args or {}).items()
             if k not in ("message", "payload", "response_schema", "deadline")}
    if other:
        rows.append(("args", _json(other, red)))
    if itr.response_schema is not None:
        rows.append(("schema", Text(clean(schema_text(red.value(itr.response_schema))))))  # readable, not cut-off JSON
    rows.append(("raised", f"event {itr.raised_pos} at {date_time(itr.timestamp)}"))
    rule = rule_of(itr.args)
    due = due_at(itr.args, itr.timestamp)
    if rule is not None and due is not None:
        left = f"{time_left(due, now)}, " if itr.open and now is not None else ""
        rows.append(("deadline", clean(f"{date_time(due)} ({left}then {rule.get('on_deadline')}; "
                                       f"{rule.get('rule') or 'RequestInput'})")))
    progress = approval_progress(app_name, itr) if app_name is not None else None
    if progress:  # a multi-approver rule: how far it is, before anyone approves as after
        rows.append(("approvals", progress))
    if itr.resolved:
        rows.append(("answer", _json(itr.response, red)))
        by = f" by {itr.operator}" if itr.operator else ""
        rows.append(("answered", f"event {itr.resolved_pos}{by}"))
    elif itr.cancelled:
        rows.append(("cancelled", f"event {itr.resolved_pos}"))
    table = _fields(rows, st)
    table.columns[0].width = 9
    return Group(head, _indent(table))


def _indent(r: RenderableType) -> RenderableType:
    return Padding(r, (0, 0, 0, 2))


def node_kind(run: NodeRun) -> str:
    """What the node is, in words: only a node that asked something is described
    by how it treats answers."""
    if run.is_container:
        return "container (its children run inside it); re-executes on resume"
    if not run.interrupt_ids:
        if run.rerun_on_resume:
            return "node (orchestrates dynamic children); re-executes on resume"
        return "leaf node (runs once per dispatch)"
    if run.rerun_on_resume:
        return "leaf that asks, re-executes on resume with the answers"
    return "leaf that asks, waits for every answer, then completes with them"


def node_details(
    proj: Projection, invocation_id: str, path: str, st: Styles, in_doubt: frozenset[str] = frozenset(),
    *, red: Redactor, interrupted: bool = False, now: float | None = None, app_name: str | None = None,
) -> RenderableType:
    """Everything about one node run, its values masked by ``red``; ``now`` (the app's
    clock) gives an open interrupt's time left to its deadline. ``interrupted``
    and ``in_doubt``: what ``engine.liveness`` reports (the invocation stopped
    mid-run, these paths started without an end record); the events alone cannot
    tell a running node from a dead one, so the status says IN DOUBT or
    INTERRUPTED there, as the tree does, with the logged status beside it."""
    run = proj.get(invocation_id, path)
    if run is None:
        return Text(f"{path}: not in this invocation", style=_s(st, "details--dim"))
    red.learn_answers((i for i in proj.interrupts.values() if i.invocation_id == invocation_id), proj.state)
    title = literal(path, _s(st, "details--title"))
    rows_kind = node_kind(run)
    rows: list[tuple[str, RenderableType | str]] = [
        ("status", _run_status(run, st, interrupted, in_doubt)),
        ("run id", run.run_id + (f"  ↻ resumed ({run.starts} starts)" if run.resumed else "")),
        ("kind", rows_kind),
        ("invocation", invocation_id),
    ]
    if run.call_key:
        rows.append(("call key", run.call_key))
    rows.append(("events", f"started at {run.started_pos}, last change at {run.updated_pos}"))
    if path in in_doubt:
        warn = "started, no end record, and no process runs it: its side effects may have happened"
        rows.append(("in doubt", Text(warn, style=_s(st, "details--warn"))))
    elif run.unfinished:
        rows.append(("end record", "none yet (running)"))
    if run.input is not None:
        rows.append(("input", _json(run.input, red)))
    if run.output is not None:
        label = "prior output" if run.status is NodeStatus.WAITING else "output"
        if run.auto_completed:
            label = "output (answers)"
        rows.append((label, _json(run.output, red)))
    if run.route is not None:
        rows.append(("route", _json(run.route, red)))
    if run.error_code:
        failed = f" ({run.errors} failed attempts)" if run.errors > 1 else ""
        error = red.text(f"{run.error_code}: {run.error_message}")  # it may echo an answer or a password=...
        rows.append(("error", literal(f"{error}{failed}", _s(st, "status--failed"))))
    if run.children:
        counts: dict[str, int] = {}
        for c in proj.children(invocation_id, path):
            counts[c.status.value] = counts.get(c.status.value, 0) + 1
        rows.append(("children", ", ".join(f"{n} {s.lower()}" for s, n in counts.items())))
        below = waits_below(proj, invocation_id, path)
        if below:
            rows.append(("waits on", ", ".join(below)))
    parts: list[RenderableType] = [title, _fields(rows, st)]
    pending = [proj.interrupts[(invocation_id, i)] for i in run.own_pending if (invocation_id, i) in proj.interrupts]
    pending = [i for i in pending if i.open]
    done = [
        proj.interrupts[(invocation_id, i)]
        for i in run.interrupt_ids
        if (invocation_id, i) in proj.interrupts and not proj.interrupts[(invocation_id, i)].open
    ]
    if pending:
        parts.append(Text(f"\npending interrupts ({len(pending)})", style=_s(st, "status--waiting")))
        parts.extend(_interrupt_block(i, st, red, now, app_name) for i in pending)
    if done:
        parts.append(Text(f"\nresolved interrupts ({len(done)})", style=_s(st, "status--completed")))
        parts.extend(_interrupt_block(i, st, red) for i in done)
    return Group(*parts)


def invocation_details(proj: Projection, invocation_id: str, st: Styles, *, red: Redactor) -> RenderableType:
    inv = proj.invocations.get(invocation_id)
    if inv is None:
        return Text("no events for this invocation yet", style=_s(st, "details--dim"))
    counts = {status.value: n for status, n in proj.status_counts(invocation_id).items()}
    rows: list[tuple[str, RenderableType | str]] = [
        ("invocation", invocation_id),
        ("message", red.text(inv.message) or "-"),
        ("started", f"{date_time(inv.timestamp)} (event {inv.started_pos})"),
        ("last event", f"{date_time(inv.last_timestamp)} (event {inv.last_pos})"),
        ("runs", ", ".join(f"{n} {s.lower()}" for s, n in sorted(counts.items())) or "-"),
        ("operator acts", ", ".join(f"event {p}" for p in inv.actions) or "-"),
    ]
    root = proj.root(invocation_id)
    if root is not None:
        rows.insert(1, ("status", _status_text(root.status.value, st)))
    opened = proj.open_interrupts(invocation_id)
    if opened:
        rows.append(("open ids", ", ".join(i.id for i in opened)))
    return _fields(rows, st)


def event_details(se: StoredEvent, st: Styles, *, red: Redactor) -> RenderableType:
    e = se.event
    head = Text()
    head.append(f"event {se.seq}", _s(st, "details--title"))
    head.append(f"  {e.kind}  {date_time(e.timestamp)}", _s(st, "details--dim"))
    return Group(head, _json(e.model_dump(mode="json", exclude_none=True), red))


class Details(VerticalScroll, can_focus=True):
    """Scrollable pane holding one rendering at a time."""

    COMPONENT_CLASSES: ClassVar[set[str]] = STATUS_CLASSES | {
        "details--key",
        "details--title",
        "details--dim",
        "details--warn",
    }

    shown: RenderableType = ""
    """What the pane currently shows (tests read it as text)."""

    def compose(self) -> ComposeResult:
        yield Static(id="details-text")
        body = DrawnLines(Drawn(Text), id="details-body")  # a rendering: strips made of the lines in view only
        body.display = False
        yield body

    @property
    def style_map(self) -> Styles:
        get = self.get_component_rich_style
        return {c: get(c, partial=True) for c in self.COMPONENT_CLASSES}

    def show(self, renderable: RenderableType, title: str) -> None:
        self.border_title = title
        self.shown = renderable
        text = self.query_one("#details-text", Static)
        body = self.query_one("#details-body", DrawnLines)
        plain = isinstance(renderable, str | Text)
        if plain:
            text.update(renderable)
        else:
            body.show(Drawn(lambda: renderable))  # laid out once per width
        text.display, body.display = plain, not plain
