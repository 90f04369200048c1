"""The SessionStore contract, continued: invocation leases (compare-and-swap,
expiry, fencing), the audit log and snapshot monotonicity -- on every backend."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from engine.errors import (
    AlreadyResolvedError,
    InvocationBusyError,
    LeaseLostError,
    ReadOnlyError,
    SessionNotFoundError,
)
from engine.models import Event
from engine.store.base import SessionStore
from engine.store.jsonl import ImportFormatError

from .builders import KINDS, answer, cancel, dump, location, open_store, user_msg, waiting_session

TTL = 60.0


# ---------------------------------------------------------------------- leases


async def test_lease_needs_a_session_and_starts_absent(store: SessionStore) -> None:
    with pytest.raises(SessionNotFoundError):
        await store.acquire_lease("nope", "i1", "A", TTL)
    with pytest.raises(SessionNotFoundError):
        await store.get_lease("nope", "i1")
    with pytest.raises(SessionNotFoundError):
        await store.list_leases("nope")
    await store.create_session("app", "u", "s1")
    assert await store.get_lease("s1", "i1") is None
    assert await store.list_leases("s1") == []


async def test_acquire_get_and_list(store: SessionStore) -> None:
    await store.create_session("app", "u", "s1")
    lease = await store.acquire_lease("s1", "i1", "A", TTL)
    assert (lease.session_id, lease.invocation_id, lease.owner) == ("s1", "i1", "A")
    assert lease.acquired_at == lease.renewed_at and lease.expires_at == pytest.approx(lease.renewed_at + TTL)
    assert not lease.expired()
    assert await store.get_lease("s1", "i1") == lease
    other = await store.acquire_lease("s1", "i0", "B", TTL)  # leases are per invocation
    assert [x.invocation_id for x in await store.list_leases("s1")] == ["i0", "i1"]
    assert await store.list_leases("s1") == [other, lease]


async def test_leases_of_several_sessions_in_one_read(store: SessionStore) -> None:
    """``leases_of`` (the sessions list judges a page's liveness with it): every row of
    the sessions asked for, live or lapsed, as ``list_leases`` gives them; none for
    other or unknown sessions; the portable call gives the same on any store."""
    from engine.store.base import has_capability, leases_of

    for sid in ("s1", "s2", "s3"):
        await store.create_session("app", "u", sid)
    a = await store.acquire_lease("s1", "i1", "A", TTL)
    b = await store.acquire_lease("s2", "i2", "B", 0.0)  # lapsed at once: still a row
    c = await store.acquire_lease("s2", "i0", "C", TTL)
    await store.acquire_lease("s3", "i3", "D", TTL)
    assert has_capability(store, "leases_of")
    got = await store.leases_of(["s2", "s1", "nope"])  # type: ignore[attr-defined]
    assert sorted(got, key=lambda x: (x.session_id, x.invocation_id)) == [a, c, b]
    assert await store.leases_of([]) == []  # type: ignore[attr-defined]
    assert sorted(await leases_of(store, ["s1", "s2"]), key=lambda x: (x.session_id, x.invocation_id)) == [a, c, b]
    assert sorted(await store.list_leases("s2"), key=lambda x: x.invocation_id) == [c, b]


async def test_a_live_lease_of_another_owner_is_busy_and_unchanged(store: SessionStore) -> None:
    await store.create_session("app", "u", "s1")
    held = await store.acquire_lease("s1", "i1", "A", TTL)
    with pytest.raises(InvocationBusyError, match="i1 is running right now") as info:
        await store.acquire_lease("s1", "i1", "B", TTL)
    assert info.value.lease == held
    with pytest.raises(InvocationBusyError):
        await store.acquire_lease("s1", "i1", "B", TTL, steal_from="C")  # C is not the holder
    assert await store.get_lease("s1", "i1") == held


async def test_reacquire_by_the_owner_renews_and_keeps_acquired_at(store: SessionStore) -> None:
    await store.create_session("app", "u", "s1")
    first = await store.acquire_lease("s1", "i1", "A", 1.0)
    await asyncio.sleep(0.01)
    again = await store.acquire_lease("s1", "i1", "A", TTL)
    assert again.acquired_at == first.acquired_at and again.expires_at > first.expires_at


async def test_an_expired_lease_can_be_taken(store: SessionStore) -> None:
    await store.create_session("app", "u", "s1")
    await store.acquire_lease("s1", "i1", "A", 0.05)
    await asyncio.sleep(0.1)
    assert (await store.get_lease("s1", "i1")).expired()
    taken = await store.acquire_lease("s1", "i1", "B", TTL)
    assert taken.owner == "B" and not taken.expired()


async def test_steal_from_is_a_compare_and_swap_on_the_owner(store: SessionStore) -> None:
    await store.create_session("app", "u", "s1")
    await store.acquire_lease("s1", "i1", "A", TTL)
    b = await store.acquire_lease("s1", "i1", "B", TTL, steal_from="A")
    assert b.owner == "B"
    with pytest.raises(InvocationBusyError):  # C saw A too, but B won the swap
        await store.acquire_lease("s1", "i1", "C", TTL, steal_from="A")
    assert (await store.get_lease("s1", "i1")).owner == "B"


async def test_renew_and_lapse(store: SessionStore) -> None:
    await store.create_session("app", "u", "s1")
    first = await store.acquire_lease("s1", "i1", "A", 1.0)
    renewed = await store.renew_lease("s1", "i1", "A", TTL)
    assert renewed.owner == "A" and renewed.acquired_at == first.acquired_at
    assert renewed.expires_at > first.expires_at
    assert await store.get_lease("s1", "i1") == renewed
    with pytest.raises(LeaseLostError, match="lost its lease"):
        await store.renew_lease("s1", "i1", "B", TTL)
    lapsed = await store.renew_lease("s1", "i1", "A", 0)  # lapse now, keep the row as a trace
    assert lapsed.expired()
    assert (await store.get_lease("s1", "i1")).owner == "A"
    assert (await store.acquire_lease("s1", "i1", "B", TTL)).owner == "B"
    with pytest.raises(LeaseLostError):
        await store.renew_lease("s1", "i1", "A", TTL)
    with pytest.raises(LeaseLostError):
        await store.renew_lease("s1", "nothing", "A", TTL)


async def test_release_only_by_the_owner(store: SessionStore) -> None:
    await store.create_session("app", "u", "s1")
    await store.acquire_lease("s1", "i1", "A", TTL)
    assert await store.release_lease("s1", "i1", "B") is False
    assert (await store.get_lease("s1", "i1")).owner == "A"
    assert await store.release_lease("s1", "i1", "A") is True
    assert await store.get_lease("s1", "i1") is None
    assert await store.release_lease("s1", "i1", "A") is False
    assert (await store.acquire_lease("s1", "i1", "B", TTL)).owner == "B"


async def test_release_writes_the_turns_snapshot_with_it(store: SessionStore) -> None:
    await store.create_session("app", "u", "s1")
    await store.acquire_lease("s1", "i1", "A", TTL)
    assert await store.release_lease("s1", "i1", "A", snapshot=(3, {"position": 3})) is True
    assert await store.get_lease("s1", "i1") is None
    assert await store.get_snapshot("s1", "i1") == (3, {"position": 3})
    # a cache: an older snapshot never replaces a newer one, also through a release
    await store.acquire_lease("s1", "i1", "A", TTL)
    await store.release_lease("s1", "i1", "A", snapshot=(2, {"position": 2}))
    assert await store.get_snapshot("s1", "i1") == (3, {"position": 3})
    with pytest.raises(SessionNotFoundError):
        await store.release_lease("nope", "i1", "A", snapshot=(1, {}))


async def test_fenced_appends(store: SessionStore) -> None:
    await store.create_session("app", "u", "s1")
    with pytest.raises(LeaseLostError, match="released"):  # nobody holds it
        await store.append_event("s1", user_msg("i1"), lease_owner="A")
    await store.acquire_lease("s1", "i1", "A", TTL)
    assert (await store.append_event("s1", user_msg("i1"), lease_owner="A")).seq == 1
    await store.acquire_lease("s1", "i1", "B", TTL, steal_from="A")
    before = await dump(store, "s1")
    with pytest.raises(LeaseLostError, match="now held by B"):
        await store.append_event("s1", user_msg("i1", "zombie"), lease_owner="A")
    assert await dump(store, "s1") == before  # nothing of the zombie's write
    assert (await store.append_event("s1", user_msg("i1"), lease_owner="B")).seq == 2
    assert (await store.append_event("s1", user_msg("i2"))).seq == 3  # unfenced appends are unaffected
    with pytest.raises(LeaseLostError):  # fencing is per invocation
        await store.append_event("s1", user_msg("i2"), lease_owner="B")


# ----------------------------------------------------------------------- audit


def _op(action: str, operator: str, reason: str | None = None, **extra: object) -> dict[str, object]:
    meta: dict[str, object] = {"action": action, "operator": operator, **extra}
    if reason:
        meta["reason"] = reason
    return meta


async def test_operator_events_are_audited_in_the_append(store: SessionStore) -> None:
    sid = await waiting_session(store, "a", "b", session_id="s1")
    ev = answer("inv1", {"a": 1}, custom_metadata=_op("resume", "fiona", "budget ok"), timestamp=1000.0)
    stored = await store.append_event(sid, ev)
    redrive = Event(
        invocation_id="inv1", author="user", timestamp=1001.0, custom_metadata=_op("redrive", "rick", in_doubt=["x@1"])
    )
    await store.append_event(sid, redrive)
    await store.append_event(sid, cancel("inv1"))
    await store.append_event(sid, user_msg("inv2", "a new invocation is not an operator write"))
    items = (await store.audit_log()).items
    assert [r.action for r in items] == ["cancel", "redrive", "answer"]  # newest first
    ans = items[2]
    assert (ans.operator, ans.reason, ans.session_id, ans.invocation_id) == ("fiona", "budget ok", "s1", "inv1")
    assert (ans.seq, ans.event_id, ans.at, ans.details) == (stored.seq, ev.id, 1000.0, {"ids": ["a"]})
    assert items[1].details == {"in_doubt": ["x@1"]} and items[1].operator == "rick"
    assert items[0].operator == "op"


async def test_a_rejected_answer_leaves_no_audit_row(store: SessionStore) -> None:
    sid = await waiting_session(store, "a", session_id="s1")
    await store.append_event(sid, answer("inv1", {"a": 1}))
    with pytest.raises(AlreadyResolvedError):
        await store.append_event(sid, answer("inv1", {"a": 2}, custom_metadata=_op("resume", "late")))
    assert [r.operator for r in (await store.audit_log()).items] == [None]


async def test_audit_filters_and_pagination(store: SessionStore) -> None:
    ids = [f"q{n}" for n in range(7)]
    for sid in ("s1", "s2"):
        await waiting_session(store, *ids, session_id=sid)
    expected = []
    for n, iid in enumerate(ids):
        for sid in ("s1", "s2"):
            who = "ann" if n % 2 else "bob"
            ts = 2000.0 + n  # ties between sessions: the insertion order breaks them
            await store.append_event(sid, answer("inv1", {iid: n}, custom_metadata=_op("resume", who), timestamp=ts))
            expected.append((sid, iid, who, ts))
    newest_first = list(reversed(expected))
    got, cursor = [], None
    while True:
        page = await store.audit_log(limit=3, cursor=cursor)
        got += [(r.session_id, r.details["ids"][0], r.operator, r.at) for r in page.items]
        cursor = page.next_cursor
        if cursor is None:
            break
    assert got == newest_first
    assert {r.operator for r in (await store.audit_log(operator="ann", limit=100)).items} == {"ann"}
    assert len((await store.audit_log(operator="ann", limit=100)).items) == 6
    assert {r.session_id for r in (await store.audit_log(session_id="s2", limit=100)).items} == {"s2"}
    window = (await store.audit_log(since=2002.0, until=2004.0, limit=100)).items
    assert sorted({r.at for r in window}) == [2002.0, 2003.0]
    assert (await store.audit_log(action="cancel")).items == []
    assert len((await store.audit_log(action="answer", session_id="s1", operator="bob", limit=100)).items) == 4
    with pytest.raises(ValueError, match="cursor"):
        await store.audit_log(cursor="not a cursor")


async def test_import_is_audited_in_its_transaction(store: SessionStore) -> None:
    sid = await waiting_session(store, "a", session_id="orig")
    await store.append_event(sid, answer("inv1", {"a": 1}, custom_metadata=_op("resume", "fiona")))
    lines = [line async for line in store.export_session(sid)]
    session = await store.import_session(lines, session_id="copy", operator="ivan", reason="restore", source="x.jsonl")
    assert session.id == "copy"
    imports = (await store.audit_log(action="import")).items
    assert len(imports) == 1
    rec = imports[0]
    assert (rec.operator, rec.reason, rec.session_id, rec.seq) == ("ivan", "restore", "copy", None)
    assert rec.details == {"events": 5, "source": "x.jsonl", "original_id": "orig"}
    # The imported log's own operator events are audited like any append.
    assert [r.operator for r in (await store.audit_log(session_id="copy", action="answer")).items] == ["fiona"]
    # A bad file writes neither the session nor an audit row.
    bad = [*lines[:3], "{not json\n", *lines[3:]]
    before = (await store.audit_log(limit=100)).items
    with pytest.raises(ImportFormatError, match="line 4"):
        await store.import_session(bad, session_id="copy2", operator="ivan")
    assert (await store.audit_log(limit=100)).items == before
    with pytest.raises(SessionNotFoundError):
        await store.get_session("copy2")


# --------------------------------------------------------------- snapshots, r/o


async def test_an_older_snapshot_never_replaces_a_newer_one(store: SessionStore) -> None:
    await store.create_session("app", "u", "s1")
    await store.put_snapshot("s1", "i1", 9, {"position": 9})
    await store.put_snapshot("s1", "i1", 4, {"position": 4})  # a slow writer finishing late
    assert await store.get_snapshot("s1", "i1") == (9, {"position": 9})
    await store.put_snapshot("s1", "i1", 9, {"position": 9, "again": True})
    assert await store.get_snapshot("s1", "i1") == (9, {"position": 9, "again": True})


@pytest.mark.parametrize("kind", KINDS)
async def test_read_only_store_rejects_lease_writes_and_serves_reads(kind: str, tmp_path: Path) -> None:
    if kind == "memory":
        ro = await open_store(kind, tmp_path, read_only=True)
        sid = None
    else:
        writer = await open_store(kind, tmp_path)
        sid = await waiting_session(writer, "a", session_id="s1")
        await writer.acquire_lease(sid, "inv1", "A", TTL)
        await writer.append_event(sid, answer("inv1", {"a": 1}, custom_metadata=_op("resume", "fiona")))
        await writer.close()
        ro = await open_store(kind, tmp_path, path=location(writer), read_only=True)
    try:
        for coro in (
            ro.acquire_lease("s1", "inv1", "B", TTL, steal_from="A"),
            ro.renew_lease("s1", "inv1", "A", TTL),
            ro.release_lease("s1", "inv1", "A"),
        ):
            with pytest.raises(ReadOnlyError, match="read-only"):
                await coro
        if sid is not None:
            assert (await ro.get_lease(sid, "inv1")).owner == "A"
            assert [x.owner for x in await ro.list_leases(sid)] == ["A"]
            assert [r.operator for r in (await ro.audit_log()).items] == ["fiona"]
            json.dumps([r.model_dump() for r in (await ro.audit_log()).items])  # JSON-safe
    finally:
        await ro.close()
