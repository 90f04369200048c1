"""Typed modals of the write flow.

* :class:`ConfirmWrite` -- ``ModalScreen[WriteChoice | None]``: what is about to
  be written and the equivalent ``hitl`` command, the operator (required) and
  the reason (required for a cancel), and for a re-drive over nodes in doubt an
  explicit acknowledgement. ``esc`` backs out; nothing is written.
* :class:`OutcomeScreen` -- the before/after view once a write has settled.
* :class:`QuitGuard` -- ``q`` / ``ctrl+q`` / ``ctrl+c`` while a write the
  console started is running: wait for it (the default), keep working, or quit
  now and leave the invocation interrupted mid-run -- said, never silent.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar

from rich.console import RenderableType
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Checkbox, Input

from engine.outcome import Outcome
from engine.redact import Redactor

from ..actions import BY_ID
from ..widgets.answer_views import outcome_renderable
from ..widgets.keys import TextInput
from ..widgets.plain import Label, Static

CONFIRM_KEY = BY_ID["answer.submit"].key or "ctrl+s"
"""The dialog confirms with the key that submits answers (one vocabulary)."""
BACK_KEY = BY_ID["app.back"].key or "escape"


@dataclass(frozen=True)
class WriteChoice:
    """What the operator confirmed."""

    operator: str
    reason: str | None
    acknowledge_in_doubt: bool = False


class ConfirmWrite(ModalScreen[WriteChoice | None]):
    """Confirm a write: operator, reason, acknowledgement; the command updates as you type."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding(CONFIRM_KEY, "confirm", "Confirm", show=False),
        Binding(BACK_KEY, "back", "Back", show=False),
    ]

    def __init__(
        self,
        title: str,
        body: RenderableType,
        *,
        operator: str,
        command: Callable[[str | None, str | None, bool], str],
        reason_required: bool = False,
        ack_label: str | None = None,
        blocked: str | None = None,
        confirm_label: str = "Confirm",
        redactor: Redactor,
    ) -> None:
        super().__init__(classes="modal")
        self.redactor = redactor
        """Masks the summary and the command (answers may hold secrets); what the operator types is theirs."""
        self.title_text = title
        self.body = body
        self.operator = operator
        self.command = command
        """(operator, reason, acknowledged) -> the equivalent hitl command."""
        self.reason_required = reason_required
        self.ack_label = ack_label
        """Set when the write needs an explicit acknowledgement (nodes in doubt)."""
        self.blocked = blocked
        """Why this write cannot be confirmed at all (shown; Confirm is disabled)."""
        self.confirm_label = confirm_label

    def compose(self) -> ComposeResult:
        with Vertical(classes="modal-box", id="confirm-box"):
            yield Label(self.title_text, classes="modal-title")
            with VerticalScroll(id="confirm-body"):
                yield Static(self.body)
            if self.ack_label:
                yield Checkbox(self.ack_label, id="confirm-ack")
            signed_in = getattr(self.app, "operator", None)  # hitl serve: the signed-in name, not editable
            if signed_in:
                self.operator = signed_in
            yield Label("Operator (signed in)" if signed_in else "Operator (recorded with the write)",
                        classes="confirm-label")
            yield TextInput(self.operator, placeholder="operator (required)", id="confirm-operator",
                        disabled=bool(signed_in))
            yield Label("Reason (required)" if self.reason_required else "Reason (optional, recorded)",
                        classes="confirm-label")
            placeholder = "reason (required)" if self.reason_required else "reason (optional, recorded)"
            yield TextInput("", placeholder=placeholder, id="confirm-reason")
            yield Static("", id="confirm-command")
            yield Static(self.blocked or "", id="confirm-problem")
            with Horizontal(id="confirm-buttons"):
                yield Button(f"{self.confirm_label} ({CONFIRM_KEY})", id="confirm-ok", variant="primary",
                             disabled=self.blocked is not None)
                yield Button("Back (esc)", id="confirm-back")

    def on_mount(self) -> None:
        for box in self.query(Input):
            box.cursor_blink = getattr(self.app, "cursor_blink", True)
        self.query_one("#confirm-operator" if not self.operator else "#confirm-reason", Input).focus()
        self._refresh_command()

    def _values(self) -> tuple[str, str | None, bool]:
        operator = self.query_one("#confirm-operator", Input).value.strip()
        reason = self.query_one("#confirm-reason", Input).value.strip() or None
        ack = bool(self.ack_label) and self.query_one("#confirm-ack", Checkbox).value
        return operator, reason, ack

    def _refresh_command(self) -> None:
        operator, reason, ack = self._values()
        cmd = self.command(operator or None, reason, ack)
        self.query_one("#confirm-command", Static).update(f"$ {self.redactor.text(cmd)}")

    @on(Input.Changed)
    @on(Checkbox.Changed)
    def _changed(self) -> None:
        self._refresh_command()

    def problem(self) -> str | None:
        """Why Confirm would not go through now (None: it would)."""
        if self.blocked:
            return self.blocked
        operator, reason, ack = self._values()
        if not operator:
            return "An operator name is required: it is recorded with the write (hitl audit)."
        if self.reason_required and not reason:
            return "A reason is required for this action: it is recorded with the write."
        if self.ack_label and not ack:
            return "Tick the acknowledgement first: nodes in doubt would run again."
        return None

    def action_confirm(self) -> None:
        problem = self.problem()
        if problem:
            self.query_one("#confirm-problem", Static).update(problem)
            self.notify(problem, severity="warning")
            return
        operator, reason, ack = self._values()
        self.dismiss(WriteChoice(operator, reason, ack))

    @on(Input.Submitted)
    def _submitted(self) -> None:
        self.action_confirm()

    @on(Button.Pressed, "#confirm-ok")
    def _ok(self) -> None:
        self.action_confirm()

    @on(Button.Pressed, "#confirm-back")
    def action_back(self) -> None:
        self.dismiss(None)


