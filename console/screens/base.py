"""What every console screen shares: registry-driven bindings and checks, the
title bar, and the one way errors reach the operator (a notification)."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar, cast

from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.screen import Screen
from textual.widgets import Label

from ..actions import lookup

if TYPE_CHECKING:
    from ..app import HitlApp


class TitleBar(Horizontal):
    """One line: where you are on the left, mode badges on the right."""

    def __init__(self, text: str) -> None:
        super().__init__(id="titlebar")
        self._text = text

    def compose(self) -> ComposeResult:
        yield Label(self._text, id="title")
        yield Label("", id="badges")

    def set_title(self, text: str) -> None:
        self.query_one("#title", Label).update(text)

    def set_badges(self, text: str) -> None:
        self.query_one("#badges", Label).update(text)


class HitlScreen(Screen[None]):
    """Base of the console's screens. ``AREA`` names its bindings in the registry."""

    AREA: ClassVar[str] = ""
    """Registry screen name whose actions this screen binds."""
    HELP_AREAS: ClassVar[tuple[str, ...]] = ()
    """Registry screens whose keys the help screen lists here (besides ``app``)."""

    @property
    def hitl(self) -> HitlApp:
        return cast("HitlApp", self.app)

    def compose_title(self, text: str) -> TitleBar:
        bar = TitleBar(text)
        return bar

    def on_mount(self) -> None:
        badges = []
        if self.hitl.read_only:
            badges.append("[reverse] READ-ONLY [/]")
        if self.hitl.store_label:
            badges.append(self.hitl.store_label)
        for bar in self.query(TitleBar):
            bar.set_badges("  ".join(badges))

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        entry = lookup(self.AREA, action, parameters)
        if entry is None:
            return True
        return self.hitl.action_state(entry, self)

    def on_back(self) -> bool:
        """Handle ``esc`` locally (close a filter...); False lets the app go back."""
        return False

    def error(self, text: str) -> None:
        self.notify(text, severity="error", timeout=8)
