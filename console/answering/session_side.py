"""The session screen's answering: selecting open ids on the tree, opening the
response editor, re-drive and cancel, and showing what a write did.

:class:`SessionAnswering` is a component the session screen owns (not a
mixin): it reads and draws through the small :class:`AnsweringHost` protocol,
so this module never imports the screen. The screen keeps the state -- its
:class:`~.selection.InterruptSelection` and the drafts by invocation -- and
binds the registry's ``interrupts.*`` and ``invocation.*`` actions to the
methods here.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any, Protocol

from rich.console import Group
from rich.text import Text

from engine.bulk import routed_to_worker
from engine.liveness import invocation_health
from engine.models import Session
from engine.projection import Projection
from engine.resume import load_invocation
from engine.views import allowed_actions

from ..messages import HealthChecked, WriteDone
from ..screens.answer import AnswerScreen
from ..screens.answer_dialogs import ConfirmWrite, OutcomeScreen, WriteChoice
from ..screens.loaders import one_line
from ..screens.owner_dialogs import AnswerOwned
from ..widgets.answer_views import outcome_error, selection_summary, shown_open, write_command
from .jobs import WriteJob
from .owners import ask_assignee, change_owners, owned_by_others
from .prompts import invocation_prompt
from .selection import AnswerDraft, InterruptSelection
from .writes import app_registry, job_kind, start_write

if TYPE_CHECKING:
    from textual.worker import Worker

    from ..app import HitlApp
    from ..widgets.node_tree import NodeTree


class WorkQueue(Protocol):
    """A list an answer was started from (the inbox): the submit returns to it."""

    def answers_sent(self, session_id: str, interrupt_ids: list[str]) -> None: ...

    def post_message(self, message: Any) -> bool: ...


class AnsweringHost(Protocol):
    """What :class:`SessionAnswering` needs from the screen that owns it."""

    session_id: str
    invocation_id: str | None
    proj: Projection
    selection: InterruptSelection
    drafts: dict[str, AnswerDraft]
    """Answer drafts by invocation id."""
    writing: str | None
    work_queue: WorkQueue | None
    """The inbox that opened this screen to answer: a submit goes back to it."""

    @property
    def hitl(self) -> HitlApp: ...

    @property
    def run_tree(self) -> NodeTree: ...

    @property
    def session(self) -> Session | None:
        """The loaded session (None until the first load)."""
        ...

    def show_selection_bar(self, text: Text | None) -> None: ...

    def render_info(self) -> None: ...

    def switch_invocation(self, invocation_id: str) -> None: ...

    def poll_then(self, then: Callable[[], None]) -> None:
        """Read the store's new events now, then call ``then``."""
        ...

    def error(self, text: str) -> None: ...

    def post_message(self, message: Any) -> bool: ...

    def start_write(self, job: WriteJob, draft: AnswerDraft | None) -> None:
        """Run a write (the editor's submit, a re-drive, a cancel)."""
        ...

    def run_worker(
        self, work: Coroutine[Any, Any, None], *, group: str, exclusive: bool, exit_on_error: bool
    ) -> Worker[None]: ...


