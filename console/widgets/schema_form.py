"""A form generated from a response schema: choose, don't type JSON.

API (the response editor and the bulk-answer dialog use it alike)::

    reason = SchemaForm.unsupported(schema)   # None, or one line: why only JSON can say it
    form = SchemaForm(schema)                 # NotAForm (engine.schema_view) when unsupported
    form = SchemaForm(schema, value)          # start from an answer (ValueError if the form cannot show it)
    form.value                                # the JSON answer so far, or UNSET (nothing chosen at the root)
    form.ok, form.errors                      # the verdict: ["approved: required -- press y or n", ...]
    form.set_value(v) -> bool                 # show an answer (False: the form cannot show it; unchanged)
    form.clear()                              # nothing chosen again
    form.focus_first()
    on_schema_form_changed(message)           # SchemaForm.Changed(form, value, errors) after every edit

What each schema part becomes (:func:`engine.schema_view.form_spec` reads the schema):

* ``boolean`` -- a two-way choice, ``y`` yes (true) / ``n`` no (false);
* an ``enum`` (or ``const``) -- a pick list: number keys ``1``-``9``, ``0`` for
  the tenth, or arrows (or a letter: the next option starting with it) and ``enter``/``space``;
* ``string`` / ``integer`` / ``number`` -- an input, checked as you type;
* ``object`` -- a section with its properties; ``array`` -- a section with its
  items, ``+`` adds one and ``-`` removes the last (on the section's add line).

``backspace`` / ``delete`` on a choice clears it. Choosing moves to the next
field. Letters and digits typed into a field stay in it (never the screen's keys). Required fields are marked ``*`` and start empty; nothing is chosen for
the operator: a schema ``default`` is shown ("default: 3") and used only when
the field is optional and left empty (the engine fills it in) or when the
operator picks it. ``title`` and ``description`` are shown as help.

Validity is the engine's: :attr:`SchemaForm.errors` is what the form itself
knows (a required field still empty, text that is not a number), then every
error :func:`engine.responses.validate_response` -- the check ``hitl resume``
and the Runner make -- reports for :attr:`SchemaForm.value`, each shown under
its field. The form is never valid when the engine would refuse its value.
"""

from __future__ import annotations

from typing import Any, ClassVar

from textual.app import ComposeResult
from textual.containers import Vertical
from textual.message import Message

from engine.responses import unwrap_response, validate_response
from engine.schema_view import NotAForm, form_reason, form_spec

from .form_fields import (
    REQUIRED_ERROR,
    UNSET,
    FieldBase,
    Mask,
    ObjectSection,
    errors_static,
    fits,
    make_field,
    no_mask,
    show_error_lines,
    where,
)


class SchemaForm(Vertical):
    """The form for one response schema (see the module docstring for the API)."""

    DEFAULT_CSS = """
    SchemaForm { height: auto; }
    SchemaForm > .form-error { color: $error; text-style: bold; padding: 0 1; }
    """

    class Changed(Message):
        """The form's value changed (and was checked)."""

        def __init__(self, form: SchemaForm) -> None:
            super().__init__()
            self.form = form
            self.value = form.value
            self.errors = list(form.errors)

        @property
        def control(self) -> SchemaForm:
            return self.form

    unsupported: ClassVar = staticmethod(form_reason)
    """``SchemaForm.unsupported(schema)``: why a form cannot express ``schema`` (None: it can)."""

    def __init__(self, schema: dict[str, Any], value: Any = UNSET, *, mask: Mask = no_mask, id: str | None = None,
                 classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self.schema = schema
        self.spec = form_spec(schema)  # NotAForm: the caller shows JSON instead
        self.mask = mask
        """Masks secrets in what the form shows (never in its value)."""
        self.root = make_field(self.spec, mask)
        self._error = errors_static()
        self.value: Any = UNSET
        """The answer so far (UNSET: nothing chosen)."""
        self.errors: list[str] = []
        """Why it cannot be sent yet; empty: the engine accepts :attr:`value`."""
        if value is not UNSET and not self._root().put(value):
            raise ValueError("the form cannot show this answer")
        self._check()

    def compose(self) -> ComposeResult:
        yield self.root
        yield self._error

    @property
    def ok(self) -> bool:
        return not self.errors

    def _root(self) -> FieldBase:
        assert isinstance(self.root, FieldBase)
        return self.root

    def fits(self, value: Any) -> bool:
        """Whether the form can show ``value`` exactly."""
        return fits(self.spec, value)

    def set_value(self, value: Any) -> bool:
        """Show ``value``; False (and nothing changes) when the form cannot show it."""
        if value is not UNSET and not fits(self.spec, value):
            return False
        self._root().put(value)
        self._check()
        self.post_message(self.Changed(self))
        return True

    def clear(self) -> None:
        self.set_value(UNSET)

    def focus_first(self) -> bool:
        for w in self.query(".form-field"):
            if w.focusable:
                self.screen.set_focus(w)  # at once: keys typed meanwhile are handed to it next
                return True
        return False

    def on_field_base_edited(self, event: FieldBase.Edited) -> None:
        event.stop()
        self._check()
        self.post_message(self.Changed(self))

    # ------------------------------------------------------------ checking
    def _fields(self, *, asked: bool) -> list[FieldBase]:
        """Every field, depth first (``asked``: not inside an optional object left empty)."""
        out: list[FieldBase] = []

        def walk(f: FieldBase) -> None:
            out.append(f)
            if asked and isinstance(f, ObjectSection) and not f.present():
                return
            for c in f.children_fields():
                walk(c)

        walk(self._root())
        return out

    def _check(self) -> None:
        fields = self._fields(asked=True)
        value = self._root().get()
        local: dict[int, list[str]] = {}
        for f in fields:
            errs = f.local_errors()
            if errs:
                local[id(f)] = errs
        if value is UNSET and not local:
            local[id(self._root())] = [f"{where(self.spec)}: required -- choose a value"]
        by_path = {f.spec.path: f for f in fields}
        engine = [] if value is UNSET else validate_response(self.schema, unwrap_response(value))
        placed: dict[int, list[str]] = {k: list(v) for k, v in local.items()}
        loose: list[str] = []
        for e in engine:
            m = REQUIRED_ERROR.match(e)
            if m:
                parent = "" if m["path"] == "(root)" else m["path"] + "."
                target = by_path.get(parent + m["name"])
                if target is not None and id(target) in local:
                    continue  # the form already says it ("required -- press y or n")
            target = by_path.get(e.split(": ", 1)[0])
            if target is not None and id(target) in local:
                continue  # a consequence of what the form already says (an item not chosen yet is null)
            if target is not None:
                placed.setdefault(id(target), []).append(e)
            else:
                loose.append(e)
        self.value = value
        self.errors = [e for f in fields for e in placed.get(id(f), [])] + loose
        for f in self._fields(asked=False):
            f.show_errors(placed.get(id(f), []))
        show_error_lines(self._error, [self.mask(e) for e in loose])


__all__ = ["UNSET", "NotAForm", "SchemaForm"]
