"""The console's writes -- answer, re-drive, cancel -- as plain async functions.

:func:`execute` runs one :class:`WriteJob` through the engine's public API
(``Runner.run`` for answers and re-drives, ``cancel_invocation`` for cancels),
calls ``on_event`` after each event it persists (the session screen reads the
store then, so the tree moves while the nodes run), and returns an
:class:`~console.widgets.answer_views.Outcome`: the before/after diff of the
invocation (:func:`engine.replay.diff`) and of the session state, or the reason
nothing was written. No widgets here: the screens call it in a worker.

Whether something was written is never guessed: the Runner yields an event
only after the store committed it, so ``events == 0`` means the engine refused
before its first append (its rejections say "nothing was written").
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from engine import Content, Event, cancel_invocation
from engine.apps import AppRegistry
from engine.errors import (
    AlreadyResolvedError,
    ConflictError,
    HitlError,
    InvocationBusyError,
    LeaseLostError,
    WorkflowFailed,
)
from engine.replay import diff
from engine.resume import load_invocation
from engine.store.base import SessionStore

from ..widgets.answer_views import Outcome
from ..widgets.format import shown, to_json
from .loaders import one_line

CONFLICTS = (AlreadyResolvedError, ConflictError, InvocationBusyError, LeaseLostError)
"""Refusals caused by another writer: the editor offers to reload and re-apply."""


@dataclass
class WriteJob:
    """One operator write, as confirmed in the console."""

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


async def execute(
    store: SessionStore,
    registry: AppRegistry | None,
    job: WriteJob,
    on_event: Callable[[Event], None] = lambda _: None,
) -> Outcome:
    """Run ``job``; never raises a HitlError (it becomes ``Outcome.error``)."""
    inv = job.invocation_id
    outcome = Outcome(
        job.kind, job.session_id, inv, job.operator, job.reason, answered=list(job.answers), command=job.command
    )
    try:
        before = await load_invocation(store, job.session_id, inv)
        state_before = dict((await store.get_session(job.session_id)).state)
    except HitlError as exc:
        outcome.error, outcome.error_kind = _nothing_written(exc), "rejected"
        return outcome
    outcome.status_before = before.invocation_status(inv)
    after = before.fork()
    written: list[Event] = []

    def seen(event: Event) -> None:
        written.append(event)
        after.apply(event)
        on_event(event)

    try:
        if job.kind == "cancel":
            seen(
                await cancel_invocation(store, job.session_id, inv, operator=job.operator, reason=job.reason)
            )
        else:
            runner = (registry or AppRegistry()).runner(job.app_name, store)
            if job.kind == "answer":
                events = runner.run(
                    job.user_id,
                    job.session_id,
                    Content.from_responses(job.answers),
                    inv,
                    operator=job.operator,
                    reason=job.reason,
                )
            else:
                events = runner.run(
                    job.user_id,
                    job.session_id,
                    invocation_id=inv,
                    operator=job.operator,
                    reason=job.reason,
                    acknowledge_in_doubt=job.acknowledge_in_doubt,
                )
            async for event in events:
                seen(event)
    except WorkflowFailed as exc:
        outcome.error, outcome.error_kind = str(exc), "failed"
    except Exception as exc:  # noqa: BLE001 -- every failure is told to the operator in one line
        if not written:
            outcome.error = _nothing_written(exc)
            outcome.error_kind = "conflict" if isinstance(exc, CONFLICTS) else "rejected"
        else:
            outcome.error = (
                f"stopped mid-run after {len(written)} events: {one_line(exc)}; "
                "the invocation is interrupted: continue it with a re-drive (R)"
            )
            outcome.error_kind = "interrupted"
    outcome.events = len(written)
    if not written:
        return outcome
    try:
        state_after = dict((await store.get_session(job.session_id)).state)
    except HitlError:
        state_after = dict(after.state)
    before.state, after.state = state_before, state_after
    outcome.rows = diff(before, after)
    for row in outcome.rows:
        if row.area == "interrupt":  # say who answered, masked (the diff's text is raw JSON, no operator)
            itr = after.interrupts.get((inv, row.key))
            if itr is not None and itr.resolved:
                by = f" by {itr.operator}" if itr.operator else ""
                row.after = f"answered{by}: {to_json(shown(itr.response))}"
            elif itr is not None and itr.cancelled:
                row.after = "closed (cancelled)"
    outcome.status_after = after.invocation_status(inv)
    outcome.still_open = [i.id for i in after.open_interrupts(inv)]
    return outcome


def _nothing_written(exc: BaseException) -> str:
    text = one_line(exc)
    return text if "nothing was written" in text else f"{text} -- nothing was written"
