"""The shortcuts of the reads of one huge session (``hitl show --all-runs``,
``events``, ``replay --diff-from``: benchmarks/bench_read_scale.py) give exactly
what the long way gives: ``clean`` of printable ASCII, the display JSON of
``short``, the text check's count of the ``author`` key, the show's one check of
its rows."""

from __future__ import annotations

import json
import re
from typing import Any
from unittest import mock

from hypothesis import given, settings
from hypothesis import strategies as st

from console import text as console_text
from engine.redact import Redactor

# Plain ASCII, every control character clean neutralises, and its neighbours.
CHARS = st.one_of(
    st.sampled_from(["a", " ", "~", "{", "\t", "\n", "\r", "\x00", "\x1b", "\x1f", "\x7f", "\x80", "\x85", "\x9f",
                     "\xa0", "é", "\u202e", "\u2066", "…", "東"]),
    st.characters(max_codepoint=0x7F),
    st.characters(),
)


@settings(max_examples=500, deadline=None)
@given(text=st.lists(CHARS, max_size=30).map("".join), one_line=st.booleans())
def test_clean_is_the_patterns_substitution(text: str, one_line: bool) -> None:
    pattern = console_text._CONTROL_ONE_LINE if one_line else console_text._CONTROL
    assert console_text.clean(text, one_line=one_line) == pattern.sub(console_text._picture, text)


def test_clean_of_printable_ascii_runs_no_pattern() -> None:
    """A long read's lines are printable ASCII: cleaning them scans nothing with the pattern."""
    calls: list[str] = []

    class Counting:
        def __init__(self, pattern: re.Pattern[str]) -> None:
            self.pattern = pattern

        def sub(self, repl: Any, s: str) -> str:
            calls.append(s)
            return self.pattern.sub(repl, s)

    lines = "\n".join(f"  {n:>6}  deploy@{n}  COMPLETED  {{\"ok\":true,\"n\":{n}}}\t~" for n in range(2000))
    with mock.patch.object(console_text, "_CONTROL", Counting(console_text._CONTROL)), \
            mock.patch.object(console_text, "_CONTROL_ONE_LINE", Counting(console_text._CONTROL_ONE_LINE)):
        assert console_text.clean(lines) == lines
        assert console_text.clean("plain words", one_line=True) == "plain words"
        assert calls == []
        assert console_text.clean("a\nb", one_line=True) == "a\u240ab"  # a newline on one line: the pattern's
        assert console_text.clean("bell\x07") == "bell\u2407"
    assert calls == ["a\nb", "bell\x07"]


json_values = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), st.text(max_size=8)),
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=5), inner, max_size=3)),
    max_leaves=10,
)


@settings(max_examples=300, deadline=None)
@given(value=st.one_of(json_values, st.builds(set, st.lists(st.integers(), max_size=3)), st.just({1: object})))
def test_the_display_json_is_json_dumps(value: Any) -> None:
    expected = console_text.clean(json.dumps(value, ensure_ascii=False, sort_keys=False, default=repr))
    assert console_text.to_json(value) == expected
    assert console_text.to_json(value, indent=2) == console_text.clean(
        json.dumps(value, indent=2, ensure_ascii=False, sort_keys=False, default=repr))


def test_the_author_key_passes_the_text_check_and_auth_anywhere_else_does_not() -> None:
    """The check counts the ``author`` keys instead of cutting them out first: a word
    they contain ("auth") may stand in the text only as often as they do."""
    red = Redactor()
    row = '{"id":"e1","author":"deploy","timestamp":1.0,"output":{"ok":true}}'
    assert red.learns_nothing(row)
    assert red.learns_nothing("\n".join([row, row.replace("e1", "e2")]))  # a page: one key per row
    assert not red.learns_nothing(row.replace('"ok"', '"oauth"'))  # a key naming a credential
    assert not red.learns_nothing(row.replace('"deploy"', '"auth-bot"'))  # in a value: free text
    assert not red.learns_nothing(row.replace('"deploy"', '"author"'))  # the word as a value, not the key
    assert not red.learns_nothing(row.replace('"author"', '"xauthor"'))  # another key that contains it
    assert not red.learns_nothing("\n".join([row, row.replace('"ok":true', '"Auth_Token":1')]))
    # a pattern of the configuration that the author key contains counts the same way
    thor = Redactor(patterns=["thor"])
    assert thor.learns_nothing(row)
    assert not thor.learns_nothing(row.replace('"ok"', '"Thor"'))
    assert not thor.learns_nothing(row.replace('"ok"', '"author_"'))


