"""The one answer of a bulk answer, as the operator writes it.

The bulk dialog (:mod:`console.screens.bulk_answer`) asks only this widget for
the value: :attr:`BulkAnswerInput.check` (the parsed value and what is wrong
with it), :attr:`BulkAnswerInput.text` (what the dry run is keyed on) and the
:class:`BulkAnswerInput.Checked` message after each edit. When the selection
has one schema a form can show, it is the single answer's
:class:`~console.widgets.schema_form.SchemaForm` (``y``/``n`` for a boolean,
digits for an enum); else a JSON editor.

Nothing is prefilled: the answer is invalid until the operator writes one (a
bulk answer applies it to every selected interrupt). The schemas of the
selected interrupts are shown as help, and the value is checked against each
distinct one (:func:`~console.widgets.answer_editor.check_answer`, the Runner's
own validation); the dry run then checks it item by item.
"""

from __future__ import annotations

from typing import Any, ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.message import Message
from textual.widgets import TextArea

from engine.redact import Redactor

from .answer_editor import Check, JsonArea, check_answer, value_text
from .format import to_json
from .plain import Static
from .schema_form import UNSET, SchemaForm


class BulkAnswerInput(Vertical):
    """A JSON editor for one answer, checked against every schema of the selection."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {"answer--ok", "answer--error"}

    class Checked(Message):
        """The answer changed and was checked."""

        def __init__(self, check: Check) -> None:
            super().__init__()
            self.check = check

    def __init__(self, schemas: list[dict[str, Any] | None], *, redactor: Redactor, id: str | None = None) -> None:
        super().__init__(id=id, classes="bulk-input")
        self.redactor = redactor
        self.schemas = schemas
        """The distinct response schemas of the selected interrupts (None: no schema)."""
        self.form: SchemaForm | None = None
        """One schema a form can show: the same form as a single answer (y/n, digits); else JSON."""
        if len(schemas) == 1 and schemas[0] is not None and SchemaForm.unsupported(schemas[0]) is None:
            self.form = SchemaForm(schemas[0], mask=redactor.text, classes="answer-form")
        self.check: Check = self._check("")

    def compose(self) -> ComposeResult:
        if self.form is not None:
            box = Vertical(self.form, classes="answer-form-box bulk-form-box")
            box.border_title = "one answer for every selected id"
            box.border_subtitle = "y/n · digits · tab"
            yield box
            return  # the schema is what a form shows: no JSON text to read besides
        area = JsonArea("", soft_wrap=True, tab_behavior="focus", show_line_numbers=False, classes="bulk-text")
        area.border_title = "one answer for every selected id (JSON)"
        yield area
        yield Static(self._schemas_text(), classes="bulk-schema")
        yield Static("", classes="answer-status")

    def on_mount(self) -> None:
        if self.form is None:
            self.query_one(JsonArea).cursor_blink = getattr(self.app, "cursor_blink", True)
            self._show()

    @property
    def text(self) -> str:
        """The answer as written (what :attr:`check` is the verdict on): the form's
        value as JSON, "" while nothing is chosen."""
        if self.form is not None:
            value = self.form.value
            return "" if value is UNSET or value == {} and self.form.spec.kind == "object" else value_text(value)
        return self.query_one(JsonArea).text

    def focus_input(self) -> None:
        if self.form is not None and self.form.focus_first():
            return
        if self.form is None:
            self.query_one(JsonArea).focus()

    def on_schema_form_changed(self, event: SchemaForm.Changed) -> None:
        """The form's verdict, then the Runner's validation (:func:`check_answer`) on its value."""
        event.stop()
        text = self.text
        self.check = Check(None, list(event.errors) or ["choose an answer"]) if event.errors or not text \
            else self._check(text)
        self.post_message(self.Checked(self.check))

    def _schemas_text(self) -> Text:
        t = Text()
        for n, schema in enumerate(self.schemas):
            t.append("schema " if len(self.schemas) == 1 else f"schema {n + 1} ", "bold")
            t.append(to_json(self.redactor.value(schema)) if schema is not None else "(none: any JSON value)")
            t.append("\n")
        t.rstrip()
        return t

    def _check(self, text: str) -> Check:
        checks = [check_answer(text, s) for s in self.schemas] or [check_answer(text, None)]
        bad = [c for c in checks if not c.ok]
        if not bad:
            return checks[0]
        first = bad[0]
        if len(self.schemas) > 1 and not first.syntax:
            return Check(first.value, [f"{len(bad)} of {len(self.schemas)} schemas: {e}" for e in first.errors])
        return first

    def on_text_area_changed(self, event: TextArea.Changed) -> None:
        event.stop()
        self.check = self._check(event.text_area.text)
        self._show()
        self.post_message(self.Checked(self.check))

    def _show(self) -> None:
        get = self.get_component_rich_style
        status = self.query_one(".answer-status", Static)
        if self.check.ok:
            status.update(Text("✓ valid for every selected schema", get("answer--ok", partial=True)))
        else:
            what = "✗ not JSON yet: " if self.check.syntax else "✗ "
            status.update(Text(what + "\n  ".join(self.redactor.text(e) for e in self.check.errors),
                               get("answer--error", partial=True)))
