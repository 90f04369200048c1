"""An import folds each event once: the lifecycle checks read the fold the seek
checkpoints are compacted from (engine/store/import_rules.py), and what it
imports is what the old way -- the checks on a whole fold, the checkpoints
folded a second time -- imported.

* Every scenario session of the demo (its long deploy loop included) imports
  into a store with the same rows, events, checkpoints and indexes both ways,
  with checkpoints every few events so that compaction drops runs all along;
  and the new way applies each event to one projection, once.
* Forged exports (records deleted, swapped, repeated, outputs edited) get the
  same verdict both ways: the same refusal, or the same checkpoints.
* A record that names a run compaction dropped switches the checks to the
  whole fold, and the verdict is still the whole fold's.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine import checkpoints
from engine.models import Event
from engine.projection import Projection
from engine.store import jsonl
from engine.store.import_rules import Replay
from engine.store.jsonl import ExportReader, ImportFormatError
from engine.store.sqlite import SQLiteStore
from sample_sessions.demo import FIXTURE_EPOCH, build_demo_db
from tests.store.test_import_strict import render

EVERY = 7
"""Checkpoint spacing in these tests: many compactions in a small session."""


class _OldReplay(jsonl._Replay):
    """The old way: the checks on a whole fold of their own, the checkpoints folded again."""

    def __init__(self, builder: Any = None) -> None:
        super().__init__(builder)
        self.rules._unfold()


@pytest.fixture
def small_spans(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(checkpoints, "EVERY", EVERY)


@pytest.fixture(scope="module")
def exports(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[str]]:
    """The export of every scenario session of the demo (a deploy loop of 40 iterations)."""
    demo = tmp_path_factory.mktemp("import-one-fold") / "demo.sqlite"

    async def go() -> dict[str, list[str]]:
        await build_demo_db(demo, epoch=FIXTURE_EPOCH, long_iterations=40, sessions=0)
        async with SQLiteStore.open(demo, read_only=True) as store:
            ids = [s.id for s in (await store.list_sessions(limit=1000)).items]
            return {sid: [line async for line in store.export_session(sid)] for sid in ids}  # type: ignore[attr-defined]

    return asyncio.run(go())


_VOLATILE = {"created_at", "updated_at", "at", "acquired_at"}
"""Columns an import stamps with the time it ran."""


def _dump(path: Path) -> dict[str, list[tuple[Any, ...]]]:
    conn = sqlite3.connect(path)
    try:
        out = {}
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        for table in sorted(tables):
            cols = [r[1] for r in conn.execute(f"PRAGMA table_info({table})") if r[1] not in _VOLATILE]
            out[table] = sorted(conn.execute(f"SELECT {', '.join(cols)} FROM {table}").fetchall(), key=repr)
        return out
    finally:
        conn.close()


async def _import_all(path: Path, exports: dict[str, list[str]]) -> None:
    async with SQLiteStore.open(path) as store:
        for sid, lines in exports.items():
            await store.import_session(lines, session_id=sid, reason="test", source="test")


@pytest.mark.usefixtures("small_spans")
def test_a_store_imported_with_one_fold_is_the_store_imported_with_two(
    tmp_path: Path, exports: dict[str, list[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    assert "deploy-long-1" in exports and len(exports) >= 8
    asyncio.run(_import_all(tmp_path / "new.sqlite", exports))
    with monkeypatch.context() as m:
        m.setattr(jsonl, "_Replay", _OldReplay)
        asyncio.run(_import_all(tmp_path / "old.sqlite", exports))
    new, old = _dump(tmp_path / "new.sqlite"), _dump(tmp_path / "old.sqlite")
    assert new.keys() == old.keys()
    for table in new:
        assert new[table] == old[table], table
    assert len(new["events"]) == sum(len(lines) - 1 for lines in exports.values())
    assert len(new["projection_checkpoints"]) > 40  # compaction ran all along the loop


@pytest.mark.usefixtures("small_spans")
def test_each_event_is_folded_once(exports: dict[str, list[str]], monkeypatch: pytest.MonkeyPatch) -> None:
    applied = 0
    apply = Projection.apply

    def counting(self: Projection, *args: Any, **kwargs: Any) -> Any:
        nonlocal applied
        applied += 1
        return apply(self, *args, **kwargs)

    monkeypatch.setattr(Projection, "apply", counting)
    lines = exports["deploy-long-1"]
    reader = ExportReader(lines, checkpoints=True)
    n = sum(1 for _ in reader.events())
    assert n == len(lines) - 1 and reader.checkpoints is not None and reader.checkpoints.rows
    assert applied == n  # the old way: 2 * n (checks, then checkpoints)
    applied = 0
    with monkeypatch.context() as m:
        m.setattr(jsonl, "_Replay", _OldReplay)
        old = ExportReader(lines, checkpoints=True)
        assert sum(1 for _ in old.events()) == n
    assert applied == 2 * n


def _verdict(lines: list[str], *, old: bool) -> tuple[str, Any]:
    """The refusal, or the checkpoints and the runs of what imports."""
    reader_cls = _OldReplay if old else jsonl._Replay
    saved = jsonl._Replay
    jsonl._Replay = reader_cls  # type: ignore[misc]
    try:
        reader = ExportReader(lines, checkpoints=True)
        events = list(reader.events())
    except ImportFormatError as e:
        return "refused", str(e)
    finally:
        jsonl._Replay = saved  # type: ignore[misc]
    assert reader.checkpoints is not None
    proj = Projection()
    for n, event in enumerate(events, start=1):
        proj.apply(event, n)
    runs = {k: (r.status, r.output, r.starts) for k, r in proj.nodes.items()}
    return "imported", (reader.checkpoints.rows, runs)


@pytest.mark.usefixtures("small_spans")
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    sid=st.sampled_from(["deploy-long-1", "refund-completed-1", "incident-failed-1", "refund-partial-1"]),
    kind=st.sampled_from(["delete", "swap", "repeat", "output"]),
    i=st.integers(0, 100_000),
    j=st.integers(0, 100_000),
)
def test_forged_exports_get_the_same_verdict_both_ways(
    exports: dict[str, list[str]], sid: str, kind: str, i: int, j: int
) -> None:
    objs = [json.loads(line) for line in exports[sid]]
    n = len(objs) - 1
    a, b = 1 + i % n, 1 + j % n
    if kind == "delete":
        del objs[a]
    elif kind == "swap":
        objs[a], objs[b] = objs[b], objs[a]
    elif kind == "repeat":  # a record of an earlier run again, later (a new id): often one compaction dropped
        a, b = sorted((a, b))
        again = json.loads(json.dumps(objs[a]))
        again["event"]["id"] = f"again-{a}-{b}"
        objs.insert(b + 1, again)
    else:
        objs[a]["event"]["output"] = {"forged": j}
    lines = render(objs)
    assert _verdict(lines, old=False) == _verdict(lines, old=True)


@pytest.mark.usefixtures("small_spans")
def test_a_record_of_a_dropped_run_is_checked_on_the_whole_fold(exports: dict[str, list[str]]) -> None:
    """The start of a loop iteration that finished long ago, sent again at the
    end of a cut log (no input: a resumed start): compaction dropped that run,
    so the checks switch to the whole fold, and the verdict is the old way's."""
    objs = [json.loads(line) for line in exports["deploy-long-1"]]
    starts = [k for k in range(1, len(objs)) if (objs[k]["event"].get("node_info") or {}).get("lifecycle") == "start"
              and "/" in objs[k]["event"]["node_info"]["path"]]
    events = jsonl.parse_export(exports["deploy-long-1"]).events[:-1]  # the root's end cut: a killed turn
    for k in (starts[3], starts[len(starts) // 3]):
        again = json.loads(json.dumps(objs[k]))
        again["event"]["id"] = f"again-{k}"
        again["event"]["node_info"].pop("input", None)
        again["event"]["node_info"].pop("after", None)
        lines = render([*objs[:-1], again])
        verdict = _verdict(lines, old=False)
        assert verdict == _verdict(lines, old=True)
        assert verdict[0] == "imported"  # the runner re-runs a resumed node so
        rules = Replay(checkpoints.Builder())
        for seq, event in enumerate(events, start=1):
            assert rules.check(event, seq) is None
        gone = rules._gone
        assert gone is not None and (event.invocation_id, objs[k]["event"]["node_info"]["path"]) in gone.runs
        assert rules.check(Event.model_validate(again["event"]), len(events) + 1) is None
        assert rules._gone is None  # the checks read the whole fold now


def test_each_distinct_answer_is_checked_against_its_schema_once(
    exports: dict[str, list[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    from engine.store import import_rules

    calls: list[Any] = []
    coerce = import_rules.coerce_response

    def counting(schema: Any, value: Any) -> Any:
        calls.append((json.dumps(schema, sort_keys=True), json.dumps(value)))
        return coerce(schema, value)

    monkeypatch.setattr(import_rules, "coerce_response", counting)
    answers = checked = 0
    for lines in exports.values():  # one import each
        calls.clear()
        answers += sum(len(e.function_responses) for e in jsonl.parse_export(lines).events)
        assert len(calls) == len(set(calls))  # each distinct (schema, answer) once
        checked += len(calls)
    assert checked < answers  # not each answer


def test_answers_that_differ_as_json_get_their_own_verdicts() -> None:
    from engine.store.import_rules import _verdict

    seen: dict[Any, Any] = {}
    boolean = {"type": "boolean"}
    assert _verdict(boolean, True, seen)[1:] == ([], True)
    assert _verdict(boolean, 1, seen)[2] is False  # coerced to true: not the form a live answer is stored in
    assert _verdict(boolean, "yes", seen)[2] is False
    number = {"type": "number"}
    assert _verdict(number, 1.0, seen)[1:] == ([], True)
    assert _verdict(number, float("nan"), seen)[1]  # NaN is not JSON: refused, never taken for null
    assert _verdict({"type": ["number", "null"]}, None, seen)[1:] == ([], True)
    assert _verdict({"type": ["number", "null"]}, float("nan"), seen)[1]
    assert _verdict({"type": "integer"}, 2, seen)[1:] == ([], True)
    assert _verdict({"type": "integer"}, 2.5, seen)[1]


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 3) | st.sampled_from([0.0, -0.0, 1.0, 1.5, float("nan")]) | st.text(max_size=2),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=2), inner, max_size=3),
    max_leaves=8,
)


@settings(max_examples=400, deadline=None)
@given(a=_JSON, b=_JSON)
def test_the_quick_same_answer_check_never_says_same_where_json_differs(a: Any, b: Any) -> None:
    from engine.responses import same_json
    from engine.store.import_rules import _surely_same

    if _surely_same(a, b):
        assert same_json(a, b)
    assert _surely_same(a, json.loads(json.dumps(a))) or "NaN" in json.dumps(a)


_SCALAR = st.one_of(st.none(), st.booleans(), st.integers(-2, 2), st.sampled_from([0.5, 1.0, float("nan"), float("inf")]),
                    st.sampled_from(["", "a", "b", "1"]))
_PLAIN_SCHEMA = st.fixed_dictionaries(
    {"type": st.just("object"), "properties": st.dictionaries(
        st.sampled_from(["a", "b", "c"]),
        st.fixed_dictionaries(
            {"type": st.sampled_from(["string", "boolean", "integer", "number"])},
            optional={"enum": st.lists(_SCALAR, min_size=1, max_size=3), "default": _SCALAR, "title": st.just("T")},
        ),
        max_size=3,
    )},
    optional={"title": st.just("Model"), "additionalProperties": st.booleans(), "minProperties": st.just(1)},
).map(lambda s: {**s, "required": sorted(s["properties"])[:1]})


@settings(max_examples=500, deadline=None)
@given(schema=_PLAIN_SCHEMA, value=st.dictionaries(st.sampled_from(["a", "b", "c", "d"]), _SCALAR, max_size=4) | _SCALAR)
def test_an_answer_checked_the_quick_way_gets_the_full_checks_verdict(schema: dict[str, Any], value: Any) -> None:
    """A schema of scalar fields is checked without the full coercion only when
    the full check would take the answer as sent; anything else goes to it."""
    from pydantic_core import to_json

    from engine.responses import coerce_response, plain_object, plainly_valid, same_json

    plain = plain_object(schema)
    if "additionalProperties" in schema or "minProperties" in schema:
        assert plain is None  # keywords the quick way does not know
    if plain is None or not plainly_valid(plain, value, to_json(value, inf_nan_mode="constants")):
        return
    coerced, errors = coerce_response(schema, value)
    assert errors == [] and same_json(coerced, value)


def test_the_deploy_loops_answers_are_checked_the_quick_way(
    exports: dict[str, list[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    from engine.store import import_rules

    calls = 0
    coerce = import_rules.coerce_response

    def counting(schema: Any, value: Any) -> Any:
        nonlocal calls
        calls += 1
        return coerce(schema, value)

    monkeypatch.setattr(import_rules, "coerce_response", counting)
    events = jsonl.parse_export(exports["deploy-long-1"]).events
    assert sum(len(e.function_responses) for e in events) >= 40
    assert calls == 0


@pytest.mark.parametrize("bad", [b"\xff", b"\xc0\xaf", b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"\xe2\x82"])
def test_a_line_of_bytes_that_are_not_utf8_is_refused_naming_the_byte(exports: dict[str, list[str]], bad: bytes) -> None:
    """A file's lines are parsed as bytes; one that is not UTF-8 is refused as
    it always was, at the offset of its first bad byte, inside a string or not."""
    lines = [line.encode() for line in exports["refund-completed-1"]]
    for at in (b'"author":"', b'"invocation_id":'):
        forged = list(lines)
        forged[3] = lines[3].replace(at, at + bad, 1)
        assert forged[3] != lines[3]
        with pytest.raises(ImportFormatError) as exc:
            list(ExportReader(forged, checkpoints=True).events())
        assert str(exc.value).startswith(f"line 4: is not valid UTF-8 (bad byte at offset {forged[3].index(bad)})")


def test_lines_read_as_bytes_import_as_the_same_lines_read_as_text(exports: dict[str, list[str]]) -> None:
    lines = exports["deploy-long-1"]
    text, raw = ExportReader(lines, checkpoints=True), ExportReader([line.encode() for line in lines], checkpoints=True)
    assert [e.to_json() for e in text.events()] == [e.to_json() for e in raw.events()]
    assert text.checkpoints is not None and raw.checkpoints is not None and text.checkpoints.rows == raw.checkpoints.rows