@settings(max_examples=300, deadline=None)
@given(keys=st.lists(st.sampled_from(["author", "auth", "oauth", "x", "authors", "AUTHOR", "note"]), max_size=4),
       values=st.lists(st.sampled_from(["deploy", "author", "auth", "ok", "Author"]), max_size=4))
def test_the_text_check_says_yes_only_when_walking_learns_and_masks_nothing(keys: list[str], values: list[str]) -> None:
    from engine.models import Event

    output = dict(zip(keys, values, strict=False))
    event = Event(invocation_id="i", author=values[0] if values else "user", output=output)
    raw = event.to_json()
    red = Redactor()
    if red.learns_nothing(raw):
        learner = red.fork()
        learner.learn_events([event])
        assert learner._known == set()
        assert red.fork().event(event) is event
        assert red.fork().value(output) == output


# ``hitl events``: the lines of events whose stored text is inert skip the free-text
# patterns when nothing is known (EventLines.flush): the same bytes as masking them.
PIECES = ["tok", "en", "token", "pass", "word", "pwd", "://", "http:", "//h", "Bearer", "bearer", "basic", "api", "key",
          "=", ":", " ", "is", "x9-!", "abcdef12", "\x7f", "é", "…", "secret", "Se", "cret", "by", "asks", "answers"]
words = st.lists(st.sampled_from(PIECES), max_size=5).map("".join)


def _log_events() -> st.SearchStrategy[Any]:
    from engine.models import Content, Event, FunctionResponse, NodeInfo, NodeStatus, Part

    info = st.one_of(st.none(), st.builds(NodeInfo, path=words.map(lambda w: f"wf@1/{w}@2"), run_id=st.just("2"),
                                          lifecycle=st.sampled_from([None, "start", "end"]),
                                          status=st.sampled_from([None, *NodeStatus])))
    parts = st.lists(st.one_of(st.builds(Part, text=words), st.builds(Part, function_response=st.builds(
        FunctionResponse, id=words, response=st.one_of(words, st.dictionaries(words, words, max_size=2))))), max_size=2)
    return st.builds(
        Event, invocation_id=st.just("i"), author=st.sampled_from(["user", "deploy"]), node_info=info,
        content=st.one_of(st.none(), st.builds(Content, parts=parts)),
        long_running_tool_ids=st.one_of(st.none(), st.lists(words, max_size=2)),
        output=st.one_of(st.none(), words, st.dictionaries(words, words, max_size=2), st.lists(words, max_size=2)),
        error_code=st.one_of(st.none(), words), error_message=st.one_of(st.none(), words),
        custom_metadata=st.one_of(st.none(), st.fixed_dictionaries(
            {"action": st.sampled_from(["redrive", "cancel", "claim", "other"]), "operator": words, "reason": words})),
    )


def _flushed(red: Redactor, rows: list[tuple[dict[str, Any], bool]]) -> list[str]:
    from console.cli.reads import EventLines

    written: list[str] = []
    batch = EventLines(red, False, size=len(rows) + 1)
    with mock.patch("console.cli.reads.click.echo", written.append):
        for n, (data, inert) in enumerate(rows, start=1):
            batch.add_data(n, data, inert=inert)
        batch.flush()
    return written


@settings(max_examples=500, deadline=None)
@given(events=st.lists(_log_events(), min_size=1, max_size=4), known=st.lists(st.sampled_from(["abcdef12", "x9-!"]),
                                                                               max_size=1))
def test_lines_of_inert_events_are_the_masked_lines(events: list[Any], known: list[str]) -> None:
    red = Redactor()
    red.learn(known)
    raws = [e.to_json() for e in events]
    rows = [(json.loads(raw), red.inert(raw)) for raw in raws]
    assert _flushed(red.fork(), rows) == _flushed(red.fork(), [(data, False) for data, _ in rows])


def test_lines_of_inert_events_run_no_free_text_pattern() -> None:
    from engine.models import Event, NodeInfo

    events = [Event(invocation_id="i", author="deploy", output={"n": n}, node_info=NodeInfo(
        path=f"wf@1/deploy@{n}", run_id=str(n), lifecycle="end", status="COMPLETED")) for n in range(1, 50)]
    red = Redactor()
    rows = [(json.loads(e.to_json()), red.inert(e.to_json())) for e in events]
    assert all(inert for _, inert in rows)
    with mock.patch.object(Redactor, "text", side_effect=AssertionError("masked")) as text:
        lines = _flushed(red, rows)
    assert text.call_count == 0 and len(lines[0].splitlines()) == 49
    red.learn(["secret-value-1"])  # once a secret is known, the lines are masked as ever
    with mock.patch.object(Redactor, "text", side_effect=lambda t: t) as text:
        _flushed(red, rows)
    assert text.call_count >= 1


