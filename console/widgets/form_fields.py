"""The fields of a :class:`~console.widgets.schema_form.SchemaForm`, one widget per kind.

:class:`ChoiceField` (boolean, enum), :class:`InputField` (string, integer,
number), :class:`ObjectSection`, :class:`ArraySection` (with its
:class:`ArrayControl`). Each keeps its value as plain state (``get`` / ``put``
work before it is mounted), says what it knows is wrong (``local_errors``:
required and still empty, not a number) and shows the errors the form hands it
(``show_errors``). The form does the checking (the engine's); see
:mod:`console.widgets.schema_form` for the API and the keys.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.message import Message
from textual.widget import Widget
from textual.widgets import Input

from engine.schema_view import FieldSpec, type_words

from ..text import clean_text
from .keys import TextInput
from .plain import Static

Mask = Callable[[str], str]
"""Masks secrets in what a field shows (the app's redactor's ``text``)."""


def no_mask(text: str) -> str:
    return text


class _Unset:
    _instance: _Unset | None = None

    def __new__(cls) -> _Unset:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "UNSET"

    def __bool__(self) -> bool:
        return False


UNSET: Any = _Unset()
"""Nothing chosen (not the same as ``null``, ``false`` or ``""``)."""

_INT = re.compile(r"^\s*[+-]?\d+\s*$")
REQUIRED_ERROR = re.compile(r"^(?P<path>.+?): '(?P<name>.+)' is a required property$")


def where(spec: FieldSpec) -> str:
    return spec.path if spec.path != "(root)" else "answer"


def _same(a: Any, b: Any) -> bool:
    return type(a) is type(b) and a == b


class FieldBase:
    """What every field widget has: its spec, value, and where its errors go."""

    class Edited(Message):
        """A field's value changed (bubbles up to its form)."""

    spec: FieldSpec
    mask: Mask = staticmethod(no_mask)

    def get(self) -> Any:
        raise NotImplementedError

    def put(self, value: Any) -> bool:
        raise NotImplementedError

    def local_errors(self) -> list[str]:
        return []

    def show_errors(self, errors: list[str]) -> None:
        pass

    def children_fields(self) -> list[FieldBase]:
        return []


def make_field(spec: FieldSpec, mask: Mask = no_mask) -> Widget:
    """The widget for ``spec``; ``mask`` masks secrets in what it shows (never in its value)."""
    kind = {"boolean": ChoiceField, "enum": ChoiceField, "string": InputField, "integer": InputField,
            "number": InputField, "object": ObjectSection}.get(spec.kind, ArraySection)
    return kind(spec, mask)


def _label(spec: FieldSpec) -> Text:
    t = Text()
    t.append(spec.label, "bold")
    if spec.required:
        t.append(" *", "bold red")
    return clean_text(t)


def _help(spec: FieldSpec) -> str:
    """The help beside a field's name: type and limits (not for choices: their options say it), default, text."""
    if spec.kind in ("boolean", "enum"):
        parts = [f"default: {_json(spec.default)}"] if spec.has_default else []
        if spec.nullable:
            parts.append("or null")
        extra = [x for x in (spec.title, spec.description) if x]
        return " -- ".join([" · ".join(parts)] + extra if parts else extra)
    return spec.help_text(default=False)  # an input shows its default as its placeholder


def _json(v: Any) -> str:
    return json.dumps(v, ensure_ascii=False)


def typed_here(event: events.Key) -> bool:
    """A letter or digit typed into a focused field belongs to the field, even one it has
    no use for: it must not run the screen's key of the same name (the editor's ``a``
    selects a node's ids). Other keys (``?``, ``:``, ctrl+..., esc) still reach the screen."""
    return event.character is not None and event.is_printable and event.character.isalnum() and not event.key.startswith("ctrl")


