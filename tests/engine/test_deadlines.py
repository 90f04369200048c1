"""Deadlines with a default outcome, reminders and escalation (engine.deadlines,
engine.deadline_sweep), on the in-memory store, SQLite and PostgreSQL.

Time is the sweep's injected clock: a test asks for "4 h later" by passing a
clock, never by sleeping."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from engine import Content, RequestInput, Runner
from engine.apps import AppRegistry
from engine.deadline_sweep import DeadlineSweep
from engine.deadlines import DeadlineConfigError, answer, escalate, load_rules, notify, remind
from engine.permissions import Policy
from engine.resume import load_invocation
from engine.store.base import SessionStore
from engine.store.deadlines import timers
from engine.worker import Worker
from tests.contract.builders import open_store
from tests.engine import deadline_app as app

HOUR = 3600.0


@pytest.fixture(params=["memory", "sqlite", "postgres"])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[SessionStore]:
    # the memory store with its worker queue, as the SQL stores have theirs: a Worker serves the sweep's answers
    s = await open_store(request.param, tmp_path, **({"workers": True} if request.param == "memory" else {}))
    try:
        yield s
    finally:
        await s.close()


def registry(workflow: Any = app.workflow) -> AppRegistry:
    reg = AppRegistry(samples=False)
    reg.register(app.APP, workflow)
    return reg


async def start(store: SessionStore, sid: str, workflow: Any = app.workflow, rules: tuple[Any, ...] = ()) -> str:
    runner = Runner(app.APP, workflow, store, deadline_rules=rules)
    events = [e async for e in runner.run("u", sid, Content.from_text(f"order-{sid}"))]
    return events[0].invocation_id


def at(offset: float) -> Any:
    """A clock ``offset`` seconds from now (fixed: the test decides when it is)."""
    t = time.time() + offset
    return lambda: t


async def settle(store: SessionStore, sid: str, inv: str, workflow: Any = app.workflow) -> None:
    """Run the turn the default answer left for a worker (stores with turn requests), to its end."""
    if not hasattr(store, "request_turn"):
        return
    w = Worker(store, {app.APP: workflow}, heartbeat=3600, deadlines=False)
    task = asyncio.ensure_future(w.run())
    try:
        for _ in range(2000):  # bounded: the worker claims the request at once
            proj = await load_invocation(store, sid, inv)
            if proj.invocation_status(inv).is_final and not await store.turn_requests():  # type: ignore[attr-defined]
                return
            await asyncio.sleep(0.01)
        raise AssertionError(f"the turn of {sid} did not settle")
    finally:
        w.stop()
        await task


async def audit(store: SessionStore, **kw: Any) -> list[Any]:
    return list((await store.audit_log(limit=1000, **kw)).items)


# ------------------------------------------------------------------ built
def test_a_bad_default_answer_is_refused_when_built_in_one_line() -> None:
    with pytest.raises(DeadlineConfigError) as err:
        RequestInput("Approve?", response_schema=app.SCHEMA, interrupt_id="a", deadline=timedelta(hours=4),
                     on_deadline=answer({"approved": "perhaps"}))
    line = str(err.value)
    assert "\n" not in line
    assert line == ("RequestInput a: the default answer {'approved': 'perhaps'} does not fit the response schema: "
                    "approved: expected boolean, got \"perhaps\"")


def test_deadline_needs_an_outcome_and_a_duration() -> None:
    with pytest.raises(DeadlineConfigError, match="on_deadline="):
        RequestInput("x", interrupt_id="a", deadline=timedelta(hours=1))
    with pytest.raises(DeadlineConfigError, match="needs deadline="):
        RequestInput("x", interrupt_id="a", on_deadline=answer(True))
    with pytest.raises(DeadlineConfigError, match="not a duration"):
        RequestInput("x", interrupt_id="a", deadline="4 hours", on_deadline=answer(True))


def test_the_adk_facade_takes_a_deadline_too() -> None:
    from engine.adk import RequestInput as AdkRequestInput

    with pytest.raises(DeadlineConfigError, match="does not fit the response schema"):
        AdkRequestInput(message="x", response_schema=int, deadline=60, on_deadline=answer("many"))
    ok = AdkRequestInput(message="x", response_schema=int, interrupt_id="n", deadline=60, on_deadline=answer("7"))
    from engine.adk._events import to_engine_request

    assert to_engine_request(ok).to_call().args["deadline"]["timers"] == [{"after": 60.0, "do": "answer", "value": 7}]


# ------------------------------------------------------------------ answer
async def test_default_answer_fires_once_as_an_audited_answer(store: SessionStore) -> None:
    inv = await start(store, "s1")
    sweep = DeadlineSweep(store, clock=at(app.HOURS * HOUR - 60), registry=registry())
    assert (await sweep.run_once()).fired == []  # a minute early: nothing
    sweep.clock = at(app.HOURS * HOUR + 1)
    done = await sweep.run_once()
    assert [o for _, o in done.fired] == ["answered"]
    assert (await sweep.run_once()).fired == []  # once
    await settle(store, "s1", inv)
    proj = await load_invocation(store, "s1", inv)
    assert proj.invocation_status(inv).value == "COMPLETED"
    assert proj.get(inv, "refund@1/settle@1").output == "refused"  # the coerced default {"approved": false}
    rows = await audit(store, action="answer")
    assert [(r.operator, r.details["ids"]) for r in rows] == [("deadline", ["approve"])]
    assert rows[0].reason == "deadline rule RequestInput approve: no answer within 4h; default answer applied"


async def test_an_answer_before_the_deadline_voids_it(store: SessionStore) -> None:
    from engine import operations

    inv = await start(store, "s1")
    done = await operations.answer(store, "s1", {"approve": {"approved": True}}, inv, registry=registry(),
                                   operator="ann")
    assert done.error is None
    sweep = DeadlineSweep(store, clock=at(app.HOURS * HOUR + 1), registry=registry())
    assert [o for _, o in (await sweep.run_once()).void] == [
        "the interrupt was answered, cancelled or asked again before it was due"]
    assert [r.operator for r in await audit(store, action="answer")] == ["ann"]


async def test_a_deadline_that_passed_while_no_worker_ran_fires_when_one_starts(tmp_path: Path) -> None:
    for kind in ("sqlite", "postgres"):
        if kind == "postgres":
            from tests.contract.builders import pg_url

            with contextlib.suppress(BaseException):
                pg_url()
            import os

            if not os.environ.get("HITL_TEST_PG_URL"):
                continue
        s = await open_store(kind, tmp_path)
        try:
            inv = await start(s, "s1")
            # Nothing runs while the deadline passes; then a worker starts whose first heartbeat
            # is an hour away: only the sweep it makes when it starts can fire it.
            w = Worker(s, {app.APP: app.workflow}, heartbeat=3600,
                       deadlines=DeadlineSweep(s, clock=at(app.HOURS * HOUR + 600)))
            task = asyncio.ensure_future(w.run())
            try:
                for _ in range(2000):
                    if (await load_invocation(s, "s1", inv)).invocation_status(inv).value == "COMPLETED":
                        break
                    await asyncio.sleep(0.01)
            finally:
                w.stop()
                await task
            assert (await load_invocation(s, "s1", inv)).invocation_status(inv).value == "COMPLETED", kind
            assert [r.operator for r in await audit(s, action="answer")] == ["deadline"], kind
        finally:
            await s.close()


# ------------------------------------------------------------------ fail
async def test_fail_fails_the_waiting_node_with_the_named_error_and_a_redrive_asks_again(store: SessionStore) -> None:
    from engine import operations

    inv = await start(store, "s1", app.failing)
    done = await DeadlineSweep(store, clock=at(app.HOURS * HOUR + 1)).run_once()
    assert [o for _, o in done.fired] == ["failed with NoSigner"]
    proj = await load_invocation(store, "s1", inv)
    run = proj.get(inv, "signing@1/sign@1")
    assert (run.status.value, run.error_code, run.error_message) == ("FAILED", "NoSigner", "nobody signed within 4h")
    assert proj.invocation_status(inv).value == "FAILED"
    assert proj.open_interrupts(inv) == []
    assert [r.interrupt_id for r in (await store.open_interrupts()).items] == []
    (row,) = await audit(store, action="fail")
    assert (row.operator, row.details["error_code"], row.details["path"]) == ("deadline", "NoSigner", "signing@1/sign@1")
    # Not final: a re-drive runs the failed node again, and it asks again.
    again = await operations.redrive(store, "s1", inv, registry=registry(app.failing), operator="ann")
    assert again.error is None, again.error
    assert [i.id for i in again.after.open_interrupts(inv)] == ["sign"]
    # The new raising has 4 h of its own: nothing a minute before, then its fail once more.
    assert (await DeadlineSweep(store, clock=at(app.HOURS * HOUR - 60)).run_once()).fired == []
    assert len((await DeadlineSweep(store, clock=at(app.HOURS * HOUR + 1)).run_once()).fired) == 1


# ------------------------------------------------------------------ escalate
async def test_escalation_steps_fire_in_order_each_once_and_audited(store: SessionStore) -> None:
    await start(store, "s1", app.escalating)
    fired: list[str] = []

    def seen(t: Any, status: str, outcome: str) -> None:
        fired.append(f"{t.timer['do']}: {outcome}")

    sweep = DeadlineSweep(store, clock=at(HOUR + 1), on_fired=seen)
    await sweep.run_once()
    assert fired == ["remind: remind: ops"]
    sweep.clock = at(app.HOURS * HOUR + 1)
    await sweep.run_once()
    await sweep.run_once()
    assert fired == ["remind: remind: ops", "notify: notify: pager"]
    rows = await audit(store, operator="deadline")
    assert sorted((r.action, r.details["step"], tuple(r.details.get("channels", ()))) for r in rows) == [
        ("deadline", "notify", ("pager",)), ("deadline", "remind", ("ops",))]
    assert all(r.reason and r.reason.startswith("deadline rule RequestInput review: ") for r in rows)
    # no default answer: still open, and an hour past the deadline reassigned to the group
    (row,) = (await store.open_interrupts()).items
    assert (row.interrupt_id, row.owner) == ("review", None)
    sweep.clock = at(5 * HOUR + 1)
    sweep.policy = Policy(groups={"finance-leads": frozenset({"bob"})})
    await sweep.run_once()
    await sweep.run_once()
    assert fired[2:] == ["assign: assigned to @finance-leads"]
    (row,) = (await store.open_interrupts()).items
    assert row.owner == "@finance-leads"
    (moved,) = await audit(store, action="assign")
    assert (moved.operator, moved.reason) == ("deadline", "deadline rule RequestInput review: assign after 5h")


async def test_escalation_notifies_its_channels_once_each(store: SessionStore) -> None:
    from engine.notify.config import Channel, NotifyConfig
    from engine.notify.facts import collect
    from engine.redact import Redactor

    await start(store, "s1", app.escalating)
    await DeadlineSweep(store, clock=at(app.HOURS * HOUR + 1)).run_once()
    config = NotifyConfig(channels={"ops": Channel("ops", "webhook", url="http://127.0.0.1:9/"),
                                    "pager": Channel("pager", "webhook", url="http://127.0.0.1:9/")})
    found = await collect(store, config, Redactor())
    assert sorted((n.kind, n.channels) for n in found) == [("deadline_notify", ("pager",)),
                                                            ("deadline_remind", ("ops",))]
    assert all("still waiting since" in n.subject and "Review order-s1?" in n.subject for n in found)


# ------------------------------------------------------------------ hitl.toml
async def test_a_hitl_toml_rule_applies_to_a_workflow_without_deadlines(store: SessionStore) -> None:
    rules = load_rules({"deadlines": [{"name": "checks default", "app": app.APP, "node": "plain", "after": "2h",
                                       "on_deadline": "answer", "answer": "true"}]})
    inv = await start(store, "s1", app.undecided, rules)
    (row,) = (await store.open_interrupts()).items
    assert row.args["deadline"]["rule"] == "checks default"
    await DeadlineSweep(store, clock=at(2 * HOUR + 1), registry=registry(app.undecided)).run_once()
    await settle(store, "s1", inv, app.undecided)
    proj = await load_invocation(store, "s1", inv)
    assert proj.get(inv, "check@1/plain@1").output is True
    (a,) = await audit(store, action="answer")
    assert a.reason == "deadline rule checks default: no answer within 2h; default answer applied"


async def test_a_hitl_toml_default_answer_that_does_not_fit_fails_the_node_naming_the_rule(store: SessionStore) -> None:
    from engine.errors import WorkflowFailed

    rules = load_rules({"deadlines": [{"name": "bad", "app": app.APP, "after": "2h", "on_deadline": "answer",
                                       "answer": "sometimes"}]})
    with pytest.raises(WorkflowFailed, match="hitl.toml deadline rule 'bad' at check@1/plain@1: the default answer"):
        await start(store, "s1", app.undecided, rules)


def test_hitl_toml_rules_are_checked_when_read_and_against_the_graph() -> None:
    from engine.deadlines import check_rules

    with pytest.raises(DeadlineConfigError, match=r"#1: on_deadline must be"):
        load_rules({"deadlines": [{"app": "a", "after": "1h", "on_deadline": "wait"}]})
    with pytest.raises(DeadlineConfigError, match="unknown key 'afer'"):
        load_rules({"deadlines": [{"app": "a", "afer": "1h", "on_deadline": "fail", "error": "X"}]})
    rules = load_rules({"deadlines": [{"app": app.APP, "node": "aprove", "after": "1h", "on_deadline": "escalate",
                                       "notify": ["pager"]}]})
    with pytest.raises(DeadlineConfigError, match="has no node 'aprove'"):
        check_rules(rules, {app.APP: app.workflow})


def test_steps_are_checked_when_built() -> None:
    with pytest.raises(DeadlineConfigError, match="at least one step"):
        escalate()
    with pytest.raises(DeadlineConfigError, match="at least one channel"):
        notify()
    with pytest.raises(DeadlineConfigError, match="not a duration"):
        remind(after="soon")


async def test_timers_are_stored_with_the_interrupt(store: SessionStore) -> None:
    await start(store, "s1", app.escalating)
    rows = await timers(store).listing()
    assert [(t.step, t.timer["do"], round(t.due_at - rows[0].due_at + HOUR)) for t in rows] == [
        (0, "remind", HOUR), (1, "notify", 4 * HOUR), (2, "assign", 5 * HOUR)]


async def test_the_default_answer_applies_to_an_interrupt_someone_claimed(store: SessionStore) -> None:
    from engine import ownership

    inv = await start(store, "s1")
    claimed = await ownership.claim(store, "s1", ["approve"], operator="ann")
    assert claimed.error is None
    done = await DeadlineSweep(store, clock=at(app.HOURS * HOUR + 1), registry=registry()).run_once()
    assert [o for _, o in done.fired] == ["answered"]
    await settle(store, "s1", inv)
    assert [r.operator for r in await audit(store, action="answer")] == ["deadline"]
