"""Answering interrupts from the console: select ids, edit, dry-run, submit, watch.

The flow, in the operator's words:

1. **Select** on the session screen (or in the inbox): ``space`` toggles the
   open ids of the node under the cursor, ``a`` takes every open id of the node
   and the nodes below it, ``A`` every open id of the invocation. A bar says
   what is selected and which ids stay open. ``e`` opens the editor (with the
   node's ids when nothing is selected); ``esc`` clears the selection.
2. **Edit** (:class:`AnswerScreen`): one editor per selected id, a form made
   from the id's stored ``response_schema``
   (:class:`~console.widgets.schema_form.SchemaForm`: ``y``/``n`` for a
   boolean, number keys for an enum, inputs, sections), with the JSON text as
   a second view of the same value (``ctrl+t``). Nothing is prefilled as a
   decision: every answer starts empty and invalid until the operator chooses.
   The call's message, payload and readable schema are beside it; each answer
   is checked as it changes (the schema, with the field path). ``ctrl+g``
   gives every selected id with the same schema the answer under the cursor
   (then edit the exceptions). The list on the left keeps every open id of the
   invocation: what is not ticked stays open.
3. **Dry run**: whenever every answer is valid, :func:`engine.resume_plan.plan_resume`
   (what ``hitl resume --dry-run`` runs) says what resolves, which nodes
   auto-complete, re-execute or keep waiting, what runs next, what may repeat a
   side effect, what stays open -- and the equivalent ``hitl resume`` command.
4. **Submit** (``ctrl+s``): only with valid answers and a dry run that passed;
   the confirmation takes the operator (default: ``[console] operator`` of
   hitl.toml or ``$USER``) and a reason, both recorded on the FR event. The
   editor closes, the Runner runs in an app worker (:mod:`console.answering.writes`)
   that posts a :class:`~console.messages.WriteEvent` for every event it writes, so
   the tree moves (PENDING -> RUNNING -> ...) while it happens. When the run
   settles (:class:`~console.messages.WriteDone`), the before/after view opens
   over the caught-up tree; "answered, but nothing ran" is flagged.
5. **Errors**: a refusal (unknown or already answered id, another writer
   first, schema error, app not importable, invocation interrupted mid-run)
   writes nothing; the editor reopens with the operator's text and the reason.
   After a conflict, ``ctrl+r`` reloads the open ids and re-applies the text.

Re-drive (``R``) and cancel (``X``) of an invocation go through the same
confirmation (operator, reason; a re-drive over nodes in doubt needs an explicit
acknowledgement) and the same before/after view. ``--read-only`` disables all
of it (every action here is ``writes=True`` or ``write_flow=True`` in the registry).

This module is the response editor (step 2-4). Selecting (step 1) is
:class:`~console.answering.selection.InterruptSelection`, owned by the session
screen (:mod:`console.answering.session_side`) and by the inbox; the modals are
:mod:`console.screens.answer_dialogs`.
"""

from __future__ import annotations

import json
from typing import Any, ClassVar, Protocol

from rich.console import Group
from rich.text import Text
from textual import events, on, work
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.widget import Widget
from textual.widgets import SelectionList
from textual.widgets.selection_list import Selection

from engine.errors import HitlError
from engine.models import Content
from engine.projection import Interrupt, Projection
from engine.resume import load_invocation
from engine.resume_plan import next_runs, plan_resume

from ..actions import bindings
from ..answering.jobs import WriteJob
from ..answering.selection import AnswerDraft
from ..answering.writes import app_registry
from ..messages import AnswerLoaded, PreviewReady
from ..text import clean_text
from ..widgets.answer_editor import AnswerEditor
from ..widgets.answer_views import Preview, preview_renderable, resume_command, selection_summary
from ..widgets.footer import FittedFooter
from ..widgets.format import short, short_id
from ..widgets.marks import MarkedSelectionList
from ..widgets.plain import Static
from .answer_dialogs import ConfirmWrite, WriteChoice
from .base import HitlScreen
from .loaders import one_line

FIRST_EDITORS = 2
"""Editors composed with the screen: it opens at once, whatever the selection."""
FILL_BATCH = 2
"""Editors added per refresh after that (keys typed meanwhile are handled between batches)."""


def _schema_key(schema: Any) -> str:
    return json.dumps(schema, sort_keys=True)