class OutcomeScreen(ModalScreen[None]):
    """Before/after of one write: statuses, outputs, re-executions, new runs, state."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape,enter,q", "close", "Close", show=False)]

    def __init__(self, outcome: Outcome, redactor: Redactor, command: str = "") -> None:
        super().__init__(classes="modal")
        self.outcome = outcome
        self.redactor = redactor
        self.command = command
        """The same write from a shell (shown under the outcome)."""

    def compose(self) -> ComposeResult:
        o = self.outcome
        with VerticalScroll(classes="modal-box", id="outcome-box"):
            yield Label(f"Outcome · session {o.session_id}   (esc / enter: close)", classes="modal-title")
            yield Static(outcome_renderable(o, self.redactor, self.command), id="outcome-body")

    def action_close(self) -> None:
        self.dismiss(None)


QUIT_WAIT, QUIT_STAY, QUIT_NOW = "wait", "stay", "now"


class QuitGuard(ModalScreen[str | None]):
    """Quitting while a console-started turn runs: ask first; "wait for it" is the default.

    Dismisses with :data:`QUIT_WAIT` (quit once every running write settled),
    :data:`QUIT_NOW` (stop them mid-run and quit) or :data:`QUIT_STAY`/None.
    While the app waits, the dialog stays up and says so (``#quit-status``)."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding(BACK_KEY, "stay", "Keep working", show=False)]

    def __init__(self, running: list[str]) -> None:
        super().__init__(classes="modal")
        self.running = running
        """One line per running write: ``answer of session S, invocation I``."""

    def compose(self) -> ComposeResult:
        with Vertical(classes="modal-box", id="quit-box"):
            yield Label("Quit while a write is running?", classes="modal-title")
            lines = "\n".join(f"  ▶ {r}" for r in self.running)
            yield Static(
                f"Still running, started from this console:\n{lines}\n\n"
                "Quitting now stops the turn mid-run: its node is left in doubt (started, no end "
                "record; a side effect may or may not have happened) and the invocation needs a re-drive.",
                id="quit-body",
            )
            yield Static("", id="quit-status")
            with Horizontal(id="quit-buttons"):
                yield Button("Wait for it, then quit", id="quit-wait", variant="primary")
                yield Button("Keep working (esc)", id="quit-stay")
                yield Button("Quit now, leave it in doubt", id="quit-now", variant="error")

    def on_mount(self) -> None:
        self.query_one("#quit-wait", Button).focus()

    def waiting(self) -> None:
        """The operator chose to wait: say so, and keep the other choices."""
        self.query_one("#quit-status", Static).update(
            "Quitting once the turn settles: waiting for it (esc: keep working instead)."
        )
        self.query_one("#quit-wait", Button).disabled = True
        self.query_one("#quit-stay", Button).focus()

    @on(Button.Pressed, "#quit-wait")
    def _wait(self) -> None:
        quit_after = getattr(self.app, "quit_when_settled", None)
        if callable(quit_after):
            quit_after(self)

    @on(Button.Pressed, "#quit-now")
    def _now(self) -> None:
        self.dismiss(QUIT_NOW)

    @on(Button.Pressed, "#quit-stay")
    def action_stay(self) -> None:
        self.dismiss(QUIT_STAY)
