"""The demo generator leaves sessions in every promised state."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest

from engine.models import Event, NodeStatus
from engine.projection import Projection, project
from engine.store import MemoryStore
from engine.store.sqlite import SQLiteStore
from sample_sessions.demo import BULK_TEMPLATES, EXPECTED, FIXTURE_EPOCH, FIXTURE_PATH, build_demo, build_demo_db

LONG = 8
BULK = 9


class Demo:
    def __init__(self, path: Path) -> None:
        self.path = path

    def read(self, fn: Any) -> Any:
        async def go() -> Any:
            async with SQLiteStore.open(self.path, read_only=True) as store:
                return await fn(store)

        return asyncio.run(go())

    def events(self, sid: str) -> list[Event]:
        async def fn(store: SQLiteStore) -> list[Event]:
            return [s.event for s in await store.events(sid)]

        return self.read(fn)

    def proj(self, sid: str) -> tuple[Projection, list[str]]:
        p = project(self.events(sid))
        return p, list(p.invocations)


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Demo:
    path = tmp_path_factory.mktemp("demo") / "demo.sqlite"
    report = asyncio.run(build_demo_db(path, epoch=FIXTURE_EPOCH, long_iterations=LONG, sessions=BULK))
    assert report.created == list(EXPECTED) and report.bulk == BULK
    return Demo(path)


def test_every_named_session_has_its_promised_summary(demo: Demo) -> None:
    rows = {s.id: s for s in demo.read(lambda st: st.list_sessions(limit=1000)).items}
    for sid, e in EXPECTED.items():
        r = rows[sid]
        assert (r.app_name, r.user_id, r.status, r.open_interrupts, r.invocation_count) == (
            e.app_name,
            e.user_id,
            e.status,
            e.open_ids,
            e.invocations,
        ), sid
    promised = {e.status for e in EXPECTED.values()}
    assert promised == {"waiting", "completed", "failed", "cancelled"}


def test_waiting_states(demo: Demo) -> None:
    p, (inv,) = demo.proj("refund-waiting-1")
    assert {i.id for i in p.open_interrupts()} == {"finance-order-1001", "risk-order-1001"}
    p, (inv,) = demo.proj("refund-partial-1")
    assert p.get(inv, "refund@1/finance_approval@1").auto_completed
    assert p.get(inv, "refund@1/risk_approval@1").status is NodeStatus.WAITING
    p, invs = demo.proj("refund-multi-1")
    assert len(invs) == 3 and all(p.invocation_status(i) is NodeStatus.WAITING for i in invs)
    p, (inv,) = demo.proj("incident-waiting-1")
    run = p.get(inv, "incident@1/choose_mitigation@1")
    assert run.status is NodeStatus.WAITING and len(run.resolved) == 1 and len(run.own_pending) == 1


def test_output_and_interrupt_in_one_run(demo: Demo) -> None:
    p, (inv,) = demo.proj("review-waiting-1")
    run = p.get(inv, "document@1/review@1/reviewer@1")
    assert (
        run.status is NodeStatus.WAITING
        and run.output["version"] == 2
        and run.own_pending == ["signoff-q3-security-report"]
    )
    p, (inv,) = demo.proj("review-completed-1")
    run = p.get(inv, "document@1/review@1/reviewer@1")
    assert run.status is NodeStatus.COMPLETED and run.starts == 2 and run.output["signed_off"] is True
    assert p.get(inv, "document@1/publish@1").output["published"] is True


def test_completed_refund_paid_once_and_rejected_paid_nothing(demo: Demo) -> None:
    p, (inv,) = demo.proj("refund-completed-1")
    assert p.get(inv, "refund@1/pay@1").starts == 1
    assert [x["order_id"] for x in p.state["payments"]] == ["order-1003"]
    p, (inv,) = demo.proj("refund-rejected-1")
    assert p.get(inv, "refund@1/pay@1").output["status"] == "rejected" and "payments" not in p.state


def test_cancelled(demo: Demo) -> None:
    events = demo.events("refund-cancelled-1")
    p, (inv,) = demo.proj("refund-cancelled-1")
    assert p.invocation_status(inv) is NodeStatus.CANCELLED
    assert all(r.status in (NodeStatus.COMPLETED, NodeStatus.CANCELLED) for r in p.runs(inv))
    assert all(i.cancelled for i in p.interrupts.values())
    assert events[-1].custom_metadata == {
        "action": "cancel",
        "operator": "fiona",
        "reason": "customer withdrew the request",
    }


def test_failed_and_redriven(demo: Demo) -> None:
    p, (inv,) = demo.proj("incident-failed-1")
    run = p.get(inv, "incident@1/mitigate@1")
    assert run.status is NodeStatus.FAILED and run.error_code == "PAGER_503"
    assert p.invocation_status(inv) is NodeStatus.FAILED
    p, (inv,) = demo.proj("incident-redriven-1")
    run = p.get(inv, "incident@1/mitigate@1")
    assert run.status is NodeStatus.COMPLETED and run.starts == 2 and run.run_id == "1"
    assert p.get(inv, "incident@1/triage@1").starts == 1
    assert any(e.kind == "redrive" for e in demo.events("incident-redriven-1"))


def test_loops_have_fresh_run_ids_and_unique_gate_ids(demo: Demo) -> None:
    p, (inv,) = demo.proj("deploy-long-1")
    deploys = sorted(int(r.run_id) for r in p.runs(inv) if r.name == "deploy")
    assert deploys == list(range(1, LONG + 2))
    gates = [i for i in p.interrupts.values()]
    assert len({g.id for g in gates}) == len(gates) == LONG + 1
    assert [i.id for i in p.open_interrupts()] == [f"gate-{LONG + 1}"]
    verify = [r for r in p.runs(inv) if r.name == "verify"]
    assert verify and all(r.errors == 1 and r.status is NodeStatus.COMPLETED for r in verify)  # flaky, retried
    p, (inv,) = demo.proj("deploy-waiting-1")
    assert [i.id for i in p.open_interrupts()] == ["gate-3"]


def test_dynamic_children(demo: Demo) -> None:
    p, (inv,) = demo.proj("labels-partial-1")
    kids = p.children(inv, "labelling@1/label_all@1")
    assert len(kids) == 36
    assert sum(k.status is NodeStatus.COMPLETED for k in kids) == 12
    assert len(p.open_interrupts()) == 24
    assert p.get(inv, "labelling@1/label_all@1").starts == 13  # the first run + one re-execution per answer


def test_bulk_sessions_replicate_real_sessions(demo: Demo) -> None:
    rows = demo.read(lambda st: st.list_sessions(text="bulk-", limit=1000)).items
    assert len(rows) == BULK
    named = {s.id: s for s in demo.read(lambda st: st.list_sessions(limit=1000)).items if s.id in EXPECTED}
    templates = {t: named[t] for t in BULK_TEMPLATES}
    newest_bulk = max(r.updated_at for r in rows)
    assert newest_bulk < min(s.updated_at for s in named.values())
    for r in rows:
        k = int(r.id.split("-")[1])
        t = templates[BULK_TEMPLATES[k % len(BULK_TEMPLATES)]]
        assert (r.app_name, r.status, r.event_count, r.open_interrupts) == (
            t.app_name,
            t.status,
            t.event_count,
            t.open_interrupts,
        )
    # a replica is a projection-equivalent copy with its own ids
    copy, template = demo.events("bulk-000001"), demo.events(BULK_TEMPLATES[1])
    assert [e.kind for e in copy] == [e.kind for e in template]
    assert not {e.id for e in copy} & {e.id for e in template}


async def test_same_clock_same_store() -> None:
    async def dump(epoch: float) -> list[list[str]]:
        store = MemoryStore()
        await build_demo(store, epoch=epoch, long_iterations=2)
        return [[s.event.to_json() for s in await store.events(sid)] for sid in EXPECTED]

    assert await dump(FIXTURE_EPOCH) == await dump(FIXTURE_EPOCH)


async def test_clock_patch_is_undone() -> None:
    store = MemoryStore()
    await build_demo(store, epoch=1_000_000.0, long_iterations=1)
    assert (await store.events("refund-waiting-1"))[0].event.timestamp < 2_000_000
    e1, e2 = Event(invocation_id="i", author="a"), Event(invocation_id="i", author="a")
    assert abs(e1.timestamp - time.time()) < 60 and e1.id != e2.id


def test_committed_fixture_matches_the_catalogue() -> None:
    if not FIXTURE_PATH.exists():
        pytest.skip("fixture not generated")
    demo = Demo(FIXTURE_PATH)
    rows = {s.id: s for s in demo.read(lambda st: st.list_sessions(limit=1000)).items}
    for sid, e in EXPECTED.items():
        assert (rows[sid].status, rows[sid].open_interrupts) == (e.status, e.open_ids), sid
