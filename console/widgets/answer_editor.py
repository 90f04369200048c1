"""One response editor per selected interrupt id: a form, or JSON text, checked as you go.

* :func:`check_answer` -- the verdict on a JSON text: syntax first
  (``line 2 col 14: Expecting ',' delimiter``), then the interrupt's stored
  ``response_schema`` through :func:`engine.responses.validate_response`, the
  same check the Runner makes before it persists anything (``amount: expected
  integer``). Pure; no widget needed.
* :class:`JsonArea` -- a ``TextArea`` that highlights JSON without tree-sitter.
  Textual's own highlighting needs the ``textual[syntax]`` extra, whose current
  tree-sitter (0.26) crashes the process (SIGSEGV) inside ``TextArea`` with
  Textual 8.2; an operator's console must not be one keystroke from a segfault,
  and JSON has five kinds of tokens, so a small scanner does the job.
* :class:`AnswerEditor` -- the call's message, the answer and the call's
  payload and schema (readable, :func:`engine.schema_view.schema_lines`) beside
  it, and a status line with the verdict. The answer is a
  :class:`~console.widgets.schema_form.SchemaForm` when the schema has one, with
  the JSON text as a second view of the same value (``ctrl+t`` toggles; the
  value goes across both ways); JSON only, with the reason, when it has none.
  Nothing starts as a decision: the form starts empty, the JSON text as a
  skeleton that is not JSON (``{"approved": }``). Posts
  :class:`AnswerEditor.Checked` after every edit.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.widgets import TextArea

from engine.jsonin import syntax_problem
from engine.projection import Interrupt
from engine.redact import Redactor
from engine.responses import unwrap_response, validate_response
from engine.schema_view import json_skeleton, schema_lines

from ..inputs import bare_word
from .format import short
from .keys import OrderedTextArea
from .plain import Label, Static
from .preview import preview_json
from .schema_form import UNSET, SchemaForm

# ------------------------------------------------------------------ checking


@dataclass(frozen=True)
class Check:
    """The verdict on one answer's text."""

    value: Any = None
    """The parsed JSON (what the FunctionResponse carries); None when it does not parse."""
    errors: list[str] = field(default_factory=list)
    """Empty: valid. Else each error with its place: ``line L col C: ...`` or ``field.path: ...``."""
    syntax: bool = False
    """The errors are JSON syntax errors (the schema was not checked yet)."""

    @property
    def ok(self) -> bool:
        return not self.errors


def check_answer(text: str, schema: dict[str, Any] | None) -> Check:
    """Parse ``text`` as JSON and validate it against ``schema`` the way the Runner will."""
    if not text.strip():
        return Check(errors=['(root): empty: write a JSON value (true, 42, "text", {...})'], syntax=True)
    if text == json_skeleton(schema):
        return Check(errors=["(root): nothing written yet: give each key its value"], syntax=True)
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        hint = ""
        if bare_word(text) and "\n" not in text.strip():  # approve, not a typo in an object: a string without quotes
            hint = f' -- a string needs quotes: "{text.strip()}"'
        return Check(errors=[f"line {exc.lineno} col {exc.colno}: {syntax_problem(exc)}{hint}"], syntax=True)
    except ValueError as exc:
        return Check(errors=[f"(root): {not_json(exc)}"], syntax=True)
    return Check(value=value, errors=validate_response(schema, unwrap_response(value)))


def not_json(exc: ValueError) -> str:
    """Why ``json.loads`` refused a text: its syntax error, or a number past
    Python's digit limit (a plain ValueError, whose advice to call
    ``sys.set_int_max_str_digits`` is for programmers)."""
    if isinstance(exc, json.JSONDecodeError):
        return syntax_problem(exc)
    return str(exc).split(";")[0]


def initial_text(itr: Interrupt) -> str:
    """The JSON view's first text: the required keys with blank values (not JSON yet), else empty."""
    return json_skeleton(itr.response_schema)


def value_text(value: Any) -> str:
    """A value as the JSON view shows it."""
    return json.dumps(value, indent=2, ensure_ascii=False)


# ------------------------------------------------------------------ highlighting
_TOKEN = re.compile(
    r"""(?P<string>"(?:[^"\\]|\\.)*"?)"""
    r"""|(?P<number>-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)"""
    r"""|(?P<boolean>\btrue\b|\bfalse\b)"""
    r"""|(?P<null>\bnull\b)"""
    r"""|(?P<bracket>[\[\]{}])"""
    r"""|(?P<delimiter>[:,])"""
)
_KEY_AFTER = re.compile(r"\s*:")

HIGHLIGHT_NAMES = {
    "string": "string",
    "number": "number",
    "boolean": "boolean",
    "null": "json.null",
    "bracket": "punctuation.bracket",
    "delimiter": "punctuation.delimiter",
}
"""Token kind -> TextArea theme highlight name (the same names tree-sitter-json uses)."""

Highlight = tuple[int, int | None, str]


