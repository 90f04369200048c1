"""Owners of open interrupts on every backend: claim / assign / release are audited
events, the index row carries the current owner, a stale ``previous`` is refused
(racing claims: exactly one wins), imports keep owners, and an answer ends them."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from engine import ownership
from engine.ownership import OwnedByOtherError
from engine.permissions import Policy
from engine.projection import project
from engine.store.base import SessionStore
from engine.store.owner_index import NotOpenError, OwnerChangedError

from .builders import answer, interrupt, waiting_session


async def owners(store: SessionStore, sid: str, *ids: str) -> dict[str, str | None]:
    return {r.interrupt_id: r.owner for r in await store.lookup_interrupts(sid, list(ids))}


async def test_claim_assign_release_are_audited_events(store: SessionStore) -> None:
    sid = await waiting_session(store, "a", "b")
    out = await ownership.claim(store, sid, ["a"], operator="ann", reason="mine")
    assert out.error is None and out.ids == ["a"] and out.previous == {"a": None}
    row = (await store.lookup_interrupts(sid, ["a"]))[0]
    assert row.owner == "ann" and row.owned_at == out.written[0].timestamp
    out = await ownership.assign(store, sid, invocation_id="inv1", to="bob", operator="ann", reason="handover")
    assert out.error is None and sorted(out.ids) == ["a", "b"]
    assert await owners(store, sid, "a", "b") == {"a": "bob", "b": "bob"}
    out = await ownership.release(store, sid, ["b"], operator="bob")
    assert out.error is None
    assert await owners(store, sid, "a", "b") == {"a": "bob", "b": None}
    audit = [(r.action, r.operator, r.reason, r.details) for r in (await store.audit_log(session_id=sid)).items][::-1]
    assert audit == [
        ("claim", "ann", "mine", {"ids": ["a"], "owner": "ann", "previous": {"a": None}}),
        ("assign", "ann", "handover", {"ids": ["a", "b"], "owner": "bob", "previous": {"a": "ann", "b": None}}),
        ("release", "bob", None, {"ids": ["b"], "owner": None, "previous": {"b": "bob"}}),
    ]
    # The projection folds the same events: the session screen reads the owner there.
    proj = project([(se.seq, se.event) for se in await store.events(sid)])
    assert {i.id: i.owner for i in proj.open_interrupts("inv1")} == {"a": "bob", "b": None}
    assert [se.event.kind for se in await store.events(sid)][-3:] == ["claim", "assign", "release"]


async def test_someone_elses_claim_needs_force(store: SessionStore) -> None:
    sid = await waiting_session(store, "a")
    await ownership.claim(store, sid, ["a"], operator="ann")
    n = len(await store.events(sid))
    out = await ownership.claim(store, sid, ["a"], operator="bob")
    assert isinstance(out.error, OwnedByOtherError) and "claimed by ann" in (out.refusal or "")
    assert "nothing was written" in (out.refusal or "") and len(await store.events(sid)) == n
    out = await ownership.claim(store, sid, ["a"], operator="bob", force=True)
    assert out.error is None and (await owners(store, sid, "a")) == {"a": "bob"}
    assert out.written[0].custom_metadata["forced"] is True


async def test_a_group_member_claims_what_the_group_was_given(store: SessionStore) -> None:
    policy = Policy(groups={"finance": frozenset({"ann"})})
    sid = await waiting_session(store, "a")
    out = await ownership.assign(store, sid, ["a"], to="@nope", operator="lead", policy=policy)
    assert "no group 'nope'" in (out.refusal or "")
    assert (await ownership.assign(store, sid, ["a"], to="@finance", operator="lead", policy=policy)).error is None
    assert (await ownership.claim(store, sid, ["a"], operator="zed", policy=policy)).error is not None
    assert (await ownership.claim(store, sid, ["a"], operator="ann", policy=policy)).error is None
    assert await owners(store, sid, "a") == {"a": "ann"}


async def test_stale_previous_is_refused_by_the_store(store: SessionStore) -> None:
    """The store's own check, whatever the caller read: an event whose ``previous``
    no longer holds is refused and nothing of it is kept."""
    sid = await waiting_session(store, "a")
    await ownership.claim(store, sid, ["a"], operator="ann")
    stale = ownership._event("claim", "inv1", [ownership.Target("inv1", "a", None, None)], "bob", "bob", None, False)
    with pytest.raises(OwnerChangedError, match="owned by ann"):
        await store.append_event(sid, stale)
    assert await owners(store, sid, "a") == {"a": "ann"}


async def test_racing_claims_exactly_one_wins(store: SessionStore) -> None:
    sid = await waiting_session(store, "a", "b", "c")
    names = [f"op{i}" for i in range(8)]
    outs = await asyncio.gather(*(ownership.claim(store, sid, ["a", "b", "c"], operator=n) for n in names))
    winners = [o for o in outs if o.error is None]
    assert len(winners) == 1
    w = winners[0].operator
    assert await owners(store, sid, "a", "b", "c") == {"a": w, "b": w, "c": w}
    for o in outs:
        if o.error is not None:
            assert f"by {w}" in o.refusal or f"owned by {w}" in o.refusal
    claims = [r for r in (await store.audit_log(session_id=sid)).items if r.action == "claim"]
    assert len(claims) == 1


async def test_an_answer_ends_ownership_and_closed_ids_are_refused(store: SessionStore) -> None:
    sid = await waiting_session(store, "a", "b")
    await ownership.claim(store, sid, ["a", "b"], operator="ann")
    await store.append_event(sid, answer("inv1", {"a": 1}))
    rows = {r.interrupt_id: r for r in await store.lookup_interrupts(sid, ["a", "b"])}
    assert rows["a"].status == "resolved" and rows["b"].owner == "ann"
    out = await ownership.claim(store, sid, ["a"], operator="bob")
    assert isinstance(out.error, NotOpenError)
    mine = await store.open_interrupts(session_id=sid)
    assert [(r.interrupt_id, r.owner) for r in mine.items] == [("b", "ann")]


async def test_a_raised_again_id_is_nobodys(store: SessionStore) -> None:
    sid = await waiting_session(store, "a")
    await ownership.claim(store, sid, ["a"], operator="ann")
    await store.append_event(sid, answer("inv1", {"a": 1}))
    await store.append_event(sid, interrupt("inv1", "a", path="wf@1/ask@2"))
    assert await owners(store, sid, "a") == {"a": None}


async def test_import_keeps_owners(store: SessionStore, tmp_path: Path) -> None:
    sid = await waiting_session(store, "a", "b")
    await ownership.claim(store, sid, ["a", "b"], operator="ann")
    await ownership.release(store, sid, ["b"], operator="ann")
    lines = [line async for line in store.export_session(sid)]
    copy = await store.import_session(lines, session_id="copy")
    assert await owners(store, copy.id, "a", "b") == {"a": "ann", "b": None}


async def test_the_home_counts_yours(store: SessionStore) -> None:
    import time

    from console.widgets.summary import summary_text
    from engine.home import home_summary

    sid = await waiting_session(store, "a", "b", "c")
    now = time.time()
    assert "yours" not in summary_text(await home_summary(store, now), now, 300, operator="ann").plain
    await ownership.claim(store, sid, ["a", "b"], operator="ann")
    await ownership.assign(store, sid, ["c"], to="bob", operator="ann")
    summary = await home_summary(store, now)
    assert (summary.yours("ann"), summary.yours("bob"), summary.yours("zed")) == (2, 1, 0)
    assert "2 yours" in summary_text(summary, now, 300, operator="ann").plain
    await store.append_event(sid, answer("inv1", {"a": True}))  # an answer ends the claim
    assert (await home_summary(store, now)).yours("ann") == 1
