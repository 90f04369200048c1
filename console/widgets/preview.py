"""Bounded previews of stored values, and the "show all" viewer.

A pane never renders a value whole: an interrupt payload, a node's input or
output can be megabytes, and Rich lays out every line of what a pane holds on
the UI's thread. :func:`bounded` keeps the first few items of each container
(a fixed budget of items over the whole value, so its cost does not grow with
the value) and cuts long strings; what it left out is said in place
(``"… 7,988 more items"``). :func:`preview_json` is that, masked, as indented
JSON. :class:`ValueScreen` shows a value in full: serialised and masked in a
thread worker (the UI stays live, ``esc`` leaves at once), then shown in a
read-only text area, which draws only the lines in view.
"""

from __future__ import annotations

from itertools import islice
from typing import TYPE_CHECKING, Any, ClassVar

from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import TextArea
from textual.worker import get_current_worker

from engine.redact import Redactor

from ..text import to_json
from .plain import Static

if TYPE_CHECKING:
    from engine.projection import Projection

BUDGET = 120
"""Items (container entries and scalars) a preview keeps over the whole value."""
CHARS = 300
"""Characters a preview keeps of one string."""
DEPTH = 6
"""Container levels a preview opens."""

SHOW_ALL_KEY = "w"
"""The session screen's key for :class:`ValueScreen` (named in every cut preview)."""


class _Budget:
    def __init__(self, n: int) -> None:
        self.left = n
        self.cut = False


def _bounded(value: Any, budget: _Budget, depth: int) -> Any:
    budget.left -= 1
    if isinstance(value, str):
        if len(value) > CHARS:
            budget.cut = True
            return value[:CHARS] + f"… ({len(value):,} characters)"
        return value
    if isinstance(value, dict):
        if depth <= 0 and value:
            budget.cut = True
            return f"{{… {len(value):,} keys}}"
        out: dict[Any, Any] = {}
        for k, v in islice(value.items(), max(budget.left, 1)):
            if budget.left <= 0:
                break
            out[k] = _bounded(v, budget, depth - 1)
        if len(out) < len(value):
            budget.cut = True
            out["…"] = f"{len(value) - len(out):,} more keys"
        return out
    if isinstance(value, list | tuple):
        if depth <= 0 and value:
            budget.cut = True
            return f"[… {len(value):,} items]"
        items: list[Any] = []
        for v in islice(value, max(budget.left, 1)):
            if budget.left <= 0:
                break
            items.append(_bounded(v, budget, depth - 1))
        if len(items) < len(value):
            budget.cut = True
            items.append(f"… {len(value) - len(items):,} more items")
        return items
    return value


def bounded(value: Any, budget: int = BUDGET) -> tuple[Any, bool]:
    """``value`` cut to about ``budget`` items (the first ones, depth-first), and
    whether anything was left out. Costs O(budget), whatever the size of ``value``."""
    b = _Budget(budget)
    out = _bounded(value, b, DEPTH)
    return out, b.cut


def preview_json(value: Any, red: Redactor, budget: int = BUDGET) -> tuple[str, bool]:
    """Indented JSON of the bounded, masked ``value``; True when it was cut."""
    cut_value, cut = bounded(value, budget)
    return to_json(red.value(cut_value), indent=2), cut


def cut_note() -> str:
    return f"(a preview: {SHOW_ALL_KEY} shows all)"


class ValueScreen(ModalScreen[None]):
    """One value in full, read-only; built in a thread worker."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape,q", "dismiss_screen", "Close", show=False)]

    def __init__(self, title: str, value: Any, red: Redactor) -> None:
        super().__init__(classes="value-screen")
        self.title_text = title
        self.value = value
        self.red = red.fork()
        self.ready = False
        """The whole text is in the viewer (tests wait for it)."""

    def compose(self) -> ComposeResult:
        with Vertical(id="value-box", classes="modal-box") as box:
            box.border_title = self.title_text
            box.border_subtitle = "esc: close"
            yield Static("rendering the whole value…", id="value-status")
            area = TextArea("", read_only=True, soft_wrap=False, show_line_numbers=True, id="value-text")
            area.display = False
            yield area

    def on_mount(self) -> None:
        self.query_one(TextArea).cursor_blink = False
        self._render_all()

    @work(thread=True, exclusive=True, group="value-screen")
    def _render_all(self) -> None:
        text = to_json(self.red.value(self.value), indent=2)  # self.red: a fork, this thread's own
        if not get_current_worker().is_cancelled:
            self.app.call_from_thread(self._show, text)

    def _show(self, text: str) -> None:
        if not self.is_attached:
            return
        area = self.query_one(TextArea)
        area.load_text(text)
        area.display = True
        self.query_one("#value-status", Static).update(f"{text.count(chr(10)) + 1:,} lines")
        area.focus()
        self.ready = True

    def action_dismiss_screen(self) -> None:
        self.workers.cancel_group(self, "value-screen")
        self.dismiss(None)


def node_values(proj: Projection, invocation_id: str, path: str) -> dict[str, Any] | None:
    """Every value of one node run, whole (what the "show all" viewer serialises
    in a worker; the pane shows previews of them)."""
    run = proj.get(invocation_id, path)
    if run is None:
        return None
    out: dict[str, Any] = {}
    for key, value in (("input", run.input), ("output", run.output), ("route", run.route)):
        if value is not None:
            out[key] = value
    asks = {}
    for iid in run.interrupt_ids:
        itr = proj.interrupts.get((invocation_id, iid))
        if itr is not None:
            asks[iid] = {"args": itr.args, **({"answer": itr.response} if itr.resolved else {})}
    if asks:
        out["interrupts"] = asks
    return out


def show_all(screen: Any) -> None:
    """The session screen's ``w``: the selected event's (log focused) or node's values
    in a :class:`ValueScreen`."""
    inv, path = screen.invocation_id, screen.run_tree.cursor_path
    if screen.detail_mode == "event" and screen.event_shown is not None:
        se = screen.event_shown
        title, value = f"event {se.seq}", se.event.model_dump(mode="json", exclude_none=True)
    elif inv is not None and path is not None and (value := node_values(screen.proj, inv, path)) is not None:
        title = f"node {path}"
    else:
        screen.notify("Nothing to show in full here: select a node or an event.")
        return
    screen.app.push_screen(ValueScreen(title, value, screen.hitl.redactor))
