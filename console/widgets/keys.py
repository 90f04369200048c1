"""Text fields that apply keys in the order they were typed.

Textual's ``Input`` and ``TextArea`` insert printable characters in their own
``_on_key``, but run their bound editing keys (backspace, delete, arrows,
ctrl+w, ctrl+u, home/end, undo...) only after the key event has bubbled up to
the app. When keys arrive in a burst -- a fast typist, a paste without
bracketed-paste mode, a busy machine, the browser console batching keystrokes
over its websocket -- the characters typed after a backspace are inserted
before the backspace runs, and the backspace then deletes them: ``false``,
five backspaces and ``true`` became ``fals`` (Textual issue #6605). An
operator's answer or reason must be exactly what they typed.

:class:`InOrderKeys` runs the widget's own non-priority bindings inline, in
``_on_key``, through the same ``run_action`` the app would use. Priority
bindings (ctrl+s submit, quit) are checked by the app before the key reaches
the widget, and keys the widget does not bind bubble as before, so what a key
does is unchanged; only when it happens is fixed. ``tab`` / ``shift+tab`` move
the focus at once too, and a key that reaches a field after the focus left it
(typed in the same burst as the tab) is handed to the field that has it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual import events
from textual.widgets import Input, TextArea

if TYPE_CHECKING:
    from textual.widget import Widget

    _Base = Widget
else:
    _Base = object


class InOrderKeys(_Base):
    """Mixin for text widgets: bound keys take effect before the next key is handled."""

    async def _on_key(self, event: events.Key) -> None:
        focused = self.screen.focused if self.is_attached else None
        if focused is not None and focused is not self and (
                isinstance(focused, InOrderKeys) or focused.has_class("form-field")):
            # Typed in the same burst as the tab that moved the focus on to another field:
            # the app handed it here before the focus moved; it belongs to that field. (A
            # field just opened, its focus still on the way, keeps what is typed into it.)
            event.stop()
            event.prevent_default()
            focused.post_message(events.Key(event.key, event.character))
            return
        if event.key in ("tab", "shift+tab") and getattr(self, "tab_behavior", "focus") == "focus" \
                and event.key not in self._bindings.key_to_bindings:
            # Now, not when the key has bubbled to the screen's binding: keys typed
            # after it are then handed to the next field (``Q``, tab, ``Berlin`` was ``QBerlin``).
            event.stop()
            event.prevent_default()
            if event.key == "tab":
                self.screen.focus_next()
            else:
                self.screen.focus_previous()
            return
        for binding in self._bindings.key_to_bindings.get(event.key, ()):
            if not binding.priority and await self.app.run_action(binding.action, self):
                event.stop()
                event.prevent_default()
                return
        await super()._on_key(event)  # the text widget's own handler: printable keys


class TextInput(InOrderKeys, Input):
    """A one-line :class:`~textual.widgets.Input` that keeps the typed order, and
    blinks its cursor only when the app does (``HitlApp(cursor_blink=False)``:
    tests and snapshots draw one state, not whichever phase of the blink)."""

    def on_mount(self) -> None:
        self.cursor_blink = bool(getattr(self.app, "cursor_blink", True)) and self.cursor_blink


class OrderedTextArea(InOrderKeys, TextArea):
    """A :class:`~textual.widgets.TextArea` that keeps the typed order."""
