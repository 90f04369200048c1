"""The footer: the keys that apply now, as many as fit one line.

Textual's :class:`~textual.widgets.Footer` lays every shown binding out in a row
and lets what does not fit run under the command palette's key (at 80 columns the
session screen showed ``▏^p paletted``). :class:`FittedFooter` keeps the keys
that matter most and drops the others -- they stay in the help (``?``, which
:func:`footer_keys` never drops) and the palette (``ctrl+p``). Which keys stay:

1. ``?`` (help) is always there: it lists every key of the screen;
2. keys that apply now before keys shown disabled (read-only, not applicable);
3. the screen's own keys before the app-wide ones (``:``, ``i``);
4. then the action's ``footer_rank`` (:mod:`console.actions`: ``e`` answer, ``n``
   next, ``v`` graph and ``t`` replay before ``p`` invocations), then the registry's order.

What is kept is drawn in the registry's order, so a key does not move when
another one is dropped. A resize or a change of what applies refits it.
"""

from __future__ import annotations

from dataclasses import dataclass

from textual.app import ComposeResult
from textual.binding import Binding
from textual.widgets import Footer
from textual.widgets._footer import FooterKey

from ..actions import BY_ID, for_screen

PALETTE_ROOM = 12
"""Columns the command palette's key takes at the right (``▏^p palette`` and a gap)."""
APP_WIDE = frozenset(a.id for a in for_screen("app"))
"""The app-wide actions: they give way to the screen's own keys."""


@dataclass(frozen=True)
class Shown:
    """One key of the footer: its binding, whether it applies now, its tooltip."""

    binding: Binding
    enabled: bool
    tooltip: str
    display: str

    @property
    def width(self) -> int:
        """Cells it takes in the compact footer: key, space, label, the gap after it."""
        return len(self.display) + 1 + len(self.binding.description) + 1


def footer_keys(candidates: list[Shown], width: int, *, app_wide: set[str]) -> list[Shown]:
    """The keys of ``candidates`` (in registry order) that fit ``width`` columns, by the
    module docstring's ranking; ``app_wide``: ids of bindings bound on the app."""
    def rank(item: tuple[int, Shown]) -> tuple[bool, bool, bool, int, int]:
        i, s = item
        action = BY_ID.get(s.binding.id or "")
        footer_rank = action.footer_rank if action is not None else 50
        return (s.binding.id != "app.help", not s.enabled, (s.binding.id or "") in app_wide, footer_rank, i)

    kept: set[int] = set()
    used = 0
    for i, s in sorted(enumerate(candidates), key=rank):
        if used + s.width <= width or s.binding.id == "app.help":
            kept.add(i)
            used += s.width
    return [s for i, s in enumerate(candidates) if i in kept]


class FittedFooter(Footer):
    """A compact footer with the keys that fit (see the module docstring)."""

    def __init__(self) -> None:
        super().__init__(compact=True)
        self._fitted: list[str] = []
        """Ids of the keys drawn now (a resize recomposes only when they change)."""

    def candidates(self) -> list[Shown]:
        """Every binding the screen shows now, first binding of each action, registry order."""
        seen: set[str] = set()
        out = []
        for _node, binding, enabled, tooltip in self.screen.active_bindings.values():
            if not binding.show or binding.action in seen or binding.key == self.app.COMMAND_PALETTE_BINDING:
                continue
            seen.add(binding.action)
            out.append(Shown(binding, enabled, tooltip, self.app.get_key_display(binding)))
        return out

    def fitted(self) -> list[Shown]:
        width = self.size.width or self.app.size.width or 80
        room = width - (PALETTE_ROOM if self.show_command_palette and self.app.ENABLE_COMMAND_PALETTE else 0)
        return footer_keys(self.candidates(), room, app_wide=APP_WIDE)

    def compose(self) -> ComposeResult:
        if not self._bindings_ready:
            return
        shown = self.fitted()
        self._fitted = [s.binding.id or s.binding.action for s in shown]
        for s in shown:
            yield FooterKey(
                s.binding.key, s.display, s.binding.description, s.binding.action,
                disabled=not s.enabled, tooltip=s.tooltip,
            ).data_bind(compact=Footer.compact)
        if self.show_command_palette and self.app.ENABLE_COMMAND_PALETTE:
            found = self.screen.active_bindings.get(self.app.COMMAND_PALETTE_BINDING)
            if found is not None:
                _node, binding, enabled, _tooltip = found
                yield FooterKey(
                    binding.key, self.app.get_key_display(binding), binding.description, binding.action,
                    classes="-command-palette", disabled=not enabled, tooltip=binding.tooltip or binding.description,
                )

    def on_resize(self) -> None:
        if self._bindings_ready and [s.binding.id or s.binding.action for s in self.fitted()] != self._fitted:
            self.call_after_refresh(self.recompose)
