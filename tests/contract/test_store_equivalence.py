"""Property: every backend gives the same observable result as MemoryStore (the
reference) for any sequence of appends, including rejected ones."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.errors import HitlError
from engine.models import Event, NodeStatus
from engine.store.base import SessionStore

from .builders import KINDS, answer, cancel, dump, end, interrupt, open_store, start, user_msg

IDS = ["a", "b", "c", "d"]
INVS = ["i1", "i2"]
SIDS = ["s1", "s2"]

op = st.one_of(
    st.tuples(st.just("msg"), st.sampled_from(INVS), st.booleans()),
    st.tuples(st.just("start"), st.sampled_from(INVS)),
    st.tuples(st.just("raise"), st.sampled_from(INVS), st.lists(st.sampled_from(IDS), min_size=1, max_size=2)),
    st.tuples(st.just("end"), st.sampled_from(INVS), st.sampled_from(list(NodeStatus))),
    st.tuples(st.just("answer"), st.sampled_from(INVS), st.lists(st.sampled_from(IDS), min_size=1, max_size=3)),
    st.tuples(st.just("cancel"), st.sampled_from(INVS)),
    st.tuples(st.just("stale"), st.sampled_from(INVS)),
)
scripts = st.lists(st.tuples(st.sampled_from(SIDS), op), min_size=1, max_size=25)


def build(n: int, item: tuple[Any, ...]) -> tuple[Event, int | None]:
    """The event for one script step (same object for every store) and its expected_seq."""
    kind, inv, *rest = item
    ts = 1000.0 + (n * 7) % 11  # out-of-order timestamps with ties
    if kind == "msg":
        delta = {"k": n, "temp:t": n} if rest[0] else None
        return user_msg(inv, f"m{n}", state_delta=delta, timestamp=ts), None
    if kind == "start":
        return start(inv, timestamp=ts), None
    if kind == "raise":
        return interrupt(inv, *dict.fromkeys(rest[0]), path=f"wf@1/ask@{n}", ts=ts), None
    if kind == "end":
        return end(inv, rest[0], timestamp=ts), None
    if kind == "answer":
        return answer(inv, {i: n for i in rest[0]}, timestamp=ts), None
    if kind == "cancel":
        return cancel(inv), None
    return user_msg(inv, "stale", timestamp=ts), 10_000


async def observe(store: SessionStore) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for sid in SIDS:
        d = await dump(store, sid)
        for key in ("created_at", "updated_at"):
            d["session"].pop(key)
            for row in d["summary"]:
                row.pop(key)
        out[sid] = d
    inbox = []
    cursor = None
    while True:
        page = await store.open_interrupts(limit=3, cursor=cursor)
        inbox += [r.model_dump() for r in page.items]
        if (cursor := page.next_cursor) is None:
            break
    out["inbox"] = inbox
    return out


@given(script=scripts)
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@pytest.mark.parametrize("kind", [k for k in KINDS if k != "memory"])
def test_backend_matches_memory_store(kind: str, tmp_path_factory: pytest.TempPathFactory, script: list) -> None:
    async def body() -> None:
        ref = await open_store("memory", tmp_path_factory.getbasetemp())
        other = await open_store(kind, tmp_path_factory.mktemp("eq"))
        try:
            for store in (ref, other):
                for sid in SIDS:
                    await store.create_session(f"app-{sid}", "u", sid, state={"init": 1})
            for n, (sid, item) in enumerate(script):
                event, expected_seq = build(n, item)
                outcomes = []
                for store in (ref, other):
                    try:
                        stored = await store.append_event(sid, event, expected_seq=expected_seq)
                        outcomes.append(("ok", stored.seq, stored.event))
                    except HitlError as e:
                        outcomes.append((type(e).__name__, getattr(e, "ids", None)))
                assert outcomes[0] == outcomes[1], (n, item)
            assert await observe(other) == await observe(ref)
        finally:
            await ref.close()
            await other.close()

    asyncio.run(body())
