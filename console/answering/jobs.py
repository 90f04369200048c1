"""The console's writes -- answer, re-drive, cancel -- as one call each.

:func:`execute` runs one :class:`WriteJob` through :mod:`engine.operations`
(the same writes ``hitl resume/redrive/cancel`` make), calls ``on_event(event, seq)``
after each event it persists (the session screen applies it, so the tree moves
while the nodes run; ``seq`` is None where the write does not tell it), and returns an
:class:`engine.outcome.Outcome` (the one every surface gets): the before/after diff
of the invocation (:func:`engine.replay.diff`) and of the session state, or the
reason nothing was written; console/widgets/answer_views.py reads it for the
operator. No widgets here: the screens call it in a worker.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from engine import Event, operations
from engine.apps import AppRegistry
from engine.operations import CONFLICTS, Outcome
from engine.store.base import SessionStore

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
    on_queued: Callable[[str], None] = lambda _line: None,
) -> Outcome:
    """Run ``job``; never raises a HitlError (it becomes ``Outcome.error``). An answer
    for an app with no code registered here is stored and left to a worker
    (:mod:`engine.routing`); ``on_queued`` gets the line saying so, then the
    worker's events come through ``on_event`` as it writes them."""
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
    return done
