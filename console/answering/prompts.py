"""What the re-drive and cancel confirmations say, from the invocation's health.

Plain functions over :class:`~engine.liveness.InvocationHealth` and the
projection (no Textual): the session screen puts the result in a
:class:`~console.screens.answer_dialogs.ConfirmWrite`.
"""

from __future__ import annotations

from dataclasses import dataclass

from rich.text import Text

from engine.liveness import InvocationHealth
from engine.models import NodeStatus
from engine.projection import Projection
from engine.redact import Redactor

from ..widgets.format import short


@dataclass(frozen=True)
class WritePrompt:
    """The confirmation of an invocation write (``redrive`` or ``cancel``)."""

    kind: str
    title: str
    lines: list[Text]
    blocked: str | None = None
    """Why it cannot go ahead now (running in another process, read-only session)."""
    ack: str | None = None
    """The acknowledgement a re-drive over nodes in doubt needs (None: none needed)."""

    @property
    def confirm_label(self) -> str:
        return "Re-drive" if self.kind == "redrive" else "Cancel invocation"

    @property
    def reason_required(self) -> bool:
        return self.kind == "cancel"


def invocation_prompt(
    kind: str, health: InvocationHealth, proj: Projection, unavailable: str | None, red: Redactor
) -> WritePrompt:
    """The prompt for ``kind`` (``redrive`` / ``cancel``); ``unavailable``: why the
    app's code cannot run here (a re-drive is then blocked); errors masked by ``red``."""
    inv, state = health.invocation_id, health.label
    running = (
        f"It is running right now in {health.lease.holder}: wait for it to settle."
        if health.live and health.lease is not None
        else None
    )
    lines: list[Text] = []
    if kind == "redrive":
        runs = [r for r in proj.runs(inv) if not r.is_container and r.status is not NodeStatus.COMPLETED
                and r.status is not NodeStatus.WAITING]
        lines.append(Text(f"Invocation {inv} is {state}. Completed nodes are kept and never run again."))
        for r in runs:
            err = f"  {r.error_code}: {short(r.error_message or '', 60, red)}" if r.error_code else ""
            lines.append(Text(f"  ↻ {r.path} ({r.status.value}) runs again with run id {r.run_id}{err}", "cyan"))
        ack: str | None = None
        if running is None and health.in_doubt:
            lines.append(Text(
                "⚠ In doubt -- started, no end record, may already have done their side effects: "
                + ", ".join(health.in_doubt), "bold yellow"))
            ack = "I checked their side effects: run the nodes in doubt again"
        blocked = f"Read-only session: {unavailable}" if unavailable else running
        return WritePrompt(kind, f"Re-drive invocation {inv}?", lines, blocked, ack)
    open_ids = [i.id for i in proj.open_interrupts(inv)]
    lines.append(Text(f"Invocation {inv} is {state}. Every unfinished node becomes CANCELLED."))
    if open_ids:
        lines.append(Text(f"Open ids close and can no longer be answered: {', '.join(open_ids)}", "yellow"))
    lines.append(Text("This cannot be undone.", "bold"))
    return WritePrompt(kind, f"Cancel invocation {inv}?", lines, running)
