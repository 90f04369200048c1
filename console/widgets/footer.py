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

from collections.abc import Set as AbstractSet
from dataclasses import dataclass

from textual.app import ComposeResult
from textual.binding import Binding
from textual.css.query import NoMatches
from textual.screen import Screen
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


def footer_keys(candidates: list[Shown], width: int, *, app_wide: AbstractSet[str]) -> list[Shown]:
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


class QuietFooter(Footer):
    """Textual's footer, recomposed only when what it shows changes. Textual
    recomposes it at every change of bindings -- each focus move; in a form, a key
    per field -- which mounts every key again and reflows the whole screen."""

    def __init__(self, *, compact: bool = False) -> None:
        super().__init__(compact=compact)
        self._drawn: list[tuple[object, ...]] | None = None
        """What the keys drawn now show (compared with :meth:`_what` before a recompose)."""

    def _what(self) -> list[tuple[object, ...]]:
        """What the footer would draw now: equal to what it draws, nothing to redo."""
        return [
            (b.key, b.action, b.description, b.show, b.key_display, b.group, enabled, tooltip)
            for _node, b, enabled, tooltip in self.screen.active_bindings.values()
        ]

    def bindings_changed(self, screen: Screen[object]) -> None:
        self._bindings_ready = True
        if screen.app.app_focus and self.is_attached and screen is self.screen:
            self.call_after_refresh(self._refit)

    async def _refit(self) -> None:
        if not self.is_attached or self._pruning or self.screen._pruning:
            return  # the screen is going away (as Textual's recompose checks)
        try:
            what = self._what()
        except NoMatches:  # its screen's check_action asked for a widget already removed: it is being torn down
            return
        if what != self._drawn and not self._toggled(what):
            await self.recompose()

    def _toggled(self, what: list[tuple[object, ...]]) -> bool:
        """The same keys, only some now apply and others no longer: set that on the
        keys drawn (a recompose remounts every key and reflows the whole screen;
        the replay's ``[`` off the end of the history did that)."""
        return False

    def _read_only_writes(self) -> set[str]:
        """The actions of the write keys a read-only console does not show at all (the
        response editor's ``^s Submit``: a viewer's dry-run editor must not look submittable;
        pressed anyway, the key still says why it does nothing)."""
        from ..actions import READ_ONLY_DRY_RUN

        if not getattr(self.app, "read_only", False):
            return set()
        hidden = set()
        for _node, binding, _enabled, _tooltip in self.screen.active_bindings.values():
            action = BY_ID.get(binding.id or "")
            if action is not None and action.read_only_disabled and action.id not in READ_ONLY_DRY_RUN:
                hidden.add(binding.action)
        return hidden

    def compose(self) -> ComposeResult:
        if self._bindings_ready:
            self._drawn = self._what()
        hidden = self._read_only_writes() if self._bindings_ready else set()
        for widget in super().compose():
            if isinstance(widget, FooterKey) and widget.action in hidden:
                continue
            yield widget
        if hidden:
            self.styles.grid_size_columns = max(1, (self.styles.grid_size_columns or 1) - len(hidden))


