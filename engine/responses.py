"""Response values: unwrapping (DESIGN.md 3.7) and schema handling.

``response_schema`` may be a pydantic model, a Python type or a JSON Schema dict;
it is always stored with the interrupt's call as JSON Schema so that the
console and the CLI validate answers without importing workflow code. This is
the one place that validates an answer; the runner, the CLI's ``--dry-run`` and
the console's editor all call :func:`coerce_response` (or
:func:`validate_response`, its errors only). A valid answer to an object of
scalar fields (what a model of plain fields becomes) is taken as sent, without
the coercion field by field (:func:`plain_object`, :func:`plainly_valid`): the
one quick check, which an import also asks once per distinct schema.

Coercion follows pydantic's lax mode, driven only by the JSON Schema (so a
pydantic model, a Python type and the equivalent JSON Schema dict coerce alike):
numeric strings to numbers, integral floats to integers, ``"true"``/``"false"``
(and pydantic's other boolean words, 0 and 1) to booleans, the schema's
defaults filled in, ``null`` for optional fields left out that have no default,
whether or not their schema lists ``null`` (ADK's model built from the schema
gives ``None``; DESIGN.md 3.7) -- so ``null`` for a property that is not
required is valid, as it is in that model. In a union a branch the value already matches wins (pydantic's smart
mode); else the first branch it can be coerced to. ``NaN`` and infinities are
rejected: JSON has no such values.
"""

from __future__ import annotations

import copy
import json
import math
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .quick_schema import scalar_equal, surely_invalid, surely_valid

if TYPE_CHECKING:  # imported where used: ~80 ms that most commands never need
    import jsonschema

MAX_RESPONSE_BYTES = 1_000_000
"""Largest accepted answer, per interrupt id: the UTF-8 bytes of its JSON text
(non-ASCII characters count as their UTF-8 bytes, not as ``\\uXXXX`` escapes).
Larger answers are rejected before anything is persisted: a session log is not
a blob store."""


def unwrap_response(response: Any) -> Any:
    """``{"result": v}`` -> ``v``; a string ``v`` that parses as JSON is parsed.

    Other values (including dicts with other keys) pass through unchanged, which
    matches what ADK clients send.
    """
    if isinstance(response, dict) and set(response) == {"result"}:
        value = response["result"]
        if isinstance(value, str):
            try:
                return json.loads(value)
            except ValueError:
                return value
        return value
    return response


def to_json_schema(schema: Any) -> dict[str, Any] | None:
    """Normalise a ``response_schema`` (pydantic model, Python type, JSON Schema
    dict or None) to a JSON Schema dict."""
    if schema is None:
        return None
    if isinstance(schema, dict):
        import jsonschema

        jsonschema.validators.validator_for(schema).check_schema(schema)
        return schema
    from pydantic import BaseModel, TypeAdapter  # here: the CLI's limits import this module, not pydantic

    if isinstance(schema, type) and issubclass(schema, BaseModel):
        return schema.model_json_schema()
    return TypeAdapter(schema).json_schema()


def _format_error(err: jsonschema.ValidationError) -> str:
    where = ".".join(str(p) for p in err.absolute_path) or "(root)"
    if err.validator == "type":
        expected = err.validator_value
        if isinstance(expected, list):
            expected = " or ".join(expected)
        return f"{where}: expected {expected}, got {json.dumps(err.instance)[:60]}"
    if err.validator == "required":
        return f"{where}: {err.message}"
    return f"{where}: {err.message}"


def validate_response(schema: dict[str, Any] | None, value: Any) -> list[str]:
    """Errors of ``value`` (already unwrapped) against a JSON Schema, after the
    coercions of :func:`coerce_response`, each prefixed with the path of the
    offending field (``amount: expected integer``). An empty list means valid."""
    return coerce_response(schema, value)[1]


def coerce_response(schema: dict[str, Any] | None, value: Any) -> tuple[Any, list[str]]:
    """``(coerced value, errors)`` for an answer (already unwrapped): the one
    validation of DESIGN.md 3.7. The coerced value is what gets persisted; with
    errors it is ``value`` unchanged and nothing may be persisted."""
    bad = _non_finite(value, "")
    if bad is not None:
        return value, [f"{bad or '(root)'}: NaN and infinities are not JSON values"]
    try:
        text = json.dumps(value, ensure_ascii=False, allow_nan=False).encode("utf-8")
    except (TypeError, ValueError) as exc:
        return value, [f"(root): not JSON-serialisable: {exc}"]
    if len(text) > MAX_RESPONSE_BYTES:
        return value, [f"(root): answer is {len(text)} bytes; the limit is {MAX_RESPONSE_BYTES}"]
    if not schema:
        return value, []
    props = plain_object(schema)
    if props is not None and plainly_valid(props, value, text):
        return dict(value), []  # what the full check makes of it: the same keys, in order, and values
    return _coerce_checked(schema, value)