def json_highlights(text: str) -> dict[int, list[Highlight]]:
    """Highlights per line: ``(start_byte, end_byte, name)``, as ``TextArea`` wants them.

    JSON strings cannot span lines, so each line is scanned on its own; text that
    is not JSON yet (half typed) is highlighted as far as it looks like JSON.
    Object keys get ``json.label``."""
    out: dict[int, list[Highlight]] = {}
    for row, line in enumerate(text.split("\n")):
        spans: list[Highlight] = []
        for m in _TOKEN.finditer(line):
            kind = m.lastgroup or ""
            name = HIGHLIGHT_NAMES[kind]
            if kind == "string" and _KEY_AFTER.match(line, m.end()):
                name = "json.label"
            start = len(line[: m.start()].encode())
            spans.append((start, start + len(m.group().encode()), name))
        if spans:
            out[row] = spans
    return out


class JsonArea(OrderedTextArea):
    """A TextArea with JSON highlighting from :func:`json_highlights` (no tree-sitter)."""

    def on_mount(self) -> None:
        # The app's blink setting (off in snapshot tests: a blinking cursor makes
        # the picture depend on when it is taken).
        self.cursor_blink = getattr(self.app, "cursor_blink", True)

    def _build_highlight_map(self) -> None:
        # TextArea calls this after every edit; with no language set its own
        # version only clears the map, so fill it from the scanner instead.
        self._line_cache.clear()
        highlights = self._highlights
        highlights.clear()
        for row, spans in json_highlights(self.text).items():
            highlights[row].extend(spans)


# ------------------------------------------------------------------ the editor


