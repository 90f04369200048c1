"""engine.jsonin.loads skips its slow checks only where they cannot fail (issue 12/17):
the depth scan runs when the text has more brackets than the limit, the value walk
when the text could hold a lone surrogate. These pin the edges of those shortcuts."""

from __future__ import annotations

import pytest

from engine.jsonin import MAX_JSON_DEPTH, JSONInputError, loads


def nested(depth: int) -> str:
    return "[" * depth + "]" * depth


def test_depth_limit_is_exact() -> None:
    assert loads(nested(MAX_JSON_DEPTH), "x") is not None
    with pytest.raises(JSONInputError, match="nested more than"):
        loads(nested(MAX_JSON_DEPTH + 1), "x")
    with pytest.raises(JSONInputError, match="nested more than"):
        loads('{"a":' * (MAX_JSON_DEPTH + 1) + "1" + "}" * (MAX_JSON_DEPTH + 1), "x")


def test_brackets_inside_strings_do_not_count() -> None:
    text = '{"s": "' + "[{" * 500 + '\\"[" , "t": [1, [2]]}'
    assert loads(text, "x")["t"] == [1, [2]]
    deep_after_string = '["a\\\\", ' + nested(MAX_JSON_DEPTH) + "]"  # an escaped backslash ends the string
    with pytest.raises(JSONInputError, match="nested more than"):
        loads(deep_after_string, "x")


@pytest.mark.parametrize("text", ['"\\udcff"', '{"\\uDCFF": 1}', '["ok", {"k": "\\ud800x"}]'])
def test_lone_surrogates_are_refused(text: str) -> None:
    with pytest.raises(JSONInputError, match="lone surrogate"):
        loads(text, "x")


def test_lone_surrogate_in_the_text_itself_is_refused() -> None:
    with pytest.raises(JSONInputError, match="lone surrogate"):
        loads('"a\udcffb"', "x")


def test_paired_surrogates_and_escaped_backslashes_are_text() -> None:
    assert loads('"\\ud83d\\ude00"', "x") == "\U0001f600"
    assert loads('"\\\\udcff"', "x") == "\\udcff"