# ------------------------------------------------------------------ choices
class ChoiceField(FieldBase, Widget, can_focus=True):
    """A boolean (``y``/``n``) or an enum (``1``..``9``, ``0``): one key chooses; arrows and enter too.
    A letter moves an enum's cursor to the next option starting with it; no letter or digit
    typed here reaches the screen (:func:`typed_here`)."""

    DEFAULT_CSS = """
    ChoiceField { height: auto; padding: 0 1; }
    ChoiceField:focus { background: $boost; }
    """

    def __init__(self, spec: FieldSpec, mask: Mask = no_mask) -> None:
        super().__init__(classes="form-field form-choice")
        self.spec = spec
        self.mask = mask
        if spec.kind == "boolean":
            self.options: list[tuple[str, str, Any]] = [("y", "yes", True), ("n", "no", False)]
        else:
            keys = [str(n) for n in range(1, 10)] + ["0"]
            self.options = [
                (keys[i] if i < len(keys) else "", v if isinstance(v, str) else _json(v), v)
                for i, v in enumerate(spec.enum)
            ]
        self.chosen: int | None = None
        self.cursor = 0
        self.errors: list[str] = []

    # value
    def get(self) -> Any:
        return UNSET if self.chosen is None else self.options[self.chosen][2]

    def put(self, value: Any) -> bool:
        if value is UNSET or (value is None and self.spec.nullable and not self.spec.required):
            self.chosen = None
            self.refresh()  # a mark changes, not the size (show_errors reflows when errors do)
            return True
        for i, (_, _, v) in enumerate(self.options):
            if _same(v, value):
                self.chosen = self.cursor = i
                self.refresh()
                return True
        return False

    def local_errors(self) -> list[str]:
        if self.chosen is None and self.spec.required:
            return [f"{where(self.spec)}: required -- {self.hint()}"]
        return []

    def hint(self) -> str:
        if self.spec.kind == "boolean":
            return "press y or n"
        keyed = [k for k, _, _ in self.options if k]
        more = " or arrows + enter" if len(keyed) < len(self.options) else ""
        return f"pick one ({keyed[0]}-{keyed[-1]}{more})" if len(keyed) > 1 else "pick one (1 or enter)"

    def show_errors(self, errors: list[str]) -> None:
        if errors != self.errors:
            self.errors = errors
            self.refresh(layout=True)

    # keys
    def choose(self, index: int | None) -> None:
        self.chosen = index
        if index is not None:
            self.cursor = index
        self.refresh()  # a repaint: the marks have one width (a reflow of the screen per key cost ~30 ms)
        self.post_message(FieldBase.Edited())
        if index is not None:
            self._advance()  # now: the next key typed goes to the next field

    def _advance(self) -> None:
        """To the next field of the answers (never out to the id list)."""
        if self.screen.focused is not self:  # (has_focus follows a moment later, with the Focus event)
            return
        nxt = next_field(self)
        if nxt is not None:
            self.screen.set_focus(nxt)  # at once (Widget.focus waits a refresh: keys typed meanwhile came here)

    def on_key(self, event: events.Key) -> None:
        focused = self.screen.focused
        if focused is not None and focused is not self:
            # Typed in the same burst as the choice that moved the focus on: the app handed it
            # here before the focus moved; it belongs to the field that has the focus now.
            event.stop()
            event.prevent_default()
            focused.post_message(events.Key(event.key, event.character))
            return
        key = event.key
        handled = True
        by_key = {k: i for i, (k, _, _) in enumerate(self.options) if k}
        if event.character in by_key and not key.startswith("ctrl"):
            self.choose(by_key[event.character])
        elif key in ("left", "up"):
            self.cursor = max(0, self.cursor - 1)
            self.refresh()
        elif key in ("right", "down"):
            self.cursor = min(len(self.options) - 1, self.cursor + 1)
            self.refresh()
        elif key in ("enter", "space"):
            self.choose(self.cursor)
        elif key in ("backspace", "delete"):
            self.choose(None)
        elif typed_here(event):
            self._type_ahead(event.character or "")
        else:
            handled = False
        if handled:
            event.stop()
            event.prevent_default()

    def _type_ahead(self, character: str) -> None:
        """A letter moves the cursor to the next option that starts with it (enter
        chooses); it never reaches the screen (``a``/``A`` there mark ids)."""
        n = len(self.options)
        for step in range(1, n + 1):
            i = (self.cursor + step) % n
            if self.options[i][1].lower().startswith(character.lower()):
                self.cursor = i
                self.refresh()
                return
        self.app.bell()

    def render(self) -> Text:
        spec = self.spec
        t = _label(spec)
        help_text = _help(spec)
        if help_text:
            t.append("  " + self.mask(help_text), "dim")
        t.append("\n")
        for i, (key, label, value) in enumerate(self.options):
            chosen = i == self.chosen
            mark = "● " if chosen else "○ "
            style = "bold reverse" if chosen else ""
            if self.has_focus and i == self.cursor:
                style += " underline"
            if i:
                t.append("   ")
            t.append(mark, "bold" if chosen else "dim")
            if key:
                t.append(key, "bold cyan")
                t.append(" ")
            t.append(self.mask(label), style.strip())
            if spec.kind == "boolean":
                t.append(f" ({_json(value)})", "dim")
            if spec.has_default and _same(value, spec.default):
                t.append(" (default)", "dim")
        for e in self.errors:
            t.append("\n✗ " + self.mask(e), "bold red")
        return clean_text(t)

    def on_focus(self) -> None:
        self.refresh()

    def on_blur(self) -> None:
        self.refresh()


