"""engine.quick_schema says "valid" only where jsonschema agrees: checked against
jsonschema itself on pydantic-made schemas and hand-written ones, with valid and
invalid values (a wrong True would let an invalid answer in)."""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
from enum import StrEnum
from pathlib import Path
from typing import Any, Literal

import jsonschema
import pytest
from pydantic import BaseModel, Field

from engine.quick_schema import surely_invalid, surely_valid
from engine.responses import coerce_response, to_json_schema

ROOT = Path(__file__).resolve().parents[2]


class Colour(StrEnum):
    red = "red"
    blue = "blue"


class Item(BaseModel):
    sku: str = Field(pattern=r"^[A-Z]{3}-\d+$")
    qty: int = Field(ge=1, le=99)


class Order(BaseModel):
    approved: bool
    note: str = Field(default="", max_length=5)
    amount: float | None = Field(default=None, gt=0, lt=1000)
    colour: Colour = Colour.red
    kind: Literal["a", "b"] = "a"
    items: list[Item] = Field(default_factory=list, max_length=2)
    tags: dict[str, int] = Field(default_factory=dict)


SCHEMAS: list[dict[str, Any]] = [
    Order.model_json_schema(),
    {"type": "integer", "minimum": 0},
    {"type": ["string", "null"], "minLength": 2},
    {"enum": [1, "1", True, None]},
    {"const": 0},
    {"type": "object", "properties": {"a": {"type": "number"}}, "additionalProperties": False},
    {"type": "array", "items": {"type": "integer"}, "minItems": 1, "uniqueItems": True},
    {"type": "object", "patternProperties": {"^x": {"type": "string"}}},
    {"oneOf": [{"type": "integer"}, {"type": "number"}]},
    {"$schema": "http://json-schema.org/draft-04/schema#", "type": "number", "maximum": 5, "exclusiveMaximum": True},
    {"not": {"type": "string"}},
    {"type": "string", "format": "email"},
]
VALUES: list[Any] = [
    None, True, False, 0, 1, 1.0, 2.5, -3, 5, "", "x", "ab", "1", [], [1], [1, 1], ["a"], {},
    {"a": 1}, {"a": "1"}, {"b": 2}, {"x1": "s"}, {"x1": 1}, "not an email",
    {"approved": True}, {"approved": 1}, {"approved": True, "note": "toolong"}, {"approved": True, "note": "ok"},
    {"approved": False, "amount": 0}, {"approved": False, "amount": 999.5}, {"approved": False, "amount": 1000},
    {"approved": True, "colour": "blue"}, {"approved": True, "colour": "green"}, {"approved": True, "kind": "c"},
    {"approved": True, "items": [{"sku": "ABC-1", "qty": 3}]}, {"approved": True, "items": [{"sku": "abc", "qty": 3}]},
    {"approved": True, "items": [{"sku": "ABC-1", "qty": 0}]}, {"approved": True, "items": [{"sku": "ABC-1"}]},
    {"approved": True, "items": [{"sku": "ABC-1", "qty": 1}] * 3}, {"approved": True, "tags": {"a": 1}},
    {"approved": True, "tags": {"a": "x"}}, {"approved": True, "extra": [1, {"y": None}]},
]


@pytest.mark.parametrize("schema", SCHEMAS, ids=lambda s: json.dumps(s)[:40])
def test_valid_only_where_jsonschema_says_valid(schema: dict[str, Any]) -> None:
    validator = jsonschema.validators.validator_for(schema)(schema)
    claimed = 0
    for value in VALUES:
        if surely_valid(schema, schema, value):
            claimed += 1
            assert validator.is_valid(value), (schema, value)
        if surely_invalid(schema, schema, value):
            assert not validator.is_valid(value), (schema, value)
    if "$schema" in schema or "oneOf" in schema or "not" in schema or "uniqueItems" in schema:
        assert claimed == 0  # keywords it leaves to jsonschema


def test_plain_valid_answers_are_recognised() -> None:
    schema = Order.model_json_schema()
    for value in ({"approved": True}, {"approved": False, "amount": 12.5, "colour": "blue", "kind": "b",
                                       "items": [{"sku": "ABC-12", "qty": 2}], "tags": {"x": 1}}):
        assert surely_valid(schema, schema, value), value


@pytest.mark.parametrize(("value", "error"), [
    ({"approved": True, "note": "toolong"}, "note"), ({"approved": True, "colour": "green"}, "colour"),
    ({"approved": True, "items": [{"sku": "abc", "qty": 3}]}, "items.0.sku"), ({}, "approved"),
])
def test_an_invalid_answer_still_gets_jsonschemas_error(value: dict[str, Any], error: str) -> None:
    schema = to_json_schema(Order)
    _coerced, errors = coerce_response(schema, value)
    assert errors and any(error in e for e in errors), errors


def test_answering_a_plain_schema_does_not_import_jsonschema() -> None:
    schema = Order.model_json_schema()
    code = (
        "import json, sys\n"
        "from engine.responses import coerce_response\n"
        f"print(coerce_response(json.loads({json.dumps(json.dumps(schema))}), {{'approved': 'true', 'amount': '3'}}),"
        " 'jsonschema' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert out.stdout.strip().endswith("False")
    assert "'approved': True" in out.stdout and "'amount': 3.0" in out.stdout


def test_every_pair_of_small_schemas_agrees() -> None:
    """Combinations of the keywords it knows, on scalar values: never a wrong True."""
    parts = [{"type": "integer"}, {"type": "number"}, {"minimum": 1}, {"exclusiveMaximum": 2}, {"enum": [1, 2.0, "2"]},
             {"type": "string"}, {"maxLength": 1}, {"pattern": "^a"}, {"const": True}, {"type": "boolean"}]
    values = [0, 1, 1.5, 2, 2.0, "2", "a", "ab", "b", True, False, None]
    for a, b in itertools.combinations(parts, 2):
        schema = {**a, **b} if not set(a) & set(b) else {"allOf": [a, b]}
        validator = jsonschema.validators.validator_for(schema)(schema)
        for v in values:
            if surely_valid(schema, schema, v):
                assert validator.is_valid(v), (schema, v)
            if surely_invalid(schema, schema, v):
                assert not validator.is_valid(v), (schema, v)
