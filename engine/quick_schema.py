"""A JSON Schema check that answers "valid" without importing :mod:`jsonschema`
when it can be sure (engine/responses.py asks it first).

Importing jsonschema costs a cold ``hitl resume`` about a fifth of its CPU time,
yet nearly every answer is valid against a plain schema: an object of typed
properties, enums, lengths and bounds, what a pydantic model or a Python type
becomes. :func:`surely_valid` checks that subset (and :func:`surely_invalid`
a value of the wrong type, which a union's coercion asks of each branch). It returns True only when the
value is valid as jsonschema's validator of the latest draft would judge it;
for anything else -- a keyword it does not know, a ``$schema`` naming a draft,
an invalid value -- it returns False and the caller asks jsonschema, which
gives the answer and the error messages. A wrong True would let an invalid
answer in, so every rule here is the strict reading (an integer is an ``int``,
never ``1.0`` nor ``True``; enums compare scalars only).
"""

from __future__ import annotations

import re
from typing import Any

_ANNOTATIONS = frozenset(
    {"title", "description", "default", "examples", "$comment", "readOnly", "writeOnly", "deprecated",
     "$defs", "definitions", "format"}  # format is an annotation unless a format checker is asked for (never here)
)
_TYPES = {
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
}
_MAX_DEPTH = 32


def surely_valid(node: Any, root: Any, value: Any, depth: int = 0) -> bool:
    """True when ``value`` is certainly valid against ``node`` (a part of the schema
    ``root``, whose ``#/...`` references it resolves); False: not known here."""
    if depth > _MAX_DEPTH or not isinstance(root, dict) or "$schema" in root or "$id" in root:
        return False
    if node is True or node == {}:
        return True
    if not isinstance(node, dict):
        return False
    for key, rule in node.items():
        if key in _ANNOTATIONS:
            continue
        check = _CHECKS.get(key)
        if check is None or not check(rule, node, root, value, depth + 1):
            return False
    return True


def surely_invalid(node: Any, root: Any, value: Any) -> bool:
    """True when ``value`` certainly fails ``node``'s ``type`` (what lax coercion asks
    of each branch of a union before it converts a string); False: not known here."""
    if not isinstance(root, dict) or "$schema" in root or "$id" in root or not isinstance(node, dict):
        return False
    names = node.get("type")
    names = names if isinstance(names, list) else [names]
    if not names or not all(isinstance(n, str) and n in _TYPES for n in names):
        return False
    if "integer" in names and isinstance(value, float) and value.is_integer():
        return False  # jsonschema counts 1.0 as an integer
    return not any(_TYPES[n](value) for n in names)


def _ref(rule: Any, node: dict[str, Any], root: dict[str, Any], value: Any, depth: int) -> bool:
    if not isinstance(rule, str) or not rule.startswith("#/"):
        return False
    target: Any = root
    for part in rule[2:].split("/"):
        if not isinstance(target, dict) or part not in target or "~" in part or "%" in part:
            return False
        target = target[part]
    return surely_valid(target, root, value, depth)


def _type(rule: Any, node: dict[str, Any], root: dict[str, Any], value: Any, depth: int) -> bool:
    names = rule if isinstance(rule, list) else [rule]
    return any(name in _TYPES and _TYPES[name](value) for name in names)


def scalar_equal(a: Any, b: Any) -> bool:
    """Whether two JSON scalars are equal as JSON Schema compares them (a boolean is no number; containers: False)."""
    if isinstance(a, (dict, list)) or isinstance(b, (dict, list)):
        return False  # containers: left to jsonschema
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    return a == b and (isinstance(a, str) == isinstance(b, str))


def _enum(rule: Any, node: dict[str, Any], root: dict[str, Any], value: Any, depth: int) -> bool:
    return isinstance(rule, list) and any(scalar_equal(value, e) for e in rule)


