"""The bulk-answer dialog: one answer for many open interrupts across sessions.

Opened from the inbox (``b``) over the marked rows, or the filtered ones. The
operator writes one answer (:class:`~console.widgets.bulk_input.BulkAnswerInput`);
every valid answer is dry-run for each invocation (:func:`engine.bulk.dry_run`,
in a worker, latest wins) and summarised: N auto-complete, M re-execute, K
refused and why, with one row per invocation. ``ctrl+s`` confirms (operator
and reason, as for a single answer, with the equivalent ``hitl bulk-answer``
command) and submits as one batch (:func:`engine.bulk.submit`, in an app
worker: it goes on if the dialog is closed) with a progress bar; each row then
shows what happened to its invocation. The result list stays until ``esc``.
An invocation of an app whose code is not registered here is stored and left to
a worker (:func:`engine.bulk.routed_to_worker`): its row says
``queued``; a notification says first when no worker of that app is alive.
"""

from __future__ import annotations

import json
import shlex
from typing import TYPE_CHECKING, Any, ClassVar, cast

from rich.text import Text
from textual import events, on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import DataTable, ProgressBar
from textual.widgets.data_table import ColumnKey

from engine import bulk
from engine.bulk import BulkPlan, BulkResult, Group, ItemPlan, ItemResult
from engine.views import distinguishing_fields

from ..answering.jobs import WriteJob
from ..answering.writes import app_registry
from ..messages import BulkFinished, BulkItemDone, BulkPlanFailed, BulkPlanned
from ..text import literal
from ..widgets.bulk_input import BulkAnswerInput
from ..widgets.format import short, short_id
from ..widgets.plain import Label, Static
from .answer_dialogs import BACK_KEY, CONFIRM_KEY, ConfirmWrite, WriteChoice
from .loaders import one_line

if TYPE_CHECKING:
    from ..app import HitlApp


class ItemTable(DataTable[Any]):
    """The per-invocation rows. Once the batch's summary is drawn above it (several
    lines: the table shrinks), the row under the cursor -- the first refusal -- is
    scrolled back into view on every resize, so it is never left below the edge."""

    def on_resize(self, _event: events.Resize) -> None:
        self.move_cursor(row=self.cursor_row, animate=False, scroll=True)


COLUMNS = (("what", "DRY RUN"), ("session", "SESSION"), ("item", "ITEM"), ("ids", "IDS"), ("why", "NODE / WHY"))
"""ITEM: the payload fields that tell the items apart (``amount=34.14 customer=Grace``), else the invocation."""


def bulk_command(where: str, groups: list[Group], value: Any, operator: str | None, reason: str | None) -> str:
    """The equivalent ``hitl bulk-answer`` command."""
    words = ["hitl", "bulk-answer"]
    if where:
        words += bulk.split_terms(where)
    else:
        for g in groups:
            for iid in g.interrupt_ids:
                words += ["--item", g.session_id, g.invocation_id, iid]
    words += ["--answer", json.dumps(value, ensure_ascii=False, separators=(",", ":"))]
    if operator:
        words += ["--operator", operator]
    if reason:
        words += ["--reason", reason]
    return shlex.join(words)