# ``hitl show``: learn_projection checks the projection's values, paths, errors and
# interrupt ids once; its tree rows then need no second check (shown_rows).
def _old_learning(red: Redactor, proj: Any) -> None:
    runs, itrs = proj.nodes.values(), proj.interrupts.values()
    red.learn_large([r.output for r in runs] + [r.input for r in runs])
    red.learn_large([i.response for i in itrs] + [i.args for i in itrs])
    red.learn_large(proj.state)


@settings(max_examples=400, deadline=None)
@given(events=st.lists(_log_events(), min_size=1, max_size=6), all_runs=st.booleans(),
       patterns=st.sampled_from([(), ("status",), ("ken",), ("wf",)]))
def test_shown_rows_are_the_masked_rows(events: list[Any], all_runs: bool, patterns: tuple[str, ...]) -> None:
    from console.cli.loads import learn_projection, shown_rows
    from console.cli.render import render_tree, tree_rows
    from engine.projection import project
    from engine.redact import DEFAULT_SECRET_PATTERNS

    proj = project(events)
    old, new = Redactor((*DEFAULT_SECRET_PATTERNS, *patterns)), Redactor((*DEFAULT_SECRET_PATTERNS, *patterns))
    _old_learning(old, proj)
    learn_projection(new, proj)
    assert new._known == old._known
    for inv in proj.invocations:
        rows = tree_rows(proj, inv, all_runs)
        expected = old.fork().large_value(rows)
        got = shown_rows(new, proj, rows)
        assert got == expected
        assert render_tree(got, now=0.0) == render_tree(expected, now=0.0)


def test_the_row_words_are_every_key_of_a_row() -> None:
    from console.cli.loads import _ROW_WORDS
    from console.cli.render import tree_rows
    from engine.models import Content, Event, FunctionCall, NodeInfo, Part
    from engine.projection import project

    ask = Event(invocation_id="i", author="a", node_info=NodeInfo(path="wf@1", run_id="1"),
                content=Content(parts=[Part(function_call=FunctionCall(id="q", name="request_input", args={
                    "message": "ok?", "deadline": {"after": 3600, "timers": []}}))]), long_running_tool_ids=["q"])
    proj = project([Event(invocation_id="i", author="a", node_info=NodeInfo(path="wf@1", run_id="1", lifecycle="start")),
                    ask])
    (row,) = tree_rows(proj, "i", True)
    assert row["pending"] and "due_at" in row["pending"][0]
    assert set(row) | set(row["pending"][0]) <= set(_ROW_WORDS)


def test_rows_of_a_plain_projection_are_not_written_out_again() -> None:
    from console.cli.loads import learn_projection, shown_rows
    from console.cli.render import tree_rows
    from engine.models import Event, NodeInfo
    from engine.projection import project

    proj = project([Event(invocation_id="i", author="a", output={"n": n}, node_info=NodeInfo(
        path=f"wf@1/a@{n}", run_id=str(n), lifecycle="end", status="COMPLETED")) for n in range(1, 40)])
    red = Redactor()
    learn_projection(red, proj)
    rows = tree_rows(proj, "i", True)
    with mock.patch.object(Redactor, "large_value", side_effect=AssertionError("checked again")) as check:
        assert shown_rows(red, proj, rows) is rows
    assert check.call_count == 0
    red.learn(["known-secret"])  # learned since: the rows are checked as ever
    with mock.patch.object(Redactor, "large_value", side_effect=lambda v: v) as check:
        shown_rows(red, proj, rows)
    assert check.call_count == 1


# ``hitl replay --diff-from``: the diff spells a status by its str and an answer with
# one encoder: the rows the enum's .value and json.dumps per answer gave.
def _old_diff(before: Any, after: Any) -> list[tuple[str, str, Any, Any]]:
    rows = []
    for key in sorted(set(before.nodes) | set(after.nodes), key=lambda k: (k[0], k[1])):
        a, b = before.nodes.get(key), after.nodes.get(key)
        if a is None:
            rows.append(("node", key[1], None, f"new run {b.status.value}"))
            continue
        if b is None:
            rows.append(("node", key[1], a.status.value, None))
            continue
        if a.status is not b.status:
            rows.append(("node", f"{key[1]} status", a.status.value, b.status.value))
        if a.output != b.output:
            rows.append(("node", f"{key[1]} output", a.output, b.output))
        if a.starts != b.starts:
            rows.append(("node", f"{key[1]} executions", a.starts, b.starts))

    def state(itr: Any) -> str | None:
        if itr is None:
            return None
        if itr.resolved:
            return f"answered: {json.dumps(itr.response, default=str, ensure_ascii=False)}"
        return "cancelled" if itr.cancelled else "open"

    for key in sorted(set(before.interrupts) | set(after.interrupts)):
        sa, sb = state(before.interrupts.get(key)), state(after.interrupts.get(key))
        if sa != sb:
            rows.append(("interrupt", key[1], sa, sb))
    for k in sorted(set(before.state) | set(after.state)):
        if before.state.get(k) != after.state.get(k):
            rows.append(("state", k, before.state.get(k), after.state.get(k)))
    return rows