# ------------------------------------------------------------------ inputs
class InputField(FieldBase, Vertical):
    """A string, integer or number: typed, checked as typed (limits from the schema, by the engine)."""

    DEFAULT_CSS = """
    InputField { height: auto; padding: 0 1; }
    InputField > Input { width: 1fr; margin: 0 0 0 2; }
    InputField > .form-error { color: $error; text-style: bold; }
    """

    def __init__(self, spec: FieldSpec, mask: Mask = no_mask) -> None:
        super().__init__(classes="form-input-field")
        self.spec = spec
        self.mask = mask
        self.text = ""
        """What is typed (the field's state: set before or after the input is mounted)."""
        self.parse_error: str | None = None
        self._input: Input | None = None
        self._error = Static("", classes="form-error")

    def compose(self) -> ComposeResult:
        spec = self.spec
        head = _label(spec)
        head.append("  " + self.mask(_help(spec)), "dim")
        yield Static(clean_text(head), classes="form-label")
        placeholder = f"default: {_json(spec.default)}" if spec.has_default else type_words(spec)
        self._input = TextInput(self.text, placeholder=self.mask(placeholder), classes="form-field form-input", compact=True)
        yield self._input
        yield self._error

    @property
    def input(self) -> Input:
        assert self._input is not None
        return self._input

    def get(self) -> Any:
        self.parse_error = None
        text = self.text
        if text == "":
            return UNSET
        if self.spec.kind == "string":
            return text
        if self.spec.kind == "integer":
            if _INT.match(text):
                return int(text)
            self.parse_error = f"{where(self.spec)}: not an integer: {text.strip()[:40]}"
            return UNSET
        try:
            number = float(text)
        except ValueError:
            number = math.nan
        if not math.isfinite(number):
            self.parse_error = f"{where(self.spec)}: not a number: {text.strip()[:40]}"
            return UNSET
        return int(text) if _INT.match(text) else number

    def put(self, value: Any) -> bool:
        if value is UNSET or (value is None and self.spec.nullable and not self.spec.required):
            text = ""
        elif fits(self.spec, value):
            text = value if isinstance(value, str) else repr(value) if isinstance(value, float) else str(value)
        else:
            return False
        self.text = text
        if self._input is not None and self._input.value != text:
            with self._input.prevent(Input.Changed):
                self._input.value = text
        return True

    def local_errors(self) -> list[str]:
        self.get()
        if self.parse_error:
            return [self.parse_error]
        if self.text == "" and self.spec.required:
            return [f"{where(self.spec)}: required -- type a value"]
        return []

    def show_errors(self, errors: list[str]) -> None:
        self._error.update(Text("\n".join("✗ " + self.mask(e) for e in errors)))
        self._error.display = bool(errors)
        if self._input is not None:
            self._input.set_class(bool(errors), "-invalid")

    def on_input_changed(self, event: Input.Changed) -> None:
        event.stop()
        self.text = event.value
        self.post_message(FieldBase.Edited())

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.screen.focus_next()


