"""The quick way an answer to a schema of scalar fields is taken
(:func:`engine.responses.plain_object` / :func:`~engine.responses.plainly_valid`)
is one check, shared by live answers (``coerce_response`` asks it first) and
imports (once per distinct schema): it takes an answer only where the full
coercion and check would give back the answer as sent -- the same keys, in the
same order, the same values of the same types -- and no error."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine import responses
from engine.responses import coerce_response, plain_object, plainly_valid
from tests.store.test_import_one_fold import _PLAIN_SCHEMA

_SCALAR = st.one_of(
    st.none(), st.booleans(), st.integers(-2, 2), st.sampled_from([0.5, 1.0, -0.0, float("nan"), float("inf")]),
    st.sampled_from(["", "a", "b", "1", "true", "NaN"]),
)
_SCHEMA = _PLAIN_SCHEMA
"""Objects of scalar fields (what a model of plain fields becomes), with the
keywords the quick way does not know mixed in."""
_VALUE = st.dictionaries(st.sampled_from(["a", "b", "c", "d"]), _SCALAR | st.lists(_SCALAR, max_size=2), max_size=4) | _SCALAR


def _as_sent(coerced: Any, value: Any) -> bool:
    """The same keys in the same order, each value of the same type and equal."""
    return (
        type(coerced) is dict
        and list(coerced) == list(value)
        and all(type(coerced[k]) is type(v) and (coerced[k] == v or v != v) for k, v in value.items())
    )


@settings(max_examples=600, deadline=None)
@given(schema=_SCHEMA, value=_VALUE)
def test_an_answer_taken_the_quick_way_is_what_the_full_check_gives(schema: dict[str, Any], value: Any) -> None:
    """Where the quick check takes an answer, the full coercion (what
    ``coerce_response`` did before it asked the quick check) gives it back as
    sent, without error; and ``coerce_response`` gives the same either way."""
    full = responses._coerce_checked(schema, value)
    live = coerce_response(schema, value)
    plain = plain_object(schema)
    if plain is not None and plainly_valid(plain, value, json.dumps(value, ensure_ascii=False).encode()):
        assert full[1] == [] and _as_sent(full[0], value)
        assert live[1] == [] and _as_sent(live[0], value)
        assert live[0] is not value  # a new dict, as the coercion makes
    elif live[1] == [] and full[1] == []:
        assert json.dumps(live[0]) == json.dumps(full[0])  # the same value, key order included


def test_a_live_answer_to_a_plain_schema_skips_the_full_coercion(monkeypatch: pytest.MonkeyPatch) -> None:
    """Live answers share the import's quick check: a valid answer to a model of
    scalar fields is not coerced field by field; anything else still is."""
    calls: list[Any] = []
    full = responses._coerce_checked
    monkeypatch.setattr(responses, "_coerce_checked", lambda s, v: calls.append(v) or full(s, v))
    schema = {
        "properties": {"decision": {"enum": ["promote", "redeploy"], "title": "Decision", "type": "string"},
                       "note": {"default": "", "title": "Note", "type": "string"}},
        "required": ["decision"], "title": "GateDecision", "type": "object",
    }
    assert coerce_response(schema, {"decision": "promote", "note": "ok"}) == ({"decision": "promote", "note": "ok"}, [])
    assert calls == []
    assert coerce_response(schema, {"decision": "promote"}) == ({"decision": "promote", "note": ""}, [])  # a default
    assert coerce_response(schema, {"decision": "later", "note": ""})[1]  # not in the enum: the full check's error
    assert coerce_response({"type": "object", "properties": {"n": {"type": "integer"}}}, {"n": "2"}) == ({"n": 2}, [])
    assert len(calls) == 3
