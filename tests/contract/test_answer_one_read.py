"""An answer reads its interrupts once (:func:`engine.operations.answer`): the
rows name the session's app, the owner/permission gate checks them, and the
runner validates against them. One read serves three readers, so these tests
hold the read to what the separate reads protected: a read that went stale
before the first write (another operator answered, or claimed the interrupt)
still writes nothing, on every store; and a start reads its session once."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from engine import Content, Runner, operations
from engine.apps import AppRegistry
from engine.store.base import SessionStore
from engine.store.sqlite import SQLiteStore
from tests.engine.test_turn_cost import SIMPLE, Traced


def _registry() -> AppRegistry:
    reg = AppRegistry()
    reg.register("app", SIMPLE)
    return reg


async def _waiting(store: SessionStore) -> str:
    async for _ in Runner("app", SIMPLE, store).run("u", "s", Content.from_text("go")):
        pass
    return (await store.open_interrupts(session_id="s", limit=1)).items[0].interrupt_id


async def _answers_of(store: SessionStore, iid: str) -> int:
    return sum(
        1 for e in await store.events("s") if e.event.content is not None
        for fr in e.event.content.function_responses if fr.id == iid
    )


async def test_an_interrupt_answered_after_the_shared_read_is_refused_and_answered_once(
    store: SessionStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    import engine.answer_gate as gate
    from engine.permissions import Policy

    iid = await _waiting(store)
    check = gate.check

    async def racing(*args: Any, **kw: Any) -> Any:
        out = await check(*args, **kw)  # the gate passed on the shared read; then someone else answers
        async for _ in Runner("app", SIMPLE, store).run("u", "s", Content.from_responses({iid: False})):
            pass
        return out

    monkeypatch.setattr(gate, "check", racing)
    done = await operations.answer(store, "s", {iid: True}, registry=_registry, operator="ann", policy=Policy())
    assert not done.wrote and done.error_kind == "conflict", (done.error_kind, done.refusal)
    assert "nothing was written" in (done.refusal or "") or iid in (done.refusal or ""), done.refusal
    assert await _answers_of(store, iid) == 1


async def test_an_answer_refused_by_the_gate_on_the_shared_read_writes_nothing(store: SessionStore) -> None:
    from engine.ownership import claim
    from engine.permissions import Policy

    iid = await _waiting(store)
    assert (await claim(store, "s", [iid], operator="bob")).error is None
    last = (await store.get_session("s")).last_seq
    done = await operations.answer(store, "s", {iid: True}, registry=_registry, operator="ann", policy=Policy())
    assert done.refusal == f"interrupt {iid} is claimed by bob; nothing was written " \
        "(answer with force to answer it anyway, or ask them)"
    assert (await store.get_session("s")).last_seq == last


async def test_on_sqlite_an_answer_reads_its_interrupts_once_and_a_start_its_session_once(tmp_path: Path) -> None:
    """The statements the shared reads save on SQLite (the CLI's shape: no session
    handed in): one interrupt lookup where the gate and the runner each made one,
    and a start's one session read where operations and the runner each made one."""
    store = await SQLiteStore.open(tmp_path / "s.sqlite", inline=True)
    try:
        iid = await _waiting(store)

        def reads(t: Traced, table: str) -> int:
            return sum(1 for s in t.sql if s.startswith("SELECT") and f"FROM {table} WHERE" in s)

        with Traced(store) as t:
            done = await operations.answer(store, "s", {iid: True}, registry=_registry)
        assert done.wrote and done.error is None
        assert (reads(t, "interrupts"), reads(t, "sessions"), t.commits) == (1, 0, 2), t.sql
        with Traced(store) as t:
            started = await operations.start(store, "app", "new", "hello", user_id="u", registry=_registry)
        assert started.wrote and started.error is None
        assert (reads(t, "sessions"), t.commits) == (1, 3), t.sql
    finally:
        await store.close()
