"""The contract-review sample: a parallel worker whose flagged documents wait for a lawyer."""

from __future__ import annotations

from engine import Content, Runner
from engine.models import NodeStatus
from engine.projection import project
from engine.resume_plan import plan_resume
from engine.store import MemoryStore
from sample_sessions import contract_review


async def _events(runner: Runner, message: Content) -> list:
    return [e async for e in runner.run("lawyer", "c1", message)]


async def test_contract_review_flagged_documents_wait_independently() -> None:
    store = MemoryStore()
    runner = Runner(contract_review.app_name, contract_review.workflow, store)
    await _events(runner, Content.from_text("acme-q3 7"))
    p = project([(s.seq, s.event) for s in await store.events("c1")])
    (inv,) = p.invocations
    assert sorted(i.id for i in p.open_interrupts(inv)) == ["legal-acme-q3-03", "legal-acme-q3-06"]
    docs = p.children(inv, "contracts@1/review@1")
    assert [d.path for d in docs] == [f"contracts@1/review@1/check_document@{k}" for k in range(1, 8)]
    assert [d.status for d in docs].count(NodeStatus.COMPLETED) == 5

    # The dry run shows the coerced answer; the real answer resumes only that document.
    answer = Content.from_responses({"legal-acme-q3-06": {"approve": "false", "note": "renegotiate"}})
    plan = await plan_resume(store, "c1", answer)
    (doc,) = [c for c in plan.changes if c.effect == "auto-complete"]
    assert (doc.path, doc.output) == ("contracts@1/review@1/check_document@6", {"approve": False, "note": "renegotiate"})
    events = await _events(runner, answer)
    assert not [e for e in events if e.kind == "start" and "check_document" in (e.path or "")]
    p = project([(s.seq, s.event) for s in await store.events("c1")])
    assert p.get(inv, "contracts@1/review@1").status is NodeStatus.WAITING

    await _events(runner, Content.from_responses({"legal-acme-q3-03": {"approve": "yes"}}))
    p = project([(s.seq, s.event) for s in await store.events("c1")])
    review = p.get(inv, "contracts@1/review@1")
    assert review.status is NodeStatus.COMPLETED
    assert review.output[2] == {"approve": True, "note": None} and review.output[5]["approve"] is False
    assert p.root(inv).output == {"documents": 7, "rejected": [5], "signed": False}
