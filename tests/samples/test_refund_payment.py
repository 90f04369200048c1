"""refund_approval's payment side effect runs exactly once per approved order."""

from __future__ import annotations

from typing import Any

import pytest

from engine import Content, Runner
from engine.errors import AlreadyResolvedError, NotRedrivableError
from engine.projection import project
from engine.store import MemoryStore
from sample_sessions import refund_approval

YES = {"approved": True, "note": "ok"}


async def _run(runner: Runner, sid: str, message: Content | None = None, **kw: Any) -> list[Any]:
    return [e async for e in runner.run("alice", sid, message, **kw)]


@pytest.mark.parametrize(
    "rounds",
    [
        [["finance"], ["risk"]],
        [["risk"], ["finance"]],
        [["finance", "risk"]],
    ],
    ids=["finance-then-risk", "risk-then-finance", "both-at-once"],
)
async def test_pay_runs_once(rounds: list[list[str]]) -> None:
    store = MemoryStore()
    runner = Runner(refund_approval.app_name, refund_approval.workflow, store)
    first = await _run(runner, "s", Content.from_text("order-42"))
    inv = first[0].invocation_id
    for who in rounds:
        await _run(runner, "s", Content.from_responses({f"{w}-order-42": YES for w in who}))
    # nothing re-runs it: re-answering is rejected, a completed invocation cannot be re-driven
    with pytest.raises(AlreadyResolvedError):
        await _run(runner, "s", Content.from_responses({"finance-order-42": YES}))
    with pytest.raises(NotRedrivableError):
        await _run(runner, "s", invocation_id=inv)
    session = await store.get_session("s")
    assert session.state["payments"] == [
        {"order_id": "order-42", "amount": session.state["payments"][0]["amount"], "currency": "EUR"}
    ]
    events = [s.event for s in await store.events("s")]
    pay_starts = [e for e in events if e.path == "refund@1/pay@1" and e.kind == "start"]
    assert len(pay_starts) == 1
    proj = project(events)
    assert proj.get(inv, "refund@1/pay@1").output["status"] == "paid"


async def test_each_order_in_a_session_is_paid_once() -> None:
    store = MemoryStore()
    runner = Runner(refund_approval.app_name, refund_approval.workflow, store)
    for order in ("order-1", "order-2", "order-3"):
        await _run(runner, "s", Content.from_text(order))
    for order in ("order-2", "order-1", "order-3"):
        await _run(runner, "s", Content.from_responses({f"finance-{order}": YES}))
    for order in ("order-3", "order-2", "order-1"):
        await _run(runner, "s", Content.from_responses({f"risk-{order}": YES}))
    payments = (await store.get_session("s")).state["payments"]
    assert [p["order_id"] for p in payments] == ["order-3", "order-2", "order-1"]


async def test_a_rejection_pays_nothing() -> None:
    store = MemoryStore()
    runner = Runner(refund_approval.app_name, refund_approval.workflow, store)
    await _run(runner, "s", Content.from_text("order-9"))
    await _run(
        runner,
        "s",
        Content.from_responses({"finance-order-9": YES, "risk-order-9": {"approved": False, "note": "fraud"}}),
    )
    session = await store.get_session("s")
    assert "payments" not in session.state
    events = [s.event for s in await store.events("s")]
    (end,) = [e for e in events if e.path == "refund@1/pay@1" and e.kind == "end"]
    assert end.output == {"status": "rejected", "order_id": "order-9", "rejected_by": {"risk_approval": "fraud"}}
