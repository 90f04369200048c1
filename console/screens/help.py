"""The help screen: the keys of the screen it was opened over, from the registry."""

from __future__ import annotations

from collections.abc import Iterable
from typing import ClassVar

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import ModalScreen

from ..actions import AREA_TITLES, Action
from ..widgets.plain import Label, Static, cells


def key_text(action: Action) -> str:
    if action.key_display:
        return action.key_display
    return {"enter": "enter", "plus": "+", "minus": "-", "slash": "/", "colon": ":"}.get(action.key or "", action.key or "")


def help_table(sections: list[tuple[str, list[Action]]], *, read_only: bool) -> Group:
    """One block per section: key, action id, what it does and the same from a shell."""
    parts: list[RenderableType] = []
    for title, actions in sections:
        parts.append(Text(title, style="bold underline"))
        table = Table(box=None, padding=(0, 1), expand=True, show_header=False)
        table.add_column("key", no_wrap=True, width=6, style="bold")
        table.add_column("action", no_wrap=True, width=24)
        table.add_column("what it does", ratio=1)
        for a in actions:
            what = Text(a.description)
            style = ""
            if a.read_only_disabled and read_only:
                what.append("  (disabled: read-only)", style="italic")
                style = "dim strike"
            if a.cli:
                what.append(f"\n$ {a.cli}", style="dim")
            table.add_row(*cells(key_text(a), Text(a.id, style=style), what))
        parts.append(table)
        parts.append(Text(""))
    return Group(*parts)


FORM_KEYS = (
    ("y / n", "yes / no: the answer of a yes-no field (true / false), then the next field"),
    ("1-9, 0", "the choice with that number in a field with choices, then the next field"),
    ("+ / -", "add an item to a list / remove the last one"),
    ("tab", "the next field (shift+tab: the previous one); keys typed after it go there"),
    ("ctrl+t", "the same answer as JSON text (a string in quotes: \"approve\")"),
)
"""What keys mean inside an answer's form: the field with the focus takes them.
On the editor's screen ``y`` is yes and nothing else (the copy is ``ctrl+o``)."""

FORM_KEY_NAMES = frozenset({"y", "n", "plus", "minus", *"0123456789"})
"""The form's own keys: the editor's help lists no other meaning for them."""


def form_keys_table() -> Group:
    table = Table(box=None, padding=(0, 1), expand=True, show_header=False)
    table.add_column("key", no_wrap=True, width=8, style="bold")
    table.add_column("what it does", ratio=1)
    for key, what in FORM_KEYS:
        table.add_row(*cells(key, what))
    return Group(Text("In an answer's form (the field with the focus)", style="bold underline"), table, Text(""))


class HelpScreen(ModalScreen[None]):
    """Keys of the current view (``?``); esc closes."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape,question_mark,q", "close", "Close", show=False)]

    def __init__(
        self, title: str, sections: list[tuple[str, list[Action]]], *, read_only: bool, form_keys: bool = False
    ) -> None:
        super().__init__(classes="modal")
        self.form_keys = form_keys
        """List the keys of an answer's form first (the response editor)."""
        self.title_text = title
        self.sections = sections
        self.read_only = read_only

    def compose(self) -> ComposeResult:
        with VerticalScroll(classes="modal-box", id="help-box"):
            yield Label(f"Help · {self.title_text}   (esc: close · : command mode · ctrl+p palette)", classes="modal-title")
            if self.form_keys:
                yield Static(form_keys_table(), id="help-form-keys")
            yield Static(help_table(self.sections, read_only=self.read_only), id="help-table")

    def action_close(self) -> None:
        self.dismiss(None)


def sections_for(
    areas: tuple[str, ...], actions_by_screen: dict[str, list[Action]], taken: Iterable[str] = ()
) -> list[tuple[str, list[Action]]]:
    """The help's sections, ``areas`` in order: a key an earlier area binds is left
    out of the later ones -- the screen's own meaning wins when the key is pressed
    (replay's ``g`` is the start, never a pane's first line), so help lists that one.
    ``taken``: keys that already mean something there (the answer form's ``y``)."""
    out = []
    seen: set[str] = set(taken)
    for area in areas:
        acts = [a for a in actions_by_screen.get(area, []) if a.key is None or a.key not in seen]
        seen |= {a.key for a in acts if a.key is not None}
        if acts:
            out.append((AREA_TITLES.get(area, area.title()), acts))
    return out
