"""The console's writes -- answer, re-drive, cancel -- as one call each.

:func:`execute` runs one :class:`WriteJob` through :mod:`engine.operations`
(the same writes ``hitl resume/redrive/cancel`` make), calls ``on_event(event, seq)``
after each event it persists (the session screen applies it, so the tree moves
while the nodes run; ``seq`` is None where the write does not tell it), and returns an
:class:`~console.widgets.answer_views.Outcome`: the before/after diff of the
invocation (:func:`engine.replay.diff`) and of the session state, or the reason
nothing was written. No widgets here: the screens call it in a worker.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from engine import Event, operations
from engine.apps import AppRegistry
from engine.operations import CONFLICTS, nothing_written
from engine.redact import Redactor
from engine.store.base import SessionStore

from ..screens.loaders import one_line
from ..widgets.answer_views import Outcome
from ..widgets.format import shown, to_json

__all__ = ["CONFLICTS", "WriteJob", "execute"]


@dataclass(kw_only=True)
class WriteJob:
    """One operator write, as confirmed in the console (built with keywords: seven of its
    fields are strings a position would let one swap for another)."""

    kind: str
    """``answer``, ``redrive`` or ``cancel``."""
    session_id: str
    invocation_id: str
    app_name: str
    user_id: str
    operator: str | None
    reason: str | None
    answers: dict[str, Any] = field(default_factory=dict)
    """``{interrupt_id: value}`` for ``answer``."""
    acknowledge_in_doubt: bool = False
    """``redrive``: the operator confirmed nodes in doubt may run again."""
    command: str = ""
    """The equivalent ``hitl`` command (shown with the outcome)."""
    force: bool = False
    """``answer``: the operator confirmed answering ids someone else has claimed."""


async def execute(
    store: SessionStore,
    registry: AppRegistry | None,
    job: WriteJob,
    on_event: Callable[[Event, int | None], None] = lambda _e, _s: None,
    red: Redactor | None = None,
    on_queued: Callable[[str], None] = lambda _line: None,
) -> Outcome:
    """Run ``job``; never raises a HitlError (it becomes ``Outcome.error``).
    ``red``: the app's Redactor, for the answers the outcome quotes. An answer
    for an app with no code registered here is stored and left to a worker
    (:func:`engine.handoff.queue_answer`); ``on_queued`` gets the line saying
    so, then the worker's events come through ``on_event`` as it writes them."""
    inv = job.invocation_id

    def step(s: operations.Step) -> None:
        on_event(s.event, s.seq)

    # preload: a refusal still shows the status the invocation had; session_state: the diff has it
    common: dict[str, Any] = {"operator": job.operator, "reason": job.reason, "session_state": True, "on_step": step}
    if job.kind == "cancel":
        done = await operations.cancel(store, job.session_id, inv, **common)
    elif job.kind == "answer":
        # here, or stored and left to a worker when no code is registered here for the app (engine.routing)
        done = await operations.answer(
            store, job.session_id, job.answers, inv, registry=registry, preload=True, force=job.force, via="auto",
            on_queued=lambda queued: on_queued(queued.queued or ""), **common,
        )
    else:
        done = await operations.redrive(
            store, job.session_id, inv, registry=registry, preload=True,
            acknowledge_in_doubt=job.acknowledge_in_doubt, **common,
        )
    return _console_outcome(job, done, red)


def _console_outcome(job: WriteJob, done: operations.Outcome, red: Redactor | None = None) -> Outcome:
    """The engine's outcome as the console's before/after view reads it."""
    inv = job.invocation_id
    outcome = Outcome(
        job.kind, job.session_id, inv, job.operator, job.reason, answered=list(job.answers), command=job.command
    )
    outcome.status_before = done.status_before
    outcome.events = len(done.written)
    if done.error is not None:
        if done.error_kind == "failed":
            outcome.error = str(done.error)
        elif done.error_kind == "interrupted":
            outcome.error = (
                f"stopped mid-run after {len(done.written)} events: {one_line(done.error)}; "
                "the invocation is interrupted: continue it with a re-drive (R)"
            )
        else:
            outcome.error = nothing_written(one_line(done.error))
        outcome.error_kind = done.error_kind
    if not done.written:
        return outcome
    if done.approval is not None:  # a multi-approver rule: one approval recorded, the ids stay open
        outcome.approval = done.approval
        outcome.still_open = list(job.answers)
        return outcome
    assert done.after is not None
    outcome.rows = done.rows
    for row in outcome.rows:
        if row.area == "interrupt":  # say who answered, masked (the diff's text is raw JSON, no operator)
            itr = done.after.interrupts.get((inv, row.key))
            if itr is not None and itr.resolved:
                by = f" by {itr.operator}" if itr.operator else ""
                row.after = f"answered{by}: {to_json(shown(itr.response, red))}"
            elif itr is not None and itr.cancelled:
                row.after = "closed (cancelled)"
    outcome.status_after = done.status_after
    outcome.still_open = done.still_open
    return outcome
