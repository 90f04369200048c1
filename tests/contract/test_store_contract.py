"""The SessionStore contract (engine/store/base.py), run against every backend.

Every test takes the ``store`` fixture, which yields a fresh MemoryStore and a
fresh SQLiteStore; a backend passes when it behaves the same in every test.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.errors import (
    AlreadyResolvedError,
    ConflictError,
    HitlError,
    ReadOnlyError,
    SessionNotFoundError,
)
from engine.models import NodeStatus
from engine.store.base import SessionStore
from engine.store.jsonl import ImportFormatError

from .builders import (
    KINDS,
    answer,
    cancel,
    dump,
    end,
    interrupt,
    kind_of,
    location,
    open_store,
    start,
    user_msg,
    waiting_session,
)

HYPO = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def run(coro: Any) -> Any:
    return asyncio.run(coro)


# ---------------------------------------------------------------------- sessions


async def test_store_implements_the_protocol(store: SessionStore) -> None:
    assert isinstance(store, SessionStore)
    assert store.read_only is False


async def test_create_and_get_session(store: SessionStore) -> None:
    created = await store.create_session("app", "alice", "s1", state={"k": [1, 2]})
    assert (created.id, created.app_name, created.user_id, created.state, created.last_seq) == (
        "s1",
        "app",
        "alice",
        {"k": [1, 2]},
        0,
    )
    got = await store.get_session("s1")
    assert got == created
    got.state["k"].append(3)  # a returned copy cannot change the store
    assert (await store.get_session("s1")).state == {"k": [1, 2]}
    generated = await store.create_session("app", "bob")
    assert generated.id and generated.id != "s1"


async def test_missing_session_raises_everywhere(store: SessionStore) -> None:
    with pytest.raises(SessionNotFoundError, match="nope"):
        await store.get_session("nope")
    with pytest.raises(SessionNotFoundError):
        await store.append_event("nope", user_msg("i"))
    with pytest.raises(SessionNotFoundError):
        await store.events("nope")
    with pytest.raises(SessionNotFoundError):
        await store.event_at("nope", 1)
    with pytest.raises(SessionNotFoundError):
        await store.invocation_events("nope", "i")
    with pytest.raises(SessionNotFoundError):
        await store.list_invocations("nope")
    with pytest.raises(SessionNotFoundError):
        await store.invocation_count("nope")
    with pytest.raises(SessionNotFoundError):
        await store.lookup_interrupts("nope", ["x"])
    with pytest.raises(SessionNotFoundError):
        await store.get_snapshot("nope", "i")
    with pytest.raises(SessionNotFoundError):
        await store.put_snapshot("nope", "i", 1, {})


async def test_duplicate_session_id_is_a_conflict(store: SessionStore) -> None:
    await store.create_session("app", "alice", "s1", state={"a": 1})
    with pytest.raises(ConflictError, match="s1"):
        await store.create_session("other", "bob", "s1")
    s = await store.get_session("s1")
    assert (s.app_name, s.user_id, s.state) == ("app", "alice", {"a": 1})


# ---------------------------------------------------------------------- appends


async def test_append_assigns_contiguous_seqs(store: SessionStore) -> None:
    await store.create_session("app", "u", "s1")
    sent = [user_msg("i1", f"m{n}") for n in range(5)]
    stored = [await store.append_event("s1", e) for e in sent]
    assert [s.seq for s in stored] == [1, 2, 3, 4, 5]
    assert all(s.session_id == "s1" for s in stored)
    assert [s.event for s in stored] == sent
    assert (await store.get_session("s1")).last_seq == 5
    assert [(s.seq, s.event) for s in await store.events("s1")] == [(n + 1, e) for n, e in enumerate(sent)]


async def test_state_delta_applied_and_temp_keys_dropped(store: SessionStore) -> None:
    await store.create_session("app", "u", "s1", state={"keep": 1, "over": "old"})
    stored = await store.append_event(
        "s1", user_msg("i", state_delta={"over": "new", "temp:scratch": 9, "added": {"x": [1]}})
    )
    assert stored.event.state_delta == {"over": "new", "added": {"x": [1]}}
    only_temp = await store.append_event("s1", start("i", state_delta={"temp:a": 1}))
    assert only_temp.event.state_delta is None
    assert (await store.get_session("s1")).state == {"keep": 1, "over": "new", "added": {"x": [1]}}
    read = await store.events("s1")
    assert read[0].event.state_delta == {"over": "new", "added": {"x": [1]}}
    assert read[1].event.state_delta is None


async def test_expected_seq_conflict_writes_nothing(store: SessionStore) -> None:
    await store.create_session("app", "u", "s1")
    await store.append_event("s1", user_msg("i"), expected_seq=0)
    before = await dump(store, "s1")
    for stale in (0, 2, 7):
        with pytest.raises(ConflictError, match="reload"):
            await store.append_event("s1", start("i", state_delta={"x": 1}), expected_seq=stale)
    assert await dump(store, "s1") == before
    assert (await store.append_event("s1", start("i"), expected_seq=1)).seq == 2


# ---------------------------------------------------------------------- interrupts


async def test_answer_to_open_interrupt_resolves_it(store: SessionStore) -> None:
    sid = await waiting_session(store, "a", "b")
    opened = await store.lookup_interrupts(sid, ["a", "b"])
    assert {(r.interrupt_id, r.status, r.path, r.invocation_id) for r in opened} == {
        ("a", "open", "wf@1/ask@1", "inv1"),
        ("b", "open", "wf@1/ask@1", "inv1"),
    }
    rec = next(r for r in opened if r.interrupt_id == "a")
    assert (rec.raised_seq, rec.name, rec.message, rec.app_name, rec.user_id) == (
        3,
        "request_input",
        "approve a?",
        "app",
        "u",
    )
    fr = await store.append_event(sid, answer("inv1", {"a": "yes"}))
    rows = {r.interrupt_id: r for r in await store.lookup_interrupts(sid, ["a", "b"])}
    assert (rows["a"].status, rows["a"].resolved_by, rows["a"].resolved_seq) == ("resolved", fr.event.id, fr.seq)
    assert (rows["b"].status, rows["b"].resolved_by, rows["b"].resolved_seq) == ("open", None, None)
    summary = (await store.list_sessions()).items[0]
    assert summary.open_interrupts == 1
    assert [r.interrupt_id for r in (await store.open_interrupts()).items] == ["b"]


@pytest.mark.parametrize(
    "answers, bad",
    [
        ({"a": 1}, ["a"]),  # already answered
        ({"zzz": 1}, ["zzz"]),  # unknown
        ({"b": 1, "zzz": 1}, ["zzz"]),  # one open, one unknown: all-or-nothing
        ({"other": 1}, ["other"]),  # open, but in another invocation
    ],
)
async def test_answer_to_not_open_id_is_rejected_and_changes_nothing(
    store: SessionStore, answers: dict[str, Any], bad: list[str]
) -> None:
    sid = await waiting_session(store, "a", "b")
    for ev in (user_msg("inv2"), start("inv2"), interrupt("inv2", "other")):
        await store.append_event(sid, ev)
    await store.append_event(sid, answer("inv1", {"a": "yes"}))
    before = await dump(store, sid)
    with pytest.raises(AlreadyResolvedError) as info:
        await store.append_event(sid, answer("inv1", answers, state_delta={"x": 1}))
    assert info.value.ids == bad
    assert "nothing was written" in str(info.value)
    assert await dump(store, sid) == before


async def test_cancel_closes_the_invocations_open_interrupts(store: SessionStore) -> None:
    sid = await waiting_session(store, "a", "b", "c")
    for ev in (user_msg("inv2"), start("inv2"), interrupt("inv2", "x"), end("inv2", NodeStatus.WAITING)):
        await store.append_event(sid, ev)
    await store.append_event(sid, answer("inv1", {"a": 1}))
    cancelled = await store.append_event(sid, cancel("inv1"))
    rows = {(r.invocation_id, r.interrupt_id): r for r in await store.lookup_interrupts(sid, ["a", "b", "c", "x"])}
    assert rows["inv1", "a"].status == "resolved"
    for i in ("b", "c"):
        assert (rows["inv1", i].status, rows["inv1", i].resolved_seq) == ("cancelled", cancelled.seq)
    assert rows["inv2", "x"].status == "open"
    invs = {i.invocation_id: i.status for i in await store.list_invocations(sid)}
    assert invs == {"inv1": "cancelled", "inv2": "waiting"}
    assert await store.invocation_count(sid) == 2
    assert [r.interrupt_id for r in (await store.open_interrupts()).items] == ["x"]
    (summary,) = (await store.list_sessions()).items
    assert (summary.open_interrupts, summary.status) == (1, "waiting")
    with pytest.raises(AlreadyResolvedError):
        await store.append_event(sid, answer("inv1", {"b": 1}))


async def test_reraised_id_in_same_invocation_reopens_it(store: SessionStore) -> None:
    sid = await waiting_session(store, "a")
    await store.append_event(sid, answer("inv1", {"a": 1}))
    again = await store.append_event(sid, interrupt("inv1", "a", path="wf@1/ask@2"))
    (row,) = await store.lookup_interrupts(sid, ["a"])
    assert (row.status, row.raised_seq, row.path, row.resolved_by) == ("open", again.seq, "wf@1/ask@2", None)
    assert (await store.list_sessions()).items[0].open_interrupts == 1


async def test_same_id_in_two_invocations_are_separate_rows(store: SessionStore) -> None:
    sid = await waiting_session(store, "dup")
    for ev in (user_msg("inv2"), start("inv2"), interrupt("inv2", "dup")):
        await store.append_event(sid, ev)
    await store.append_event(sid, answer("inv2", {"dup": 1}))
    rows = {r.invocation_id: r.status for r in await store.lookup_interrupts(sid, ["dup"])}
    assert rows == {"inv1": "open", "inv2": "resolved"}


async def test_lookup_interrupts(store: SessionStore) -> None:
    sid = await waiting_session(store, "a", "b")
    other = await waiting_session(store, "a", session_id="other")
    await store.append_event(sid, answer("inv1", {"b": 1}))
    assert await store.lookup_interrupts(sid, []) == []
    assert await store.lookup_interrupts(sid, ["unknown"]) == []
    got = {(r.session_id, r.interrupt_id, r.status) for r in await store.lookup_interrupts(sid, ["a", "b", "unknown"])}
    assert got == {(sid, "a", "open"), (sid, "b", "resolved")}
    assert [r.session_id for r in await store.lookup_interrupts(other, ["a", "b"])] == [other]


@pytest.mark.parametrize("n_ids", [32, 33, 500])  # SQLite binds up to 32 ids one by one, more as one JSON array
async def test_lookup_interrupts_many_ids(store: SessionStore, n_ids: int) -> None:
    raised = [f"q{i:03d}" for i in range(40)]
    sid = await waiting_session(store, *raised)
    asked = [f"q{i:03d}" for i in range(0, 2 * n_ids, 2)]  # every other id; past 40 unknown ones
    got = [r.interrupt_id for r in await store.lookup_interrupts(sid, asked)]
    assert got == [i for i in asked if i in raised]


# ---------------------------------------------------------------------- invocations


async def test_invocation_status_follows_root_lifecycle_records(store: SessionStore) -> None:
    await store.create_session("app", "u", "s1")

    async def status() -> tuple[str, str]:
        (inv,) = await store.list_invocations("s1")
        (summary,) = (await store.list_sessions()).items
        return inv.status, summary.status

    assert (await store.list_sessions()).items[0].status == "new"
    await store.append_event("s1", user_msg("i1", "please refund"))
    assert await status() == ("running", "running")
    await store.append_event("s1", start("i1"))
    await store.append_event("s1", start("i1", "wf@1/ask@1"))
    await store.append_event("s1", interrupt("i1", "a", "b"))
    await store.append_event("s1", end("i1", NodeStatus.WAITING, "wf@1/ask@1"))  # not the root
    assert await status() == ("running", "running")
    await store.append_event("s1", end("i1", NodeStatus.WAITING))
    assert await status() == ("waiting", "waiting")
    await store.append_event("s1", answer("i1", {"a": 1}))  # an FR alone does not change it
    assert await status() == ("waiting", "waiting")
    await store.append_event("s1", start("i1"))
    assert await status() == ("running", "running")
    await store.append_event("s1", end("i1", NodeStatus.COMPLETED, output="done"))
    assert await status() == ("completed", "completed")
    (inv,) = await store.list_invocations("s1")
    assert (inv.invocation_id, inv.started_seq, inv.message) == ("i1", 1, "please refund")


@pytest.mark.parametrize(
    "ends, expected",
    [
        ([NodeStatus.COMPLETED, NodeStatus.WAITING], "waiting"),
        ([NodeStatus.FAILED, NodeStatus.COMPLETED], "failed"),
        ([NodeStatus.CANCELLED, NodeStatus.COMPLETED], "completed"),
        ([NodeStatus.CANCELLED], "cancelled"),
        ([NodeStatus.WAITING, NodeStatus.FAILED, None], "running"),
    ],
)
async def test_session_status_aggregates_invocations(
    store: SessionStore, ends: list[NodeStatus | None], expected: str
) -> None:
    await store.create_session("app", "u", "s1")
    for n, status in enumerate(ends):
        inv = f"i{n}"
        await store.append_event("s1", user_msg(inv))
        await store.append_event("s1", start(inv))
        if status is not None:
            await store.append_event("s1", end(inv, status))
    (summary,) = (await store.list_sessions()).items
    assert (summary.status, summary.invocation_count, summary.event_count) == (
        expected,
        len(ends),
        (await store.get_session("s1")).last_seq,
    )
    invs = await store.list_invocations("s1")
    assert [i.invocation_id for i in invs] == [f"i{n}" for n in range(len(ends))]
    assert [i.started_seq for i in invs] == sorted(i.started_seq for i in invs)


async def test_invocation_events_returns_only_that_invocation(store: SessionStore) -> None:
    await store.create_session("app", "u", "s1")
    for n in range(6):
        await store.append_event("s1", user_msg("a" if n % 2 == 0 else "b", f"m{n}"))
    a = await store.invocation_events("s1", "a")
    assert [(s.seq, s.event.content.text) for s in a] == [(1, "m0"), (3, "m2"), (5, "m4")]
    assert all(s.event.invocation_id == "a" for s in a)
    assert [s.seq for s in await store.invocation_events("s1", "b", after_seq=2)] == [4, 6]
    assert await store.invocation_events("s1", "none") == []


# ---------------------------------------------------------------------- reading events


async def test_events_paging_and_event_at(store: SessionStore) -> None:
    await store.create_session("app", "u", "s1")
    sent = [await store.append_event("s1", user_msg("i", f"m{n}")) for n in range(7)]
    assert [s.seq for s in await store.events("s1", after_seq=3)] == [4, 5, 6, 7]
    assert [s.seq for s in await store.events("s1", after_seq=2, limit=3)] == [3, 4, 5]
    assert [s.seq for s in await store.events("s1", limit=2)] == [1, 2]
    assert await store.events("s1", after_seq=7) == []
    assert await store.events("s1", after_seq=2, limit=0) == []
    assert (await store.event_at("s1", 4)) == sent[3]
    for bad in (0, 8, -1):
        with pytest.raises(IndexError, match="s1"):
            await store.event_at("s1", bad)


async def test_returned_events_are_copies(store: SessionStore) -> None:
    await store.create_session("app", "u", "s1")
    ev = user_msg("i", state_delta={"k": [1]})
    stored = await store.append_event("s1", ev)
    stored.event.state_delta["k"].append(2)
    ev.state_delta["k"].append(3)
    assert (await store.event_at("s1", 1)).event.state_delta == {"k": [1]}
    assert (await store.get_session("s1")).state == {"k": [1]}


# ---------------------------------------------------------------------- listings


async def _populate(store: SessionStore) -> dict[str, str]:
    """Sessions across apps, users and statuses; returns id -> expected status."""
    expected = {}
    await store.create_session("billing", "alice", "Bill-New")
    expected["Bill-New"] = "new"
    await waiting_session(store, "w1", app="billing", user="alice", session_id="bill-wait")
    expected["bill-wait"] = "waiting"
    await waiting_session(store, "w2", app="support", user="bob", session_id="supp-WAIT")
    expected["supp-WAIT"] = "waiting"
    s = await store.create_session("support", "alice", "supp-done")
    for ev in (user_msg("i"), start("i"), end("i", NodeStatus.COMPLETED)):
        await store.append_event(s.id, ev)
    expected["supp-done"] = "completed"
    s = await store.create_session("billing", "bob", "bill-fail")
    for ev in (user_msg("i"), start("i"), end("i", NodeStatus.FAILED)):
        await store.append_event(s.id, ev)
    expected["bill-fail"] = "failed"
    return expected


async def _all(store: SessionStore, **filters: Any) -> list[str]:
    return [s.id for s in (await store.list_sessions(limit=1000, **filters)).items]


async def test_list_sessions_filters(store: SessionStore) -> None:
    expected = await _populate(store)
    rows = (await store.list_sessions(limit=1000)).items
    assert {r.id: r.status for r in rows} == expected
    assert [r.updated_at for r in rows] == sorted((r.updated_at for r in rows), reverse=True)
    assert set(await _all(store, app_name="billing")) == {"Bill-New", "bill-wait", "bill-fail"}
    assert set(await _all(store, user_id="bob")) == {"supp-WAIT", "bill-fail"}
    assert set(await _all(store, status="waiting")) == {"bill-wait", "supp-WAIT"}
    assert set(await _all(store, app_name="billing", status="waiting", user_id="alice")) == {"bill-wait"}
    assert set(await _all(store, text="WAIT")) == {"bill-wait", "supp-WAIT"}  # case-insensitive, on the id
    assert set(await _all(store, text="bill")) == {"Bill-New", "bill-wait", "bill-fail"}
    # also the user, the app and the interrupt ids (the console's "/")
    assert set(await _all(store, text="ALICE")) == {"Bill-New", "bill-wait", "supp-done"}
    assert set(await _all(store, text="suppor")) == {"supp-WAIT", "supp-done"}
    assert set(await _all(store, text="w2")) == {"supp-WAIT"}
    assert set(await _all(store, text="w2", status="completed")) == set()
    assert await _all(store, app_name="nope") == []
    middle = rows[2].updated_at
    assert await _all(store, updated_before=middle) == [r.id for r in rows[3:]]
    assert await _all(store, updated_after=middle) == [r.id for r in rows[:2]]
    assert await _all(store, updated_after=rows[-1].updated_at, updated_before=rows[0].updated_at) == [
        r.id for r in rows[1:-1]
    ]


async def test_session_summary_fields(store: SessionStore) -> None:
    await store.create_session("app", "u", "s1")
    await store.append_event("s1", user_msg("i1"))
    await store.append_event("s1", start("i1"))
    await store.append_event("s1", interrupt("i1", "a", ts=1000.0))
    await store.append_event("s1", interrupt("i1", "b", ts=900.0, path="wf@1/ask2@1"))
    last = await store.append_event("s1", end("i1", NodeStatus.WAITING))
    (s,) = (await store.list_sessions()).items
    assert (s.status, s.open_interrupts, s.oldest_open_at, s.event_count, s.invocation_count) == (
        "waiting",
        2,
        900.0,
        5,
        1,
    )
    assert s.last_event_at == last.event.timestamp
    await store.append_event("s1", answer("i1", {"b": 1}))
    (s,) = (await store.list_sessions()).items
    assert (s.open_interrupts, s.oldest_open_at) == (1, 1000.0)
    await store.append_event("s1", answer("i1", {"a": 1}))
    (s,) = (await store.list_sessions()).items
    assert (s.open_interrupts, s.oldest_open_at) == (0, None)


async def test_list_sessions_most_recently_updated_first(store: SessionStore) -> None:
    for sid in ("a", "b", "c"):
        await store.create_session("app", "u", sid)
    await store.append_event("a", user_msg("i"))
    assert await _all(store) == ["a", "c", "b"]
    s = await store.get_session("a")
    assert s.updated_at >= s.created_at


@given(
    n=st.integers(0, 18),
    page=st.integers(1, 6),
    filt=st.sampled_from([{}, {"app_name": "a0"}, {"status": "running"}, {"text": "1"}, {"user_id": "u1"}]),
)
@settings(HYPO)
@pytest.mark.parametrize("kind", KINDS)
def test_list_sessions_keyset_pagination_returns_every_row_once(
    kind: str, tmp_path_factory: pytest.TempPathFactory, n: int, page: int, filt: dict[str, str]
) -> None:
    async def body() -> None:
        store = await open_store(kind, tmp_path_factory.mktemp("p"))
        try:
            for i in range(n):
                s = await store.create_session(f"a{i % 2}", f"u{i % 3}", f"s{i:02d}")
                if i % 3 == 0:
                    await store.append_event(s.id, user_msg("i"))
            full = await _all(store, **filt)
            seen: list[str] = []
            cursor = None
            for _ in range(n + 2):  # a bounded loop: a cursor that repeats must fail, not hang
                p = await store.list_sessions(limit=page, cursor=cursor, **filt)
                assert len(p.items) <= page
                seen += [s.id for s in p.items]
                cursor = p.next_cursor
                if cursor is None:
                    break
                assert len(p.items) == page
            else:
                pytest.fail("pagination did not end")
            assert seen == full
            assert len(set(seen)) == len(seen)
        finally:
            await store.close()

    run(body())


@given(
    stamps=st.lists(st.sampled_from([100.0, 200.0, 300.0, None]), min_size=0, max_size=12),
    page=st.integers(1, 5),
)
@settings(HYPO)
@pytest.mark.parametrize("kind", KINDS)
def test_list_sessions_triage_order_oldest_open_interrupt_first(
    kind: str, tmp_path_factory: pytest.TempPathFactory, stamps: list[float | None], page: int
) -> None:
    """order="oldest_open": only sessions with open interrupts, oldest open
    interrupt first (ties by id), keyset-paginated without repeats or gaps."""

    async def body() -> None:
        store = await open_store(kind, tmp_path_factory.mktemp("o"))
        try:
            expected: list[tuple[float, str]] = []
            for i, ts in enumerate(stamps):
                sid = f"s{i:02d}"
                if ts is None:
                    await store.create_session("app", "u", sid)
                else:
                    await waiting_session(store, f"q{i}", session_id=sid, ts=ts)
                    expected.append((ts, sid))
            seen: list[str] = []
            cursor = None
            for _ in range(len(stamps) + 2):
                p = await store.list_sessions(limit=page, cursor=cursor, order="oldest_open")
                seen += [r.id for r in p.items]
                assert all(r.open_interrupts > 0 for r in p.items)
                cursor = p.next_cursor
                if cursor is None:
                    break
            else:
                pytest.fail("pagination did not end")
            assert seen == [sid for _, sid in sorted(expected)]
        finally:
            await store.close()

    run(body())


# ---------------------------------------------------------------------- the inbox


async def test_inbox_oldest_first_with_filters(store: SessionStore) -> None:
    await waiting_session(store, "late", session_id="s1", ts=300.0, app="billing")
    await waiting_session(store, "early", session_id="s2", ts=100.0, app="support")
    await waiting_session(store, "mid", "mid2", session_id="s3", ts=200.0, app="billing")
    await store.append_event("s3", answer("inv1", {"mid2": 1}))
    inbox = (await store.open_interrupts()).items
    assert [(r.interrupt_id, r.raised_at) for r in inbox] == [("early", 100.0), ("mid", 200.0), ("late", 300.0)]
    assert [r.interrupt_id for r in (await store.open_interrupts(app_name="billing")).items] == ["mid", "late"]
    assert [r.interrupt_id for r in (await store.open_interrupts(session_id="s1")).items] == ["late"]
    assert (await store.open_interrupts(session_id="s1", app_name="support")).items == []
    assert inbox[0].app_name == "support" and inbox[0].session_id == "s2"


@given(
    stamps=st.lists(st.sampled_from([10.0, 20.0, 20.0, 30.0, 40.5]), min_size=0, max_size=14),
    page=st.integers(1, 5),
    by_app=st.booleans(),
)
@settings(HYPO)
@pytest.mark.parametrize("kind", KINDS)
def test_inbox_keyset_pagination_returns_every_row_once(
    kind: str, tmp_path_factory: pytest.TempPathFactory, stamps: list[float], page: int, by_app: bool
) -> None:
    async def body() -> None:
        store = await open_store(kind, tmp_path_factory.mktemp("i"))
        try:
            sids = [f"s{i % 3}" for i in range(3)]
            for i, sid in enumerate(sids):
                await store.create_session(f"app{i % 2}", "u", sid)
            for n, ts in enumerate(stamps):  # ties on raised_at, several per session
                await store.append_event(sids[n % 3], interrupt("inv", f"x{n}", ts=ts))
            filt = {"app_name": "app0"} if by_app else {}
            want = sorted(
                (ts, sids[n % 3], n) for n, ts in enumerate(stamps) if not by_app or sids[n % 3] in ("s0", "s2")
            )
            seen = []
            cursor = None
            for _ in range(len(stamps) + 2):
                p = await store.open_interrupts(limit=page, cursor=cursor, **filt)
                seen += [(r.raised_at, r.session_id, r.raised_seq, r.interrupt_id) for r in p.items]
                cursor = p.next_cursor
                if cursor is None:
                    break
            else:
                pytest.fail("pagination did not end")
            assert [(ts, sid) for ts, sid, *_ in seen] == [(ts, sid) for ts, sid, _ in want]
            assert sorted(i for *_, i in seen) == sorted(f"x{n}" for *_, n in want)
            assert seen == sorted(seen)
        finally:
            await store.close()

    run(body())


# ---------------------------------------------------------------------- snapshots


async def test_snapshot_round_trip(store: SessionStore) -> None:
    await store.create_session("app", "u", "s1")
    assert await store.get_snapshot("s1", "i1") is None
    data = {"position": 3, "nodes": [{"path": "wf@1", "status": "WAITING"}], "state": {"k": None}}
    await store.put_snapshot("s1", "i1", 3, data)
    data["position"] = 99  # the store kept a copy
    assert await store.get_snapshot("s1", "i1") == (3, {**data, "position": 3})
    await store.put_snapshot("s1", "i1", 5, {"position": 5})
    assert await store.get_snapshot("s1", "i1") == (5, {"position": 5})
    assert await store.get_snapshot("s1", "i2") is None


# ---------------------------------------------------------------------- export / import


async def _rich_session(store: SessionStore) -> str:
    await store.create_session("app", "alice", "orig", state={"init": True})
    events = [
        user_msg("i1", "refund 30", state_delta={"amount": 30}),
        start("i1"),
        interrupt("i1", "a", "b", state_delta={"temp:x": 1, "asked": True}),
        end("i1", NodeStatus.WAITING),
        answer("i1", {"a": {"result": "yes"}}),
        user_msg("i2", "unicode ✓ \u2028 line"),
        start("i2"),
        interrupt("i2", "c"),
        cancel("i2"),
    ]
    for ev in events:
        await store.append_event("orig", ev)
    return "orig"


async def test_export_import_round_trip(store: SessionStore, tmp_path: Path) -> None:
    sid = await _rich_session(store)
    lines = [line async for line in store.export_session(sid)]
    assert all(line.endswith("\n") for line in lines)
    header = json.loads(lines[0])
    assert (header["format"], header["version"], header["session"]["id"]) == ("hitl-session", 1, sid)
    assert len(lines) == 1 + (await store.get_session(sid)).last_seq

    copy = await store.import_session(lines, session_id="copy")
    a, b = await dump(store, sid), await dump(store, "copy")
    assert b["events"] == a["events"]
    assert b["session"]["state"] == a["session"]["state"] == {"init": True, "amount": 30, "asked": True}
    assert (copy.app_name, copy.user_id, copy.created_at) == ("app", "alice", a["session"]["created_at"])
    for key in ("invocations", "interrupts"):
        assert [{**r, "session_id": None} for r in b[key]] == [{**r, "session_id": None} for r in a[key]]
    drop = {"id", "updated_at"}
    assert [{k: v for k, v in s.items() if k not in drop} for s in b["summary"]] == [
        {k: v for k, v in s.items() if k not in drop} for s in a["summary"]
    ]

    # Same id into another store (of the same kind), from bytes, as a file would give them.
    other = await open_store(kind_of(store), tmp_path)
    try:
        await other.import_session([line.encode() for line in lines])
        assert (await dump(other, sid))["events"] == a["events"]
        # And export again: the same lines.
        assert [line async for line in other.export_session(sid)][1:] == lines[1:]
    finally:
        await other.close()


async def test_import_existing_session_id_is_a_conflict(store: SessionStore) -> None:
    sid = await _rich_session(store)
    lines = [line async for line in store.export_session(sid)]
    before = await dump(store, sid)
    with pytest.raises(ConflictError, match=sid):
        await store.import_session(lines)
    assert await dump(store, sid) == before


def _bad_files(lines: list[str]) -> dict[str, tuple[list[Any], int]]:
    """Broken variants of an export of ``_rich_session``: name -> (lines, bad line number)."""
    header, events = lines[0], lines[1:]
    bad_event = json.loads(events[2])
    bad_event["event"]["node_info"] = {"path": 5}
    # Drop the event that raised "a" and "b" (seq 3) and renumber: the root's WAITING
    # end (now seq 3 on line 4) has nothing to wait on (and the answer to "a" after it
    # answers an interrupt that was never raised).
    kept = [json.loads(line)["event"] for n, line in enumerate(events) if n != 2]
    orphan_header = json.loads(header)
    orphan_header["session"]["last_seq"] = len(kept)
    orphan = [json.dumps(orphan_header)] + [json.dumps({"seq": n + 1, "event": e}) for n, e in enumerate(kept)]
    newer = json.loads(header)
    newer["version"] = 99
    return {
        "not json": ([header, events[0], "{oops\n", *events[2:]], 3),
        "not utf-8": ([header.encode(), events[0].encode(), b'{"seq": 2, "event": "\xff\xfe"}\n'], 3),
        "bad header": (['{"format": "something-else", "version": 1}\n', *events], 1),
        "newer format": ([json.dumps(newer) + "\n", *events], 1),
        "no header": (events, 1),
        "out of order": ([header, events[1], events[0], *events[2:]], 2),
        "invalid event": ([header, events[0], events[1], json.dumps(bad_event) + "\n", *events[3:]], 4),
        "truncated": (lines[:-2], len(lines) - 2),
        "answers unknown id": (orphan, 4),
        "empty": ([], 1),
    }


BAD_FILES = [
    "not json",
    "not utf-8",
    "bad header",
    "newer format",
    "no header",
    "out of order",
    "invalid event",
    "truncated",
    "answers unknown id",
    "empty",
]


@pytest.mark.parametrize("case", BAD_FILES)
async def test_import_of_bad_file_writes_nothing(store: SessionStore, case: str) -> None:
    sid = await _rich_session(store)
    lines = [line async for line in store.export_session(sid)]
    bad, line_no = _bad_files(lines)[case]
    before = await store.list_sessions(limit=1000)
    with pytest.raises(ImportFormatError) as info:
        await store.import_session(bad, session_id="imported")
    assert isinstance(info.value, HitlError)
    assert info.value.line == line_no, str(info.value)
    assert str(info.value).startswith(f"line {line_no}: ")
    assert "nothing was imported" in str(info.value)
    with pytest.raises(SessionNotFoundError):
        await store.get_session("imported")
    assert await store.list_sessions(limit=1000) == before


# ---------------------------------------------------------------------- read-only


@pytest.mark.parametrize("kind", KINDS)
async def test_read_only_store_rejects_every_write(kind: str, tmp_path: Path) -> None:
    if kind == "memory":
        ro = await open_store(kind, tmp_path, read_only=True)
    else:
        writer = await open_store(kind, tmp_path)
        await waiting_session(writer, "a", session_id="s1")
        await writer.close()
        ro = await open_store(kind, tmp_path, path=location(writer), read_only=True)
    try:
        assert ro.read_only is True
        writes = [
            ro.create_session("app", "u", "new"),
            ro.append_event("s1", user_msg("i")),
            ro.put_snapshot("s1", "i", 1, {}),
            ro.import_session(['{"format": "hitl-session", "version": 1, "session": {}}']),
        ]
        for coro in writes:
            with pytest.raises(ReadOnlyError, match="read-only"):
                await coro
        if kind != "memory":
            assert [s.id for s in (await ro.list_sessions()).items] == ["s1"]
            assert (await ro.get_session("s1")).last_seq == 4
    finally:
        await ro.close()