def _coerce_checked(schema: dict[str, Any], value: Any) -> tuple[Any, list[str]]:
    """:func:`coerce_response` the full way (a finite answer within the size limit):
    the coercion, then the schema's check of its result."""
    coerced = _coerce(schema, schema, value)
    view = _view(schema, schema, coerced)
    if surely_valid(schema, schema, view):  # most answers: jsonschema is neither imported nor run
        return coerced, []
    errors = sorted(_validator(schema).iter_errors(view), key=lambda e: list(e.absolute_path))
    if errors:
        return value, [_format_error(e) for e in errors]
    return coerced, []


PlainProps = dict[str, tuple[tuple[type, ...], list[Any] | None]]
"""A :func:`plain_object` schema: each property's Python types and its enum (or None)."""

_PLAIN_TYPES = {"string": (str,), "boolean": (bool,), "integer": (int,), "number": (int, float)}
_PLAIN_KEYS = frozenset({"type", "enum", "title", "description", "default"})
_PLAIN_ROOT = frozenset({"type", "properties", "required", "title", "description"})


def plain_object(schema: Any) -> PlainProps | None:
    """The properties of a schema as a model of scalar fields becomes (an object
    of typed properties, enums, a ``required`` list of them, annotations),
    each as (its Python types, its enum or None); None for any other schema.
    With :func:`plainly_valid`, the quick way :func:`coerce_response` (and an
    import, once per distinct schema) takes most answers."""
    if not isinstance(schema, dict) or schema.get("type") != "object" or set(schema) - _PLAIN_ROOT:
        return None
    props, required = schema.get("properties"), schema.get("required", [])
    if not isinstance(props, dict) or not isinstance(required, list) or any(r not in props for r in required):
        return None
    out = {}
    for name, sub in props.items():
        if not isinstance(sub, dict) or set(sub) - _PLAIN_KEYS or sub.get("type") not in _PLAIN_TYPES:
            return None
        enum = sub.get("enum")
        if enum is not None and (not isinstance(enum, list) or any(isinstance(e, dict | list) for e in enum)):
            return None
        out[name] = (_PLAIN_TYPES[sub["type"]], enum)
    return out


def plainly_valid(props: PlainProps, value: Any, text: bytes) -> bool:
    """True only when ``value`` is valid against the :func:`plain_object` schema
    ``props`` and :func:`coerce_response` leaves it as sent: an object with
    every property, each of exactly its type (no ``1.0`` for an integer, no
    ``true`` for a number) and in its enum, every number finite, small enough
    (``text``: its JSON as UTF-8). Else False: the full check decides."""
    if type(value) is not dict or b"NaN" in text or b"Infinity" in text or 4 * len(text) > MAX_RESPONSE_BYTES:
        return False
    for name, (types, enum) in props.items():
        if name not in value:
            return False
        v = value[name]
        if type(v) not in types:
            return False
        if enum is not None and not any(scalar_equal(v, e) for e in enum):
            return False
    return True


_VALIDATORS: dict[str, Any] = {}
"""JSON Schema text -> its validator: one per schema, not one per answer (an
import validates every answer of a session against a handful of schemas)."""


def _validator(schema: dict[str, Any]) -> Any:
    import jsonschema

    key = json.dumps(schema, sort_keys=True, default=str)
    found = _VALIDATORS.get(key)
    if found is None:
        if len(_VALIDATORS) >= 256:  # bounded: schemas come from stored data
            _VALIDATORS.clear()
        found = _VALIDATORS[key] = jsonschema.validators.validator_for(schema)(schema)
    return found


def _non_finite(value: Any, where: str) -> str | None:
    """The path of the first NaN/Infinity inside ``value`` ('' for the root), else None."""
    if isinstance(value, float) and not math.isfinite(value):
        return where
    if isinstance(value, dict):
        for k, v in value.items():
            found = _non_finite(v, f"{where}.{k}" if where else str(k))
            if found is not None:
                return found
    elif isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            found = _non_finite(v, f"{where}.{i}" if where else str(i))
            if found is not None:
                return found
    return None