def next_field(field: Widget) -> Widget | None:
    """The form field after ``field`` in document order, among the answers it is
    part of (``#answer-editors``, else its screen): never out to an id list. Not
    the screen's focus chain: that is sorted by laid-out position, and an editor
    mounted a moment ago has none yet (it sorted first)."""
    root: Widget = next((a for a in field.ancestors if isinstance(a, Widget) and a.id == "answer-editors"),
                        field.screen)
    seen = False
    for w in root.query(".form-field"):
        if w is field:
            seen = True
        elif seen and w.focusable and all(a.display for a in w.ancestors_with_self if a is not root and
                                          isinstance(a, Widget)):
            return w
    return None


# ------------------------------------------------------------------ sections
def errors_static() -> Static:
    s = Static("", classes="form-error")
    s.display = False
    return s


def show_error_lines(target: Static, errors: list[str]) -> None:
    target.update(Text("\n".join("✗ " + e for e in errors)))
    target.display = bool(errors)


class ObjectSection(FieldBase, Vertical):
    """An object: its properties, indented under its name (the root object: no heading)."""

    DEFAULT_CSS = """
    ObjectSection { height: auto; }
    ObjectSection > .form-section-fields { height: auto; }
    ObjectSection.-nested > .form-section-fields { padding-left: 1; border-left: solid $primary 50%; }
    ObjectSection > .form-label { padding: 0 1; }
    ObjectSection > .form-error { color: $error; text-style: bold; padding: 0 1; }
    """

    def __init__(self, spec: FieldSpec, mask: Mask = no_mask) -> None:
        super().__init__(classes="form-section")
        self.spec = spec
        self.mask = mask
        self.set_class(spec.path != "(root)", "-nested")
        self.fields = [make_field(f, self.mask) for f in spec.fields]
        self._error = errors_static()

    def compose(self) -> ComposeResult:
        if self.spec.path != "(root)":
            head = _label(self.spec)
            help_text = " -- ".join(x for x in (self.spec.title, self.spec.description) if x)
            if help_text:
                head.append("  " + self.mask(help_text), "dim")
            yield Static(clean_text(head), classes="form-label")
        with Vertical(classes="form-section-fields"):
            yield from self.fields
        yield self._error

    def children_fields(self) -> list[FieldBase]:
        return [f for f in self.fields if isinstance(f, FieldBase)]

    def get(self) -> Any:
        out = {}
        for f in self.children_fields():
            v = f.get()
            if v is not UNSET:
                out[f.spec.name] = v
        if not out and not self.spec.required:
            return UNSET
        return out

    def present(self) -> bool:
        return self.spec.required or self.get() is not UNSET

    def put(self, value: Any) -> bool:
        if value is UNSET or (value is None and self.spec.nullable and not self.spec.required):
            value = {}
        if not fits(self.spec, value):
            return False
        for f in self.children_fields():
            f.put(value.get(f.spec.name, UNSET))
        return True

    def show_errors(self, errors: list[str]) -> None:
        show_error_lines(self._error, [self.mask(e) for e in errors])


class ArrayControl(Widget, can_focus=True):
    """An array's add / remove line: ``+`` (or insert, enter) adds an item, ``-`` (or delete) removes the last."""

    DEFAULT_CSS = """
    ArrayControl { height: 1; padding: 0 1; color: $text-muted; }
    ArrayControl:focus { background: $boost; color: $text; }
    """

    def __init__(self, section: ArraySection) -> None:
        super().__init__(classes="form-field form-array-control")
        self.section = section

    def render(self) -> Text:
        n = len(self.section.items)
        t = Text(f"{n} item{'s' if n != 1 else ''} · ")
        t.append("+", "bold cyan")
        t.append(" add")
        if n:
            t.append(" · ")
            t.append("-", "bold cyan")
            t.append(" remove the last")
        return t

    def on_key(self, event: events.Key) -> None:
        if event.character == "+" or event.key in ("insert", "enter"):
            event.stop()
            event.prevent_default()
            item = self.section.add_item()
            self.call_after_refresh(self._focus_item, item)
        elif event.character == "-" or event.key in ("delete", "backspace"):
            event.stop()
            event.prevent_default()
            self.section.remove_last()
        elif typed_here(event):  # stays here (see typed_here)
            event.stop()
            event.prevent_default()
            self.app.bell()

    def _focus_item(self, item: Widget) -> None:
        targets = [item] if item.has_class("form-field") else list(item.query(".form-field"))
        focus = next((w for w in targets if w.focusable), None)
        if focus is not None:
            focus.focus()