class AnswerEditor(Vertical):
    """Message, answer (form or JSON), payload and schema beside it, and the verdict, for one interrupt id."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {"answer--ok", "answer--error", "answer--dim"}

    class Checked(Message):
        """The answer changed and was checked."""

        def __init__(self, editor: AnswerEditor, check: Check) -> None:
            super().__init__()
            self.editor = editor
            self.check = check

        @property
        def interrupt_id(self) -> str:
            return self.editor.interrupt.id

    def __init__(self, interrupt: Interrupt, text: str | None = None, *, redactor: Redactor) -> None:
        super().__init__(classes="answer-editor")
        self.redactor = redactor
        """Masks the payload, the schema, the message and errors (``--show-secrets`` shows them)."""
        self.redactor.learn_from([interrupt.args, interrupt.response_schema])  # masked in the message too
        self.interrupt = interrupt
        """The open interrupt this editor answers (from the invocation's projection)."""
        schema = interrupt.response_schema
        self.form_reason: str | None = SchemaForm.unsupported(schema)
        """Why this schema has no form (None: it has one)."""
        self.form: SchemaForm | None = None
        self.mode = "json"
        """``form`` or ``json``: the view shown."""
        start = UNSET
        if self.form_reason is None:
            if text is not None and text.strip() and text != initial_text(interrupt):
                try:
                    start = json.loads(text)
                except ValueError:
                    start = UNSET
                    self.mode = "json"
                else:
                    self.mode = "form"
            else:
                self.mode = "form"
            try:
                self.form = SchemaForm(schema or {}, start if self.mode == "form" else UNSET, mask=redactor.text,
                                       classes="answer-form")
            except ValueError:  # the text is JSON the form cannot show: JSON view, form empty
                self.form, self.mode = SchemaForm(schema or {}, mask=redactor.text, classes="answer-form"), "json"
        self.start_text = (value_text(start) if start is not UNSET else initial_text(interrupt)) if text is None \
            else text
        self.check: Check = self._verdict(self.start_text)
        """The verdict on the current answer."""

    def compose(self) -> ComposeResult:
        itr = self.interrupt
        head = Text()
        head.append(short(itr.id, 60, self.redactor), "bold")
        head.append(f"  {short(itr.path, 60, self.redactor)}", "dim")
        yield Label(head, classes="answer-head")
        if itr.message:
            yield Static(self.redactor.text(itr.message), classes="answer-message")
        with Horizontal(classes="answer-body"):
            with Vertical(classes="answer-input"):
                if self.form is not None:
                    box = Vertical(self.form, classes="answer-form-box")
                    box.border_title = "answer"
                    box.border_subtitle = "ctrl+t: JSON"
                    box.display = self.mode == "form"
                    yield box
                area = JsonArea(
                    self.start_text,
                    soft_wrap=True,
                    tab_behavior="focus",
                    show_line_numbers=True,
                    classes="answer-text",
                )
                area.border_title = "answer (JSON)"
                area.border_subtitle = "ctrl+t: form" if self.form is not None else "JSON only"
                area.display = self.mode == "json"
                yield area
                note = Static(self._view_note(), classes="answer-view-note")
                yield note
            side = Static(self._side(), classes="answer-payload")
            side.border_title = "payload"
            yield side
        yield Static("", classes="answer-status")

    def _view_note(self) -> Text:
        if self.form is None:
            return Text(f"JSON only: {self.redactor.text(self.form_reason or '')}", "dim")
        return Text("")

    def _side(self) -> Text:
        itr = self.interrupt
        args = itr.args if isinstance(itr.args, dict) else {}
        payload = args.get("payload")
        t = Text()
        red = self.redactor
        if payload is None:
            t.append("(no payload)")
        else:
            text, cut = preview_json(payload, red)  # bounded: a megabyte payload opens the editor at once
            t.append(text)
            if cut:
                t.append("\n(a preview: the session screen's w shows all)", "dim italic")
        schema = itr.response_schema
        if schema is not None:
            t.append("\n\nschema\n", "bold")
            t.append("\n".join(schema_lines(red.value(schema))))
        return t

    def on_mount(self) -> None:
        # The app's setting (off in snapshot tests), like the console's other inputs.
        self.text_area.cursor_blink = getattr(self.app, "cursor_blink", True)
        self.query_one(".answer-view-note").display = self.form is None
        self._show_check()

    @property
    def text_area(self) -> JsonArea:
        return self.query_one(JsonArea)

    @property
    def text(self) -> str:
        """The answer as JSON text (what a draft keeps; the form's value in the form view)."""
        if self.mode == "form" and self.form is not None:
            return "" if self._form_empty() else value_text(self.form.value)
        return self.text_area.text

    def focus_answer(self) -> None:
        """Focus the answer: the form's first field, or the JSON text."""
        if self.mode == "form" and self.form is not None and self.form.focus_first():
            return
        self.text_area.focus()

    def set_text(self, text: str) -> None:
        """Load ``text`` (JSON): into the form when it can show it, else into the JSON view."""
        if self.mode == "form" and self.form is not None:
            try:
                value = json.loads(text)
            except ValueError:
                value = UNSET
            if value is not UNSET and self.form.set_value(value):
                self.text_area.load_text(text)
                self._recheck()
                return
            self._show_view("json")
        self.text_area.load_text(text)
        self._recheck()

    def set_value(self, value: Any, *, quiet: bool = False) -> None:
        """Load an answer value (apply to all): the form shows it when it can, else the JSON view.
        ``quiet``: no :class:`Checked` message (the caller rechecks them all at once)."""
        with self.prevent(SchemaForm.Changed):
            shown = self.form is not None and self.form.set_value(value)
        if shown:
            self._show_view("form")
        else:
            self._show_view("json")
            with self.text_area.prevent(TextArea.Changed):
                self.text_area.load_text(value_text(value))
        self._recheck(quiet=quiet)

    def toggle_view(self) -> str | None:
        """Form <-> JSON with the same value; the reason when it cannot switch (None: switched)."""
        if self.form is None:
            return f"this schema has no form: {self.form_reason}"
        if self.mode == "form":
            self.text_area.load_text(initial_text(self.interrupt) if self._form_empty() else value_text(self.form.value))
            self._show_view("json")
        else:
            text = self.text_area.text
            if not text.strip() or text == initial_text(self.interrupt):
                self.form.clear()
            else:
                try:
                    value = json.loads(text)
                except ValueError as exc:
                    return f"not JSON yet ({not_json(exc)}): it stays in the JSON view"
                if not self.form.set_value(value):
                    return "the form cannot show this answer (a value of another type or an unknown key): " \
                           "it stays in the JSON view"
            self._show_view("form")
        self._recheck()
        self.focus_answer()
        return None

    def _form_empty(self) -> bool:
        """Nothing chosen in the form yet (an object form with no field set counts)."""
        assert self.form is not None
        value = self.form.value
        return value is UNSET or (value == {} and self.form.spec.kind == "object")

    def _show_view(self, mode: str) -> None:
        self.mode = mode
        if self.form is not None:
            self.query_one(".answer-form-box").display = mode == "form"
        self.text_area.display = mode == "json"

    def on_text_area_changed(self, event: TextArea.Changed) -> None:
        event.stop()
        if self.mode == "json":
            self._recheck()

    def on_schema_form_changed(self, event: SchemaForm.Changed) -> None:
        event.stop()
        if self.mode == "form":
            self._recheck()

    def _verdict(self, text: str) -> Check:
        if self.mode == "form" and self.form is not None:
            value = self.form.value
            return Check(value=None if value is UNSET else value, errors=list(self.form.errors))
        return check_answer(text, self.interrupt.response_schema)

    def _recheck(self, *, quiet: bool = False) -> None:
        self.check = self._verdict(self.text_area.text)
        self._show_check()
        if not quiet:
            self.post_message(self.Checked(self, self.check))

    def _show_check(self) -> None:
        status = self.query_one(".answer-status", Static)
        get = self.get_component_rich_style
        if self.check.ok:
            status.update(Text("✓ valid", get("answer--ok", partial=True)))
        elif self.mode == "form":  # each error is under its field; here the first, and how many
            errors = [self.redactor.text(e) for e in self.check.errors]
            more = f"  (+{len(errors) - 1} more below)" if len(errors) > 1 else ""
            status.update(Text(f"✗ {errors[0]}{more}", get("answer--error", partial=True)))
        else:
            what = "✗ not JSON yet: " if self.check.syntax else "✗ "
            errors = [self.redactor.text(e) for e in self.check.errors]  # errors may echo the value
            status.update(Text(what + "\n  ".join(errors), get("answer--error", partial=True)))
        self.set_class(not self.check.ok, "-invalid")
