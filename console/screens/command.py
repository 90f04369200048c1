"""``:`` command mode and the command palette, both derived from the registry.

* :class:`CommandLine` -- a typed modal returning the typed command (k9s style:
  ``:sessions status=waiting``, ``:inbox``, ``:open SESSION``, or any action id);
  :func:`parse_command` turns it into a :class:`Command` the app executes.
* :class:`ActionsProvider` -- the palette offers, as ``Area: Verb``, only the
  registry actions that apply right now on the current screen.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, cast

from textual import events
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.command import DiscoveryHit, Hit, Hits, Provider
from textual.containers import Horizontal
from textual.css.query import NoMatches
from textual.screen import ModalScreen
from textual.suggester import SuggestFromList
from textual.widgets import Input

from engine.status import STATUS_CYCLE

from ..actions import ACTIONS, BY_COMMAND, BY_ID, COMMAND_ALIASES, Action
from ..widgets.keys import TextInput
from ..widgets.plain import Label

if TYPE_CHECKING:
    from ..app import HitlApp

SUGGESTIONS = [
    "sessions",
    *(f"sessions status={s}" for s in STATUS_CYCLE if s),
    "inbox",
    "open ",
    "help",
    "quit",
    "back",
    *(a.id for a in ACTIONS),
]


class CommandError(ValueError):
    """A command that cannot run; the message is shown as is."""


@dataclass
class Command:
    name: str
    """A command name (``sessions``, ``inbox``, ``open``...) or an action id."""
    args: list[str] = field(default_factory=list)
    options: dict[str, str] = field(default_factory=dict)


def parse_command(text: str) -> Command:
    """``sessions status=waiting app=refunds foo`` -> Command("sessions", ["foo"], {...})."""
    text = text.strip().lstrip(":").strip()
    if not text:
        raise CommandError("empty command; try :help")
    try:
        words = shlex.split(text)
    except ValueError as e:
        raise CommandError(f"cannot parse {text!r}: {e}") from None
    name = COMMAND_ALIASES.get(words[0], words[0])
    if name not in BY_COMMAND and name not in BY_ID:
        raise CommandError(f"unknown command :{words[0]} (try :sessions, :inbox, :open SESSION, :help)")
    args: list[str] = []
    options: dict[str, str] = {}
    for w in words[1:]:
        key, eq, value = w.partition("=")
        if eq and key:
            options[key] = value
        else:
            args.append(w)
    return Command(name, args, options)


class CommandLine(ModalScreen[str | None]):
    """The ``:`` prompt at the bottom of the screen."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "close", "Close", show=False)]

    def __init__(self) -> None:
        super().__init__(id="command-line", classes="modal")
        self._early: list[str] = []
        """Characters typed before the input was there to take them."""

    def compose(self) -> ComposeResult:
        with Horizontal(id="command-bar"):
            yield Label(":", id="command-prompt")
            yield TextInput(
                placeholder="sessions status=waiting · inbox · open SESSION · help · any action id",
                suggester=SuggestFromList(SUGGESTIONS, case_sensitive=False),
                id="command-input",
            )

    def on_mount(self) -> None:
        box = self.query_one(Input)
        box.cursor_blink = cast("HitlApp", self.app).cursor_blink
        if self._early:
            box.insert_text_at_cursor("".join(self._early))
            self._early.clear()
        box.focus()

    def on_key(self, event: events.Key) -> None:
        """Type-ahead: ``:audit`` and enter arriving at once (typed fast, pasted,
        sent by a script) reach this screen before its input has focus. Printable
        keys go into the input, in order, and enter submits what was typed; before,
        they were dropped and enter ran an empty command."""
        try:
            box: Input | None = self.query_one(Input)
        except NoMatches:
            box = None
        if box is not None and box.has_focus:
            return
        if event.key == "enter":
            event.stop()
            self.dismiss((box.value if box is not None else "") + "".join(self._early))
        elif event.is_printable and event.character:
            event.stop()
            if box is None or not box.is_mounted:
                self._early.append(event.character)
            else:
                box.insert_text_at_cursor(event.character)

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self.dismiss(event.value)

    def action_close(self) -> None:
        self.dismiss(None)


class ActionsProvider(Provider):
    """Registry actions that apply now, as ``Area: Verb``."""

    def _applicable(self) -> list[tuple[Action, Callable[[], Any]]]:
        app = cast("HitlApp", self.app)
        return [(a, run) for a, run in app.applicable_actions(self.screen) if a.id != "app.palette"]

    async def discover(self) -> Hits:
        for action, run in self._applicable():
            yield DiscoveryHit(action.title, run, help=_help(action))

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for action, run in self._applicable():
            score = max(matcher.match(action.title), matcher.match(action.id))
            if score > 0:
                yield Hit(score, matcher.highlight(action.title), run, help=_help(action))


def _help(action: Action) -> str:
    key = f"key {action.key_display or action.key} · " if action.key else ""
    cli = f" · {action.cli}" if action.cli else ""
    return f"{key}{action.id}{cli}"
