"""Small workflows run through ``engine.Runner`` into a MemoryStore, then pinned.

``build_store()`` runs every scenario for real (so the events are exactly what
the engine writes), then copies the store into a fresh MemoryStore rewriting
what varies between runs: event ids, invocation ids and timestamps, each from
the event's position (so the fixture does not depend on how long a run took).
Snapshots of each invocation's projection are re-cached, as the Runner does.
The result is byte-identical on every run.
"""

from __future__ import annotations

import asyncio
from typing import Any
from unittest import mock

from engine import START, Content, Event, JoinNode, NodeInfo, RequestInput, RetryConfig, Runner, Workflow, node
from engine.errors import WorkflowFailed
from engine.projection import Projection
from engine.store import MemoryStore

T0 = 1_767_261_600.0
"""2026-01-01 10:00:00 UTC: the first event of the fixture store."""
NOW = T0 + 3 * 86400 + 3600
"""The console's clock in tests: three days and an hour later."""

# ------------------------------------------------------------------ workflows


@node
async def fetch(node_input: Any) -> dict[str, Any]:
    return {"order": node_input, "amount": 120}


def _approver(name: str, question: str) -> Any:
    @node(name=name)
    async def approve(node_input: Any) -> Any:
        yield RequestInput(question, payload=node_input, response_schema=bool, interrupt_id=f"{name}-1")

    return approve


approve_finance = _approver("finance", "Approve the refund amount?")
approve_legal = _approver("legal", "Any legal objection?")
approve_ops = _approver("ops", "Can ops ship the return label?")


@node
async def pay(node_input: Any) -> str:
    return f"paid: {sorted(node_input)}"


refund_wf = Workflow("refund", [(START, fetch, (approve_finance, approve_legal, approve_ops), JoinNode("join"), pay)])


@node
async def prepare(node_input: Any) -> dict[str, Any]:
    return {"employee": node_input}


@node
async def legal_check(node_input: Any) -> str:
    return "clear"


@node
async def sign_off(node_input: Any) -> Any:
    yield RequestInput("Sign the onboarding packet?", payload={"check": node_input}, interrupt_id="sign-off")


@node
async def finish(node_input: Any) -> str:
    return "onboarded"


onboard_wf = Workflow("onboard", [(START, prepare, Workflow("review", [(START, legal_check, sign_off)]), finish)])


@node
async def draft(ctx: Any, node_input: Any) -> str:
    return f"draft v{ctx.run_id}"


@node
async def review(ctx: Any, node_input: Any) -> Any:
    yield RequestInput(
        f"Publish {node_input}?",
        payload={"draft": node_input},
        response_schema={"type": "string", "enum": ["approve", "revise"]},
        interrupt_id=f"review-{ctx.run_id}",
    )


@node
async def decide(ctx: Any, node_input: Any) -> Any:
    ctx.route = "publish" if node_input == "approve" else "revise"
    return node_input


@node
async def publish(node_input: Any) -> str:
    return "published"


drafting_wf = Workflow("drafting", [(START, draft, review, decide, {"revise": draft, "publish": publish})])


@node(retry=RetryConfig(max_attempts=2))
async def charge(node_input: Any) -> Any:
    raise RuntimeError("card declined by the issuer")


billing_wf = Workflow("billing", [(START, fetch, charge, pay)])


@node
async def label(ctx: Any, node_input: Any) -> Any:
    yield RequestInput(f"Label item {node_input}", payload={"item": node_input}, interrupt_id=f"label-{node_input}")


@node(rerun_on_resume=True)
async def fan(ctx: Any, node_input: Any) -> Any:
    results = await asyncio.gather(*(ctx.run_node(label, item) for item in ("a", "b", "c")), return_exceptions=True)
    for r in results:
        if isinstance(r, BaseException):
            raise r
    return results


labelling_wf = Workflow("labelling", [(START, fan)])


@node
async def triage(node_input: Any) -> Any:
    yield RequestInput(f"Route ticket: {node_input}", interrupt_id=f"triage-{node_input}")


support_wf = Workflow("support", [(START, triage)])

# ------------------------------------------------------------------ scenarios


async def _drain(it: Any) -> None:
    try:
        async for _ in it:
            pass
    except WorkflowFailed:
        pass


