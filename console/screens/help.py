"""The help screen: the keys of the screen it was opened over, from the registry.

Its tables are laid out once per app, content and width (:class:`HelpCache`):
``?`` on a screen whose help was shown before draws lines already cut, so
opening the help costs the same the hundredth time as the window it shows.
"""

from __future__ import annotations

import weakref
from collections.abc import Iterable
from typing import Any, ClassVar

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import ModalScreen

from ..actions import AREA_TITLES, Action
from ..widgets.drawn import Drawn, DrawnLines
from ..widgets.plain import Label, cells


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


class HelpCache:
    """The help's drawn tables of one app, by what they list (the registry's
    actions do not change while the app runs; ``read_only`` is part of the key)."""

    def __init__(self) -> None:
        self.drawn: dict[tuple[Any, ...], Drawn] = {}
        self.builds = 0
        """Tables built (a test counts them: one per content, however often ``?`` is pressed)."""

    def body(self, sections: list[tuple[str, list[Action]]], *, read_only: bool) -> Drawn:
        key = ("table", tuple((title, tuple(a.id for a in acts)) for title, acts in sections), read_only)
        drawn = self.drawn.get(key)
        if drawn is None:
            def build() -> RenderableType:
                self.builds += 1
                return help_table(sections, read_only=read_only)

            drawn = self.drawn[key] = Drawn(build)
        return drawn

    def form_keys(self) -> Drawn:
        drawn = self.drawn.get(("form",))
        if drawn is None:
            drawn = self.drawn[("form",)] = Drawn(form_keys_table)
        return drawn


    def warm(self, app: Any, sections: list[tuple[str, list[Action]]], *, read_only: bool, form_keys: bool) -> None:
        """Lay the help of a screen out in a thread worker at the widths its box will
        have (:func:`help_widths`), so the first ``?`` there shows lines ready too."""
        todo = [self.body(sections, read_only=read_only), *([self.form_keys()] if form_keys else [])]
        widths = help_widths(app.size.width)
        if all((w, w) in d.lines for d in todo for w in widths):
            return

        def draw() -> None:
            for w in widths:
                for drawn in todo:
                    drawn.draw(app.console, app.console.options.update(width=w))

        app.run_worker(draw, thread=True, group="help-warm", exit_on_error=False)


def help_widths(columns: int) -> tuple[int, ...]:
    """The widths the help's tables are drawn at in a terminal ``columns`` wide: its
    box (``.modal-box``: 90% of the width, at most 140) less the border and padding,
    with and without the scrollbar (app.tcss). A wrong guess costs one layout on ``?``."""
    inner = min(columns * 9 // 10, 140) - 4
    return (inner - 2, inner)


_CACHES: weakref.WeakKeyDictionary[Any, HelpCache] = weakref.WeakKeyDictionary()


def help_cache(app: Any) -> HelpCache:
    """``app``'s help cache (made on first use)."""
    cache = _CACHES.get(app)
    if cache is None:
        cache = _CACHES[app] = HelpCache()
    return cache


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
            cache = help_cache(self.app)
            if self.form_keys:
                yield DrawnLines(cache.form_keys(), id="help-form-keys")
            yield DrawnLines(cache.body(self.sections, read_only=self.read_only), id="help-table")

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