class BulkAnswerScreen(ModalScreen[BulkResult | None]):
    """One answer, its dry run per invocation, then the batch and its results."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding(CONFIRM_KEY, "submit", "Submit", show=False),
        Binding(BACK_KEY, "close", "Close", show=False),
    ]

    def __init__(self, groups: list[Group], *, where: str = "") -> None:
        super().__init__(classes="modal", id="bulk-screen")
        self.groups = groups
        """One per invocation, in the inbox's order."""
        self.where = where
        """The filter the groups came from ("" for marked rows: the command names them)."""
        self.plan: BulkPlan | None = None
        """The dry run of :attr:`planned_text` (None: none yet)."""
        self.planned_text: str | None = None
        self.result: BulkResult | None = None
        """The submitted batch, once over."""
        self.running = False
        self.done = 0
        self.fields = distinguishing_fields([_payload(g) for g in groups])
        """Payload fields whose values differ between the items: each row shows them."""

    @property
    def hitl(self) -> HitlApp:
        return cast("HitlApp", self.app)

    # ------------------------------------------------------------ layout
    def compose(self) -> ComposeResult:
        sessions = len({g.session_id for g in self.groups})
        ids = sum(len(g.interrupt_ids) for g in self.groups)
        title = (f"Bulk answer · {ids} interrupt{'s' * (ids != 1)} in {len(self.groups)} invocation"
                 f"{'s' * (len(self.groups) != 1)}, {sessions} session{'s' * (sessions != 1)}")
        schemas: list[Any] = []
        for g in self.groups:
            for r in g.records:
                if r.response_schema not in schemas:
                    schemas.append(r.response_schema)
        with Vertical(classes="modal-box", id="bulk-box"):
            yield Label(title, classes="modal-title")
            yield Static(self._what(), id="bulk-what")
            yield BulkAnswerInput(schemas, redactor=self.hitl.redactor, id="bulk-input")
            yield Static("dry run: write a valid answer first", id="bulk-summary")
            yield ProgressBar(total=len(self.groups), show_eta=False, id="bulk-progress", classes="-hidden")
            yield ItemTable(id="bulk-items", cursor_type="row", zebra_stripes=True)
            yield Static(self._keys(), id="bulk-keys")

    def _what(self) -> Text:
        t = Text()
        if self.where:
            t.append("filter: ", "bold")
            t.append(literal(self.where))
            t.append("   ")
        nodes: dict[str, int] = {}
        for g in self.groups:
            for r in g.records:
                name = r.path.rsplit("/", 1)[-1].split("@", 1)[0]
                key = f"{r.app_name} / {name}"
                nodes[key] = nodes.get(key, 0) + 1
        t.append("nodes: ", "bold")
        t.append(literal(", ".join(f"{k} ×{n}" for k, n in nodes.items()) or "-"))
        return t

    def _keys(self) -> str:
        if self.result is not None:
            return "esc: close · rows not applied stay marked in the inbox"
        if self.hitl.read_only:
            return "read-only: the dry run only, submitting is disabled · esc: close"
        return f"{CONFIRM_KEY}: submit as one batch (asks operator and reason) · esc: close"

    def on_mount(self) -> None:
        table = self.query_one("#bulk-items", DataTable)
        for key, label in COLUMNS:
            table.add_column(label, key=key)
        for g in self.groups:
            table.add_row(*self._cells("…", g, ""), key=self._key(g))
        self.query_one(BulkAnswerInput).focus_input()

    @staticmethod
    def _key(g: Group) -> str:
        return f"{g.session_id}\x1f{g.invocation_id}"

    def _cells(self, what: str | Text, g: Group, why: str) -> list[Text | str]:
        red = self.hitl.redactor
        return [
            what if isinstance(what, Text) else Text(what),
            literal(short(g.session_id, 24, red)),
            literal(self._item(g)),
            literal(short(", ".join(g.interrupt_ids), 30, red)),
            literal(short(why, 200, red)),
        ]

    def _item(self, g: Group) -> str:
        payload = _payload(g)
        if not self.fields or not isinstance(payload, dict):
            return short_id(g.invocation_id, 12)
        red = self.hitl.redactor
        return " ".join(f"{k}={short(payload.get(k), 18, red)}" for k in self.fields)

    def _set_row(self, g: Group, what: str, why: str, style: str = "") -> None:
        table = self.query_one("#bulk-items", DataTable)
        key = self._key(g)
        for (col, _), value in zip(COLUMNS, self._cells(Text(what, style), g, why), strict=True):
            table.update_cell(key, col, value, update_width=col in ("what", "why"))

    # ------------------------------------------------------------ the dry run
    @on(BulkAnswerInput.Checked)
    def _checked(self, event: BulkAnswerInput.Checked) -> None:
        if self.running or self.result is not None:
            return
        text = self._current_text()
        if not event.check.ok:
            self.plan, self.planned_text = None, None
            self.query_one("#bulk-summary", Static).update("dry run: write a valid answer first")
            return
        self.query_one("#bulk-summary", Static).update("dry run: …")
        self._dry_run(text, event.check.value)

    @work(group="bulk-dry", exclusive=True, exit_on_error=False)
    async def _dry_run(self, text: str, value: Any) -> None:
        try:
            plan = await bulk.dry_run(self.hitl.store, self.groups, value, registry=app_registry(self.hitl), via="auto")
        except Exception as e:  # noqa: BLE001 -- one line for the operator
            self.post_message(BulkPlanFailed(text, one_line(e)))
            return
        self.post_message(BulkPlanned(text, plan))

    def _current_text(self) -> str:
        return self.query_one(BulkAnswerInput).text

    def on_bulk_planned(self, message: BulkPlanned) -> None:
        if message.text != self._current_text() or self.running or self.result is not None:
            return  # an older answer's dry run
        self.plan, self.planned_text = message.plan, message.text
        self.query_one("#bulk-summary", Static).update(self._plan_summary(message.plan))
        for item in message.plan.items:
            self._show_plan(item)

    def on_bulk_plan_failed(self, message: BulkPlanFailed) -> None:
        if message.text == self._current_text():
            self.query_one("#bulk-summary", Static).update(f"dry run failed: {message.error}")

    def _plan_summary(self, plan: BulkPlan) -> Text:
        t = Text("dry run: ", "bold")
        t.append(plan.summary())
        t.append(" (nothing written)", "dim")
        for reason, n in plan.reasons().items():
            t.append(f"\n  refused ×{n}: ", "bold")
            t.append(self.hitl.redactor.text(reason))
        return t

    def _show_plan(self, item: ItemPlan) -> None:
        style = {"refused": "bold red", "re-execute": "yellow", "keep waiting": "dim"}.get(item.verdict, "green")
        why = (item.reason or "") if item.refused else ", ".join(item.nodes or item.group.paths)
        if item.worker and not item.refused:
            why += f" (a worker of {item.group.app_name or '?'} runs it)"
        self._set_row(item.group, item.verdict, why, style)

    # ------------------------------------------------------------ submitting
    def action_submit(self) -> None:
        if self.result is not None or self.running:
            self.notify("This batch was submitted already: esc closes the dialog.", severity="warning")
            return
        if self.hitl.read_only:
            self.notify("Read-only mode: the dry run only; submitting is disabled.", severity="warning")
            return
        check = self.query_one(BulkAnswerInput).check
        if not check.ok:
            self.notify("Write a valid answer first: " + "; ".join(check.errors[:1]), severity="warning")
            return
        if self.plan is None or self.planned_text != self._current_text():
            self.notify("The dry run of this answer is not done yet: submit once it shows.", severity="warning")
            return
        plan, value = self.plan, check.value
        body = self._plan_summary(plan)
        body.append("\n\nEach invocation gets one ordinary answer (the same validation as a single answer); "
                    "refused items are listed, the others are applied.")

        def command(operator: str | None, reason: str | None, _ack: bool) -> str:
            return bulk_command(self.where, self.groups, value, operator, reason)

        dialog = ConfirmWrite(
            f"Answer {plan.interrupts} interrupts in {len(plan.items)} invocations as one batch?",
            body, operator=self.hitl.default_operator, command=command, confirm_label="Submit",
            redactor=self.hitl.redactor,
        )
        self.app.push_screen(dialog, lambda choice: self._confirmed(choice, value))

    def _confirmed(self, choice: WriteChoice | None, value: Any) -> None:
        if choice is None:
            return
        self.running = True
        self.query_one(BulkAnswerInput).disabled = True
        self.query_one("#bulk-progress", ProgressBar).remove_class("-hidden")
        self.query_one("#bulk-summary", Static).update(f"answering {len(self.groups)} invocations…")
        table = self.query_one("#bulk-items", DataTable)
        table.columns[ColumnKey("what")].label = Text("RESULT")
        for g in self.groups:
            self._set_row(g, "queued", "", "dim")
        self._keys_changed()
        start_bulk(self.hitl, self, self.groups, value, choice.operator, choice.reason)

    def on_bulk_item_done(self, message: BulkItemDone) -> None:
        r = message.result
        self.done = message.done
        self.query_one("#bulk-progress", ProgressBar).update(progress=message.done)
        if r.status == "queued":
            self._set_row(r.group, "queued", f"→ answered, queued for a worker of {r.group.app_name or '?'}", "yellow")
        elif r.ok:
            o = r.outcome
            status = o.status_after.value if o is not None and o.status_after is not None else ""
            self._set_row(r.group, "applied", f"→ {status}", "green")
        else:
            self._set_row(r.group, r.status, r.reason or "", "bold red")

    def on_bulk_finished(self, message: BulkFinished) -> None:
        self.running = False
        self.result = message.result
        t = Text(message.result.summary(), "bold")
        bad = message.result.not_applied
        if bad:
            t.append(f"\n  {len(bad)} not applied (each marked below); the others were applied.", "bold red")
            reasons: dict[str, int] = {}
            for r in bad:
                reasons[r.reason or r.status] = reasons.get(r.reason or r.status, 0) + 1
            for reason, n in reasons.items():
                t.append(f"\n  {bad[0].status if n == len(bad) else 'not applied'} ×{n}: ", "bold")
                t.append(self.hitl.redactor.text(reason))
        self.query_one("#bulk-summary", Static).update(t)
        self._keys_changed()
        table = self.query_one("#bulk-items", DataTable)
        if bad:  # the first refusal under the cursor
            row = table.get_row_index(self._key(bad[0].group))
            table.move_cursor(row=row, animate=False)  # ItemTable keeps it in view as the summary grows
        table.focus()

    def _keys_changed(self) -> None:
        self.query_one("#bulk-keys", Static).update(self._keys())

    def action_close(self) -> None:
        if self.running:
            self.notify(f"The batch goes on ({self.done} of {len(self.groups)} done); its summary will show here "
                        "when it ends.", severity="warning")
        self.dismiss(self.result)