class SessionAnswering:
    """Selection on the tree, the editor, re-drive / cancel and write outcomes of one session screen."""

    def __init__(self, host: AnsweringHost) -> None:
        self.host = host

    # ------------------------------------------------------------ selection
    @property
    def key(self) -> tuple[str, str] | None:
        inv = self.host.invocation_id
        return None if inv is None else (self.host.session_id, inv)

    def open_ids(self) -> list[str]:
        """Open ids of the shown invocation, in the order they were raised."""
        inv, proj = self.host.invocation_id, self.host.proj
        if inv is None:
            return []
        return [i.id for i in sorted(proj.open_interrupts(inv), key=lambda i: (i.raised_pos, i.id))]

    def node_ids(self, *, below: bool) -> list[str]:
        """Open ids of the node under the cursor (``below``: and of the nodes below it)."""
        h = self.host
        inv, path, proj = h.invocation_id, h.run_tree.cursor_path, h.proj
        if inv is None:
            return []
        if path is None:
            return self.open_ids()
        run = proj.get(inv, path)
        if run is None:
            return []
        own = [i for i in run.own_pending if (itr := proj.interrupts.get((inv, i))) is not None and itr.open]
        if below or not own:
            return proj.pending_ids(inv, path)
        return own

    def render(self) -> None:
        """The selection bar and the tree marks; selected ids that closed meanwhile are dropped."""
        h = self.host
        open_ids = self.open_ids()
        h.selection.keep_open(self.key, open_ids)
        sel = h.selection.ids
        inv = h.invocation_id
        paths: set[str] = set()
        if inv is not None:
            for i in sel:
                itr = h.proj.interrupts.get((inv, i))
                if itr is not None:
                    paths.add(itr.path)
        h.run_tree.set_marked(paths)
        if not sel:
            h.show_selection_bar(None)
            return
        t = selection_summary(sel, open_ids, h.hitl.redactor)
        t.append("   e: answer · esc: clear", "dim")
        h.show_selection_bar(t)

    def toggle_node(self) -> None:
        key, ids = self.key, self.node_ids(below=False)
        if key is None or not ids:
            self.host.hitl.notify("This node waits on no open id.", severity="warning")
            return
        self.host.selection.toggle(key, ids)
        self.render()

    def select_node(self) -> None:
        if (key := self.key) is not None:
            self.host.selection.add(key, self.node_ids(below=True))
        self.render()

    def select_invocation(self) -> None:
        if (key := self.key) is not None:
            self.host.selection.replace(key, self.open_ids())
        self.render()

    def clear(self) -> bool:
        """``esc``: clear a selection first (True when there was one)."""
        had = self.host.selection.clear()
        if had:
            self.render()
        return had

    # ------------------------------------------------------------ the editor
    def answer(self, ids: list[str] | None = None) -> None:
        """The editor over ``ids`` (default: the selection, else the node's open ids)."""
        h = self.host
        session, inv = h.session, h.invocation_id
        if session is None or inv is None:
            return
        wanted = ids if ids is not None else (h.selection.ids or self.node_ids(below=True))
        draft = h.drafts.get(inv)
        if draft is None:
            draft = h.drafts[inv] = AnswerDraft(session.id, inv, session.app_name, session.user_id)
        draft.selected = list(dict.fromkeys(wanted))
        owned = owned_by_others(self._owners(draft.selected), h.hitl.default_operator, h.hitl.policy)
        if owned and not draft.force:  # someone else's claim: ask first, saying whose

            def answered_anyway(yes: bool | None) -> None:
                if yes:
                    draft.force = True
                    self.open_editor(draft)

            h.hitl.push_screen(AnswerOwned(owned, h.hitl.clock()), answered_anyway)
            return
        self.open_editor(draft)

    def _owners(self, ids: list[str]) -> list[tuple[str, str | None, float | None]]:
        inv, proj = self.host.invocation_id, self.host.proj
        itrs = [proj.interrupts.get((inv, i)) for i in ids] if inv is not None else []
        return [(i.id, i.owner, i.owned_at) for i in itrs if i is not None and i.open]

    def owners(self, action: str) -> None:
        """``c`` / ``C``: claim (or release what is already the operator's) / assign
        the selected ids, else the node's open ids."""
        h = self.host
        wanted = h.selection.ids or self.node_ids(below=True)
        pairs = [(i, who) for i, who, _ in self._owners(wanted)]
        if not pairs:
            h.hitl.notify("No open id here to claim.", severity="warning")
            return
        if action == "assign":
            ask_assignee(h.hitl, ", ".join(i for i, _ in pairs),
                         lambda to: change_owners(h.hitl, "assign", {h.session_id: pairs}, to=to,
                                                  then=lambda: h.poll_then(self.render)))
            return
        change_owners(h.hitl, "claim", {h.session_id: pairs}, then=lambda: h.poll_then(self.render))

    def open_editor(self, draft: AnswerDraft) -> None:
        registry = app_registry(self.host.hitl)
        # No code registered for the app here: the answer is stored and left to a worker.
        via_worker = routed_to_worker("auto", draft.app_name, registry, self.host.hitl.store)
        unavailable = None if via_worker else registry.unavailable_reason(draft.app_name)
        self.host.hitl.push_screen(AnswerScreen(self.host, draft, unavailable=unavailable, via_worker=via_worker))

    # ------------------------------------------------------------ re-drive and cancel
    def can_redrive(self) -> bool:
        # FAILED, or mid-run (RUNNING/PENDING): the engine tells a live run from
        # an interrupted one, and the confirmation says which it is.
        inv = self.host.invocation_id
        return inv is not None and allowed_actions(self.host.proj, inv).redrive

    def can_cancel(self) -> bool:
        inv = self.host.invocation_id
        return inv is not None and allowed_actions(self.host.proj, inv).cancel

    def check_health(self, kind: str) -> None:
        """Read the invocation's health (a worker), then confirm ``kind`` (:meth:`confirm`)."""
        h = self.host
        inv = h.invocation_id
        if inv is None:
            return
        store, sid = h.hitl.store, h.session_id

        async def check() -> None:
            try:
                proj = await load_invocation(store, sid, inv)
                health = await invocation_health(store, sid, inv, proj)
            except Exception as e:  # noqa: BLE001
                h.post_message(HealthChecked(kind, None, None, one_line(e)))
                return
            h.post_message(HealthChecked(kind, health, proj, None))

        h.run_worker(check(), group="write-check", exclusive=True, exit_on_error=False)

    def confirm(self, message: HealthChecked) -> None:
        h = self.host
        session = h.session
        if message.error or message.health is None or message.proj is None or session is None:
            h.error(message.error or "cannot read the invocation")
            return
        unavailable = app_registry(h.hitl).unavailable_reason(session.app_name)
        prompt = invocation_prompt(message.kind, message.health, message.proj, unavailable, h.hitl.redactor)
        kind, inv = prompt.kind, message.health.invocation_id

        def command(operator: str | None, reason: str | None, acked: bool) -> str:
            return write_command(kind, session.id, inv, operator=operator, reason=reason, ack=acked)

        def confirmed(choice: WriteChoice | None) -> None:
            if choice is None:
                return
            job = WriteJob(
                kind=kind, session_id=session.id, invocation_id=inv, app_name=session.app_name,
                user_id=session.user_id, operator=choice.operator, reason=choice.reason,
                acknowledge_in_doubt=choice.acknowledge_in_doubt,
                command=command(choice.operator, choice.reason, choice.acknowledge_in_doubt),
            )
            self.start_write(job, None)

        h.hitl.push_screen(
            ConfirmWrite(
                prompt.title,
                Group(*prompt.lines),
                operator=h.hitl.default_operator,
                command=command,
                reason_required=prompt.reason_required,
                ack_label=prompt.ack,
                blocked=prompt.blocked,
                confirm_label=prompt.confirm_label,
                redactor=h.hitl.redactor,
            ),
            confirmed,
        )

    # ------------------------------------------------------------ writes
    def start_write(self, job: WriteJob, draft: AnswerDraft | None) -> None:
        """Run ``job`` (an app worker); its events and outcome come back as messages."""
        h = self.host
        queue = h.work_queue
        if queue is not None and job.kind == "answer" and draft is not None:
            # Back to the list at once, so keys typed while the turn runs are the
            # list's; the outcome (or the refusal, with the editor again) goes there.
            start_write(h.hitl, queue, job, draft)
            while h.hitl.screen is not queue and len(h.hitl.screen_stack) > 1:
                h.hitl.pop_screen()
            queue.answers_sent(job.session_id, list(job.answers))
            return
        if h.invocation_id != job.invocation_id:
            h.switch_invocation(job.invocation_id)
        # Shown in the screen's own info line, not a toast: a toast is posted to the
        # app and could land after the outcome it announces.
        h.writing = job.kind
        h.render_info()
        start_write(h.hitl, h, job, draft)

    def write_done(self, message: WriteDone) -> None:
        h = self.host
        o = message.outcome
        h.writing = None
        h.render_info()
        if not o.written:
            # Said twice on purpose: a toast where the operator is looking now, and
            # the banner of the editor that reopens with their text.
            error = outcome_error(o)
            h.hitl.notify(error or "nothing was written", title=f"Not submitted ({job_kind(message.job)})",
                          severity="error", timeout=10)
            if message.draft is None:
                h.error(error or "nothing was written")
            elif h.session is not None:
                message.draft.error = error
                message.draft.conflict = o.error_kind == "conflict"
                self.open_editor(message.draft)
            return
        if message.draft is not None:
            message.draft.settled(shown_open(o))
        h.selection.clear()
        self.render()

        def show() -> None:
            self.render()
            h.hitl.push_screen(OutcomeScreen(o, h.hitl.redactor, message.job.command))

        # The tree catches up with everything the write appended, then the outcome shows over it.
        h.poll_then(show)
