"""``hitl show --all-runs`` of one long session (benchmarks/bench_read_scale.py)
does each event's work once: every stored row is validated once by pydantic and
folded once, and none is read again through the store -- while a damaged row
still gets the store's own error. The display JSON's kept encoder and the named
status word give what ``json.dumps`` and ``.value`` gave."""

from __future__ import annotations

import asyncio
import json
import shutil
import sqlite3
import threading
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from console import text as console_text
from console.cli.loads import session_projection
from engine.errors import CorruptEventError
from engine.models import Event, NodeStatus
from engine.projection import Projection, project
from engine.redact import Redactor
from engine.status import DisplayStatus, InvocationState, SessionStatus, status_word
from engine.store.sqlite import SQLiteStore
from sample_sessions.demo import FIXTURE_EPOCH, build_demo_db

LONG = "deploy-long-1"


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The demo's scenario sessions, its deploy loop 40 iterations long."""
    path = tmp_path_factory.mktemp("show-all-runs") / "demo.sqlite"
    asyncio.run(build_demo_db(path, epoch=FIXTURE_EPOCH, long_iterations=40, sessions=0))
    return path


class _CountingValidator:
    """Event's pydantic validator, counting the texts it validates."""

    def __init__(self, real: Any) -> None:
        self.real = real
        self.texts = 0

    def validate_json(self, *args: Any, **kwargs: Any) -> Any:
        self.texts += 1
        return self.real.validate_json(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.real, name)


def _counted_read(db: Path, session_id: str, monkeypatch: pytest.MonkeyPatch) -> tuple[Any, dict[str, int]]:
    """session_projection of ``session_id`` with its work counted: texts validated
    by pydantic, events folded, events read one by one through the store."""
    counts = {"validated": 0, "applied": 0, "reread": 0}
    validator = _CountingValidator(Event.__pydantic_validator__)
    apply, event_at = Projection.apply, SQLiteStore.event_at

    def counting_apply(self: Projection, *args: Any, **kwargs: Any) -> Any:
        counts["applied"] += 1
        return apply(self, *args, **kwargs)

    async def counting_event_at(self: SQLiteStore, *args: Any, **kwargs: Any) -> Any:
        counts["reread"] += 1
        return await event_at(self, *args, **kwargs)

    async def go() -> Any:
        async with SQLiteStore.open(db, read_only=True) as store:
            with monkeypatch.context() as m:
                m.setattr(Event, "__pydantic_validator__", validator)
                m.setattr(Projection, "apply", counting_apply)
                m.setattr(SQLiteStore, "event_at", counting_event_at)
                try:
                    return await session_projection(store, session_id, Redactor())
                finally:
                    counts["validated"] = validator.texts

    try:
        return asyncio.run(go()), counts
    except CorruptEventError as exc:
        return exc, counts


async def _events(db: Path, session_id: str) -> list[Any]:
    async with SQLiteStore.open(db, read_only=True) as store:
        return await store.events(session_id)


@pytest.mark.parametrize("session_id", [LONG, "refund-partial-1"])
def test_each_row_is_validated_once_and_folded_once(
    demo: Path, session_id: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    stored = asyncio.run(_events(demo, session_id))
    proj, counts = _counted_read(demo, session_id, monkeypatch)
    assert counts == {"validated": len(stored), "applied": len(stored), "reread": 0}
    assert proj.to_dict() == project([(s.seq, s.event) for s in stored]).to_dict()


@pytest.mark.parametrize("damage", [
    '{"id": 5}',  # not an event: a field of the wrong type
    '{"id":"e","timestamp":1.0,"node_info":{"path":"wf@1"}}',  # a required field missing
    '{"id":"e","timestamp":1.0,"colour":"red"}',  # a field no event has
    '{"id":"e","timestamp":1.0,"node_info":{"path":"wf@1","run_id":"1","status":"DONE"}}',  # no such status
    '{"id":"e","timestamp":1.0',  # cut short
    "",
])
def test_a_damaged_row_gets_the_stores_error(
    demo: Path, tmp_path: Path, damage: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "damaged.sqlite"
    shutil.copy(demo, db)
    seq = 37  # inside the loop, past the first page of a small page size
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE events SET json = ? WHERE session_id = ? AND seq = ?", (damage, LONG, seq))
    conn.close()

    async def stores_error() -> str:
        async with SQLiteStore.open(db, read_only=True) as store:
            with pytest.raises(CorruptEventError) as raised:
                await store.event_at(LONG, seq)
            return str(raised.value)

    expected = asyncio.run(stores_error())
    monkeypatch.setattr("console.cli.loads.EVENTS_PAGE", 10)
    got, counts = _counted_read(db, LONG, monkeypatch)
    assert isinstance(got, CorruptEventError) and str(got) == expected
    assert counts["applied"] == seq - 1  # the rows before it, each once; nothing after it
    assert counts["reread"] == 1  # the damaged row only, to say what is wrong with it


# -- the display JSON (``short`` of every output of a long tree) ------------------

_json_values = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), st.text(max_size=8)),
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=5), inner, max_size=3)),
    max_leaves=10,
)