async def run_scenarios(store: MemoryStore) -> None:
    """Each session, in the order it is created (older first)."""
    r = Runner("refunds", refund_wf, store)
    await _drain(r.run("alice", "refund-done", Content.from_text("order-1")))
    await _drain(r.run("alice", "refund-done", Content.from_responses({"finance-1": True, "legal-1": True, "ops-1": True})))
    r = Runner("billing", billing_wf, store)
    await _drain(r.run("bob", "billing-failed", Content.from_text("order-9")))
    r = Runner("drafting", drafting_wf, store)
    await _drain(r.run("carol", "drafting-loop", Content.from_text("post-42")))
    await _drain(r.run("carol", "drafting-loop", Content.from_responses({"review-1": "revise"})))
    await _drain(r.run("carol", "drafting-loop", Content.from_responses({"review-2": "revise"})))
    r = Runner("labelling", labelling_wf, store)
    await _drain(r.run("dave", "labelling-fan", Content.from_text("batch-7")))
    await _drain(r.run("dave", "labelling-fan", Content.from_responses({"label-b": "cat"})))
    r = Runner("support", support_wf, store)
    await _drain(r.run("erin", "support-multi", Content.from_text("t1")))
    await _drain(r.run("erin", "support-multi", Content.from_responses({"triage-t1": "billing"})))
    await _drain(r.run("erin", "support-multi", Content.from_text("t2")))
    r = Runner("onboarding", onboard_wf, store)
    await _drain(r.run("frank", "onboard-nested", Content.from_text("emp-3")))
    # A node whose process died: a start record and nothing after it.
    await store.create_session("billing", "gina", "billing-stuck")
    await store.append_event("billing-stuck", Event(invocation_id="x", author="user", content=Content.from_text("order-5")))
    for path, container in (("billing@1", True), ("billing@1/fetch@1", False)):
        await store.append_event(
            "billing-stuck",
            Event(
                invocation_id="x",
                author=path.rsplit("/", 1)[-1].split("@")[0],
                node_info=NodeInfo(path=path, run_id="1", lifecycle="start", is_container=container or None,
                                   rerun_on_resume=container, input="order-5" if container else {"order": "order-5"}),
            ),
        )
    r = Runner("refunds", refund_wf, store)
    await _drain(r.run("alice", "refund-partial", Content.from_text("order-2")))
    await _drain(r.run("alice", "refund-partial", Content.from_responses({"finance-1": True})))
    await store.create_session("refunds", "henry", "refund-new")


STEP = 7.0
"""Seconds between two events of one session in the pinned store."""
GAP = 5400.0
"""Seconds between the starts of two sessions."""


class _Clock:
    def __init__(self, now: float) -> None:
        self.now = now

    def time(self) -> float:
        return self.now


async def pin(raw: MemoryStore, *, snapshots: bool = True, skip_snapshot: set[str] = frozenset()) -> MemoryStore:  # type: ignore[assignment]
    """Copy ``raw`` with deterministic ids and timestamps (see module docstring)."""
    out = MemoryStore()
    clock = _Clock(T0)
    page = await raw.list_sessions(limit=10_000)
    sessions = sorted(page.items, key=lambda s: s.created_at)
    with mock.patch("engine.store.memory.time", clock):
        for k, summary in enumerate(sessions):
            start = T0 + k * GAP
            clock.now = start
            s = await raw.get_session(summary.id)
            await out.create_session(s.app_name, s.user_id, s.id)
            inv_ids: dict[str, str] = {}
            for se in await raw.events(s.id):
                e = se.event
                inv = inv_ids.setdefault(e.invocation_id, f"inv{len(inv_ids) + 1}")
                ts = start + se.seq * STEP
                clock.now = ts
                await out.append_event(
                    s.id, e.model_copy(update={"id": f"{s.id}-e{se.seq}", "invocation_id": inv, "timestamp": ts})
                )
            if snapshots and s.id not in skip_snapshot:
                events = await out.events(s.id)
                for inv in inv_ids.values():
                    proj = Projection()
                    for se in events:
                        if se.event.invocation_id == inv:
                            proj.apply(se.event, se.seq)
                    await out.put_snapshot(s.id, inv, proj.position, proj.compact(inv).to_dict())
    return out


async def build_store(**kwargs: Any) -> MemoryStore:
    raw = MemoryStore()
    await run_scenarios(raw)
    return await pin(raw, **kwargs)


def build_store_sync(**kwargs: Any) -> MemoryStore:
    return asyncio.run(build_store(**kwargs))
