"""The checks every answer passes in the operations layer (engine/answer_gate.py), on
SQLite and PostgreSQL: someone else's claim, who may answer ([[answer]] rules and
[groups]), multi-approver rules -- in-process answers, answers left to a worker and
bulk answers alike, each refused with one line and nothing written."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from engine import START, Content, RequestInput, Runner, Workflow, bulk, handoff, node, operations, ownership
from engine.answer_gate import ApprovalError, ClaimedByOtherError
from engine.apps import AppRegistry
from engine.permissions import NotAllowedError, Policy, policy_from
from engine.store.base import SessionStore
from tests.contract.builders import open_store


@node
async def ask(node_input: Any) -> Any:
    yield RequestInput("Refund?", payload={"amount": int(node_input)}, response_schema=bool, interrupt_id="refund")


@node
async def pay(node_input: Any) -> str:
    return f"paid={node_input}"


refunds = Workflow("refunds", [(START, ask), (ask, pay)])

POLICY = policy_from(
    {
        "groups": {"finance": ["ann", "bob"], "legal": ["lee"]},
        "answer": [
            {"app": "refunds", "node": "ask", "where": "amount>10000", "allow": ["@finance", "@legal"]},
            {"app": "refunds", "where": "amount>50000", "approvals": 2, "all_of": ["finance", "legal"]},
        ],
    }
)


def registry() -> AppRegistry:
    reg = AppRegistry()
    reg.register("refunds", refunds)
    return reg


@pytest.fixture(params=["sqlite", "postgres"])
async def store(request: pytest.FixtureRequest, tmp_path: Path):
    s = await open_store(request.param, tmp_path)
    yield s
    await s.close()


async def waiting(store: SessionStore, sid: str, amount: int) -> str:
    async for _ in Runner("refunds", refunds, store).run("u", sid, Content.from_text(str(amount))):
        pass
    (inv,) = [i.invocation_id for i in await store.list_invocations(sid)]
    return inv


async def answer(store: SessionStore, sid: str, operator: str, **kw: Any) -> operations.Outcome:
    return await operations.answer(store, sid, {"refund": True}, registry=registry(), operator=operator,
                                   policy=kw.pop("policy", POLICY), **kw)


async def test_someone_elses_claim_refuses_an_answer_without_force(store: SessionStore) -> None:
    await waiting(store, "s1", 10)
    assert (await ownership.claim(store, "s1", ["refund"], operator="ann")).error is None
    last = (await store.get_session("s1")).last_seq
    done = await answer(store, "s1", "bob")
    assert isinstance(done.error, ClaimedByOtherError)
    assert done.refusal == ("interrupt refund is claimed by ann; nothing was written "
                            "(answer with force to answer it anyway, or ask them)")
    assert (await store.get_session("s1")).last_seq == last
    queued = await handoff.queue_answer(store, "s1", {"refund": True}, operator="bob", policy=POLICY)
    assert isinstance(queued.error, ClaimedByOtherError) and (await store.get_session("s1")).last_seq == last
    assert (await answer(store, "s1", "ann")).error is None  # the owner answers; the answer ends the claim
    assert (await store.open_interrupts(session_id="s1")).items == []


async def test_force_answers_anyway(store: SessionStore) -> None:
    await waiting(store, "s1", 10)
    await ownership.claim(store, "s1", ["refund"], operator="ann")
    done = await answer(store, "s1", "bob", force=True)
    assert done.error is None and done.written[0].custom_metadata["operator"] == "bob"


async def test_an_operator_outside_the_allowed_groups_is_refused_everywhere(store: SessionStore) -> None:
    await waiting(store, "big", 20000)
    await waiting(store, "small", 20)
    line = ("carol may not answer interrupt refund: only @finance, @legal may "
            "(rule app=refunds node=ask amount>10000); nothing was written")
    done = await answer(store, "big", "carol")
    assert isinstance(done.error, NotAllowedError) and done.refusal == line
    queued = await handoff.queue_answer(store, "big", {"refund": True}, operator="carol", policy=POLICY)
    assert queued.refusal == line
    groups = bulk.group([*(await store.open_interrupts()).items])
    result = await bulk.submit(store, groups, True, registry=registry(), operator="carol", policy=POLICY)
    by_session = {r.group.session_id: r for r in result.results}
    assert by_session["big"].status == "refused" and by_session["big"].reason == line
    assert by_session["small"].status == "applied"
    assert [r.interrupt_id for r in (await store.open_interrupts(session_id="big")).items] == ["refund"]
    assert (await answer(store, "big", "ann")).error is None


async def test_multi_approver_rule_records_each_approval_and_answers_when_met(store: SessionStore) -> None:
    inv = await waiting(store, "huge", 60000)
    first = await answer(store, "huge", "ann", reason="checked the invoice")
    assert first.error is None and first.approval == "1 of 2 approvals"
    assert [e.kind for e in first.written] == ["approve"]
    assert [r.interrupt_id for r in (await store.open_interrupts(session_id="huge")).items] == ["refund"]
    again = await answer(store, "huge", "ann")
    assert isinstance(again.error, ApprovalError) and "another approver is needed" in (again.refusal or "")
    second_finance = await answer(store, "huge", "bob")  # two approvers, but no one from legal yet
    assert second_finance.approval == "2 of 2 approvals, still needs legal" and second_finance.status_after is None
    done = await answer(store, "huge", "lee")
    assert done.error is None and done.approval is None and done.status_after is not None
    assert done.status_after.value == "COMPLETED"
    audit = [(r.action, r.operator) for r in (await store.audit_log(session_id="huge")).items][::-1]
    assert audit == [("approve", "ann"), ("approve", "bob"), ("answer", "lee")]
    assert inv == done.invocation_id


def test_policy_errors_name_the_entry() -> None:
    from engine.permissions import PolicyError

    with pytest.raises(PolicyError, match="names group 'ops', which \\[groups\\] does not define"):
        policy_from({"answer": [{"allow": ["@ops"]}]})
    with pytest.raises(PolicyError, match="unknown key 'alow'"):
        policy_from({"answer": [{"alow": ["x"]}]})
    assert Policy().approval("a", "p", {}) is None


def test_a_claim_older_than_stale_after_is_shown_stale() -> None:
    policy = policy_from({"owners": {"stale_after": "2h"}})
    assert policy.stale_after == 7200
    assert policy.owner_label("ann", 1000.0, 1000.0 + 7199) == "ann"
    assert policy.owner_label("ann", 1000.0, 1000.0 + 5 * 3600) == "ann (stale 5h00m)"
    assert policy.owner_label("ann", 0.0, 1615 * 60) == "ann (stale 1d02h)"  # read as a person would, not 1615m
    assert policy.owner_label(None, None, 0) == ""
    from engine.permissions import PolicyError

    with pytest.raises(PolicyError, match="stale_after"):
        policy_from({"owners": {"stale_after": "soon"}})
