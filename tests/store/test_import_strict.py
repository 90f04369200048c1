"""An import is as strict as a resume: forged answers, impossible event
sequences, repeated ids and blank ids are refused naming the line, and nothing
is written. A property test mutates valid exports at random: either the import
is refused with a line number, or the session it writes re-exports to the same
events and the same projection."""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.models import Event
from engine.projection import Projection
from engine.store import MemoryStore
from engine.store.jsonl import ImportFormatError, parse_export
from engine.store.sqlite import SQLiteStore
from sample_sessions.demo import FIXTURE_EPOCH, build_demo_db

SESSIONS = ("refund-waiting-1", "refund-partial-1", "incident-failed-1", "refund-cancelled-1", "review-completed-1")


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("import-strict") / "demo.sqlite"
    asyncio.run(build_demo_db(path, epoch=FIXTURE_EPOCH, long_iterations=3, sessions=0))
    return path


@pytest.fixture(scope="module")
def exports(demo: Path) -> dict[str, list[dict[str, Any]]]:
    async def go() -> dict[str, list[dict[str, Any]]]:
        async with SQLiteStore.open(demo, read_only=True) as store:
            return {
                sid: [json.loads(line) async for line in store.export_session(sid)]  # type: ignore[attr-defined]
                for sid in SESSIONS
            }

    return asyncio.run(go())


def render(objs: list[dict[str, Any]], *, renumber: bool = True) -> list[str]:
    """Lines of a file; with ``renumber`` the seqs and the header count are fixed
    up, so the forgery under test is the only thing wrong."""
    objs = json.loads(json.dumps(objs))
    if renumber:
        for n, obj in enumerate(objs[1:], start=1):
            obj["seq"] = n
        objs[0]["session"]["last_seq"] = len(objs) - 1
    return [json.dumps(o) + "\n" for o in objs]


def event(obj_or_event: Any) -> dict[str, Any]:
    return {"seq": 0, "event": json.loads(obj_or_event.to_json()) if isinstance(obj_or_event, Event) else obj_or_event}


def first(objs: list[dict[str, Any]], pred: Any) -> int:
    return next(i for i, o in enumerate(objs) if i and pred(o["event"]))


def answer_line(objs: list[dict[str, Any]], iid: str, value: Any, inv: str | None = None) -> dict[str, Any]:
    inv = inv or objs[1]["event"]["invocation_id"]
    return event(
        {
            "id": "f" * 32,
            "invocation_id": inv,
            "author": "user",
            "timestamp": 1.0,
            "content": {"role": "user", "parts": [{"function_response": {"id": iid, "name": "x", "response": value}}]},
        }
    )


def forge(exports: dict[str, list[dict[str, Any]]], name: str) -> tuple[list[str], str]:
    w = exports["refund-waiting-1"]
    if name == "answer failing its schema":
        return render([*w, answer_line(w, "finance-order-1001", {"approved": "no"})]), "schema"
    if name == "answer over the size limit":
        return render([*w, answer_line(w, "finance-order-1001", {"approved": True, "note": "x" * 1_100_000})]), "limit"
    if name == "answer to an id that is not open":
        return render([*w, answer_line(w, "no-such-id", True)]), "not open"
    if name == "answer naming another invocation":
        return render([*w, answer_line(w, "finance-order-1001", {"approved": True}, inv="other")]), "not open"
    if name == "answer twice in one message":
        line = answer_line(w, "finance-order-1001", {"approved": True})
        parts = line["event"]["content"]["parts"]
        parts.append(parts[0])
        return render([*w, line]), "twice"
    if name == "two events with one id":
        dup = json.loads(json.dumps(w[3]))
        dup["event"]["id"] = w[2]["event"]["id"]
        return render([*w[:3], dup, *w[4:]]), "repeats the event id"
    if name == "end with no start":
        objs = [o for i, o in enumerate(w) if i != first(w, lambda e: (e.get("node_info") or {}).get("lifecycle") == "start" and "/" in e["node_info"]["path"])]
        return render(objs), "never started"
    if name == "start before the previous end":
        # A child starting after its parent ended.
        child = first(w, lambda e: (e.get("node_info") or {}).get("lifecycle") == "start" and "/" in e["node_info"]["path"])
        moved = json.loads(json.dumps(w[child]))
        moved["event"]["id"] = "e" * 32
        moved["event"]["node_info"]["path"] = moved["event"]["node_info"]["path"].replace("@1", "@1", 1) + "x@1"
        return render([*w, moved]), "not running"
    if name == "a start while running":
        s = first(w, lambda e: (e.get("node_info") or {}).get("lifecycle") == "start")
        again = json.loads(json.dumps(w[s]))
        again["event"]["id"] = "d" * 32
        return render([*w[: s + 1], again, *w[s + 1 :]]), "starts again"
    if name == "empty session id":
        objs = json.loads(json.dumps(w))
        objs[0]["session"]["id"] = ""
        return render(objs), "session id is empty"
    if name == "empty invocation id":
        objs = json.loads(json.dumps(w))
        objs[-1]["event"]["invocation_id"] = " "
        return render(objs), "empty invocation id"
    if name == "re-drive after a cancel":
        c = exports["refund-cancelled-1"]
        inv = c[1]["event"]["invocation_id"]
        redrive = {"id": "c" * 32, "invocation_id": inv, "author": "user", "timestamp": 2.0,
                   "custom_metadata": {"action": "redrive"}}
        return render([*c, event(redrive)]), "cancelled"
    raise AssertionError(name)


