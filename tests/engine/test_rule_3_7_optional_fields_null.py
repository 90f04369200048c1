"""DESIGN.md 3.7: a coerced answer has ``null`` for every optional property
left out that has no default, whether or not the schema lists ``null`` -- as
the model ADK builds from the schema gives ``None`` -- so a downstream node
sees the same dict as under ADK."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from engine import START, RequestInput, Workflow, node
from engine.responses import coerce_response

from .conftest import Harness

AMOUNT = {
    "type": "object",
    "properties": {"amount": {"type": "integer"}, "note": {"type": "string"}},
    "required": ["amount"],
}


def test_absent_optional_field_becomes_null():
    assert coerce_response(AMOUNT, {"amount": "42"}) == ({"amount": 42, "note": None}, [])


def test_null_for_an_optional_field_is_valid_and_coercion_is_idempotent():
    once, errors = coerce_response(AMOUNT, {"amount": "42"})
    assert errors == []
    assert coerce_response(AMOUNT, once) == (once, [])


def test_required_fields_are_still_required_and_typed():
    assert coerce_response(AMOUNT, {"note": "x"})[1] == ["(root): 'amount' is a required property"]
    assert coerce_response(AMOUNT, {"amount": None})[1] == ["amount: expected integer, got null"]
    assert coerce_response(AMOUNT, {"amount": 1, "note": 5})[1] == ["note: expected string, got 5"]


def test_defaults_still_win_and_nested_objects_fill_too():
    schema = {
        "type": "object",
        "properties": {
            "who": {
                "type": "object",
                "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
                "required": ["name"],
            },
            "level": {"type": "integer", "default": 3},
            "tags": {"type": "array", "items": {"type": "string"}},
        },
        "required": ["who"],
    }
    assert coerce_response(schema, {"who": {"name": "ann"}}) == (
        {"who": {"name": "ann", "age": None}, "level": 3, "tags": None},
        [],
    )


def test_inside_a_union_branch():
    schema = {"anyOf": [AMOUNT, {"type": "null"}]}
    assert coerce_response(schema, {"amount": "7"}) == ({"amount": 7, "note": None}, [])
    assert coerce_response(schema, None) == (None, [])


async def test_the_downstream_node_sees_the_filled_dict():
    seen: list[Any] = []

    @node
    async def ask(node_input):
        yield RequestInput("how much?", interrupt_id="amt", response_schema=AMOUNT)

    @node
    async def use(node_input):
        seen.append(node_input)
        return node_input

    h = Harness(Workflow("wf", [(START, ask, use)]))
    await h.start()
    await h.answer({"amt": {"amount": "42"}})
    assert seen == [{"amount": 42, "note": None}]


values = st.dictionaries(
    st.sampled_from(["amount", "note", "extra"]),
    st.one_of(st.none(), st.integers(-5, 5), st.text(max_size=3), st.sampled_from(["42", "4.0", "x"])),
)


@settings(max_examples=200, deadline=None)
@given(values)
def test_property_coercion_is_idempotent_and_fills_every_optional_property(value):
    coerced, errors = coerce_response(AMOUNT, value)
    if errors:
        return
    assert set(coerced) >= {"amount", "note"}
    assert coerce_response(AMOUNT, coerced) == (coerced, [])
