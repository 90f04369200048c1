"""Fuzz: random FunctionResponse messages (and re-drives and cancels) sent to
random sessions of the sample apps, then the store's invariants:

* every interrupt is resolved at most once, and only while it was open;
* every session's seqs are contiguous and its event ids unique;
* the projection of the stored events equals the runner's own state (the
  snapshot each turn cached, through ``load_invocation``), and the store's
  interrupt index and session summary agree with it;
* a rejected message wrote nothing; nothing but an operator error ever escapes.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections import Counter
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine import Content, HitlError, Runner, cancel_invocation
from engine.apps import SAMPLE_APPS, AppRegistry
from engine.errors import ResumeRejected
from engine.models import FunctionResponse, Part
from engine.projection import Projection
from engine.responses import MAX_RESPONSE_BYTES, template_for
from engine.resume import load_invocation
from engine.store import MemoryStore

EXAMPLES = int(os.environ.get("HITL_FUZZ_EXAMPLES", "40"))
REGISTRY = AppRegistry()
STARTS = {
    "refund": ("refund_approval", ["order-1", "order-2"]),
    "review": ("document_review", ["Q3 security report"]),
    "deploy": ("deploy_pipeline", ["v1.0.0"]),
    "labels": ("labelling_batch", ["birds 3"]),
    "incident": ("incident", ["api-latency p99 > 2s"]),
    "contracts": ("contract_review", ["acme 6"]),
}
assert {app for app, _ in STARTS.values()} == set(SAMPLE_APPS)

async def build() -> tuple[MemoryStore, dict[str, Runner]]:
    store = MemoryStore()
    runners: dict[str, Runner] = {}
    for sid, (app, messages) in STARTS.items():
        runners[sid] = Runner(app, REGISTRY.get(app), store, lease_wait=0)
        for text in messages:
            async for _ in runners[sid].run("u", sid, Content.from_text(text)):
                pass
    return store, runners


# A step: (kind, session, picks, value kinds, text?, invocation hint)
value_kind = st.sampled_from(["valid"] * 8 + ["wrapped", "none", "int", "text", "dict", "huge"])
step = st.tuples(
    st.sampled_from(["answer"] * 16 + ["redrive", "cancel"]),
    st.sampled_from(list(STARTS)),
    st.lists(st.integers(0, 10_000), min_size=1, max_size=3).map(lambda xs: xs if len(xs) < 3 or xs[0] % 3 else xs[:1]),
    st.lists(value_kind, min_size=3, max_size=3),
    st.sampled_from([False] * 5 + [True]),
    st.sampled_from([None] * 7 + ["own", "other", "bogus"]),
)


def _value(kind: str, schema: dict[str, Any] | None) -> Any:
    if kind == "valid":
        return template_for(schema)
    if kind == "wrapped":
        return {"result": json.dumps(template_for(schema))}
    if kind == "huge":
        return {"note": "x" * (MAX_RESPONSE_BYTES + 1)}
    return {"none": None, "int": 7, "text": "yes please", "dict": {"unexpected": [1, 2]}}[kind]


async def dump(store: MemoryStore, sid: str) -> Any:
    return [e.event.to_json() for e in await store.events(sid)], await store.list_leases(sid), await store.get_session(sid)


async def run_steps(steps: list[Any]) -> Counter[str]:
    """Apply ``steps``, check the invariants; how many messages ended which way."""
    tally: Counter[str] = Counter()
    store, runners = await build()
    for kind, sid, picks, kinds, with_text, hint in steps:
        runner = runners[sid]
        invs = [i.invocation_id for i in await store.list_invocations(sid)]
        known = {
            r.interrupt_id: r
            for s in STARTS
            for r in await store.lookup_interrupts(s, [i.id for i in _all_interrupts(await store.events(s))])
        }
        mine = sorted(i for i, r in known.items() if r.session_id == sid)
        still_open = [i for i in mine if known[i].status == "open"]
        # Mostly this session's open ids, then its answered ones, others' ids and made-up ones.
        pool = still_open * 8 + mine + sorted(set(known) - set(mine)) + ["nope", "finance-order-999", ""]
        before = await dump(store, sid)
        try:
            if kind == "redrive":
                inv = invs[picks[0] % len(invs)]
                async for _ in runner.run("u", sid, invocation_id=inv, acknowledge_in_doubt=True):
                    pass
            elif kind == "cancel":
                await cancel_invocation(store, sid, invs[picks[0] % len(invs)])
            else:
                parts = []
                for n, pick in enumerate(picks):
                    iid = pool[pick % len(pool)]
                    schema = known[iid].response_schema if iid in known else None
                    parts.append(Part(function_response=FunctionResponse(id=iid, response=_value(kinds[n], schema))))
                if with_text:
                    parts.insert(0, Part(text="and also this"))
                target = {None: None, "own": invs[picks[0] % len(invs)], "other": "ffff", "bogus": "x"}[hint]
                async for _ in runner.run("u", sid, Content(parts=parts), target):
                    pass
            tally[f"{kind}: ok"] += 1
        except ResumeRejected as exc:
            tally[f"{kind}: {type(exc).__name__}"] += 1
            assert await dump(store, sid) == before, f"a rejected message wrote something: {exc}"
        except HitlError as exc:  # failed node (incident's pager), not redrivable, ...
            tally[f"{kind}: {type(exc).__name__}"] += 1
    for sid in STARTS:
        await check_invariants(store, sid)
    return tally


def _all_interrupts(events: list[Any]) -> list[Any]:
    return [c for e in events for c in e.event.interrupt_calls]


async def check_invariants(store: MemoryStore, sid: str) -> None:
    events = await store.events(sid)
    session = await store.get_session(sid)
    assert [e.seq for e in events] == list(range(1, session.last_seq + 1))
    assert len({e.event.id for e in events}) == len(events)
    proj = Projection()
    resolved: Counter[tuple[str, str]] = Counter()
    for stored in events:
        ev = stored.event
        for fr in ev.function_responses:
            itr = proj.interrupts.get((ev.invocation_id, fr.id))
            assert itr is not None and itr.open, f"{sid} seq {stored.seq}: {fr.id} was not open"
            resolved[(ev.invocation_id, fr.id)] += 1
        proj.apply(ev, stored.seq)
    assert all(n == 1 for n in resolved.values())
    open_index = {(r.invocation_id, r.interrupt_id) for r in (await store.open_interrupts(session_id=sid, limit=1000)).items}
    assert open_index == {(i.invocation_id, i.id) for i in proj.open_interrupts()}
    (summary,) = [s for s in (await store.list_sessions(limit=100)).items if s.id == sid]
    assert (summary.event_count, summary.open_interrupts) == (len(events), len(open_index))
    assert session.state == proj.state
    for inv in proj.invocations:
        own = await load_invocation(store, sid, inv)  # the runner's cached snapshot + the events after it
        assert own.invocation_status(inv) == proj.invocation_status(inv)
        for run in own.runs(inv):
            full = proj.get(inv, run.path)
            assert full is not None
            assert (full.status, full.output, full.run_id, full.resolved, full.interrupt_ids) == (
                run.status,
                run.output,
                run.run_id,
                run.resolved,
                run.interrupt_ids,
            ), (sid, run.path)
        assert {i.id for i in own.open_interrupts(inv)} == {i.id for i in proj.open_interrupts(inv)}
    assert await store.list_leases(sid) == []  # every turn let go of its lease


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(step, min_size=1, max_size=10))
def test_random_answers_keep_the_store_invariants(steps: list[Any]) -> None:
    asyncio.run(run_steps(steps))


def test_the_steps_reach_both_the_accepting_and_the_refusing_paths() -> None:
    """The step vocabulary can produce an accepted answer and each kind of refusal
    (so the invariants above are checked on both sides), whatever ran before."""
    valid, bad_value, unknown_id, with_text = (
        ("answer", "refund", [0], ["valid"] * 3, False, None),
        ("answer", "refund", [0], ["dict"] * 3, False, None),
        ("answer", "review", [10_000_003], ["valid"] * 3, False, "bogus"),
        ("answer", "deploy", [0], ["valid"] * 3, True, None),
    )
    tally = asyncio.run(run_steps([valid, bad_value, unknown_id, with_text]))
    assert tally["answer: ok"] >= 1, tally
    refused = {k for k in tally if k.startswith("answer: ") and k != "answer: ok"}
    assert refused, tally