class AnswerOpener(Protocol):
    """The screen that opened the editor: it shows the invocation and runs the submit."""

    @property
    def invocation_id(self) -> str | None: ...

    @property
    def proj(self) -> Projection: ...

    def start_write(self, job: WriteJob, draft: AnswerDraft | None) -> None: ...


# ------------------------------------------------------------------ the editor screen
class AnswerScreen(HitlScreen):
    """Editors for the selected ids of one invocation, the dry run, and submit."""

    AREA = "answer"
    HELP_AREAS = ("answer",)
    BINDINGS: ClassVar[list[BindingType]] = bindings("answer")
    AUTO_FOCUS = "#answer-editors .form-field, #answer-editors JsonArea"
    """The first answer's first field (or its JSON text), as soon as the screen shows (no editor yet: nothing, until loaded)."""

    def __init__(
        self, opener: AnswerOpener, draft: AnswerDraft, *, unavailable: str | None = None, via_worker: bool = False
    ) -> None:
        super().__init__(classes="answer-screen")
        self.via_worker = via_worker
        """This console has no code for the app: a submit stores the answer and a worker runs the turn."""
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
        self._last_edited: AnswerEditor | None = None
        """The editor the operator changed last: what ``ctrl+g`` applies (a choice moves the focus on)."""
        self._to_fill: list[Interrupt] = []
        """Editors not mounted yet (the screen opens with the first :data:`FIRST_EDITORS`)."""
        self.editors_box: VerticalScroll | None = None
        """The answers pane (set by compose): its children are the editors, one per selected id."""

    # ------------------------------------------------------------ layout
    def compose(self) -> ComposeResult:
        d = self.draft
        yield self.compose_title(f"hitl ▸ Answer ▸ {short(d.session_id, 60, self.hitl.redactor)} ▸ invocation {short_id(d.invocation_id, 14)}")
        yield Static("loading…", id="answer-info", classes="infoline")
        yield Static("", id="answer-banner", classes="banner -hidden")
        with Horizontal(id="answer-main"):
            with Vertical(id="answer-side"):
                ids = MarkedSelectionList[str](id="answer-ids")
                ids.border_title = "Open ids (space: select)"
                yield ids
                pane = VerticalScroll(Static(preview_renderable(None, redactor=self.hitl.redactor), id="answer-preview-body"), id="answer-preview")
                pane.border_title = "Dry run"
                yield pane
            with VerticalScroll(id="answer-editors") as editors:
                self.editors_box = editors
                editors.can_focus = False  # its fields are the stops: the pane itself showed no focus of its own
                editors.border_title = "Answers"
                # Editors from the opener's projection, composed with the screen, so
                # keys typed right after `e` land in the editor (the store load that
                # follows confirms the ids, keeping these editors and their text).
                # Only the first few: the screen opens at once, the rest fill in a
                # few per refresh (:meth:`_fill_step`) while the operator answers.
                known = self._known_open()
                self._to_fill = [i for i in known[FIRST_EDITORS:]]
                yield from (AnswerEditor(itr, d.texts.get(itr.id), redactor=self.hitl.redactor)
                            for itr in known[:FIRST_EDITORS])
        yield FittedFooter(hide_read_only_writes=True)

    @property
    def filling(self) -> bool:
        """Editors of selected ids are still being added (the screen opened with the first ones)."""
        return bool(self._to_fill)

    async def _fill_step(self) -> None:
        """Mount the next few editors, in raise order, then again after the next refresh."""
        box = self.editors_box
        if box is None or not self.is_attached:
            return
        batch, self._to_fill = self._to_fill[:FILL_BATCH], self._to_fill[FILL_BATCH:]
        for itr in batch:
            await self._mount_editor(itr)
        if batch:
            self._changed()
        if self._to_fill:
            self.call_after_refresh(self._fill_step)

    async def _mount_editor(self, itr: Interrupt) -> None:
        """An editor for ``itr`` at its place in raise order (none when it is there or no longer selected)."""
        box = self.editors_box
        assert box is not None
        have = {e.interrupt.id: e for e in self.editors()}
        if itr.id in have or itr.id not in self.draft.selected:
            return
        key = (itr.raised_pos, itr.id)
        later = next((e for e in have.values() if (e.interrupt.raised_pos, e.interrupt.id) > key), None)
        editor = AnswerEditor(itr, self.draft.texts.get(itr.id), redactor=self.hitl.redactor)
        await box.mount(editor, before=later) if later is not None else await box.mount(editor)

    def _known_open(self) -> list[Interrupt]:
        """The selected ids that the opener's projection already shows open, in raise order."""
        proj = self.opener.proj
        if self.opener.invocation_id != self.draft.invocation_id:
            return []
        wanted = set(self.draft.selected)
        known = [i for i in proj.open_interrupts(self.draft.invocation_id) if i.id in wanted]
        return sorted(known, key=lambda i: (i.raised_pos, i.id))

    def on_mount(self) -> None:
        self._show_banner()
        self._load()
        self.opened_with = len(self.editors())
        """Editors the screen showed when it opened (the rest filled in)."""
        if self._to_fill:
            self.call_after_refresh(self._fill_step)

    def watch_focused(self, focused: Widget | None) -> None:
        """The answers pane's border is lit while the focus is inside it. A class set
        here, only when the focus crosses the pane's edge, and not a ``:focus-within``
        rule: Textual restyles every widget under the outermost ``:focus-within``
        ancestor at each focus move, and a choice moves the focus on to the next
        field -- with 24 editors that was ~0.1 s per key typed."""
        box = self.editors_box
        if box is None:
            return
        box.set_class(focused is not None and box in focused.ancestors_with_self, "-focus-within")

    def on_key(self, event: events.Key) -> None:
        """Text typed before the first editor exists (opened from the inbox, the
        store still loading) is kept for it, not taken as keys of this screen."""
        if not self._loading or self.focused is not None or self.editors():
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
        first = self.editors()
        if first:
            ed = first[0]
            ed.focus_answer()
            typed, self._typed = "".join(self._typed), []
            if typed and ed.mode == "json":
                ed.text_area.insert(typed)
            elif typed and self.focused is not None:
                for ch in typed:  # the form's keys: y, n, 1-9 ... as if typed now
                    key = "enter" if ch == "\n" else ch
                    self.focused.post_message(events.Key(key, ch))
        else:
            ids.focus()

    async def _show_unsent(self) -> None:
        """The operator's text for ids that closed meanwhile: visible, read-only, marked not sent."""
        box = self.editors_box
        assert box is not None  # composed
        await self.query(".answer-unsent").remove()
        for iid, why in self.draft.unsent.items():
            pane = Static(self.draft.texts.get(iid, ""), classes="answer-unsent")
            pane.border_title = f"{short(iid, 40, self.hitl.redactor)}: NOT SENT"
            pane.border_subtitle = short(why, 80, self.hitl.redactor)
            await box.mount(pane)

    def _why_closed(self, interrupt_id: str) -> str:
        itr = self.proj.interrupts.get((self.draft.invocation_id, interrupt_id)) if self.proj else None
        if itr is None:
            return f"{interrupt_id}: unknown in this invocation"
        if itr.cancelled:
            return f"{interrupt_id}: closed, its invocation was cancelled (event {itr.resolved_pos})"
        by = f" by {itr.operator}" if itr.operator else ""
        return f"{interrupt_id}: already answered at event {itr.resolved_pos}{by}; your text is kept but not sent"

    def _option_label(self, itr: Interrupt) -> Text:
        red = self.hitl.redactor
        t = Text()
        t.append(short(itr.id, 40, red), "bold")
        t.append(f"  {itr.path.rsplit('/', 1)[-1]}", "dim")
        if itr.message:
            t.append(f"\n  {short(itr.message, 44, red)}", "dim")
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
        box = self.editors_box
        assert box is not None  # composed
        have = {e.interrupt.id: e for e in self.editors()}
        for iid, editor in have.items():
            if iid not in wanted:
                self.draft.texts[iid] = editor.text
                await editor.remove()
        by_id = {i.id: i for i in self.open}
        filling = {i.id for i in self._to_fill}
        self._to_fill = [by_id[i.id] for i in self._to_fill if i.id in by_id]  # the store's, once loaded
        for iid in wanted:
            if iid not in have and iid not in filling:  # those come with the fill-in
                await self._mount_editor(by_id[iid])
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
        self._last_edited = message.editor
        self._changed()

    def editors(self) -> list[AnswerEditor]:
        """The editors in raise order: the answers pane's children (no walk of the
        screen's whole DOM: this runs several times per key typed)."""
        box = self.editors_box
        return [] if box is None else [w for w in box.children if isinstance(w, AnswerEditor)]

    def values(self) -> dict[str, Any] | None:
        """``{id: answer}`` when every selected answer is valid, else None."""
        editors = self.editors()
        if not editors or self._to_fill or not all(e.check.ok for e in editors):
            return None  # (an editor still to come is an answer not given yet)
        return {e.interrupt.id: e.check.value for e in editors}

    def _changed(self) -> None:
        self._render_info()
        self._show_banner()
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
            root = app_registry(self.hitl).get(d.app_name)
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
        t.append_text(selection_summary(self.selected, [i.id for i in self.open], self.hitl.redactor))
        bad = sum(1 for e in self.editors() if not e.check.ok)
        if bad:
            t.append(f"  ·  {bad} invalid", "bold red")
        info.update(t)

    def _show_banner(self) -> None:
        banner = self.query_one("#answer-banner", Static)
        lines: list[str] = []
        if self.hitl.read_only:
            lines.append("⚠ Read-only: the console opened the store read-only. The dry run works; submitting does not.")
        elif self.unavailable:
            lines.append(f"⚠ Read-only session: {self.unavailable}. The dry run works; submitting does not.")
        if self.via_worker:
            lines.append(f"No code for {self.draft.app_name} here: the answer is stored and a worker runs the turn.")
        if self.draft.error:
            lines.append(f"✗ {self.draft.error}")
            if self.draft.conflict:
                lines.append("ctrl+r: reload the open ids and re-apply your answers")
        if not lines and not self._loading:
            bad = [e for e in self.editors() if not e.check.ok]
            if bad:
                first = bad[0]
                lines.append(
                    f"○ Not ready to submit: {len(bad)} of {len(self.editors())} answer{'s' if len(self.editors()) != 1 else ''}"
                    f" still invalid -- {first.interrupt.id}: {first.check.errors[0]}"
                )
        banner.update(self.hitl.redactor.text("\n".join(lines)))
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
                kind="answer", session_id=d.session_id, invocation_id=d.invocation_id, app_name=d.app_name,
                user_id=d.user_id, operator=choice.operator, reason=choice.reason,
                answers=values, command=command(choice.operator, choice.reason, False), force=d.force,
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
                redactor=self.hitl.redactor,
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

    def focused_editor(self) -> AnswerEditor | None:
        """The editor that has the focus (None: the focus is elsewhere)."""
        focused = self.focused
        if focused is None:
            return None
        return next((n for n in focused.ancestors_with_self if isinstance(n, AnswerEditor)), None)

    def action_toggle_view(self) -> None:
        ed = self.focused_editor() or next(iter(self.editors()), None)
        if ed is None:
            return
        why = ed.toggle_view()
        if why:
            self.notify(why, title="Stays as it is", severity="warning", timeout=8)

    def action_apply_all(self) -> None:
        """The answer under the cursor, given to every selected id whose schema is the same."""
        focused, last = self.focused_editor(), self._last_edited
        src = last if last is not None and last.is_attached and last.check.ok else focused
        src = src or next(iter(self.editors()), None)
        if src is None:
            return
        if not src.check.ok:
            self.notify(f"{src.interrupt.id}: {src.check.errors[0]} -- answer it first, then apply it to the others",
                        title="Nothing applied", severity="warning", timeout=8)
            return
        schema = _schema_key(src.interrupt.response_schema)
        same = [e for e in self.editors() if e is not src and _schema_key(e.interrupt.response_schema) == schema]
        other = len(self.editors()) - 1 - len(same)
        with self.prevent(AnswerEditor.Checked):
            for e in same:
                e.set_value(src.check.value, quiet=True)
                self.draft.texts[e.interrupt.id] = e.text
        self._changed()  # one dry run for all of them
        note = f"; {other} with another schema left as they were" if other else ""
        self.notify(f"Applied {src.text.strip() if len(src.text) < 60 else 'the answer'} to {len(same)} more "
                    f"id{'s' if len(same) != 1 else ''}{note}. Edit the exceptions, then ctrl+s.", timeout=6)

    def _save_texts(self) -> None:
        for e in self.editors():
            self.draft.texts[e.interrupt.id] = e.text
