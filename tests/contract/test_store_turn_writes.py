"""The SessionStore contract, continued: a turn's first and last writes in one
transaction each (capabilities ``acquire_and_append`` and ``append_and_release``,
:data:`engine.store.base.Capability`) -- on every backend, all of which offer them.
Each refusal writes nothing: no event, no lease row changed, no snapshot."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from engine.errors import AlreadyResolvedError, ConflictError, InvocationBusyError, LeaseLostError, SessionNotFoundError
from engine.store.base import SessionStore, has_capability

from .builders import KINDS, answer, dump, open_store, start, user_msg

TTL = 60.0


@pytest.fixture(params=KINDS)
async def store(request: pytest.FixtureRequest, tmp_path: Path):
    s = await open_store(request.param, tmp_path)
    assert has_capability(s, "acquire_and_append") and has_capability(s, "append_and_release")
    yield s
    await s.close()


async def _all(store: SessionStore, sid: str, inv: str = "i1") -> tuple[Any, ...]:
    """Everything a refused turn write must leave as it was."""
    return await dump(store, sid), await store.get_lease(sid, inv), await store.get_snapshot(sid, inv)


# ------------------------------------------------------------ acquire_and_append


async def test_acquire_and_append_takes_the_lease_writes_the_events_and_returns_the_state(
    store: SessionStore,
) -> None:
    await store.create_session("app", "u", "s1", state={"k": 1})
    lease, written, state = await store.acquire_and_append(
        "s1", "i1", [user_msg("i1", state_delta={"x": 2}), start("i1")], owner="A", ttl=TTL, expected_seq=0
    )
    assert (lease.session_id, lease.invocation_id, lease.owner) == ("s1", "i1", "A")
    assert lease.acquired_at == lease.renewed_at and lease.expires_at == pytest.approx(lease.renewed_at + TTL)
    assert await store.get_lease("s1", "i1") == lease
    assert [w.seq for w in written] == [1, 2]
    assert [(e.seq, e.event.id) for e in await store.events("s1")] == [(w.seq, w.event.id) for w in written]
    assert state == {"k": 1, "x": 2}
    assert (await store.get_session("s1")).state == state
    [inv] = await store.list_invocations("s1")
    assert (inv.invocation_id, inv.status) == ("i1", "running")
    # The owner again: renewed, acquired_at kept; invocation_after = the last event seen.
    await asyncio.sleep(0.01)
    again, more, _ = await store.acquire_and_append(
        "s1", "i1", [user_msg("i1", "more")], owner="A", ttl=TTL, invocation_after=2
    )
    assert again.acquired_at == lease.acquired_at and again.expires_at > lease.expires_at
    assert [w.seq for w in more] == [3]


async def test_acquire_and_append_refuses_a_live_lease_of_another_owner_and_writes_nothing(
    store: SessionStore,
) -> None:
    await store.create_session("app", "u", "s1")
    held = await store.acquire_lease("s1", "i1", "A", TTL)
    before = await _all(store, "s1")
    with pytest.raises(InvocationBusyError, match="i1 is running right now") as info:
        await store.acquire_and_append("s1", "i1", [user_msg("i1")], owner="B", ttl=TTL)
    assert info.value.lease == held
    assert await _all(store, "s1") == before


async def test_acquire_and_append_takes_over_an_expired_lease(store: SessionStore) -> None:
    await store.create_session("app", "u", "s1")
    await store.acquire_lease("s1", "i1", "A", 0.0)  # lapsed at once
    lease, written, _ = await store.acquire_and_append("s1", "i1", [user_msg("i1")], owner="B", ttl=TTL)
    assert lease.owner == "B" and (await store.get_lease("s1", "i1")) == lease
    assert [w.seq for w in written] == [1]
    with pytest.raises(LeaseLostError):  # A is fenced out
        await store.append_event("s1", user_msg("i1", "zombie"), lease_owner="A")


async def test_acquire_and_append_refuses_an_invocation_that_moved_on(store: SessionStore) -> None:
    await store.create_session("app", "u", "s1")
    await store.append_event("s1", user_msg("i1"))
    await store.append_event("s1", user_msg("i2"))  # another invocation: does not count
    await store.append_event("s1", start("i1"))  # seq 3, after the reader's 1
    before = await _all(store, "s1")
    with pytest.raises(ConflictError, match="invocation i1 changed since event 1"):
        await store.acquire_and_append("s1", "i1", [user_msg("i1", "late")], owner="A", ttl=TTL, invocation_after=1)
    assert await _all(store, "s1") == before  # no lease row either
    _, written, _ = await store.acquire_and_append(
        "s1", "i1", [user_msg("i1", "now")], owner="A", ttl=TTL, invocation_after=3
    )
    assert [w.seq for w in written] == [4]


async def test_acquire_and_append_checks_expected_seq_and_the_session(store: SessionStore) -> None:
    with pytest.raises(SessionNotFoundError):
        await store.acquire_and_append("nope", "i1", [user_msg("i1")], owner="A", ttl=TTL)
    await store.create_session("app", "u", "s1")
    await store.append_event("s1", user_msg("i0"))
    before = await _all(store, "s1")
    with pytest.raises(ConflictError, match="now at event 1, expected 0"):
        await store.acquire_and_append("s1", "i1", [user_msg("i1")], owner="A", ttl=TTL, expected_seq=0)
    assert await _all(store, "s1") == before


async def test_acquire_and_append_is_all_or_nothing_with_the_lease(store: SessionStore) -> None:
    """A batch refused by a later check (an answer to an id never asked) leaves
    the lease as it was: not taken, and a renewal by its owner rolled back."""
    await store.create_session("app", "u", "s1")
    bad = [user_msg("i1"), answer("i1", {"q9": 1})]
    before = await _all(store, "s1")
    with pytest.raises(AlreadyResolvedError, match="q9"):
        await store.acquire_and_append("s1", "i1", bad, owner="A", ttl=TTL)
    assert await _all(store, "s1") == before
    await store.acquire_lease("s1", "i1", "A", 5.0)
    before = await _all(store, "s1")
    with pytest.raises(AlreadyResolvedError):
        await store.acquire_and_append("s1", "i1", bad, owner="A", ttl=TTL)
    assert await _all(store, "s1") == before  # the lease's renewal went with the events


# ------------------------------------------------------------ append_and_release


async def test_append_and_release_writes_events_snapshot_and_releases(store: SessionStore) -> None:
    await store.create_session("app", "u", "s1")
    await store.acquire_and_append("s1", "i1", [user_msg("i1")], owner="A", ttl=TTL)
    written = await store.append_and_release(
        "s1", "i1", [start("i1"), user_msg("i1", "b")], owner="A", expected_seq=1, snapshot=(3, {"position": 3})
    )
    assert [w.seq for w in written] == [2, 3]
    assert [e.seq for e in await store.events("s1")] == [1, 2, 3]
    assert await store.get_lease("s1", "i1") is None
    assert await store.get_snapshot("s1", "i1") == (3, {"position": 3})
    # A cache: an older snapshot never replaces a newer one.
    await store.acquire_lease("s1", "i1", "A", TTL)
    await store.append_and_release("s1", "i1", [user_msg("i1", "c")], owner="A", snapshot=(2, {"position": 2}))
    assert await store.get_snapshot("s1", "i1") == (3, {"position": 3})
    assert await store.get_lease("s1", "i1") is None


async def test_append_and_release_is_fenced_and_writes_nothing_when_refused(store: SessionStore) -> None:
    await store.create_session("app", "u", "s1")
    with pytest.raises(LeaseLostError):  # nobody holds it
        await store.append_and_release("s1", "i1", [user_msg("i1")], owner="A", snapshot=(1, {"position": 1}))
    await store.acquire_lease("s1", "i1", "A", TTL)
    await store.acquire_lease("s1", "i1", "B", TTL, steal_from="A")
    before = await _all(store, "s1")
    with pytest.raises(LeaseLostError, match="now held by B"):
        await store.append_and_release("s1", "i1", [user_msg("i1")], owner="A", snapshot=(1, {"position": 1}))
    assert await _all(store, "s1") == before  # B's lease kept, no event, no snapshot
    await store.append_event("s1", user_msg("i2"))
    before = await _all(store, "s1")
    with pytest.raises(ConflictError, match="now at event 1, expected 0"):
        await store.append_and_release(
            "s1", "i1", [user_msg("i1")], owner="B", expected_seq=0, snapshot=(2, {"position": 2})
        )
    assert await _all(store, "s1") == before  # the lease is still held: the turn can write otherwise
    with pytest.raises(SessionNotFoundError):
        await store.append_and_release("nope", "i1", [user_msg("i1")], owner="B")
