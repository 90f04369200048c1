"""The shortcuts that make ``hitl events`` fast give exactly what the long way
gives: the Redactor's free-text gate (skip the DSN / bearer / assignment
patterns on text that cannot match them) and the event log's per-second clock
cache. Timings: benchmarks/bench_read_scale.py."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from console import times
from engine import redact
from engine.redact import MASK, Redactor

WORDS = ["postgresql://u:pw@h/db", "Bearer abcdef123", "BASIC  Zm9vYmFy", "token=xyz", "PassWord: hunter2",
         "pwd=abc", "Secret=s3", "API-KEY:k", "api_key=1", "private_key=2", "ſecret=x", "apİ_key=1", "K"]


def the_long_way(text: str) -> str:
    dsn, bearer, assign, _spoken = redact._free_text_patterns()
    out = dsn.sub(lambda m: m.group(1) + MASK + m.group(3), text)
    out = bearer.sub(lambda m: m.group(1) + m.group(2) + MASK, out)
    return assign.sub(lambda m: m.group(1) + m.group(2) + MASK, out)


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


def test_the_text_check_keeps_the_digits_of_a_pattern_that_has_some() -> None:
    """The check drops digits before its word search only when no word has one (ids
    and times are a third of a log's text); a secret pattern with a digit keeps them."""
    red = Redactor(patterns=["x509cert"])
    assert not red.learns_nothing('{"output":{"x509cert":"abc"}}')
    assert not red.learns_nothing('{"output":{"x5-09_cert":"abc"}}')
    assert red.learns_nothing('{"output":{"xcert":"abc"}}')
    # Without digits in any word, digits between letters are dropped: a false "no" (a walk), never a false "yes".
    assert not Redactor().learns_nothing('{"output":{"ke3y":"abc"}}')


# ``hitl events`` reads a page of stored rows as plain JSON when the page's text is
# inert: the kind, the summary and the masking of its lines come out as the
# Event's would (the golden outputs pin the whole lines: tests/cli/test_reads_identical.py).
def _events() -> st.SearchStrategy[object]:
    from engine.models import Content, Event, FunctionResponse, NodeInfo, NodeStatus, Part

    infos = st.one_of(st.none(), st.builds(
        NodeInfo, path=st.sampled_from(["wf@1", "wf@1/a@2"]), run_id=st.just("1"),
        lifecycle=st.sampled_from([None, "start", "end"]), status=st.sampled_from([None, *NodeStatus])))
    parts = st.lists(st.one_of(
        st.builds(Part, text=st.sampled_from(["hi", "", "token=abc"])),
        st.builds(Part, function_response=st.builds(FunctionResponse, id=st.sampled_from(["g-1", "g-2"]),
                                                    response=json_values))), max_size=3)
    return st.builds(
        Event, invocation_id=st.just("i"), author=st.sampled_from(["user", "deploy", ""]), node_info=infos,
        content=st.one_of(st.none(), st.builds(Content, parts=parts)),
        long_running_tool_ids=st.one_of(st.none(), st.lists(st.sampled_from(["g-1", "g-2"]), max_size=2)),
        output=json_values, state_delta=st.one_of(st.none(), st.dictionaries(st.sampled_from(KEYS), scalars, max_size=2)),
        error_code=st.sampled_from([None, "", "TimeoutError"]), error_message=st.sampled_from([None, "slow"]),
        custom_metadata=st.one_of(st.none(), st.fixed_dictionaries({"action": st.sampled_from(
            ["resume", "redrive", "cancel", "fail", "claim", "assign", "release", "approve", "other"])})),
    )


@settings(max_examples=400, deadline=None)
@given(event=_events())
def test_the_kind_of_a_stored_event_is_the_events_kind(event: object) -> None:
    import json

    from engine.event_kinds import stored_kind
    from engine.models import Event

    assert isinstance(event, Event)
    assert stored_kind(json.loads(event.to_json())) == event.kind
    assert stored_kind(event.model_dump(mode="json", exclude_none=True)) == event.kind


@settings(max_examples=300, deadline=None)
@given(events=st.lists(_events(), min_size=1, max_size=6), known=st.lists(st.sampled_from(SECRETS), max_size=2))
def test_a_page_is_inert_only_when_each_of_its_rows_is(events: list[object], known: list[str]) -> None:
    red = Redactor()
    red.learn(known)
    raws = [e.to_json() for e in events]  # type: ignore[attr-defined]
    if red.inert("\n".join(raws)):
        assert all(red.inert(raw) for raw in raws)
    if red.learns_nothing("\n".join(raws)):
        assert all(red.learns_nothing(raw) for raw in raws)


@settings(max_examples=300, deadline=None)
@given(lines=st.lists(st.lists(st.one_of(st.sampled_from(WORDS + SECRETS), st.text(max_size=10)), max_size=4).map(" ".join),
                      min_size=1, max_size=8),
       known=st.lists(st.sampled_from(SECRETS), max_size=2))
def test_lines_masked_together_are_the_lines_masked_one_by_one(lines: list[str], known: list[str]) -> None:
    from unittest import mock

    from console.cli.output import line_text
    from console.cli.reads import EventLines

    red = Redactor()
    red.learn(known)
    written: list[str] = []
    batch = EventLines(red, False, size=len(lines) + 1)
    batch.text = list(lines)
    with mock.patch("console.cli.reads.click.echo", written.append):
        batch.flush()
    assert written == ["\n".join(line_text(red, t) for t in lines)]


def test_the_event_keys_the_log_reads_as_json_are_the_events_fields() -> None:
    from console.cli.reads import _EVENT_KEYS
    from engine.models import Event

    assert set(Event.model_fields) == _EVENT_KEYS


def test_hitl_events_on_a_sqlite_file_starts_without_pydantic(tmp_path: Path) -> None:
    """The plain-sqlite3 read of a log (engine.store.sqlite.event_log) gives the
    store path's lines, and loads no model for a log that needs none."""
    import asyncio
    import json
    import os
    import subprocess
    import sys

    from sample_sessions.demo import FIXTURE_EPOCH, build_demo_db

    db = tmp_path / "demo.sqlite"
    asyncio.run(build_demo_db(db, epoch=FIXTURE_EPOCH, long_iterations=3, sessions=0))
    probe = (
        "import sys\nfrom console.cli.group import main\n"
        "sys.argv = ['hitl', '--db', sys.argv[1], 'events', 'deploy-long-1']\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "print('MODELS', 'pydantic' in sys.modules, 'engine.models' in sys.modules)\n"
    )
    env = {**os.environ, "PYTHONPATH": os.getcwd()}
    fast = subprocess.run([sys.executable, "-c", probe, str(db)], capture_output=True, text=True, env=env, check=True)
    lines, _, loaded = fast.stdout.rpartition("MODELS ")
    assert loaded.split() == ["False", "False"]
    # the store path (a sqlite: URL) prints the same lines
    slow = subprocess.run([sys.executable, "-m", "console.cli", "--db", f"sqlite:///{db}", "events", "deploy-long-1"],
                          capture_output=True, text=True, env=env, check=True)
    assert lines == slow.stdout and len(lines.splitlines()) > 30
    assert json.loads(subprocess.run([sys.executable, "-m", "console.cli", "--db", str(db), "--json", "show",
                                      "deploy-long-1"], capture_output=True, text=True, env=env,
                                     check=True).stdout)["session"]["last_seq"] == len(lines.splitlines())
