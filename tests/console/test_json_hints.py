"""The JSON view of an answer says "add quotes" for a bare word, as the CLI does
(``approve`` where a string was meant); a typo inside an object is not told to
become a string."""

from __future__ import annotations

from console.inputs import quote_hint
from console.widgets.answer_editor import check_answer


def test_a_bare_word_is_told_to_take_quotes() -> None:
    check = check_answer("approve", {"type": "string", "enum": ["approve", "reject"]})
    assert not check.ok and check.errors == ['line 1 col 1: Expecting value -- a string needs quotes: "approve"']


def test_a_typo_in_an_object_or_a_number_gets_no_quote_hint() -> None:
    for text in ('{"a": 1,}', "12x", '["a",]', "-x"):
        assert "needs quotes" not in " ".join(check_answer(text, None).errors), text


def test_the_cli_and_the_console_agree_on_what_a_bare_word_is() -> None:
    for text in ("approve", "yes please", '{"a": 1,}', "12x", "-1x"):
        assert bool(quote_hint(text, "id=")) == ("needs quotes" in " ".join(check_answer(text, None).errors)), text


def test_a_number_too_long_to_parse_is_an_error_not_a_traceback() -> None:
    # json.loads raises a plain ValueError (not a JSONDecodeError) past Python's
    # 4300-digit limit: the editor says so instead of crashing
    check = check_answer("1" * 5000, {"type": "integer"})
    assert not check.ok and check.syntax and "4300 digits" in check.errors[0]