_INT = re.compile(r"^\s*[+-]?\d+\s*$")
_TRUE = {"1", "on", "t", "true", "y", "yes"}
_FALSE = {"0", "off", "f", "false", "n", "no"}


def _resolve(node: Any, root: dict[str, Any]) -> Any:
    seen = 0
    while isinstance(node, dict) and "$ref" in node and seen < 32:
        ref = node["$ref"]
        if not isinstance(ref, str) or not ref.startswith("#"):
            return node
        target: Any = root
        for part in ref[2:].split("/") if ref != "#" else []:
            target = target.get(part, {}) if isinstance(target, dict) else {}
        rest = {k: v for k, v in node.items() if k != "$ref"}
        node = {**target, **rest} if rest and isinstance(target, dict) else target
        seen += 1
    return node


def _is_valid(node: Any, root: dict[str, Any], value: Any) -> bool:
    """JSON Schema validity of ``value`` against ``node`` (a part of ``root``), as is."""
    if not isinstance(node, dict):
        return True
    if surely_valid(node, root, value):
        return True
    if surely_invalid(_resolve(node, root), root, value):
        return False
    import jsonschema

    defs = {k: root[k] for k in ("$defs", "definitions") if k in root and k not in node}
    validator = jsonschema.validators.validator_for(root)({**node, **defs})
    return bool(validator.is_valid(value))


def _matches(node: Any, root: dict[str, Any], value: Any) -> bool:
    """True when ``value`` is valid against ``node`` without any coercion
    (``null`` for a property that is not required counts as left out)."""
    return _is_valid(node, root, _view(node, root, value))


def _view(node: Any, root: dict[str, Any], value: Any) -> Any:
    """``value`` as JSON Schema validation sees it: ``null`` for a property that is
    not required (filled in, or sent) is left out -- the model ADK builds from the
    schema makes every such field optional -- everywhere the schema reaches."""
    node = _resolve(node, root)
    if not isinstance(node, dict):
        return value
    if branches := _branches(node):
        seen = _first_fit(branches, lambda b: _view(b, root, value), lambda b, v: _is_valid(b, root, v))
        return value if seen is _NO else seen
    if (merged := _one_all_of(node)) is not None:
        return _view(merged, root, value)
    if isinstance(value, dict) and "properties" in node:
        props = node["properties"] or {}
        required = set(node.get("required") or [])
        extra = node.get("additionalProperties")
        out = {}
        for k, v in value.items():
            if k in props:
                if v is None and k not in required and not _allows_null(props[k], root):
                    continue
                out[k] = _view(props[k], root, v)
            else:
                out[k] = _view(extra, root, v) if isinstance(extra, dict) else v
        return out
    if isinstance(value, list):
        return _each_item(node, value, lambda sub, v: _view(sub, root, v))
    return value


def _branches(node: dict[str, Any]) -> list[Any] | None:
    """The schema's ``anyOf`` branches, else its ``oneOf`` ones; None when it has neither."""
    for key in ("anyOf", "oneOf"):
        if branches := node.get(key):
            return list(branches)
    return None


def _first_fit(branches: list[Any], make: Callable[[Any], Any], fits: Callable[[Any, Any], bool]) -> Any:
    """``make(branch)`` of the first of ``branches`` whose result ``fits`` it; ``_NO`` when none does."""
    for b in branches:
        candidate = make(b)
        if fits(b, candidate):
            return candidate
    return _NO


def _one_all_of(node: dict[str, Any]) -> dict[str, Any] | None:
    """A schema whose ``allOf`` has one entry, as one schema (that entry merged in); else None."""
    all_of = node.get("allOf")
    if not (isinstance(all_of, list) and len(all_of) == 1):
        return None
    return {**{k: v for k, v in node.items() if k != "allOf"}, **all_of[0]}


def _each_item(node: dict[str, Any], value: list[Any], fn: Callable[[dict[str, Any], Any], Any]) -> list[Any]:
    """``fn(schema, item)`` for each item of an array ``value`` whose item schema (its
    ``prefixItems`` entry, else ``items``) is an object; other items as they are."""
    prefix = node.get("prefixItems")
    items = node.get("items")
    out = []
    for i, v in enumerate(value):
        sub = prefix[i] if isinstance(prefix, list) and i < len(prefix) else items
        out.append(fn(sub, v) if isinstance(sub, dict) else v)
    return out


def _allows_null(node: Any, root: dict[str, Any]) -> bool:
    node = _resolve(node, root)
    if not isinstance(node, dict):
        return False
    typ = node.get("type")
    if typ == "null" or (isinstance(typ, list) and "null" in typ):
        return True
    return any(_allows_null(b, root) for key in ("anyOf", "oneOf") for b in node.get(key, []) or [])