class ArraySection(FieldBase, Vertical):
    """An array: its items (each a field of the item schema) and the add / remove line."""

    DEFAULT_CSS = """
    ArraySection { height: auto; }
    ArraySection > .form-label { padding: 0 1; }
    ArraySection > .form-items { height: auto; padding-left: 1; border-left: solid $primary 50%; }
    ArraySection > .form-error { color: $error; text-style: bold; padding: 0 1; }
    """

    def __init__(self, spec: FieldSpec, mask: Mask = no_mask) -> None:
        super().__init__(classes="form-section form-array")
        self.spec = spec
        self.mask = mask
        self.items: list[Widget] = []
        self.control = ArrayControl(self)
        self._box = Vertical(classes="form-items")
        self._error = errors_static()

    def compose(self) -> ComposeResult:
        head = _label(self.spec)
        head.append("  " + self.mask(self.spec.help_text()), "dim")
        yield Static(clean_text(head), classes="form-label")
        with self._box:
            yield from self.items
        yield self.control
        yield self._error

    def _item_spec(self, n: int) -> FieldSpec:
        assert self.spec.items is not None
        return _repath(self.spec.items, self.spec.path, n)

    def add_item(self, value: Any = UNSET, *, quiet: bool = False) -> Widget:
        item = make_field(self._item_spec(len(self.items)), self.mask)
        if value is not UNSET:
            assert isinstance(item, FieldBase)
            item.put(value)
        self.items.append(item)
        if self._box.is_attached:
            self._box.mount(item)
        self.control.refresh()
        if not quiet:
            self.post_message(FieldBase.Edited())
        return item

    def remove_last(self, *, quiet: bool = False) -> None:
        if self.items:
            item = self.items.pop()
            if item.is_attached:
                item.remove()
            self.control.refresh()
            if not quiet:
                self.post_message(FieldBase.Edited())

    def children_fields(self) -> list[FieldBase]:
        return [f for f in self.items if isinstance(f, FieldBase)]

    def get(self) -> Any:
        if not self.items and not self.spec.required:
            return UNSET
        values = [f.get() for f in self.children_fields()]
        return [None if v is UNSET else v for v in values]

    def put(self, value: Any) -> bool:
        if value is UNSET or (value is None and self.spec.nullable and not self.spec.required):
            value = []
        if not fits(self.spec, value):
            return False
        while self.items:
            self.remove_last(quiet=True)
        for v in value:
            self.add_item(v, quiet=True)
        return True

    def show_errors(self, errors: list[str]) -> None:
        show_error_lines(self._error, [self.mask(e) for e in errors])


def _repath(spec: FieldSpec, parent: str, n: int) -> FieldSpec:
    """An array item's spec with its paths (``tags.0``, ``rows.2.name``)."""
    base = f"{parent}.{n}" if parent != "(root)" else str(n)
    return _move(replace(spec), spec.path, base)


def _move(spec: FieldSpec, old: str, new: str) -> FieldSpec:
    path = new + spec.path[len(old):] if spec.path.startswith(old) else spec.path
    out = replace(spec, path=path)
    out.fields = [_move(f, old, new) for f in spec.fields]
    return out


def fits(spec: FieldSpec, value: Any) -> bool:
    """Whether a field of ``spec`` can show ``value`` (without building one)."""
    if value is None and spec.nullable and not spec.required:
        return True
    if spec.kind == "boolean":
        return isinstance(value, bool)
    if spec.kind == "enum":
        return any(_same(v, value) for v in spec.enum)
    if spec.kind == "string":
        return isinstance(value, str) and not (value == "" and spec.required)
    if spec.kind == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if spec.kind == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    if spec.kind == "object":
        if not isinstance(value, dict):
            return False
        fields = {f.name: f for f in spec.fields}
        return all(k in fields and fits(fields[k], v) for k, v in value.items())
    if spec.kind == "array":
        return isinstance(value, list) and spec.items is not None and all(
            fits(_repath(spec.items, spec.path, i), v) for i, v in enumerate(value))
    return False


# ------------------------------------------------------------------ the form
