"""The shortcuts that make ``hitl events`` fast give exactly what the long way
gives: the Redactor's free-text gate (skip the DSN / bearer / assignment
patterns on text that cannot match them) and the event log's per-second clock
cache. Timings: benchmarks/bench_read_scale.py."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from console import times
from engine import redact
from engine.redact import MASK, Redactor

WORDS = ["postgresql://u:pw@h/db", "Bearer abcdef123", "BASIC  Zm9vYmFy", "token=xyz", "PassWord: hunter2",
         "pwd=abc", "Secret=s3", "API-KEY:k", "api_key=1", "private_key=2", "ſecret=x", "apİ_key=1", "K"]


def the_long_way(text: str) -> str:
    out = redact._DSN.sub(lambda m: m.group(1) + MASK + m.group(3), text)
    out = redact._BEARER.sub(lambda m: m.group(1) + m.group(2) + MASK, out)
    return redact._ASSIGN.sub(lambda m: m.group(1) + m.group(2) + MASK, out)


texts = st.lists(st.one_of(st.sampled_from(WORDS), st.text(max_size=12)), max_size=6).map(" ".join)


@settings(max_examples=400, deadline=None)
@given(text=texts)
def test_the_gate_masks_exactly_what_the_patterns_mask(text: str) -> None:
    assert Redactor().text(text) == the_long_way(text)


def test_the_gate_lets_plain_log_text_through_untouched() -> None:
    line = "    12  2026-10-12 16:39:36  end       pipeline@1/deploy@9                      COMPLETED {\"ok\":true}"
    assert not redact._may_need_patterns(line)
    assert Redactor().text(line) == line
    assert redact._may_need_patterns(line.replace("deploy", "token"))


@settings(max_examples=300, deadline=None)
@given(stamps=st.lists(st.floats(min_value=0, max_value=4e9, allow_nan=False), min_size=1, max_size=20),
       utc=st.booleans())
def test_the_clock_cache_gives_what_formatting_gives(stamps: list[float], utc: bool) -> None:
    times.use_utc(utc)
    try:
        for ts in sorted(stamps) + [int(s) + 0.9999996 for s in stamps] + stamps:
            assert times.date_time(ts) == times._dt(ts).strftime("%Y-%m-%d %H:%M:%S"), ts
    finally:
        times.use_utc(False)


# The text check of a stored event (Redactor.learns_nothing / inert / large_value):
# a long read skips walking an event only when walking it would change nothing.
KEYS = ["note", "password", "Pass_Word", "apiKey", "author", "oauth", "x-auth", "k", "ſecret", "result", "id"]
SECRETS = ["hunter22", "s3cr3t-v", "Zm9vYmFy99"]
scalars = st.one_of(st.sampled_from(WORDS + SECRETS), st.text(max_size=10), st.integers(), st.booleans(), st.none())
json_values = st.recursive(
    scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(st.sampled_from(KEYS), inner, max_size=3)),
    max_leaves=8,
)


@settings(max_examples=500, deadline=None)
@given(output=json_values, message=st.one_of(st.sampled_from(WORDS + SECRETS), st.text(max_size=12)),
       author=st.sampled_from(["user", "deploy", "oauth-bot"]), known=st.lists(st.sampled_from(SECRETS), max_size=2))
def test_an_event_passes_the_text_check_only_when_walking_it_changes_nothing(
    output: object, message: str, author: str, known: list[str]
) -> None:
    from engine.models import Content, Event

    red = Redactor()
    red.learn(known)  # secrets an earlier event taught it
    event = Event(invocation_id="i", author=author, content=Content.from_text(message), output=output,
                  custom_metadata={"reason": message})
    raw = event.to_json()
    if red.learns_nothing(raw):
        learner = red.fork()
        learner.learn_events([event])
        assert learner._known == red._known
    if red.inert(raw):
        assert red.fork().event(event) is event
    assert red.fork().large_value([output, message]) == red.fork().value([output, message])


def test_a_plain_event_passes_the_text_check_and_a_secret_one_does_not() -> None:
    from engine.models import Event, NodeInfo

    plain = Event(invocation_id="i", author="deploy", output={"ok": True, "hosts": 3},
                  node_info=NodeInfo(path="pipeline@1/deploy@9", run_id="9", lifecycle="end"))
    red = Redactor()
    assert red.inert(plain.to_json())
    assert not red.learns_nothing(plain.model_copy(update={"output": {"api_key": "k-123"}}).to_json())
    red.learn(["hosts-secret"])
    assert not red.inert(plain.model_copy(update={"output": "hosts-secret"}).to_json())
