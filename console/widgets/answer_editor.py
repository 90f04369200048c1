"""One response editor per selected interrupt id: JSON text, checked as you type.

* :func:`check_answer` -- the editor's verdict on its text: JSON syntax first
  (``line 2 col 14: Expecting ',' delimiter``), then the interrupt's stored
  ``response_schema`` through :func:`engine.responses.validate_response`, the
  same check the Runner makes before it persists anything (``amount: expected
  integer``). Pure; no widget needed.
* :class:`JsonArea` -- a ``TextArea`` that highlights JSON without tree-sitter.
  Textual's own highlighting needs the ``textual[syntax]`` extra, whose current
  tree-sitter (0.26) crashes the process (SIGSEGV) inside ``TextArea`` with
  Textual 8.2; an operator's console must not be one keystroke from a segfault,
  and JSON has five kinds of tokens, so a small scanner does the job.
* :class:`AnswerEditor` -- the call's message, the editor and the call's payload
  beside it (secrets masked), and a status line with the verdict. Posts
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

from engine.projection import Interrupt
from engine.redact import Redactor
from engine.responses import template_for, unwrap_response, validate_response

from .format import short, to_json
from .keys import OrderedTextArea
from .plain import Label, Static

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
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        return Check(errors=[f"line {exc.lineno} col {exc.colno}: {exc.msg}"], syntax=True)
    return Check(value=value, errors=validate_response(schema, unwrap_response(value)))


def initial_text(itr: Interrupt) -> str:
    """The editor's first text: a template with the schema's required fields, else ``{}``."""
    return json.dumps(template_for(itr.response_schema), indent=2, ensure_ascii=False)


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
    """Message, JSON editor, payload beside it, and the verdict, for one interrupt id."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {"answer--ok", "answer--error", "answer--dim"}

    class Checked(Message):
        """The editor's text changed and was checked."""

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
        self.start_text = initial_text(interrupt) if text is None else text
        self.check: Check = check_answer(self.start_text, interrupt.response_schema)
        """The verdict on the current text."""

    def compose(self) -> ComposeResult:
        itr = self.interrupt
        head = Text()
        head.append(short(itr.id, 60, self.redactor), "bold")
        head.append(f"  {short(itr.path, 60, self.redactor)}", "dim")
        yield Label(head, classes="answer-head")
        if itr.message:
            yield Static(self.redactor.text(itr.message), classes="answer-message")
        with Horizontal(classes="answer-body"):
            area = JsonArea(
                self.start_text,
                soft_wrap=True,
                tab_behavior="focus",
                show_line_numbers=True,
                classes="answer-text",
            )
            area.border_title = "answer (JSON)"
            yield area
            side = Static(self._side(), classes="answer-payload")
            side.border_title = "payload"
            yield side
        yield Static("", classes="answer-status")

    def _side(self) -> Text:
        itr = self.interrupt
        args = itr.args if isinstance(itr.args, dict) else {}
        payload = args.get("payload")
        t = Text()
        red = self.redactor
        t.append(to_json(red.value(payload), indent=2) if payload is not None else "(no payload)")
        schema = itr.response_schema
        if schema is not None:
            t.append("\n\nschema ", "bold")
            t.append(to_json(red.value(schema)))
        return t

    def on_mount(self) -> None:
        # The app's setting (off in snapshot tests), like the console's other inputs.
        self.text_area.cursor_blink = getattr(self.app, "cursor_blink", True)
        self._show_check()

    @property
    def text_area(self) -> JsonArea:
        return self.query_one(JsonArea)

    @property
    def text(self) -> str:
        return self.text_area.text

    def set_text(self, text: str) -> None:
        self.text_area.load_text(text)
        self._recheck()

    def on_text_area_changed(self, event: TextArea.Changed) -> None:
        event.stop()
        self._recheck()

    def _recheck(self) -> None:
        self.check = check_answer(self.text_area.text, self.interrupt.response_schema)
        self._show_check()
        self.post_message(self.Checked(self, self.check))

    def _show_check(self) -> None:
        status = self.query_one(".answer-status", Static)
        get = self.get_component_rich_style
        if self.check.ok:
            status.update(Text("✓ valid", get("answer--ok", partial=True)))
        else:
            what = "✗ not JSON yet: " if self.check.syntax else "✗ "
            errors = [self.redactor.text(e) for e in self.check.errors]  # errors may echo the value
            status.update(Text(what + "\n  ".join(errors), get("answer--error", partial=True)))
        self.set_class(not self.check.ok, "-invalid")
