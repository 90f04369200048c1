"""The SessionStore contract: ``overview`` (the home summary's counts) -- on every backend."""

from __future__ import annotations

import pytest

from engine.home import summarize
from engine.models import NodeStatus
from engine.store.base import SessionStore

from .builders import answer, end, start, user_msg, waiting_session

T0 = 1_800_000_000.0
HOUR = 3600.0


async def test_overview_of_an_empty_store(store: SessionStore) -> None:
    o = await store.overview(since=T0, bucket=HOUR, buckets=3)
    assert (o.status_counts, o.open_by_app, o.oldest_open_at, o.raised, o.running) == ({}, {}, None, [0, 0, 0], [])


async def test_overview_counts_states_apps_and_raised_per_hour(store: SessionStore) -> None:
    await waiting_session(store, "a1", "a2", app="refunds", session_id="w1", ts=T0 + 10)
    await waiting_session(store, "b1", app="refunds", session_id="w2", ts=T0 + HOUR + 5)
    await waiting_session(store, "c1", app="labels", session_id="w3", ts=T0 + 2 * HOUR + 1)
    await waiting_session(store, "old", app="labels", session_id="w4", ts=T0 - 10)  # before the window
    await store.append_event("w4", answer("inv1", {"old": True}))  # answered (the session stays waiting until a turn ends it)
    await waiting_session(store, "gone", app="labels", session_id="w5", ts=T0 + 20)
    await store.append_event("w5", answer("inv1", {"gone": 1}))  # resolved, raised in the window
    s = await store.create_session("jobs", "u", "r1")  # running, no lease: interrupted mid-run
    for ev in (user_msg("inv1"), start("inv1")):
        await store.append_event(s.id, ev)
    f = await store.create_session("jobs", "u", "f1")
    for ev in (user_msg("inv1"), start("inv1"), end("inv1", NodeStatus.FAILED)):
        await store.append_event(f.id, ev)

    o = await store.overview(since=T0, bucket=HOUR, buckets=3)
    assert o.status_counts.get("waiting") == 5 and o.status_counts.get("running") == 1
    assert o.status_counts.get("failed") == 1
    assert o.open_by_app == {"refunds": 3, "labels": 1}
    assert o.oldest_open_at == pytest.approx(T0 + 10)
    assert o.raised == [3, 1, 1]  # a1, a2, gone | b1 | c1 -- old is before the window
    assert o.running == [("r1", "inv1", None, None)]

    summary = summarize(o)
    assert (summary.waiting, summary.interrupted, summary.running, summary.failed) == (5, 1, 0, 1)
    assert summary.open_by_app == (("refunds", 3), ("labels", 1))

    await store.acquire_lease("r1", "inv1", "someone-else", 60.0)  # a live lease: running, not interrupted
    o = await store.overview(since=T0, bucket=HOUR, buckets=3)
    assert [(r[0], r[2]) for r in o.running] == [("r1", "someone-else")]
    summary = summarize(o)
    assert (summary.interrupted, summary.running) == (0, 1)
