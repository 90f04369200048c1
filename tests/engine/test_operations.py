"""engine.operations: the one implementation of answer / dry run / re-drive /
cancel that the CLI and the console call. Each write returns what it wrote,
what ran, the invocation before and after, or why nothing was written (and
then the store is unchanged)."""

from __future__ import annotations

import pytest

from engine import Content, Runner, operations
from engine.apps import AppRegistry
from engine.errors import HitlError
from engine.models import NodeStatus
from engine.store import MemoryStore
from tests.cli.helpers import count_loads
from tests.console.answer_store import fanout_wf


def registry() -> AppRegistry:
    reg = AppRegistry()
    reg.register("ops", fanout_wf)
    return reg


async def waiting() -> tuple[MemoryStore, str]:
    store = MemoryStore()
    async for _ in Runner("ops", fanout_wf, store).run("u", "s1", Content.from_text("T-1")):
        pass
    (inv,) = [i.invocation_id for i in await store.list_invocations("s1")]
    return store, inv


@pytest.fixture
def loads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every load of an invocation."""
    return count_loads(monkeypatch)


async def test_answer_returns_what_it_wrote_ran_and_changed_loading_the_invocation_once(loads: list[str]) -> None:
    store, inv = await waiting()
    steps: list[operations.Step] = []
    loads.clear()
    done = await operations.answer(store, "s1", {"fan-a": True}, registry=registry(), operator="ann",
                                   reason="ok", on_step=steps.append)
    assert done.error is None and done.refusal is None
    assert done.invocation_id == inv  # chosen by the Runner: the one waiting for op-a
    assert loads == [inv]  # the Runner's own load is the outcome's `before`
    assert [s.event for s in steps] == done.written
    assert [e.kind for e in done.written][0] == "response"
    assert done.ran == ["fanout@1", "fanout@1/ship_a@1"]  # the root re-executes, ship_a runs
    assert done.status_before == NodeStatus.WAITING and done.status_after == NodeStatus.WAITING
    assert done.still_open == ["fan-b"]
    assert done.before is not None and done.after is not None
    assert done.before.get(inv, "fanout@1/ship_a@1") is None
    shipped = done.after.get(inv, "fanout@1/ship_a@1")
    assert shipped is not None and shipped.status == NodeStatus.COMPLETED
    stored = [s.event.id for s in await store.events("s1")]
    assert stored[-len(done.written):] == [e.id for e in done.written]


async def test_session_state_gives_the_before_after_rows() -> None:
    store, inv = await waiting()
    done = await operations.answer(store, "s1", {"fan-a": True}, inv, registry=registry(), preload=True,
                                   session_state=True)
    assert done.state_before is not None and "shipped_a" not in done.state_before
    assert done.state_after is not None and "shipped_a" in done.state_after
    assert any(r.area == "state" and r.key == "shipped_a" for r in done.rows)
    assert any(r.area == "node" and "ship_a" in r.key for r in done.rows)


async def test_a_refused_answer_writes_nothing_and_says_why() -> None:
    store, inv = await waiting()
    last = (await store.get_session("s1")).last_seq
    done = await operations.answer(store, "s1", {"no-such": True}, inv, registry=registry(), preload=True)
    assert done.written == [] and done.error_kind == "rejected"
    assert isinstance(done.error, HitlError)
    assert done.refusal is not None and done.refusal.endswith("nothing was written")
    assert "no-such" in done.refusal
    assert done.status_before == NodeStatus.WAITING and done.status_after is None  # preloaded: known before
    assert (await store.get_session("s1")).last_seq == last
    with pytest.raises(HitlError):
        done.raise_error()


async def test_an_answer_without_the_app_code_is_refused_before_writing() -> None:
    store, inv = await waiting()
    last = (await store.get_session("s1")).last_seq
    done = await operations.answer(store, "s1", {"fan-a": True}, inv, registry=AppRegistry())
    assert done.written == [] and done.error_kind == "rejected" and "ops" in (done.refusal or "")
    assert (await store.get_session("s1")).last_seq == last


async def test_a_lost_race_is_a_conflict() -> None:
    store, inv = await waiting()
    first = await operations.answer(store, "s1", {"fan-a": True}, inv, registry=registry())
    again = await operations.answer(store, "s1", {"fan-a": False}, inv, registry=registry())
    assert first.wrote and not again.wrote
    assert again.error_kind == "conflict" and "fan-a" in (again.refusal or "")


async def test_dry_run_writes_nothing_and_says_whether_the_real_answer_would_run() -> None:
    store, inv = await waiting()
    last = (await store.get_session("s1")).last_seq
    dry = await operations.dry_run(store, "s1", {"fan-a": True}, inv, app_name="ops", registry=registry)
    assert dry.would_run and dry.plan.resolves == ["fan-a"] and dry.plan.runs_anything
    blind = await operations.dry_run(store, "s1", {"fan-a": True}, inv, app_name="ops", registry=AppRegistry())
    assert not blind.would_run and blind.next_runs is None and "ops" in (blind.refusal or "")
    with pytest.raises(HitlError):  # what the real answer would raise
        await operations.dry_run(store, "s1", {"no-such": True}, inv, app_name="ops", registry=registry())
    assert (await store.get_session("s1")).last_seq == last


async def test_cancel_closes_the_open_interrupts_with_the_callers_projection(loads: list[str]) -> None:
    from engine.resume import load_invocation

    store, inv = await waiting()
    before = await load_invocation(store, "s1", inv)
    loads.clear()
    done = await operations.cancel(store, "s1", inv, operator="ann", reason="dup", before=before)
    assert done.error is None and [e.kind for e in done.written] == ["cancel"]
    assert done.before is before
    assert done.status_before == NodeStatus.WAITING and done.status_after == NodeStatus.CANCELLED
    assert done.still_open == []
    assert inv in loads  # cancel_invocation checks the invocation itself (under its lease)
    again = await operations.cancel(store, "s1", inv, reason="again")
    assert again.written == [] and again.error_kind == "rejected" and "cancel" in (again.refusal or "")


async def test_redrive_of_a_waiting_invocation_is_refused_and_writes_nothing() -> None:
    store, inv = await waiting()
    last = (await store.get_session("s1")).last_seq
    done = await operations.redrive(store, "s1", inv, registry=registry(), preload=True)
    assert done.written == [] and done.error_kind == "rejected" and done.refusal
    assert done.status_before == NodeStatus.WAITING
    assert (await store.get_session("s1")).last_seq == last


async def test_a_missing_session_is_a_refusal_not_an_exception() -> None:
    store = MemoryStore()
    for done in (
        await operations.answer(store, "nope", {"x": 1}, registry=registry()),
        await operations.redrive(store, "nope", "inv", registry=registry()),
        await operations.cancel(store, "nope", "inv", reason="r"),
    ):
        assert done.written == [] and done.error_kind == "rejected" and "nope" in (done.refusal or "")