def _const(rule: Any, node: dict[str, Any], root: dict[str, Any], value: Any, depth: int) -> bool:
    return scalar_equal(value, rule)


def _properties(rule: Any, node: dict[str, Any], root: dict[str, Any], value: Any, depth: int) -> bool:
    if not isinstance(rule, dict):
        return False
    if not isinstance(value, dict):
        return True  # applies to objects only
    return all(surely_valid(rule[k], root, v, depth) for k, v in value.items() if k in rule)


def _required(rule: Any, node: dict[str, Any], root: dict[str, Any], value: Any, depth: int) -> bool:
    if not isinstance(rule, list):
        return False
    return not isinstance(value, dict) or all(k in value for k in rule)


def _additional(rule: Any, node: dict[str, Any], root: dict[str, Any], value: Any, depth: int) -> bool:
    if not isinstance(value, dict):
        return True
    if "patternProperties" in node:
        return False
    props = node.get("properties") or {}
    extra = [v for k, v in value.items() if k not in props]
    if rule is False:
        return not extra
    return all(surely_valid(rule, root, v, depth) for v in extra)


def _items(rule: Any, node: dict[str, Any], root: dict[str, Any], value: Any, depth: int) -> bool:
    if not isinstance(rule, dict) or "prefixItems" in node:
        return False
    return not isinstance(value, list) or all(surely_valid(rule, root, v, depth) for v in value)


def _any_of(rule: Any, node: dict[str, Any], root: dict[str, Any], value: Any, depth: int) -> bool:
    return isinstance(rule, list) and any(surely_valid(b, root, value, depth) for b in rule)


def _all_of(rule: Any, node: dict[str, Any], root: dict[str, Any], value: Any, depth: int) -> bool:
    return isinstance(rule, list) and all(surely_valid(b, root, value, depth) for b in rule)


def _bound(test: Any) -> Any:
    def check(rule: Any, node: dict[str, Any], root: dict[str, Any], value: Any, depth: int) -> bool:
        if isinstance(rule, bool) or not isinstance(rule, (int, float)):
            return False  # draft 4's boolean exclusive bounds: left to jsonschema
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return True  # applies to numbers only
        return bool(test(value, rule))

    return check


def _length(attr: str, test: Any) -> Any:
    kinds = {"str": str, "list": list, "dict": dict}[attr]

    def check(rule: Any, node: dict[str, Any], root: dict[str, Any], value: Any, depth: int) -> bool:
        if isinstance(rule, bool) or not isinstance(rule, int):
            return False
        return not isinstance(value, kinds) or test(len(value), rule)  # len(str): code points, as jsonschema counts

    return check


def _pattern(rule: Any, node: dict[str, Any], root: dict[str, Any], value: Any, depth: int) -> bool:
    if not isinstance(rule, str):
        return False
    if not isinstance(value, str):
        return True
    try:
        return re.search(rule, value) is not None  # jsonschema's own test
    except re.error:
        return False


_CHECKS: dict[str, Any] = {
    "$ref": _ref,
    "type": _type,
    "enum": _enum,
    "const": _const,
    "properties": _properties,
    "required": _required,
    "additionalProperties": _additional,
    "items": _items,
    "anyOf": _any_of,
    "allOf": _all_of,
    "minimum": _bound(lambda v, r: v >= r),
    "maximum": _bound(lambda v, r: v <= r),
    "exclusiveMinimum": _bound(lambda v, r: v > r),
    "exclusiveMaximum": _bound(lambda v, r: v < r),
    "minLength": _length("str", lambda n, r: n >= r),
    "maxLength": _length("str", lambda n, r: n <= r),
    "minItems": _length("list", lambda n, r: n >= r),
    "maxItems": _length("list", lambda n, r: n <= r),
    "minProperties": _length("dict", lambda n, r: n >= r),
    "maxProperties": _length("dict", lambda n, r: n <= r),
    "pattern": _pattern,
}
