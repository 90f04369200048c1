"""Response values: unwrapping (DESIGN.md 3.7) and schema handling.

``response_schema`` may be a pydantic model, a Python type or a JSON Schema dict;
it is always stored with the interrupt's call as JSON Schema so that the
console and the CLI validate answers without importing workflow code. This is
the one place that validates an answer; the runner, the CLI's ``--dry-run`` and
the console's editor all call :func:`validate_response`.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, TypeAdapter

if TYPE_CHECKING:  # imported where used: ~80 ms that most commands never need
    import jsonschema

MAX_RESPONSE_BYTES = 1_000_000
"""Largest accepted answer (its JSON encoding), per interrupt id. Larger answers
are rejected before anything is persisted: a session log is not a blob store."""


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
    """Errors of ``value`` (already unwrapped) against a JSON Schema, each
    prefixed with the path of the offending field (``amount: expected integer``).
    An empty list means valid."""
    try:
        size = len(json.dumps(value))
    except (TypeError, ValueError) as exc:
        return [f"(root): not JSON-serialisable: {exc}"]
    if size > MAX_RESPONSE_BYTES:
        return [f"(root): answer is {size} bytes; the limit is {MAX_RESPONSE_BYTES}"]
    if not schema:
        return []
    import jsonschema

    validator = jsonschema.validators.validator_for(schema)(schema)
    errors = sorted(validator.iter_errors(value), key=lambda e: list(e.absolute_path))
    return [_format_error(e) for e in errors]


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
