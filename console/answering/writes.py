"""Running one console write (answer, re-drive, cancel) in an app worker.

:func:`start_write` runs a :class:`~console.answering.jobs.WriteJob` through
:func:`~console.answering.jobs.execute` in a worker of the *app* (it
outlives the screen: a running turn is never cancelled because the operator
navigated away) and posts to the screen that started it what happens, as
messages: a :class:`~console.messages.WriteEvent` for every event the write
appends (its ``on_event`` callback), then a :class:`~console.messages.WriteDone`
with the outcome. No widgets here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from textual.message import Message

from engine import Event
from engine.apps import AppRegistry

from ..messages import WriteDone, WriteEvent
from ..widgets.answer_views import outcome_error
from .jobs import WriteJob, execute

if TYPE_CHECKING:
    from ..app import HitlApp
    from .selection import AnswerDraft

KIND_WORDS = {"answer": "answer", "redrive": "re-drive", "cancel": "cancel"}
"""How a job's kind is said to the operator."""


class Receiver(Protocol):
    """Where a write's messages go: the screen that runs it, or the list it was started from."""

    def post_message(self, message: Message) -> bool: ...


def job_kind(job: WriteJob) -> str:
    return KIND_WORDS.get(job.kind, job.kind)


def app_registry(app: HitlApp) -> AppRegistry:
    """The app's workflow code (an empty registry when it has none: every session is read-only)."""
    reg = app.registry
    return reg if isinstance(reg, AppRegistry) else AppRegistry()


def start_write(app: HitlApp, to: Receiver, job: WriteJob, draft: AnswerDraft | None) -> None:
    """Run ``job``; ``to`` receives its WriteEvent and WriteDone messages. When
    ``to`` is gone by the end, the outcome is said where the operator is (a toast)."""
    store, registry = app.store, app_registry(app)
    count = 0

    def on_event(event: Event, seq: int | None) -> None:
        nonlocal count
        count += 1
        to.post_message(WriteEvent(job, event, count, seq))

    async def run() -> None:
        try:
            outcome = await execute(store, registry, job, on_event, on_queued=lambda line: app.notify(line, timeout=8))
            if not to.post_message(WriteDone(job, outcome, draft)):
                error = outcome_error(outcome)
                app.notify(error or f"{job.kind}: {len(outcome.written)} events written",
                           severity="error" if error else "information")
        finally:
            app.write_settled(job)  # a quit that waited for this turn may go ahead now

    app.write_started(job)
    app.run_worker(run(), group="hitl-write", exit_on_error=False)
