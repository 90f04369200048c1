"""Answering interrupts from the console: select ids, edit, dry-run, submit, watch.

The flow, in the operator's words:

1. **Select** on the session screen (or in the inbox): ``space`` toggles the
   open ids of the node under the cursor, ``a`` takes every open id of the node
   and the nodes below it, ``A`` every open id of the invocation. A bar says
   what is selected and which ids stay open. ``e`` opens the editor (with the
   node's ids when nothing is selected); ``esc`` clears the selection.
2. **Edit** (:class:`AnswerScreen`): one editor per selected id, prefilled from
   the id's stored ``response_schema`` (``template_for``) or ``{}``, the call's
   message and payload beside it; each answer is checked as it is typed (JSON
   syntax, then the schema, with the field path). The list on the left keeps
   every open id of the invocation: what is not ticked stays open.
3. **Dry run**: whenever every answer is valid, :func:`engine.resume.plan_resume`
   (what ``hitl resume --dry-run`` runs) says what resolves, which nodes
   auto-complete, re-execute or keep waiting, what runs next, what may repeat a
   side effect, what stays open -- and the equivalent ``hitl resume`` command.
4. **Submit** (``ctrl+s``): only with valid answers and a dry run that passed;
   the confirmation takes the operator (default: ``[console] operator`` of
   hitl.toml or ``$USER``) and a reason, both recorded on the FR event. The
   editor closes, the Runner runs in an app worker, and the session screen reads
   the store after every event it writes, so the tree moves (PENDING ->
   RUNNING -> ...) while it happens. When the run settles, the before/after
   view opens; "answered, but nothing ran" is flagged.
5. **Errors**: a refusal (unknown or already answered id, another writer
   first, schema error, app not importable, invocation interrupted mid-run)
   writes nothing; the editor reopens with the operator's text and the reason.
   After a conflict, ``ctrl+r`` reloads the open ids and re-applies the text.

Re-drive (``R``) and cancel (``X``) of an invocation go through the same
confirmation (operator, reason; a re-drive over nodes in doubt needs an explicit
acknowledgement) and the same before/after view. ``--read-only`` disables all
of it (every action here is ``writes=True`` or ``write_flow=True`` in the registry).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from rich.console import Group
from rich.text import Text
from textual import events, on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.message import Message
from textual.widgets import Footer, SelectionList
from textual.widgets.selection_list import Selection

from engine.apps import AppRegistry
from engine.errors import HitlError
from engine.liveness import InvocationHealth, invocation_health
from engine.models import Content, NodeStatus
from engine.projection import Interrupt, Projection
from engine.resume import load_invocation, next_runs, plan_resume
from engine.views import allowed_actions

from ..actions import bindings
from ..text import clean_text
from ..widgets.answer_editor import AnswerEditor
from ..widgets.answer_views import (
    Outcome,
    Preview,
    preview_renderable,
    resume_command,
    selection_summary,
    write_command,
)
from ..widgets.format import short, short_id
from ..widgets.plain import Static
from .answer_dialogs import ConfirmWrite, OutcomeScreen, WriteChoice
from .answer_jobs import WriteJob, execute
from .base import HitlScreen
from .loaders import one_line

if TYPE_CHECKING:
    from engine.store.base import InterruptRecord

    from .session import SessionScreen


def registry_of(screen: HitlScreen) -> AppRegistry:
    reg = screen.hitl.registry
    return reg if isinstance(reg, AppRegistry) else AppRegistry()


# ------------------------------------------------------------------ messages
class AnswerLoaded(Message):
    def __init__(self, proj: Projection | None, error: str | None = None) -> None:
        super().__init__()
        self.proj = proj
        self.error = error


class PreviewReady(Message):
    def __init__(self, generation: int, preview: Preview) -> None:
        super().__init__()
        self.generation = generation
        self.preview = preview


class WriteProgress(Message):
    """The write appended one more event: read the store now."""


class WriteDone(Message):
    def __init__(self, job: WriteJob, outcome: Outcome, draft: AnswerDraft | None) -> None:
        super().__init__()
        self.job = job
        self.outcome = outcome
        self.draft = draft


class HealthChecked(Message):
    def __init__(self, kind: str, health: InvocationHealth | None, proj: Projection | None, error: str | None) -> None:
        super().__init__()
        self.kind = kind
        self.health = health
        self.proj = proj
        self.error = error


# ------------------------------------------------------------------ the draft
@dataclass
class AnswerDraft:
    """What the operator is answering: kept by the session screen, so the text
    survives closing the editor, a refused submit, or a reload."""

    session_id: str
    invocation_id: str
    app_name: str
    user_id: str
    selected: list[str] = field(default_factory=list)
    texts: dict[str, str] = field(default_factory=dict)
    """Editor text by interrupt id (also for ids no longer selected)."""
    error: str | None = None
    """The last refusal, shown as a banner when the editor reopens."""
    conflict: bool = False
    """The refusal came from another writer: offer reload and re-apply."""
    unsent: dict[str, str] = field(default_factory=dict)
    """Ids that closed before the operator's text could be sent, and why: their
    text stays on screen (read-only, "not sent") until a write goes through."""


# ------------------------------------------------------------------ the editor screen
class AnswerScreen(HitlScreen):
    """Editors for the selected ids of one invocation, the dry run, and submit."""

    AREA = "answer"
    HELP_AREAS = ("answer",)
    BINDINGS: ClassVar[list[Binding]] = bindings("answer")
    AUTO_FOCUS = "JsonArea"
    """The first answer's text, as soon as the screen shows (no editor yet: nothing, until loaded)."""

    def __init__(self, opener: SessionAnswering, draft: AnswerDraft, *, unavailable: str | None = None) -> None:
        super().__init__(classes="answer-screen")
        self.opener = opener
        """The session screen that runs the submit and shows the re-execution."""
        self.draft = draft
        self.unavailable = unavailable
        """Why the app's workflow code cannot run (its sessions are read-only here)."""
        self.proj: Projection | None = None
        self.open: list[Interrupt] = []
        """Open interrupts of the invocation, in the order they were raised."""
        self.preview: Preview | None = None
        self.preview_for: dict[str, Any] | None = None
        """The answers the shown preview was computed for."""
        self._generation = 0
        self._loading = True
        self._typed: list[str] = []
        """Characters typed while loading with no editor yet (see :meth:`on_key`)."""

    # ------------------------------------------------------------ layout
    def compose(self) -> ComposeResult:
        d = self.draft
        yield self.compose_title(f"hitl ▸ Answer ▸ {short(d.session_id, 60)} ▸ invocation {short_id(d.invocation_id, 14)}")
        yield Static("loading…", id="answer-info", classes="infoline")
        yield Static("", id="answer-banner", classes="banner -hidden")
        with Horizontal(id="answer-main"):
            with Vertical(id="answer-side"):
                ids = SelectionList[str](id="answer-ids")
                ids.border_title = "Open ids (space: select)"
                yield ids
                pane = VerticalScroll(Static(preview_renderable(None), id="answer-preview-body"), id="answer-preview")
                pane.border_title = "Dry run"
                yield pane
            with VerticalScroll(id="answer-editors") as editors:
                editors.border_title = "Answers"
                # Editors from the opener's projection, composed with the screen, so
                # keys typed right after `e` land in the editor (the store load that
                # follows confirms the ids, keeping these editors and their text).
                yield from (AnswerEditor(itr, d.texts.get(itr.id)) for itr in self._known_open())
        yield Footer(compact=True)

    def _known_open(self) -> list[Interrupt]:
        """The selected ids that the opener's projection already shows open, in raise order."""
        proj = getattr(self.opener, "proj", None)
        if getattr(self.opener, "invocation_id", None) != self.draft.invocation_id or proj is None:
            return []
        wanted = set(self.draft.selected)
        known = [i for i in proj.open_interrupts(self.draft.invocation_id) if i.id in wanted]
        return sorted(known, key=lambda i: (i.raised_pos, i.id))

    def on_mount(self) -> None:
        self._show_banner()
        self._load()

    def on_key(self, event: events.Key) -> None:
        """Text typed before the first editor exists (opened from the inbox, the
        store still loading) is kept for it, not taken as keys of this screen."""
        if not self._loading or self.focused is not None or self.query(AnswerEditor):
            return
        if event.is_printable and event.character:
            self._typed.append(event.character)
        elif event.key == "enter":
            self._typed.append("\n")
        else:
            return  # esc, ctrl+...: as usual
        event.stop()
        event.prevent_default()

    # ------------------------------------------------------------ loading
    @work(exclusive=True, group="answer-load", exit_on_error=False)
    async def _load(self) -> None:
        d = self.draft
        try:
            proj = await load_invocation(self.hitl.store, d.session_id, d.invocation_id)
        except Exception as e:  # noqa: BLE001 -- one line in the banner
            self.post_message(AnswerLoaded(None, one_line(e)))
            return
        self.post_message(AnswerLoaded(proj))

    async def on_answer_loaded(self, message: AnswerLoaded) -> None:
        self._loading = False
        if message.proj is None:
            self.draft.error = message.error
            self._show_banner()
            return
        inv = self.draft.invocation_id
        self.proj = message.proj
        self.open = sorted(message.proj.open_interrupts(inv), key=lambda i: (i.raised_pos, i.id))
        open_ids = {i.id for i in self.open}
        gone = [i for i in self.draft.selected if i not in open_ids]
        for iid in gone:
            if self.draft.texts.get(iid):
                self.draft.unsent[iid] = self._why_closed(iid)
        if gone:
            notes = [self._why_closed(i) for i in gone]
            self.draft.selected = [i for i in self.draft.selected if i in open_ids]
            extra = "; ".join(notes)
            self.draft.error = f"{self.draft.error}\n{extra}" if self.draft.error else extra
            self._show_banner()
        ids = self.query_one("#answer-ids", SelectionList)
        ids.clear_options()
        ids.add_options(
            [Selection(self._option_label(i), i.id, i.id in self.draft.selected) for i in self.open]
        )
        if self.open:
            ids.highlighted = 0  # space and `a` act on a highlighted id from the start
        if not self.open:
            self.draft.error = (self.draft.error + "\n" if self.draft.error else "") + (
                f"invocation {inv} has no open interrupt: nothing to answer."
            )
            self._show_banner()
        await self._sync_editors()
        await self._show_unsent()
        first = self.query(AnswerEditor)
        if first:
            area = first.first().text_area
            area.focus()
            typed, self._typed = "".join(self._typed), []
            if typed:
                area.insert(typed)
        else:
            ids.focus()

    async def _show_unsent(self) -> None:
        """The operator's text for ids that closed meanwhile: visible, read-only, marked not sent."""
        box = self.query_one("#answer-editors", VerticalScroll)
        await self.query(".answer-unsent").remove()
        for iid, why in self.draft.unsent.items():
            pane = Static(self.draft.texts.get(iid, ""), classes="answer-unsent")
            pane.border_title = f"{short(iid, 40)}: NOT SENT"
            pane.border_subtitle = short(why, 80)
            await box.mount(pane)

    def _why_closed(self, interrupt_id: str) -> str:
        itr = self.proj.interrupts.get((self.draft.invocation_id, interrupt_id)) if self.proj else None
        if itr is None:
            return f"{interrupt_id}: unknown in this invocation"
        if itr.cancelled:
            return f"{interrupt_id}: closed, its invocation was cancelled (event {itr.resolved_pos})"
        by = f" by {itr.operator}" if itr.operator else ""
        return f"{interrupt_id}: already answered at event {itr.resolved_pos}{by}; your text is kept but not sent"

    @staticmethod
    def _option_label(itr: Interrupt) -> Text:
        t = Text()
        t.append(short(itr.id, 40), "bold")
        t.append(f"  {itr.path.rsplit('/', 1)[-1]}", "dim")
        if itr.message:
            t.append(f"\n  {short(itr.message, 44)}", "dim")
        return clean_text(t)

    # ------------------------------------------------------------ selection
    @property
    def id_list(self) -> SelectionList[str]:
        return self.query_one("#answer-ids", SelectionList)

    @property
    def selected(self) -> list[str]:
        """Selected ids in the order the interrupts were raised."""
        chosen = set(self.id_list.selected)
        return [i.id for i in self.open if i.id in chosen]

    @on(SelectionList.SelectedChanged, "#answer-ids")
    async def _selection_changed(self) -> None:
        await self._sync_editors()

    async def _sync_editors(self) -> None:
        """One editor per selected id, in raise order; texts of removed editors are kept."""
        wanted = self.selected
        self.draft.selected = list(wanted)
        box = self.query_one("#answer-editors", VerticalScroll)
        have = {e.interrupt.id: e for e in self.query(AnswerEditor)}
        for iid, editor in have.items():
            if iid not in wanted:
                self.draft.texts[iid] = editor.text
                await editor.remove()
        by_id = {i.id: i for i in self.open}
        for n, iid in enumerate(wanted):
            if iid in have:
                continue
            editor = AnswerEditor(by_id[iid], self.draft.texts.get(iid), redactor=self.hitl.redactor)
            later = next((have[w] for w in wanted[n + 1 :] if w in have), None)
            await box.mount(editor, before=later) if later is not None else await box.mount(editor)
            have[iid] = editor
        self._changed()

    def action_toggle_highlighted(self) -> None:
        ids = self.id_list
        if ids.highlighted is not None:
            ids.toggle(ids.get_option_at_index(ids.highlighted).value)

    def _highlighted_interrupt(self) -> Interrupt | None:
        ids = self.id_list
        if ids.highlighted is None:
            return None
        value = ids.get_option_at_index(ids.highlighted).value
        return next((i for i in self.open if i.id == value), None)

    def action_select_node(self) -> None:
        itr = self._highlighted_interrupt()
        if itr is None:
            return
        for i in self.open:
            if i.path == itr.path:
                self.id_list.select(i.id)

    def action_select_all(self) -> None:
        self.id_list.select_all()

    # ------------------------------------------------------------ checking and preview
    @on(AnswerEditor.Checked)
    def _checked(self, message: AnswerEditor.Checked) -> None:
        self.draft.texts[message.interrupt_id] = message.editor.text
        self._changed()

    def editors(self) -> list[AnswerEditor]:
        return list(self.query(AnswerEditor))

    def values(self) -> dict[str, Any] | None:
        """``{id: answer}`` when every selected answer is valid, else None."""
        editors = self.editors()
        if not editors or not all(e.check.ok for e in editors):
            return None
        return {e.interrupt.id: e.check.value for e in editors}

    def _changed(self) -> None:
        self._render_info()
        values = self.values()
        self._generation += 1
        if values is None:
            self.preview_for = None
            self._show_preview(stale=False)
            return
        self._show_preview(stale=True)
        self._dry_run(values, self._generation)

    @work(exclusive=True, group="answer-preview", exit_on_error=False)
    async def _dry_run(self, values: dict[str, Any], generation: int) -> None:
        d = self.draft
        store = self.hitl.store
        content = Content.from_responses(values)
        self.hitl.redactor.learn_from(values)  # secrets typed into an answer are masked in the command and errors
        preview = Preview(command=resume_command(d.session_id, values, d.invocation_id))
        try:
            preview.plan = await plan_resume(store, d.session_id, content, d.invocation_id)
        except Exception as e:  # noqa: BLE001 -- what the engine would refuse, in one line
            preview.error = one_line(e)
            self.post_message(PreviewReady(generation, preview))
            return
        try:
            root = registry_of(self).get(d.app_name)
            assert preview.plan.after is not None
            preview.downstream = next_runs(preview.plan, preview.plan.after, root)
        except HitlError as e:
            preview.downstream_note = f"next nodes unknown: {one_line(e)}"
        self.post_message(PreviewReady(generation, preview))

    def on_preview_ready(self, message: PreviewReady) -> None:
        if message.generation != self._generation:
            return  # the text changed since: a newer dry run is on its way
        self.preview = message.preview
        self.preview_for = self.values()
        self._show_preview(stale=False)

    def _show_preview(self, *, stale: bool) -> None:
        body = self.query_one("#answer-preview-body", Static)
        if self.values() is None:
            bad = [e for e in self.editors() if not e.check.ok]
            lines = [Text("Dry run: waiting for valid answers", "dim")]
            lines += [Text(f"✗ {e.interrupt.id}: {e.check.errors[0]}", "yellow") for e in bad]
            if not self.editors():
                lines.append(Text("Select ids on the left (space, a, A).", "dim"))
            body.update(Group(*lines))
            return
        body.update(preview_renderable(self.preview, stale=stale, redactor=self.hitl.redactor))

    # ------------------------------------------------------------ info
    def _render_info(self) -> None:
        info = self.query_one("#answer-info", Static)
        if self._loading:
            return
        t = Text(" ")
        t.append_text(selection_summary(self.selected, [i.id for i in self.open]))
        bad = sum(1 for e in self.editors() if not e.check.ok)
        if bad:
            t.append(f"  ·  {bad} invalid", "bold red")
        info.update(t)

    def _show_banner(self) -> None:
        banner = self.query_one("#answer-banner", Static)
        lines: list[str] = []
        if self.unavailable:
            lines.append(f"⚠ Read-only session: {self.unavailable}. The dry run works; submitting does not.")
        if self.draft.error:
            lines.append(f"✗ {self.draft.error}")
            if self.draft.conflict:
                lines.append("ctrl+r: reload the open ids and re-apply your answers")
        banner.update("\n".join(lines))
        banner.set_class(not lines, "-hidden")

    # ------------------------------------------------------------ actions
    def submit_problem(self) -> str | None:
        """Why submit would be refused now (None: it may go ahead)."""
        if self.hitl.read_only:
            return "read-only mode: nothing can be written"
        if self.unavailable:
            return self.unavailable
        if self._loading:
            return "still loading the open ids"
        editors = self.editors()
        if not editors:
            return "select at least one id to answer (space on the list, a: the node's ids, A: all)"
        bad = [e for e in editors if not e.check.ok]
        if bad:
            return "; ".join(f"{e.interrupt.id}: {e.check.errors[0]}" for e in bad[:3]) + " -- fix it first"
        values = self.values()
        if self.preview is None or self.preview_for != values:
            return "the dry run is still running; submit again in a moment"
        if self.preview.error:
            hint = " (ctrl+r reloads)" if self.draft.conflict or "already answered" in self.preview.error else ""
            return f"the engine would refuse these answers: {self.preview.error}{hint}"
        return None

    def action_submit(self) -> None:
        problem = self.submit_problem()
        if problem:
            self.notify(problem, title="Not submitted", severity="error", timeout=8)
            return
        values = self.values()
        assert values is not None and self.preview is not None and self.preview.plan is not None
        d = self.draft
        plan = self.preview.plan
        body = Group(
            Text.assemble(("answers ", "dim"), ", ".join(values)),
            Text.assemble(("still open ", "dim"), ", ".join(plan.still_open) or "none"),
            Text(
                "then the invocation re-executes" if plan.runs_anything else "then nothing runs (the node keeps waiting)",
                "cyan" if plan.runs_anything else "yellow",
            ),
            *[Text(f"⚠ {w}", "yellow") for w in plan.side_effect_warnings],
        )

        def command(operator: str | None, reason: str | None, _ack: bool) -> str:
            return resume_command(d.session_id, values, d.invocation_id, operator=operator, reason=reason)

        def confirmed(choice: WriteChoice | None) -> None:
            if choice is None:
                return
            job = WriteJob(
                "answer", d.session_id, d.invocation_id, d.app_name, d.user_id, choice.operator, choice.reason,
                answers=values, command=command(choice.operator, choice.reason, False),
            )
            self._save_texts()
            d.error, d.conflict = None, False
            self.opener.start_write(job, d)
            if self.app.screen is self:
                self.app.pop_screen()

        self.app.push_screen(
            ConfirmWrite(
                f"Submit {len(values)} answer{'s' if len(values) != 1 else ''} to invocation {d.invocation_id}",
                body,
                operator=self.hitl.default_operator,
                command=command,
                confirm_label="Submit",
            ),
            confirmed,
        )

    def action_reload(self) -> None:
        """Reload the open ids from the store and re-apply the texts (after a conflict)."""
        self._save_texts()
        self.draft.error, self.draft.conflict = None, False
        self._show_banner()
        self._loading = True
        self.preview = None
        self._load()

    def action_copy_command(self) -> None:
        values = self.values()
        if values is None:
            self.notify("No command yet: every selected answer must be valid.", severity="warning")
            return
        d = self.draft
        cmd = resume_command(d.session_id, values, d.invocation_id, operator=self.hitl.default_operator or None)
        self.app.copy_to_clipboard(cmd)
        self.notify(f"Copied: {self.hitl.redactor.text(cmd)}", timeout=6)

    def _save_texts(self) -> None:
        for e in self.editors():
            self.draft.texts[e.interrupt.id] = e.text