class _Boom:
    def __repr__(self) -> str:
        raise RuntimeError("no repr")


class _Str:
    def __str__(self) -> str:
        raise RuntimeError("no str")


def test_the_display_json_after_a_failed_encoding_is_json_dumps() -> None:
    """An encoding that fails half-way leaves the containers it was in the middle of
    marked; the next encoding of one of them is not taken for a circular value."""
    value: dict[str, Any] = {"a": [1, _Boom()]}
    with pytest.raises(RuntimeError):
        json.dumps(value, ensure_ascii=False, default=repr)
    with pytest.raises(RuntimeError):
        console_text.to_json(value)
    with pytest.raises(RuntimeError):
        console_text._COMPACT_JSON({"b": value, "c": _Str()})  # the CLI's form (default=str)
    value["a"].pop()
    assert console_text.to_json(value) == '{"a": [1]}' == json.dumps(value, ensure_ascii=False, default=repr)
    assert console_text.short({"b": value}, 40, compact=True) == '{"b":{"a":[1]}}'


def test_a_circular_value_is_shown_with_repr() -> None:
    loop: list[Any] = [1]
    loop.append(loop)
    with pytest.raises(ValueError, match="Circular"):
        json.dumps(loop, ensure_ascii=False, default=repr)
    assert console_text.to_json(loop) == console_text.clean(repr(loop)) == "[1, [...]]"
    assert console_text.to_json([loop[0]]) == "[1]"  # and the next value is encoded as ever


def test_threads_encode_side_by_side() -> None:
    """Each thread keeps its own encoder: one's containers are never another's."""
    shared = {"k": [{"n": i, "s": "é" * (i % 3)} for i in range(50)]}
    expected = json.dumps(shared, ensure_ascii=False, default=repr)
    results: list[bool] = []

    def work() -> None:
        results.append(all(console_text.to_json(shared) == expected for _ in range(200)))

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert results == [True] * 4


@settings(max_examples=300, deadline=None)
@given(value=st.one_of(_json_values, st.builds(set, st.lists(st.integers(), max_size=3)), st.just({1: object})),
       compact=st.booleans())
def test_short_is_what_it_was(value: Any, compact: bool) -> None:
    """``short`` with the kept encoders (the CLI's compact form too): what it gave
    with ``json.dumps`` per value."""
    if compact and value is None:
        text = ""
    elif isinstance(value, str):
        text = value
    elif compact:
        text = json.dumps(value, default=str, ensure_ascii=False, separators=(",", ":"))
    else:
        text = console_text.clean(json.dumps(value, ensure_ascii=False, default=repr))
    expected = console_text.clean(" ".join(text.split()), one_line=True)
    expected = expected if len(expected) <= 20 else expected[:19] + "…"
    assert console_text.short(value, 20, compact=compact) == expected


@settings(max_examples=200, deadline=None)
@given(value=_json_values, ascii_only=st.booleans(), sort_keys=st.booleans())
def test_a_kept_encoder_is_its_encoders_encode(value: Any, ascii_only: bool, sort_keys: bool) -> None:
    encoder = json.JSONEncoder(ensure_ascii=ascii_only, sort_keys=sort_keys, default=repr)
    assert console_text._kept_encoder(encoder)(value) == encoder.encode(value)


def test_without_the_c_accelerator_the_encoder_encodes(monkeypatch: pytest.MonkeyPatch) -> None:
    encoder = json.JSONEncoder(default=repr)
    monkeypatch.setattr(json.encoder, "c_make_encoder", None)
    assert console_text._kept_encoder(encoder) == encoder.encode
    indented = json.JSONEncoder(indent=2)
    monkeypatch.undo()
    assert console_text._kept_encoder(indented) == indented.encode  # (the C encoder takes no indent)


# -- a status's word ----------------------------------------------------------------

def test_a_status_word_is_its_value() -> None:
    for enum in (NodeStatus, DisplayStatus, InvocationState, SessionStatus):
        for member in enum:
            word = status_word(member)
            assert word == member.value and type(word) is str
    assert status_word("plain") == "plain"
