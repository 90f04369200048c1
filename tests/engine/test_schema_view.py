"""engine.schema_view: the readable schema, the form's fields or why there is none, the JSON skeleton."""

from __future__ import annotations

import json
from typing import Literal

import pytest
from pydantic import BaseModel, Field

from engine.responses import to_json_schema, validate_response
from engine.schema_view import NotAForm, form_reason, form_spec, json_skeleton, schema_lines
from sample_sessions.contract_review import Verdict
from sample_sessions.incident import Mitigation
from sample_sessions.labelling_batch import LABEL_SCHEMA
from sample_sessions.refund_approval import Approval


class Address(BaseModel):
    city: str = Field(min_length=1, description="Where it goes")
    zip: int = Field(ge=1000, le=99999)


class Order(BaseModel):
    address: Address
    tags: list[Literal["a", "b"]] = Field(default_factory=list, max_length=2)
    qty: int = 3


def test_readable_lines_say_fields_types_enums_required_defaults_and_limits() -> None:
    assert schema_lines(to_json_schema(Approval)) == [
        "Approval object -- An approver's answer.",
        "  approved (required)  boolean",
        '  note  string · at most 500 chars · default: ""',
    ]
    assert schema_lines(to_json_schema(Mitigation))[1] == "  action (required)  one of restart, rollback, scale_up, ignore"
    assert schema_lines(LABEL_SCHEMA) == ["one of cat, dog, bird, fish, other -- What the image shows"]
    assert schema_lines(to_json_schema(Order)) == [
        "Order object",
        "  address (required)  object",  # $ref into $defs, resolved
        "    city (required)  string · at least 1 chars -- Where it goes",
        "    zip (required)  integer · ≥ 1000 · ≤ 99999",
        "  tags  list of one of a, b · at most 2 items",
        "  qty  integer · default: 3",
    ]
    assert schema_lines(to_json_schema(int | str)) == ["any of:", "  - integer", "  - string"]
    assert schema_lines(None) == ["any JSON value (no schema)"]


def test_form_fields_or_the_reason_there_is_none() -> None:
    spec = form_spec(to_json_schema(Order))
    assert spec.kind == "object" and [f.name for f in spec.fields] == ["address", "tags", "qty"]
    address, tags, qty = spec.fields
    assert address.required and [f.path for f in address.fields] == ["address.city", "address.zip"]
    assert tags.kind == "array" and tags.items is not None and tags.items.enum == ["a", "b"] and not tags.required
    assert qty.has_default and qty.default == 3 and qty.limits == {}
    note = form_spec(to_json_schema(Verdict)).fields[1]
    assert note.kind == "string" and note.nullable and not note.required  # str | None: an optional string
    assert form_reason(to_json_schema(int | str)) == "anyOf: a choice between 2 schemas"
    assert form_reason({"type": "object"}) == "an object with free-form keys"
    assert form_reason(None) == "no schema: any JSON value is an answer"
    recursive = {"$defs": {"N": {"type": "object", "properties": {"next": {"$ref": "#/$defs/N"}}}}, "$ref": "#/$defs/N"}
    with pytest.raises(NotAForm, match="recursive"):
        form_spec(recursive)


@pytest.mark.parametrize("schema", [to_json_schema(Approval), to_json_schema(Mitigation), to_json_schema(Order)])
def test_the_json_skeleton_is_no_answer(schema: dict) -> None:
    text = json_skeleton(schema)
    assert text.startswith("{\n") and '"' in text
    with pytest.raises(json.JSONDecodeError):
        json.loads(text)  # not even JSON: nothing in it is a decision
    assert json_skeleton(LABEL_SCHEMA) == "" and json_skeleton(to_json_schema(bool)) == ""
    assert validate_response(schema, {})  # and the empty object it stands for is refused
