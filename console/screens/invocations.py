"""The invocation picker: a typed modal that returns the chosen invocation id."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import OptionList
from textual.widgets.option_list import Option

from engine.redact import Redactor
from engine.status import DisplayStatus
from engine.store.base import InvocationSummary

from ..text import clean_text
from ..widgets.format import STATUS_ICON, age, short, short_id
from ..widgets.plain import Label


def invocation_option(n: int, inv: InvocationSummary, now: float, current: bool, red: Redactor) -> Option:
    status = DisplayStatus.of(inv.status)
    t = Text()
    t.append("▸ " if current else "  ")
    t.append(f"#{n:<3} ")
    t.append(f"{STATUS_ICON.get(status, '·')} {status:<9} ")
    t.append(f"{age(inv.started_at, now):>6} ago  ")
    t.append(short_id(inv.invocation_id, 14) + "  ")
    if inv.message:
        t.append(f'"{short(inv.message, 30, red)}"')
    return Option(clean_text(t), id=inv.invocation_id)


class InvocationPicker(ModalScreen[str | None]):
    """Choose one invocation of a session (enter), or keep the current one (esc)."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "dismiss_none", "Close", show=False)]

    def __init__(self, invocations: list[InvocationSummary], current: str | None, now: float, red: Redactor) -> None:
        super().__init__(classes="modal")
        self.redactor = red
        self.invocations = invocations
        self.current = current
        self.now = now

    def compose(self) -> ComposeResult:
        with Vertical(classes="modal-box"):
            yield Label("Invocations of this session (enter: show, esc: close)", classes="modal-title")
            yield OptionList(
                *(
                    invocation_option(n, inv, self.now, inv.invocation_id == self.current, self.redactor)
                    for n, inv in enumerate(self.invocations, 1)
                ),
                id="invocations",
            )

    def on_mount(self) -> None:
        options = self.query_one(OptionList)
        ids = [i.invocation_id for i in self.invocations]
        if self.current in ids:
            options.highlighted = ids.index(self.current)
        options.focus()

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(event.option.id)

    def action_dismiss_none(self) -> None:
        self.dismiss(None)
