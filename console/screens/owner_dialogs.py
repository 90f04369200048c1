"""Owner dialogs: "someone else owns this -- answer anyway?" and "assign to whom?".

The console asks before answering interrupts another operator has claimed
(saying whose, and for how long); the CLI and the API refuse them without
``force`` instead (:mod:`engine.answer_gate`). Text is data: every name shown
is passed through :func:`console.text.literal`.
"""

from __future__ import annotations

import time
from typing import ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label

from engine.ages import readable_age

from ..text import literal
from ..widgets.plain import Static


def owned_lines(owned: list[tuple[str, str, float | None]], now: float | None = None) -> str:
    """``refund-1 is claimed by ann (for 12m)``, one line per id."""
    now = time.time() if now is None else now
    return "\n".join(
        f"  {iid} is claimed by {who}" + (f" (for {readable_age(now - at)})" if at is not None else "")
        for iid, who, at in owned
    )


class AnswerOwned(ModalScreen[bool]):
    """Ask before answering ids someone else owns; True: answer anyway (forced)."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape,n", "back", "Back", show=False),
                                         Binding("y", "anyway", "Answer anyway", show=False)]

    def __init__(self, owned: list[tuple[str, str, float | None]], now: float | None = None) -> None:
        super().__init__(classes="modal")
        self.owned, self.now = owned, now

    def compose(self) -> ComposeResult:
        owners = sorted({who for _, who, _ in self.owned})
        with Vertical(classes="modal-box", id="owned-box"):
            yield Label(literal(f"Claimed by {', '.join(owners)}"), classes="modal-title")
            yield Static(literal(f"{owned_lines(self.owned, self.now)}\n\nAnswering takes it over from "
                                 f"{' and '.join(owners)}; the answer records that it was forced."), id="owned-body")
            with Horizontal(id="owned-buttons"):
                yield Button("Back (esc)", id="owned-back", variant="primary")
                yield Button("Answer anyway (y)", id="owned-anyway", variant="warning")

    def on_mount(self) -> None:
        self.query_one("#owned-back", Button).focus()

    @on(Button.Pressed, "#owned-anyway")
    def action_anyway(self) -> None:
        self.dismiss(True)

    @on(Button.Pressed, "#owned-back")
    def action_back(self) -> None:
        self.dismiss(False)


class AssignTo(ModalScreen[str | None]):
    """Who to assign ids to: an operator name or ``@group``."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "back", "Back", show=False)]

    def __init__(self, what: str, groups: list[str]) -> None:
        super().__init__(classes="modal")
        self.what, self.groups = what, groups

    def compose(self) -> ComposeResult:
        hint = ", ".join(f"@{g}" for g in self.groups) or "none configured"
        with Vertical(classes="modal-box", id="assign-box"):
            yield Label(literal(f"Assign {self.what} to"), classes="modal-title")
            yield Static(literal(f"an operator's name, or a group ({hint}); enter: assign · esc: back"))
            yield Input(placeholder="name or @group", id="assign-to")

    @on(Input.Submitted, "#assign-to")
    def _done(self, event: Input.Submitted) -> None:
        event.stop()
        self.dismiss(event.value.strip() or None)

    def action_back(self) -> None:
        self.dismiss(None)