# ------------------------------------------------------------------ session screen side
class SessionAnswering:
    """Mixed into :class:`~console.screens.session.SessionScreen`: selection of
    interrupt ids, opening the editor, running writes and showing their outcome."""

    # --- state, created lazily (the session screen's __init__ stays its own)
    @property
    def selection(self: SessionScreen) -> list[str]:  # type: ignore[misc]
        """Selected open interrupt ids of the shown invocation, in selection order."""
        sel = self.__dict__.setdefault("_selection", [])
        return sel

    @property
    def drafts(self: SessionScreen) -> dict[str, AnswerDraft]:  # type: ignore[misc]
        """Answer drafts by invocation id."""
        return self.__dict__.setdefault("_drafts", {})

    def _open_ids(self: SessionScreen) -> list[str]:  # type: ignore[misc]
        inv = self.invocation_id
        if inv is None:
            return []
        return [i.id for i in sorted(self.proj.open_interrupts(inv), key=lambda i: (i.raised_pos, i.id))]

    def _node_ids(self: SessionScreen, *, below: bool) -> list[str]:  # type: ignore[misc]
        inv, path = self.invocation_id, self.tree.cursor_path
        if inv is None:
            return []
        if path is None:
            return self._open_ids()
        run = self.proj.get(inv, path)
        if run is None:
            return []
        own = [i for i in run.own_pending if (itr := self.proj.interrupts.get((inv, i))) is not None and itr.open]
        if below or not own:
            return self.proj.pending_ids(inv, path)
        return own

    def _set_selection(self: SessionScreen, ids: list[str]) -> None:  # type: ignore[misc]
        open_ids = self._open_ids()
        self.__dict__["_selection"] = [i for i in ids if i in open_ids]
        self.render_selection()

    def render_selection(self: SessionScreen) -> None:  # type: ignore[misc]
        """The selection bar and the tree marks; selected ids that closed meanwhile are dropped."""
        open_ids = self._open_ids()
        sel = [i for i in self.selection if i in open_ids]
        self.__dict__["_selection"] = sel
        inv = self.invocation_id
        paths: set[str] = set()
        if inv is not None:
            for i in sel:
                itr = self.proj.interrupts.get((inv, i))
                if itr is not None:
                    paths.add(itr.path)
        self.tree.set_marked(paths)
        try:
            bar = self.query_one("#answer-bar", Static)
        except Exception:  # noqa: BLE001 -- not composed yet
            return
        if not sel:
            bar.add_class("-hidden")
            return
        t = selection_summary(sel, open_ids)
        t.append("   e: answer · esc: clear", "dim")
        bar.update(t)
        bar.remove_class("-hidden")

    # --- actions (registry: interrupts.*)
    def can_toggle_interrupt(self: SessionScreen) -> bool:  # type: ignore[misc]
        return bool(self._open_ids())

    can_select_node = can_toggle_interrupt
    can_select_invocation = can_toggle_interrupt

    def action_toggle_interrupt(self: SessionScreen) -> None:  # type: ignore[misc]
        ids = self._node_ids(below=False)
        if not ids:
            self.notify("This node waits on no open id.", severity="warning")
            return
        sel = list(self.selection)
        if all(i in sel for i in ids):
            sel = [i for i in sel if i not in ids]
        else:
            sel += [i for i in ids if i not in sel]
        self._set_selection(sel)

    def action_select_node(self: SessionScreen) -> None:  # type: ignore[misc]
        ids = self._node_ids(below=True)
        self._set_selection(list(dict.fromkeys([*self.selection, *ids])))

    def action_select_invocation(self: SessionScreen) -> None:  # type: ignore[misc]
        self._set_selection(self._open_ids())

    def clear_selection(self: SessionScreen) -> bool:  # type: ignore[misc]
        """``esc``: clear a selection first (True when there was one)."""
        if not self.selection:
            return False
        self._set_selection([])
        return True

    def can_answer(self: SessionScreen) -> bool:  # type: ignore[misc]
        return bool(self._open_ids())

    def action_answer(self: SessionScreen, ids: list[str] | None = None) -> None:  # type: ignore[misc]
        view, inv = self.view, self.invocation_id
        if view is None or inv is None:
            return
        wanted = ids if ids is not None else (list(self.selection) or self._node_ids(below=True))
        draft = self.drafts.get(inv)
        if draft is None:
            draft = self.drafts[inv] = AnswerDraft(view.session.id, inv, view.session.app_name, view.session.user_id)
        draft.selected = list(dict.fromkeys(wanted))
        unavailable = registry_of(self).unavailable_reason(view.session.app_name)
        self.app.push_screen(AnswerScreen(self, draft, unavailable=unavailable))

    def reopen_answer(self: SessionScreen, draft: AnswerDraft) -> None:  # type: ignore[misc]
        if self.view is None:
            return
        unavailable = registry_of(self).unavailable_reason(draft.app_name)
        self.app.push_screen(AnswerScreen(self, draft, unavailable=unavailable))

    # --- re-drive and cancel (registry: invocation.*)
    def can_redrive(self: SessionScreen) -> bool:  # type: ignore[misc]
        # FAILED, or mid-run (RUNNING/PENDING): the engine tells a live run from
        # an interrupted one, and the confirmation says which it is.
        inv = self.invocation_id
        return inv is not None and allowed_actions(self.proj, inv).redrive

    def can_cancel(self: SessionScreen) -> bool:  # type: ignore[misc]
        inv = self.invocation_id
        return inv is not None and allowed_actions(self.proj, inv).cancel

    def action_redrive(self: SessionScreen) -> None:  # type: ignore[misc]
        self._check_health("redrive")

    def action_cancel(self: SessionScreen) -> None:  # type: ignore[misc]
        self._check_health("cancel")

    def _check_health(self: SessionScreen, kind: str) -> None:  # type: ignore[misc]
        inv = self.invocation_id
        if inv is None:
            return
        store, sid = self.hitl.store, self.session_id

        async def check() -> None:
            try:
                proj = await load_invocation(store, sid, inv)
                health = await invocation_health(store, sid, inv, proj)
            except Exception as e:  # noqa: BLE001
                self.post_message(HealthChecked(kind, None, None, one_line(e)))
                return
            self.post_message(HealthChecked(kind, health, proj, None))

        self.run_worker(check(), group="write-check", exclusive=True, exit_on_error=False)

    def on_health_checked(self: SessionScreen, message: HealthChecked) -> None:  # type: ignore[misc]
        if message.error or message.health is None or message.proj is None or self.view is None:
            self.error(message.error or "cannot read the invocation")
            return
        h, proj, session = message.health, message.proj, self.view.session
        inv = h.invocation_id
        lines: list[Text] = []
        blocked: str | None = None
        ack: str | None = None
        state = h.label
        if message.kind == "redrive":
            runs = [r for r in proj.runs(inv) if not r.is_container and r.status is not NodeStatus.COMPLETED
                    and r.status is not NodeStatus.WAITING]
            lines.append(Text(f"Invocation {inv} is {state}. Completed nodes are kept and never run again."))
            for r in runs:
                err = f"  {r.error_code}: {short(r.error_message or '', 60)}" if r.error_code else ""
                lines.append(Text(f"  ↻ {r.path} ({r.status.value}) runs again with run id {r.run_id}{err}", "cyan"))
            if h.live and h.lease is not None:
                blocked = f"It is running right now in {h.lease.holder}: wait for it to settle."
            elif h.in_doubt:
                lines.append(Text(
                    "⚠ In doubt -- started, no end record, may already have done their side effects: "
                    + ", ".join(h.in_doubt), "bold yellow"))
                ack = "I checked their side effects: run the nodes in doubt again"
            reason = registry_of(self).unavailable_reason(session.app_name)
            if reason:
                blocked = f"Read-only session: {reason}"
            title = f"Re-drive invocation {inv}?"
        else:
            open_ids = [i.id for i in proj.open_interrupts(inv)]
            lines.append(Text(f"Invocation {inv} is {state}. Every unfinished node becomes CANCELLED."))
            if open_ids:
                lines.append(Text(f"Open ids close and can no longer be answered: {', '.join(open_ids)}", "yellow"))
            lines.append(Text("This cannot be undone.", "bold"))
            if h.live and h.lease is not None:
                blocked = f"It is running right now in {h.lease.holder}: wait for it to settle."
            title = f"Cancel invocation {inv}?"
        kind = message.kind

        def command(operator: str | None, reason: str | None, acked: bool) -> str:
            return write_command(kind, session.id, inv, operator=operator, reason=reason, ack=acked)

        def confirmed(choice: WriteChoice | None) -> None:
            if choice is None:
                return
            job = WriteJob(
                kind, session.id, inv, session.app_name, session.user_id, choice.operator, choice.reason,
                acknowledge_in_doubt=choice.acknowledge_in_doubt,
                command=command(choice.operator, choice.reason, choice.acknowledge_in_doubt),
            )
            self.start_write(job, None)

        self.app.push_screen(
            ConfirmWrite(
                title,
                Group(*lines),
                operator=self.hitl.default_operator,
                command=command,
                reason_required=kind == "cancel",
                ack_label=ack,
                blocked=blocked,
                confirm_label="Re-drive" if kind == "redrive" else "Cancel invocation",
            ),
            confirmed,
        )

    # --- running a write
    def start_write(self: SessionScreen, job: WriteJob, draft: AnswerDraft | None) -> None:  # type: ignore[misc]
        """Run ``job`` in an app worker (it outlives this screen: a running turn
        is never cancelled because the operator navigated away)."""
        if self.invocation_id != job.invocation_id:
            self.switch_invocation(job.invocation_id)
        store, registry = self.hitl.store, registry_of(self)
        screen = self
        app = self.app

        async def run() -> None:
            try:
                outcome = await execute(store, registry, job, lambda _e: screen.post_message(WriteProgress()))
                if not screen.post_message(WriteDone(job, outcome, draft)):
                    # The session screen is gone: say it where the operator is.
                    severity = "error" if outcome.error else "information"
                    app.notify(outcome.error or f"{job.kind}: {outcome.events} events written", severity=severity)
            finally:
                hitl.write_settled(job)  # a quit that waited for this turn may go ahead now

        # Shown in the screen's own info line, not a toast: a toast is posted to the
        # app and could land after the outcome it announces.
        self.writing = job.kind
        self._render_info()
        hitl = self.hitl
        hitl.write_started(job)
        hitl.run_worker(run(), group="hitl-write", exit_on_error=False)

    def on_write_progress(self: SessionScreen, message: WriteProgress) -> None:  # type: ignore[misc]
        self._poll()

    def on_write_done(self: SessionScreen, message: WriteDone) -> None:  # type: ignore[misc]
        o = message.outcome
        self.writing = None
        self._render_info()
        if not o.written:
            # Said twice on purpose: a toast where the operator is looking now, and
            # the banner of the editor that reopens with their text.
            self.notify(o.error or "nothing was written", title=f"Not submitted ({job_kind(message.job)})",
                        severity="error", timeout=10)
            if message.draft is not None:
                message.draft.error = o.error
                message.draft.conflict = o.error_kind == "conflict"
                self.reopen_answer(message.draft)
            else:
                self.error(o.error or "nothing was written")
            return
        if message.draft is not None:
            message.draft.texts = {k: v for k, v in message.draft.texts.items() if k in o.still_open}
            message.draft.selected = []
            message.draft.unsent = {}
        self._set_selection([])
        self._settle_then_show(o, 0)

    def _settle_then_show(self: SessionScreen, outcome: Outcome, tries: int, polled: bool = False) -> None:  # type: ignore[misc]
        """Let the tree catch up with the store (a poll started after the write
        ended, and finished), then show the outcome over it."""
        if self._polling and tries < 100:
            self.set_timer(0.02, lambda: self._settle_then_show(outcome, tries + 1, polled))
            return
        if not polled:
            self._poll()
            self.set_timer(0.02, lambda: self._settle_then_show(outcome, tries + 1, True))
            return
        self.render_selection()
        self.app.push_screen(OutcomeScreen(outcome, self.hitl.redactor))


