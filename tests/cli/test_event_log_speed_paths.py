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