def _coerce(node: Any, root: dict[str, Any], value: Any) -> Any:
    node = _resolve(node, root)
    if not isinstance(node, dict):
        return value
    if branches := _branches(node):
        if any(_matches(b, root, value) for b in branches):
            # Smart mode: an exact match keeps the value (defaults still filled in).
            branch = next(b for b in branches if _matches(b, root, value))
            return _coerce(branch, root, value)
        candidate = _first_fit(branches, lambda b: _coerce(b, root, value), lambda b, v: _matches(b, root, v))
        return value if candidate is _NO else candidate
    if (merged := _one_all_of(node)) is not None:
        return _coerce(merged, root, value)
    typ = node.get("type")
    types = typ if isinstance(typ, list) else [typ] if typ else []
    if value is None or (types and _primitive_type(value) in types and not isinstance(value, (dict, list))):
        return value
    for t in types:
        coerced = _coerce_to(t, node, root, value)
        if coerced is not _NO:
            return coerced
    if not types and isinstance(value, dict) and "properties" in node:
        return _coerce_object(node, root, value)
    return value


_NO: Any = object()


def _primitive_type(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    return "other"


def _coerce_to(t: str, node: dict[str, Any], root: dict[str, Any], value: Any) -> Any:
    if t == "integer":
        if isinstance(value, str) and _INT.match(value):
            return int(value)
        if isinstance(value, str):
            try:
                f = float(value)
            except ValueError:
                return _NO
            return int(f) if math.isfinite(f) and f.is_integer() else _NO
        if isinstance(value, float) and math.isfinite(value) and value.is_integer():
            return int(value)
    elif t == "number":
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        if isinstance(value, str):
            try:
                f = float(value)
            except ValueError:
                return _NO
            return f if math.isfinite(f) else _NO
    elif t == "boolean":
        if isinstance(value, str) and value.strip().lower() in _TRUE | _FALSE:
            return value.strip().lower() in _TRUE
        if isinstance(value, int) and not isinstance(value, bool) and value in (0, 1):
            return bool(value)
    elif t == "object" and isinstance(value, dict):
        return _coerce_object(node, root, value)
    elif t == "array" and isinstance(value, list):
        return _each_item(node, value, lambda sub, v: _coerce(sub, root, v))
    return _NO


def _coerce_object(node: dict[str, Any], root: dict[str, Any], value: dict[str, Any]) -> dict[str, Any]:
    props = node.get("properties") or {}
    required = set(node.get("required") or [])
    extra = node.get("additionalProperties")
    out = {
        k: _coerce(props[k], root, v) if k in props else _coerce(extra, root, v) if isinstance(extra, dict) else v
        for k, v in value.items()
    }
    for k, sub in props.items():
        if k in out:
            continue
        resolved = _resolve(sub, root)
        if isinstance(resolved, dict) and "default" in resolved:
            out[k] = copy.deepcopy(resolved["default"])
        elif isinstance(sub, dict) and "default" in sub:
            out[k] = copy.deepcopy(sub["default"])
        elif k not in required:
            out[k] = None  # as ADK's model built from the schema: an optional field is None
    return out


def template_for(schema: dict[str, Any] | None) -> Any:
    """A starting answer for an editor: required fields with placeholder values."""
    if not schema:
        return {}
    return _template(schema, schema)


def _template(node: dict[str, Any], root: dict[str, Any]) -> Any:
    if "$ref" in node:
        ref = node["$ref"]
        if ref.startswith("#/"):
            target: Any = root
            for part in ref[2:].split("/"):
                target = target.get(part, {})
            return _template(target, root)
        return None
    if "default" in node:
        return node["default"]
    if "enum" in node and node["enum"]:
        return node["enum"][0]
    for key in ("anyOf", "oneOf"):
        if key in node and node[key]:
            return _template(node[key][0], root)
    typ = node.get("type")
    if isinstance(typ, list):
        typ = typ[0] if typ else None
    if typ == "object" or "properties" in node:
        props = node.get("properties", {})
        required = node.get("required", list(props))
        return {k: _template(props.get(k, {}), root) for k in required}
    return {"string": "", "integer": 0, "number": 0, "boolean": False, "array": [], "null": None}.get(typ or "")


def same_json(a: Any, b: Any) -> bool:
    """Whether two answers are the same JSON value (key order aside): a coerced
    answer that equals the sent one is stored as sent."""
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)