def job_kind(job: WriteJob) -> str:
    return {"answer": "answer", "redrive": "re-drive", "cancel": "cancel"}.get(job.kind, job.kind)


# ------------------------------------------------------------------ inbox side
class InboxAnswering:
    """Mixed into :class:`~console.screens.inbox.InboxScreen`: select rows (ids of
    one invocation -- one message answers one invocation) and answer them."""

    @property
    def picked(self) -> tuple[str, str, list[str]] | None:
        """(session, invocation, ids) selected in the inbox."""
        return self.__dict__.get("_picked")

    def is_picked(self, rec: InterruptRecord) -> bool:
        p = self.picked
        return p is not None and (rec.session_id, rec.invocation_id) == p[:2] and rec.interrupt_id in p[2]

    def picked_summary(self) -> str:
        """`` · ● 2 selected in SESSION (e: answer)`` for the info line; empty without a selection."""
        p = self.picked
        if p is None:
            return ""
        return f" · ● {len(p[2])} selected in {p[0]} / {short_id(p[1], 10)} (e: answer, space: unselect)"

    def interrupt_cell(self, rec: InterruptRecord) -> str:
        return ("● " if self.is_picked(rec) else "") + short(rec.interrupt_id, 32)

    def _pick(self, rows: list[InterruptRecord], *, toggle: bool) -> None:
        if not rows:
            return
        key = (rows[0].session_id, rows[0].invocation_id)
        p = self.picked
        ids = list(p[2]) if p is not None and p[:2] == key else []
        if p is not None and p[:2] != key and p[2]:
            self.notify(  # type: ignore[attr-defined]
                f"One message answers one invocation: selection moved to session {key[0]}, invocation {key[1]}.",
                severity="warning",
            )
        new = [r.interrupt_id for r in rows]
        if toggle and all(i in ids for i in new):
            ids = [i for i in ids if i not in new]
        else:
            ids += [i for i in new if i not in ids]
        self.__dict__["_picked"] = (*key, ids) if ids else None
        self._show_rows()  # type: ignore[attr-defined]

    def can_toggle_interrupt(self) -> bool:
        return self.selected is not None  # type: ignore[attr-defined]

    can_select_node = can_toggle_interrupt
    can_select_invocation = can_toggle_interrupt

    def action_toggle_interrupt(self) -> None:
        rec = self.selected  # type: ignore[attr-defined]
        if rec is not None:
            self._pick([rec], toggle=True)

    def action_select_node(self) -> None:
        rec = self.selected  # type: ignore[attr-defined]
        if rec is not None:
            same = (rec.session_id, rec.invocation_id, rec.path)
            self._pick([r for r in self.rows if (r.session_id, r.invocation_id, r.path) == same], toggle=False)  # type: ignore[attr-defined]

    def action_select_invocation(self) -> None:
        rec = self.selected  # type: ignore[attr-defined]
        if rec is not None:
            same = (rec.session_id, rec.invocation_id)
            self._pick([r for r in self.rows if (r.session_id, r.invocation_id) == same], toggle=False)  # type: ignore[attr-defined]

    def can_answer(self) -> bool:
        return self.selected is not None or self.picked is not None  # type: ignore[attr-defined]

    def action_answer(self) -> None:
        """Open the session at the invocation, then the editor over it."""
        p = self.picked
        rec = self.selected  # type: ignore[attr-defined]
        if p is not None and p[2]:
            session_id, inv, ids = p
            path = next((r.path for r in self.rows if r.interrupt_id == ids[0] and r.invocation_id == inv), None)  # type: ignore[attr-defined]
        elif rec is not None:
            session_id, inv, ids, path = rec.session_id, rec.invocation_id, [rec.interrupt_id], rec.path
        else:
            return
        from .session import SessionScreen

        records = {r.interrupt_id: r for r in self.rows if r.invocation_id == inv}  # type: ignore[attr-defined]
        first = records.get(ids[0]) or rec
        assert first is not None
        self.__dict__["_picked"] = None
        self._show_rows()  # type: ignore[attr-defined]
        screen = SessionScreen(session_id, inv, path)
        self.app.push_screen(screen)  # type: ignore[attr-defined]
        draft = screen.drafts.setdefault(inv, AnswerDraft(session_id, inv, first.app_name, first.user_id))
        draft.selected = list(ids)
        unavailable = registry_of(screen).unavailable_reason(first.app_name)  # type: ignore[arg-type]
        self.app.push_screen(AnswerScreen(screen, draft, unavailable=unavailable))  # type: ignore[attr-defined]