@settings(max_examples=300, deadline=None)
@given(events=st.lists(_log_events(), min_size=1, max_size=8), cut=st.integers(0, 8))
def test_the_diff_rows_are_what_they_were(events: list[Any], cut: int) -> None:
    from engine.projection import project
    from engine.replay import diff

    for a, b in ((project(events[:cut]), project(events)), (project(events), project(events[:cut]))):
        got = [(r.area, r.key, r.before, r.after) for r in diff(a, b)]
        assert got == _old_diff(a, b)
        words = [w for r in diff(a, b) if r.key.endswith(" status") for w in (r.before, r.after)]
        assert all(type(w) is str for w in words)  # plain words, as .value gave (--json writes them)


def _reference_learns_nothing(red: Redactor, raw: str) -> bool:
    """The text check searching every word (no letter tested first)."""
    from engine.redact import _LOWER_BYTES

    if not raw.isascii() or "\\" in raw or "://" in raw:
        return False
    red.learns_nothing("")  # its words
    normed = raw.encode().translate(_LOWER_BYTES, red._gate_drop)
    if any(w in normed for w in red._gate_words):
        return False
    return all(normed.count(w) == raw.count('"author":') for w in red._gate_author)


@settings(max_examples=500, deadline=None)
@given(pieces=st.lists(st.sampled_from(['"author":', "Key", "k", "to", "ken", "pwd", "PASS", "x509cert", "x5-09cert",
                                        "cook", "ie", "z", '{"a":', "1", "Basic", "secret", "auth", " "]), max_size=8),
       patterns=st.sampled_from([None, ("x509cert",), ("ab_c", "zz")]))
def test_the_text_check_tests_a_letter_first_and_answers_the_same(pieces: list[str], patterns: Any) -> None:
    raw = "".join(pieces)
    red = Redactor() if patterns is None else Redactor(patterns)
    assert red.learns_nothing(raw) == _reference_learns_nothing(red, raw)


def test_the_words_whose_letter_is_absent_are_not_searched() -> None:
    """A log without a "k" is not searched for key, token or cookie (nor, without a "c", for secret)."""
    red = Redactor()
    red.learns_nothing("")
    searched: list[bytes] = []

    class Text(bytes):
        def translate(self, *args: Any) -> Text:  # type: ignore[override]
            return Text(super().translate(*args))

        def __contains__(self, word: object) -> bool:
            assert isinstance(word, bytes)
            searched.append(word)
            return super().__contains__(word)

    class Raw(str):
        def encode(self, *args: Any) -> Text:  # type: ignore[override]
            return Text(super().encode(*args))

    assert red.learns_nothing(Raw('{"author":"deploy","output":{"version":"v3","iteration":9}}'))
    assert b"k" in searched and b"c" in searched  # (neither is in it)
    assert not {b"key", b"token", b"cookie", b"credential", b"secret"} & set(searched)
    assert {b"pass", b"pwd"} <= set(searched)  # ("p" is)


def test_a_projection_that_folded_more_since_is_checked_again() -> None:
    from console.cli.loads import learn_projection, shown_rows
    from console.cli.render import tree_rows
    from engine.models import Event, NodeInfo
    from engine.projection import project

    proj = project([Event(invocation_id="i", author="a", output={"n": 1}, node_info=NodeInfo(
        path="wf@1", run_id="1", lifecycle="end", status="COMPLETED"))])
    red = Redactor()
    learn_projection(red, proj)
    proj.apply(Event(invocation_id="i", author="a", output={"password": "hunter22"}, node_info=NodeInfo(
        path="wf@1", run_id="1", lifecycle="end", status="COMPLETED")))
    (row,) = shown_rows(red, proj, tree_rows(proj, "i", True))
    assert row["output"] == {"password": "***"}