FORGERIES = (
    "answer failing its schema",
    "answer over the size limit",
    "answer to an id that is not open",
    "answer naming another invocation",
    "answer twice in one message",
    "two events with one id",
    "end with no start",
    "start before the previous end",
    "a start while running",
    "empty session id",
    "empty invocation id",
    "re-drive after a cancel",
)


@pytest.mark.parametrize("name", FORGERIES)
def test_forged_import_is_refused_naming_the_line(
    exports: dict[str, list[dict[str, Any]]], demo: Path, tmp_path: Path, name: str
) -> None:
    lines, needle = forge(exports, name)
    path = tmp_path / "s.sqlite"
    shutil.copy(demo, path)
    before = path.read_bytes()

    async def go() -> None:
        async with SQLiteStore.open(path) as store:
            with pytest.raises(ImportFormatError, match=r"^line \d+: .*nothing was imported") as info:
                await store.import_session(lines, session_id="forged")
            assert needle in str(info.value), str(info.value)

    asyncio.run(go())
    assert path.read_bytes() == before


def test_valid_exports_import_and_round_trip(exports: dict[str, list[dict[str, Any]]]) -> None:
    for sid in SESSIONS:
        parsed = parse_export(render(exports[sid], renumber=False))
        assert len(parsed.events) == parsed.session.last_seq


def _projection(events: list[Event]) -> dict[str, Any]:
    p = Projection()
    for n, e in enumerate(events, start=1):
        p.apply(e, n)
    return p.to_dict()


MUTATIONS = ("delete", "swap", "duplicate", "status", "path", "answer", "invocation", "lifecycle", "drop_key")
STATUSES = ("COMPLETED", "WAITING", "FAILED", "CANCELLED", "RUNNING", "bogus")


def mutate(objs: list[dict[str, Any]], kind: str, i: int, j: int, pick: int) -> list[dict[str, Any]]:
    objs = json.loads(json.dumps(objs))
    n = len(objs) - 1
    i, j = 1 + i % n, 1 + j % n
    ev = objs[i]["event"]
    if kind == "delete":
        del objs[i]
    elif kind == "swap":
        objs[i], objs[j] = objs[j], objs[i]
    elif kind == "duplicate":
        objs.insert(j, json.loads(json.dumps(objs[i])))
    elif kind == "status" and ev.get("node_info"):
        ev["node_info"]["status"] = STATUSES[pick % len(STATUSES)]
    elif kind == "path" and ev.get("node_info"):
        ev["node_info"]["path"] = objs[j]["event"].get("node_info", {}).get("path", "x@1")
    elif kind == "answer":
        for part in (ev.get("content") or {}).get("parts", []):
            if part.get("function_response"):
                part["function_response"]["response"] = [None, "no", 7, {"approved": "no"}, {"result": "true"}][pick % 5]
    elif kind == "invocation":
        ev["invocation_id"] = objs[j]["event"]["invocation_id"] if pick % 2 else "another"
    elif kind == "lifecycle" and ev.get("node_info"):
        ev["node_info"]["lifecycle"] = [None, "start", "end"][pick % 3]
    elif kind == "drop_key":
        keys = sorted(k for k in ev if k not in ("id", "invocation_id", "author", "timestamp"))  # defaults vary
        if keys:
            del ev[keys[pick % len(keys)]]
    return objs


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    sid=st.sampled_from(SESSIONS),
    kinds=st.lists(st.sampled_from(MUTATIONS), min_size=1, max_size=3),
    i=st.integers(0, 10_000),
    j=st.integers(0, 10_000),
    pick=st.integers(0, 100),
    renumber=st.booleans(),
)
def test_mutated_exports_are_refused_or_round_trip(
    exports: dict[str, list[dict[str, Any]]], sid: str, kinds: list[str], i: int, j: int, pick: int, renumber: bool
) -> None:
    objs = exports[sid]
    for k, kind in enumerate(kinds):
        objs = mutate(objs, kind, i + k, j + 2 * k, pick + k)
    lines = render(objs, renumber=renumber)

    async def go() -> None:
        store = MemoryStore()
        try:
            session = await store.import_session(lines, session_id="m")
        except ImportFormatError as exc:
            assert exc.line >= 1 and str(exc).startswith(f"line {exc.line}: ")
            with pytest.raises(Exception, match="does not exist"):
                await store.get_session("m")
            return
        again = [json.loads(line) async for line in store.export_session("m")]
        source = parse_export(lines).events
        copy = [Event.model_validate(o["event"]) for o in again[1:]]
        assert [e.to_json() for e in copy] == [e.to_json() for e in source]
        assert _projection(copy) == _projection(source)
        assert session.last_seq == len(source)

    asyncio.run(go())
