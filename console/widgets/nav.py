"""One navigation vocabulary for every table, tree and log of the console.

:class:`Navigable` is a mixin for a list-like widget (the console's
:class:`~console.widgets.plain.DataTable`, the node tree, the event log). Its
keys are the registry's ``nav.*`` actions (:mod:`console.actions`): ``j``/``k``,
``g``/``Home``, ``G``/``End`` (the cursor moves; a screen that binds ``g``/``G``
itself, the replay, keeps them, so ``End`` then ``Enter`` opens
the last row, not the first), ``ctrl+d``/``ctrl+u`` half a page, ``/`` find,
``n``/``N`` the next/previous match, ``y`` copy what is under the cursor.

A widget supplies five small hooks (:meth:`nav_index`, :meth:`nav_count`,
:meth:`nav_goto`, :meth:`nav_text`, :meth:`copy_payload`). Keys that do not apply
now fall through to the screen (:meth:`Navigable.check_action`): ``n`` without a find
is the session screen's "next waiting node", ``/`` on a screen with its own
filter (the sessions list) is that filter.

Copying uses OSC 52, which a terminal takes or ignores without a word: the
console never claims "Copied", it says what it sent and that nothing confirms it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

from rich.text import Text
from textual import on
from textual.binding import Binding, BindingType
from textual.widgets import Input

from ..text import clean
from .keys import TextInput

if TYPE_CHECKING:
    from textual.widget import Widget

    _Base = Widget
else:
    _Base = object


def copy_text(app: Any, what: str, text: str) -> str:
    """Send ``text`` to the terminal's clipboard (OSC 52) and return the honest message
    (also shown as a notification): what was sent, and that no terminal confirms it."""
    driver = getattr(app, "_driver", None)
    told = text if len(text) <= 100 and "\n" not in text else f"({len(text):,} characters)"
    if driver is None:
        message = f"Cannot copy {what}: no terminal is attached to receive it."
        app.notify(message, severity="warning", timeout=10)
        return message
    app.copy_to_clipboard(text)
    message = (
        f"Sent {what} to the terminal clipboard (OSC 52): {told}\n"
        "The terminal does not confirm it; if pasting gives something else, your terminal "
        "(or tmux without set-clipboard) ignores OSC 52."
    )
    app.notify(message, timeout=8)
    return message


class FindBar(TextInput):
    """The ``/`` box of a :class:`Navigable` widget: typing moves to the first match,
    ``enter`` keeps the text (``n``/``N`` go on), ``esc`` closes and clears."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "close", "Close", show=False)]

    def __init__(self, target: Navigable) -> None:
        super().__init__(placeholder="/ find…  (enter: keep, then ; / , · esc: close)", classes="findbar")
        self.target = target

    @on(Input.Changed)
    def _changed(self, event: Input.Changed) -> None:
        event.stop()
        self.target.set_find(event.value)
        if event.value:
            self.target.find_from(0, 1, announce=False)

    @on(Input.Submitted)
    def _submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.target.set_find(event.value)
        self.remove()
        self.target.focus()
        if event.value:
            self.target.find_from(0, 1)

    def action_close(self) -> None:
        self.target.set_find("")
        self.remove()
        self.target.focus()


class Navigable(_Base):
    """Mixin: the ``nav.*`` actions over a list of lines (see the module docstring)."""

    AREA: ClassVar[str] = "table"
    """Registry area whose ``nav.*`` actions this widget binds (``table``, ``tree``, ``log``)."""
    find_query: str = ""
    """The text ``/`` looks for (case-insensitive); empty: no find active."""

    # ------------------------------------------------------------ hooks
    def nav_index(self) -> int:
        raise NotImplementedError

    def nav_count(self) -> int:
        raise NotImplementedError

    def nav_goto(self, index: int) -> None:
        raise NotImplementedError

    def nav_text(self, index: int) -> str | None:
        """The plain text of line ``index`` that ``/`` searches (None: not loaded)."""
        raise NotImplementedError

    async def copy_payload(self) -> tuple[str, str] | None:
        """(what it is, the text) that ``y`` copies; None: nothing under the cursor."""
        return None

    def nav_page(self) -> int:
        return max(self.scrollable_content_region.height, 2)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Keys that do not apply now are not this widget's (hidden from the footer;
        the key reaches the screen): ``/`` where the screen has its own filter,
        ``;``/``,`` without a find."""
        if action == "find" and callable(getattr(self.screen, "action_filter", None)):
            return False
        if action in ("nav_first", "nav_last") and parameters and parameters[0] in self.screen._bindings.key_to_bindings:
            return False  # the screen's own g/G (the replay's start/end of the history)
        if action == "find_next" and not self.find_query:
            return False
        return super().check_action(action, parameters)

    def set_find(self, query: str) -> None:
        self.find_query = query
        self.screen.refresh_bindings()

    # ------------------------------------------------------------ moving
    def _go(self, index: int) -> None:
        count = self.nav_count()
        if count:
            self.nav_goto(min(max(index, 0), count - 1))

    def action_nav_move(self, delta: int) -> None:
        self._go(max(self.nav_index(), 0) + delta if self.nav_index() >= 0 else 0)

    def action_nav_first(self, key: str = "g") -> None:
        self._go(0)

    def action_nav_last(self, key: str = "G") -> None:
        self._go(self.nav_count() - 1)

    def action_nav_half(self, direction: int) -> None:
        self._go(max(self.nav_index(), 0) + direction * max(self.nav_page() // 2, 1))

    # ------------------------------------------------------------ finding
    def action_find(self) -> None:
        existing = [w for w in self.screen.query(FindBar) if w.target is self]
        bar = existing[0] if existing else FindBar(self)
        if not existing:
            self.screen.mount(bar, after=self)
        bar.value = self.find_query
        bar.focus()

    def action_find_next(self, direction: int) -> None:
        self.find_from(direction, direction)

    def matches(self) -> list[int]:
        needle = self.find_query.lower()
        if not needle:
            return []
        out = []
        for i in range(self.nav_count()):
            text = self.nav_text(i)
            if text is not None and needle in text.lower():
                out.append(i)
        return out

    def find_from(self, offset: int, direction: int, *, announce: bool = True) -> int | None:
        """Move to the first match at ``cursor + offset`` or beyond in ``direction``
        (wrapping); say which match of how many, or that there is none."""
        found = self.matches()
        query = clean(self.find_query, one_line=True)
        if not found:
            self.app.notify(f'No line matches "{query}"', severity="warning", timeout=4)
            return None
        here = max(self.nav_index(), 0)
        start = here + offset
        if direction >= 0:
            target = next((i for i in found if i >= start), found[0])
        else:
            target = next((i for i in reversed(found) if i <= start), found[-1])
        self._go(target)
        if announce:
            self.app.notify(
                f'"{query}": match {found.index(target) + 1} of {len(found)} (; next, , previous)', timeout=4
            )
        return target

    # ------------------------------------------------------------ copying
    async def action_copy(self) -> None:
        payload = await self.copy_payload()
        if payload is None:
            self.app.notify("Nothing to copy: no line is under the cursor", severity="warning", timeout=4)
            return
        copy_text(self.app, *payload)


def plain_cells(cells: list[Any]) -> str:
    """The text of a row of cells, for ``/``."""
    return "  ".join(c.plain if isinstance(c, Text) else str(c) for c in cells)