class FittedFooter(QuietFooter):
    """A compact footer with the keys that fit (see the module docstring)."""

    def __init__(self, *, hide_read_only_writes: bool = False) -> None:
        super().__init__(compact=True)
        self.hide_read_only_writes = hide_read_only_writes
        """Leave a read-only console's write keys out (the response editor: a dry-run
        editor must not look submittable); elsewhere they show greyed out."""

    def candidates(self) -> list[Shown]:
        """Every binding the screen shows now, first binding of each action, registry order."""
        seen: set[str] = set()
        hidden = self._read_only_writes() if self.hide_read_only_writes else set()
        out = []
        for _node, binding, enabled, tooltip in self.screen.active_bindings.values():
            if not binding.show or binding.action in seen or binding.key == self.app.COMMAND_PALETTE_BINDING:
                continue
            if binding.action in hidden:
                continue
            seen.add(binding.action)
            out.append(Shown(binding, enabled, tooltip, self.app.get_key_display(binding)))
        return out

    def fitted(self) -> list[Shown]:
        width = self.size.width or self.app.size.width or 80
        room = width - (PALETTE_ROOM if self.show_command_palette and self.app.ENABLE_COMMAND_PALETTE else 0)
        return footer_keys(self.candidates(), room, app_wide=APP_WIDE)

    def _palette(self) -> tuple[Binding, bool] | None:
        if not (self.show_command_palette and self.app.ENABLE_COMMAND_PALETTE):
            return None
        found = self.screen.active_bindings.get(self.app.COMMAND_PALETTE_BINDING)
        return None if found is None else (found[1], found[2])

    def _what(self) -> list[tuple[object, ...]]:
        """The keys that fit now and the palette's key: a resize too recomposes only when they change."""
        return self._shown_what(self.fitted())

    def _shown_what(self, shown: list[Shown]) -> list[tuple[object, ...]]:
        palette = self._palette()
        return [(s.binding.id or s.binding.action, s.display, s.binding.description, s.enabled, s.tooltip) for s in shown] + (
            [("palette", palette[1])] if palette is not None else []
        )

    def _toggled(self, what: list[tuple[object, ...]]) -> bool:
        drawn = self._drawn
        keys = list(self.query_children(FooterKey))
        if drawn is None or len(what) != len(drawn) or len(keys) != len(what):
            return False
        if any(new[:-2] != old[:-2] for new, old in zip(what, drawn, strict=True) if new[0] != "palette"):
            return False  # another key, label or order: draw them again
        for key, new in zip(keys, what, strict=True):
            enabled = new[-1] if new[0] == "palette" else new[-2]
            if key._disabled == enabled:  # FooterKey draws and clicks by _disabled and its -disabled class
                key._disabled = not enabled
                key.set_class(not enabled, "-disabled")
                key.refresh()
            if new[0] != "palette":
                key.tooltip = str(new[-1]) or None
        self._drawn = what
        return True

    def compose(self) -> ComposeResult:
        if not self._bindings_ready:
            return
        shown = self.fitted()
        self._drawn = self._shown_what(shown)
        for s in shown:
            yield self._key(s)
        palette = self._palette()
        if palette is not None:
            binding, enabled = palette
            yield FooterKey(
                binding.key, self.app.get_key_display(binding), binding.description, binding.action,
                classes="-command-palette", disabled=not enabled, tooltip=binding.tooltip or binding.description,
            )

    def _key(self, s: Shown) -> FooterKey:
        return FooterKey(
            s.binding.key, s.display, s.binding.description, s.binding.action, disabled=not s.enabled, tooltip=s.tooltip,
        ).data_bind(compact=Footer.compact)

    async def recompose(self) -> None:
        """The keys drawn are given what the new ones show, the surplus removed, the
        missing mounted: Textual's recompose removes and mounts every key, which
        styles and lays each out again (the editor's ``ctrl+t`` swaps 9 keys for 6)."""
        keys = list(self.query_children(FooterKey))
        palette = self._palette()
        if not self._bindings_ready or not keys or (palette is not None) != keys[-1].has_class("-command-palette"):
            await super().recompose()
            return
        shown = self.fitted()
        own = keys[:-1] if palette is not None else keys
        for key, s in zip(own, shown, strict=False):
            _relabel(key, s.binding.key, s.display, s.binding.description, s.binding.action, s.enabled, s.tooltip)
        if palette is not None:
            binding, enabled = palette
            _relabel(keys[-1], binding.key, self.app.get_key_display(binding), binding.description, binding.action,
                     enabled, binding.tooltip or binding.description)
        self._drawn = self._shown_what(shown)
        if len(own) > len(shown):
            await self.remove_children(own[len(shown):])
        elif len(shown) > len(own):
            await self.mount_all([self._key(s) for s in shown[len(own):]],
                                 before=keys[-1] if palette is not None else None)
        self.refresh(layout=True)

    def on_resize(self) -> None:
        if self._bindings_ready:
            self.call_after_refresh(self._refit)


def _relabel(key: FooterKey, name: str, display: str, description: str, action: str, enabled: bool,
             tooltip: str) -> None:
    """``key`` as a new :class:`FooterKey` with these values would be (it draws and
    clicks by these attributes and its ``-disabled`` class)."""
    if (key.key, key.key_display, key.description, key.action, key._disabled) != (
        name, display, description, action, not enabled,
    ):
        key.key, key.key_display, key.description, key.action = name, display, description, action
        key._disabled = not enabled
        key.set_class(not enabled, "-disabled")
        key.refresh(layout=True)
    key.tooltip = tooltip or None