def _payload(g: Group) -> Any:
    """The payload of the item's first interrupt (what its row is told apart by)."""
    args = g.records[0].args if g.records else {}
    return args.get("payload") if isinstance(args, dict) else None


def start_bulk(app: HitlApp, to: BulkAnswerScreen, groups: list[Group], value: Any,
               operator: str | None, reason: str | None) -> None:
    """Submit in an app worker (it outlives the dialog); each item is a running write
    for the quit guard while it runs. ``to`` gets BulkItemDone / BulkFinished."""
    store, registry = app.store, app_registry(app)
    jobs = [WriteJob(kind="answer", session_id=g.session_id, invocation_id=g.invocation_id, app_name=g.app_name or "",
                     user_id="", operator=operator, reason=reason, answers={i: value for i in g.interrupt_ids})
            for g in groups]

    def told(r: ItemResult, n: int, total: int) -> None:
        app.write_settled(jobs[n - 1])
        if n < total:
            app.write_started(jobs[n])
        to.post_message(BulkItemDone(r, n, total))

    async def run() -> None:
        try:
            done = await bulk.submit(store, groups, value, registry=registry, operator=operator, reason=reason,
                                     on_result=told, via="auto",
                                     on_notice=lambda line: app.notify(line, severity="warning", timeout=15))
        except Exception as e:  # noqa: BLE001 -- a store failure mid-batch: said, never a traceback
            app.notify(f"bulk answer stopped: {one_line(e)}", severity="error", timeout=15)
            to.post_message(BulkFinished(BulkResult("?", value, operator, reason, [])))
            return
        finally:
            for job in jobs:
                app.write_settled(job)
        if not to.post_message(BulkFinished(done)) or not to.is_attached:
            app.notify(done.summary(), severity="error" if not done.ok else "information", timeout=15)

    if jobs:
        app.write_started(jobs[0])
    app.run_worker(run(), group="hitl-write", exit_on_error=False)
