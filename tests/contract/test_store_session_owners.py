"""A session's owners in the sessions listing, on every backend: the owners of its
open interrupts (read from the interrupts' owner index with the row), and the
listing's owner filter (a NAME, a ``@group``, ``""`` for a session with an open
interrupt nobody owns). The plain-sqlite3 listing of ``hitl sessions`` reads the
same column."""

from __future__ import annotations

from pathlib import Path

from engine import ownership
from engine.store.base import SessionStore
from engine.store.sqlite.session_rows import list_session_rows

from .builders import answer, open_store, waiting_session


async def listed(store: SessionStore, **filters: object) -> dict[str, list[str]]:
    return {s.id: s.owners for s in (await store.list_sessions(limit=100, **filters)).items}


async def test_the_listing_shows_and_filters_by_the_owners_of_open_interrupts(store: SessionStore) -> None:
    one = await waiting_session(store, "a", "b", "c", session_id="one")
    two = await waiting_session(store, "x", session_id="two")
    await waiting_session(store, "y", session_id="none")
    assert await listed(store) == {"one": [], "two": [], "none": []}
    assert (await ownership.claim(store, one, ["b"], operator="zoe")).error is None
    assert (await ownership.assign(store, one, ["a"], to="ann", operator="lead")).error is None
    assert (await ownership.claim(store, two, ["x"], operator="ann")).error is None
    assert await listed(store) == {"one": ["ann", "zoe"], "two": ["ann"], "none": []}  # sorted, distinct
    assert await listed(store, owner="ann") == {"one": ["ann", "zoe"], "two": ["ann"]}
    assert await listed(store, owner="zoe") == {"one": ["ann", "zoe"]}
    assert await listed(store, owner="") == {"one": ["ann", "zoe"], "none": []}  # c is nobody's
    assert await listed(store, owner="bob") == {}
    assert await listed(store, owner="ann", order="oldest_open") == {"one": ["ann", "zoe"], "two": ["ann"]}
    # an answered interrupt is no longer the session's: its (ended) claim leaves the list
    await store.append_event(two, answer("inv1", {"x": {"ok": True}}))
    assert (await listed(store))["two"] == []
    assert await listed(store, owner="ann") == {"one": ["ann", "zoe"]}


async def test_the_plain_sqlite3_listing_reads_the_same_owners(tmp_path: Path) -> None:
    path = tmp_path / "listing.sqlite"
    store = await open_store("sqlite", tmp_path, path=path)
    try:
        one = await waiting_session(store, "a", "b", session_id="one")
        await waiting_session(store, "y", session_id="none")
        await ownership.claim(store, one, ["a"], operator="zoe")
        await ownership.assign(store, one, ["b"], to="bob", operator="lead")
        via_store = {s.id: s.model_dump() for s in (await store.list_sessions()).items}
    finally:
        await store.close()
    rows = list_session_rows(path)
    assert rows is not None
    assert {r.id: r.summary_dict() for r in rows.items} == via_store
    assert via_store["one"]["owners"] == ["bob", "zoe"]
    unowned = list_session_rows(path, owner="")
    assert unowned is not None and [r.id for r in unowned.items] == ["none"]
