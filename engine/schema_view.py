"""A response schema as people read it, and as a form can ask for it.

Two views of one stored ``response_schema`` (JSON Schema, see
:mod:`engine.responses`), computed here once so the console and the CLI say the
same thing:

* :func:`schema_lines` -- the schema as readable text: fields, types, enums,
  required, defaults, limits and descriptions, one line each, nested fields
  indented (``hitl show --schemas``, the console's editor and details pane).
  Any schema renders, including the ones a form cannot express.
* :func:`form_spec` -- the schema as a tree of :class:`FieldSpec` (boolean,
  enum, string, integer, number, object, array) for the console's form, or the
  one-line reason a form cannot express it (``anyOf: a choice between 2
  schemas``). Local ``$ref`` s (pydantic's ``$defs``) are resolved; a field
  that may also be ``null`` (``X | None``) is that field, optional.
* :func:`json_skeleton` -- the JSON editor's first text: the required keys with
  their values left blank, so it is not an answer (not even JSON) until the
  operator writes one; empty for a schema that is not an object.

Validation is not here: it stays :func:`engine.responses.validate_response`.
Nothing imports Textual or Rich.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

KINDS = ("boolean", "enum", "string", "integer", "number", "object", "array")

LIMIT_KEYS = (
    "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf",
    "minLength", "maxLength", "pattern", "format", "minItems", "maxItems", "uniqueItems",
)


class NotAForm(Exception):
    """The schema (or a part of it) has no form; the message says why, in one line."""


@dataclass
class FieldSpec:
    """One field of a form (the root, an object's property or an array's items)."""

    kind: str
    """One of :data:`KINDS`."""
    path: str
    """Where the engine's errors point: ``(root)``, ``approved``, ``address.city``, ``tags.0``
    (array items: the parent's path and ``.N``)."""
    name: str = ""
    """The property name ('' for the root and for array items)."""
    required: bool = False
    nullable: bool = False
    """``null`` is also allowed (``X | None``)."""
    title: str | None = None
    """Only a title that says more than the property name."""
    description: str | None = None
    default: Any = None
    has_default: bool = False
    enum: list[Any] = field(default_factory=list)
    limits: dict[str, Any] = field(default_factory=dict)
    """The schema's limits for this field (``minimum``, ``maxLength``, ``pattern``...)."""
    fields: list[FieldSpec] = field(default_factory=list)
    """An object's properties, in the schema's order."""
    items: FieldSpec | None = None
    """An array's item field (its ``path`` is the array's; each item adds ``.N``)."""

    @property
    def label(self) -> str:
        return self.name or ("answer" if self.path == "(root)" else "item")

    def help_text(self, *, default: bool = True) -> str:
        """``type · limits · default`` and the description, one line (the form's help)."""
        parts = [type_words(self)]
        parts += limit_words(self.limits)
        if self.has_default and default:
            parts.append(f"default: {_json(self.default)}")
        text = " · ".join(parts)
        extra = " -- ".join(x for x in (self.title, self.description) if x)
        return f"{text} -- {extra}" if extra else text


def _json(v: Any) -> str:
    return json.dumps(v, ensure_ascii=False)


def type_words(spec: FieldSpec) -> str:
    if spec.kind == "enum":
        words = "one of " + ", ".join(v if isinstance(v, str) else _json(v) for v in spec.enum)
    elif spec.kind == "array" and spec.items is not None:
        words = f"list of {type_words(spec.items)}"
    else:
        words = spec.kind
    return words + (" or null" if spec.nullable else "")


def limit_words(limits: dict[str, Any]) -> list[str]:
    """``≥ 0``, ``at most 500 chars``, ``matching ^[A-Z]+$`` ... in the schema's order."""
    out: list[str] = []
    for k, v in limits.items():
        out.append({
            "minimum": f"≥ {v}", "maximum": f"≤ {v}", "exclusiveMinimum": f"> {v}", "exclusiveMaximum": f"< {v}",
            "multipleOf": f"multiple of {v}", "minLength": f"at least {v} chars", "maxLength": f"at most {v} chars",
            "pattern": f"matching {v}", "format": f"format {v}", "minItems": f"at least {v} items",
            "maxItems": f"at most {v} items", "uniqueItems": "unique items" if v else "",
        }.get(k, f"{k} {v}"))
    return [w for w in out if w]


# ------------------------------------------------------------------ resolving
def _resolve(node: Any, root: dict[str, Any], seen: tuple[str, ...] = ()) -> tuple[Any, tuple[str, ...]]:
    """Follow local ``$ref`` s (``#/$defs/X``); a ref that loops or leaves the document: :class:`NotAForm`."""
    while isinstance(node, dict) and "$ref" in node:
        ref = node["$ref"]
        if not isinstance(ref, str) or not ref.startswith("#"):
            raise NotAForm(f"$ref {ref!r} points outside the schema")
        if ref in seen:
            raise NotAForm(f"$ref {ref} is recursive")
        seen = (*seen, ref)
        target: Any = root
        for part in ref[2:].split("/") if ref != "#" else []:
            target = target.get(part) if isinstance(target, dict) else None
        if not isinstance(target, dict):
            raise NotAForm(f"$ref {ref} points nowhere")
        rest = {k: v for k, v in node.items() if k != "$ref"}
        node = {**target, **rest}
    if isinstance(node, dict) and isinstance(node.get("allOf"), list) and len(node["allOf"]) == 1:
        inner, seen = _resolve(node["allOf"][0], root, seen)
        node = {**inner, **{k: v for k, v in node.items() if k != "allOf"}}
    return node, seen


def _is_null(node: Any) -> bool:
    return isinstance(node, dict) and (node.get("type") == "null" or node.get("const", 0) is None)


# ------------------------------------------------------------------ the form
def form_spec(schema: dict[str, Any] | None) -> FieldSpec:
    """The form for ``schema``; :class:`NotAForm` (one line: why) when a form cannot express it."""
    if not schema:
        raise NotAForm("no schema: any JSON value is an answer")
    return _spec(schema, schema, "(root)", "", True, ())


def form_reason(schema: dict[str, Any] | None) -> str | None:
    """Why ``schema`` has no form (None: it has one)."""
    try:
        form_spec(schema)
    except NotAForm as e:
        return str(e)
    return None


def _title(node: dict[str, Any], name: str) -> str | None:
    title = node.get("title")
    if not isinstance(title, str) or not title.strip():
        return None
    plain = name.replace("_", " ").strip().lower()
    return None if title.strip().lower() == plain or not name else title.strip()


def _spec(node: Any, root: dict[str, Any], path: str, name: str, required: bool, seen: tuple[str, ...]) -> FieldSpec:
    where = "" if path == "(root)" else f"{path}: "
    if not isinstance(node, dict):
        raise NotAForm(f"{where}schema {node!r} is not an object")
    outer = node
    node, seen = _resolve(node, root, seen)
    nullable = False
    for key in ("anyOf", "oneOf"):
        branches = node.get(key)
        if branches is None:
            continue
        others = [b for b in branches if not _is_null(b)]
        if len(others) != 1 or len(branches) != 2:
            raise NotAForm(f"{where}{key}: a choice between {len(branches)} schemas")
        rest = {k: v for k, v in node.items() if k != key}
        inner, seen = _resolve(others[0], root, seen)
        node, nullable = {**inner, **rest}, True
    for key in ("allOf", "not", "if", "patternProperties", "prefixItems", "dependentSchemas", "$ref"):
        if key in node:
            raise NotAForm(f"{where}{key} is not something a form can ask")
    typ = node.get("type")
    if isinstance(typ, list):
        others = [t for t in typ if t != "null"]
        if len(others) != 1:
            raise NotAForm(f"{where}one of the types {', '.join(map(str, typ))}")
        nullable, typ = nullable or len(others) < len(typ), others[0]
    spec = FieldSpec(
        kind="", path=path, name=name, required=required, nullable=nullable,
        title=_title(node, name) or (_title(outer, name) if outer is not node else None),
        description=node.get("description") if isinstance(node.get("description"), str) else None,
        limits={k: node[k] for k in LIMIT_KEYS if k in node},
    )
    for src in (outer, node):
        if "default" in src:
            spec.default, spec.has_default = src["default"], True
            break
    if "const" in node:
        spec.kind, spec.enum = "enum", [node["const"]]
    elif isinstance(node.get("enum"), list) and node["enum"]:
        values = [v for v in node["enum"] if v is not None]
        spec.nullable = spec.nullable or len(values) < len(node["enum"])
        if not values or any(isinstance(v, (dict, list)) for v in values):
            raise NotAForm(f"{where}an enum of objects or lists")
        spec.kind, spec.enum = "enum", values
    elif typ in ("boolean", "string", "integer", "number"):
        spec.kind = typ
    elif typ == "object" or (typ is None and "properties" in node):
        props = node.get("properties") or {}
        extra = node.get("additionalProperties")
        if not props:
            raise NotAForm(f"{where}an object with free-form keys")
        if isinstance(extra, dict) and extra:
            raise NotAForm(f"{where}an object with extra keys of their own schema")
        need = set(node.get("required") or [])
        spec.kind = "object"
        spec.fields = [
            _spec(sub, root, k if path == "(root)" else f"{path}.{k}", k, k in need, seen) for k, sub in props.items()
        ]
    elif typ == "array":
        items = node.get("items")
        if not isinstance(items, dict):
            raise NotAForm(f"{where}an array without one item schema")
        spec.kind = "array"
        spec.items = _spec(items, root, path, "", True, seen)
    elif typ == "null":
        raise NotAForm(f"{where}only null is allowed: nothing to choose")
    else:
        raise NotAForm(f"{where}no type: any JSON value")
    return spec


# ------------------------------------------------------------------ readable text
def schema_lines(schema: dict[str, Any] | None) -> list[str]:
    """The schema as readable lines (any schema; unknown parts said plainly)."""
    if not schema:
        return ["any JSON value (no schema)"]
    out: list[str] = []
    _describe(schema, schema, "", 0, out, ())
    return out


def schema_text(schema: dict[str, Any] | None) -> str:
    return "\n".join(schema_lines(schema))


def _describe(node: Any, root: dict[str, Any], head: str, depth: int, out: list[str], seen: tuple[str, ...]) -> None:
    pad = "  " * depth
    try:
        resolved, seen2 = _resolve(node, root, seen)
    except NotAForm as e:
        out.append(f"{pad}{head}{e}")
        return
    if not isinstance(resolved, dict):
        out.append(f"{pad}{head}{_json(resolved)}")
        return
    try:
        name = head.split(" ", 1)[0]
        spec = _spec(resolved, root, "(root)" if not head else name, name, False, seen2)
        spec_ok = True
    except NotAForm:
        spec_ok = False
    if spec_ok and spec.kind not in ("object", "array"):
        out.append(f"{pad}{head}{spec.help_text()}")
        return
    if spec_ok and spec.kind == "array" and spec.items is not None and spec.items.kind not in ("object", "array"):
        out.append(f"{pad}{head}{spec.help_text()}")
        return
    for key in ("anyOf", "oneOf"):
        if isinstance(resolved.get(key), list) and not (spec_ok and spec.kind in ("object", "array")):
            out.append(f"{pad}{head}{'one of' if key == 'oneOf' else 'any of'}:")
            for b in resolved[key]:
                _describe(b, root, "- ", depth + 1, out, seen2)
            return
    typ = resolved.get("type")
    props = resolved.get("properties")
    desc = resolved.get("description")
    tail = f" -- {desc}" if isinstance(desc, str) and desc else ""
    if typ == "object" or isinstance(props, dict):
        title = resolved.get("title") if not head and isinstance(resolved.get("title"), str) else None
        out.append(f"{pad}{head}{title + ' ' if title else ''}object{tail}")
        need = set(resolved.get("required") or [])
        for k, sub in (props or {}).items():
            _describe(sub, root, f"{k}{' (required)' if k in need else ''}  ", depth + 1, out, seen2)
        extra = resolved.get("additionalProperties")
        if not props or isinstance(extra, dict):
            out.append(f"{'  ' * (depth + 1)}other keys: " + ("any value" if not isinstance(extra, dict) or not extra
                                                               else schema_text(extra).replace("\n", " ")))
        return
    if typ == "array":
        limits = " · ".join(limit_words({k: resolved[k] for k in LIMIT_KEYS if k in resolved}))
        out.append(f"{pad}{head}list{' · ' + limits if limits else ''}{tail}, each:")
        _describe(resolved.get("items", {}), root, "", depth + 1, out, seen2)
        return
    out.append(f"{pad}{head}{_json(resolved)}")


# ------------------------------------------------------------------ JSON editor
def json_skeleton(schema: dict[str, Any] | None) -> str:
    """The JSON editor's first text: ``{"approved": }`` (required keys, values blank), else ''.

    Deliberately not JSON: nothing in it is a decision, and the editor says
    what is missing until the operator writes each value."""
    try:
        node, _ = _resolve(schema or {}, schema or {})
    except NotAForm:
        return ""
    if not isinstance(node, dict) or not isinstance(node.get("properties"), dict):
        return ""
    keys = [k for k in node["properties"] if k in set(node.get("required") or [])]
    if not keys:
        return ""
    return "{\n" + ",\n".join(f"  {_json(k)}: " for k in keys) + "\n}"
