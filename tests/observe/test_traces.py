"""OpenTelemetry spans (engine/telemetry.py), read back with the SDK's in-memory
exporter: a turn and its node runs, an operator's action and the turn it runs,
a turn queued for a worker continuing the queuer's trace (SQLite and
PostgreSQL), and nothing at all when tracing is off."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from engine import START, Content, RequestInput, Runner, Workflow, handoff, node, operations, telemetry
from engine.apps import AppRegistry
from engine.store import open_store
from tests.contract.builders import pg_fresh_url
from tests.observe.worker_turn import worker_settles
from tests.reliability import crash_app
from tests.reliability.worker_procs import APPROVE


@pytest.fixture
def spans(monkeypatch: pytest.MonkeyPatch) -> Iterator[InMemorySpanExporter]:
    """Tracing on, into memory: a provider of this test's own (the global one
    can be set once per process, and the other tests run untraced)."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    monkeypatch.setattr(telemetry, "tracer", lambda: provider.get_tracer("test"))
    yield exporter
    provider.shutdown()


@node
async def prep(node_input: Any) -> Any:
    return {"order": node_input, "card": "4111-SECRET"}


@node
async def ask(node_input: Any):
    yield RequestInput("ok?", payload=node_input, response_schema=bool, interrupt_id="ok")


@node
async def boom(node_input: Any) -> Any:
    raise RuntimeError("ledger down")


inner = Workflow("inner", [(START, boom)])
FLOW = Workflow("flow", [(START, prep, ask, inner)])


def by_name(exporter: InMemorySpanExporter) -> dict[str, list[Any]]:
    out: dict[str, list[Any]] = {}
    for s in exporter.get_finished_spans():
        out.setdefault(s.name, []).append(s)
    return out


async def test_a_turn_is_a_span_with_a_child_span_per_node_run(tmp_path: Path, spans: InMemorySpanExporter) -> None:
    store = await open_store(tmp_path / "t.sqlite")
    try:
        runner = Runner("shop", FLOW, store)
        async for _ in runner.run("u", "s1", Content.from_text("o-1")):
            pass
        got = by_name(spans)
        [turn] = got["hitl.turn"]
        assert turn.attributes["hitl.turn.kind"] == "start"
        assert turn.attributes["hitl.app"] == "shop" and turn.attributes["hitl.session"] == "s1"
        inv = turn.attributes["hitl.invocation"]
        assert turn.attributes["hitl.status"] == "waiting"
        [root] = got["hitl.node flow"]
        assert root.parent.span_id == turn.context.span_id
        [p] = got["hitl.node prep"]
        [a] = got["hitl.node ask"]
        for child, status in ((p, "completed"), (a, "waiting")):
            assert child.parent.span_id == root.context.span_id
            assert child.context.trace_id == turn.context.trace_id
            assert child.attributes["hitl.node.status"] == status
        assert a.attributes["hitl.node.path"] == "flow@1/ask@1"
        spans.clear()
        with pytest.raises(Exception, match="ledger down"):
            async for _ in runner.run("u", "s1", Content.from_responses({"ok": True})):
                pass
        got = by_name(spans)
        [turn] = got["hitl.turn"]
        assert turn.attributes["hitl.turn.kind"] == "resume" and turn.attributes["hitl.invocation"] == inv
        [b] = got["hitl.node boom"]
        assert b.status.status_code is StatusCode.ERROR
        assert b.attributes["hitl.node.status"] == "failed"
        assert any(e.name == "exception" and "ledger down" in str(e.attributes) for e in b.events)
        [w] = got["hitl.node inner"]
        assert b.parent.span_id == w.context.span_id and w.attributes["hitl.node.status"] == "failed"
        # No payload, output or answer value is ever an attribute.
        for s in spans.get_finished_spans():
            assert "SECRET" not in repr(dict(s.attributes or {}))
    finally:
        await store.close()


async def test_an_operator_action_is_a_span_parent_of_the_turn_it_runs(
    tmp_path: Path, spans: InMemorySpanExporter
) -> None:
    store = await open_store(tmp_path / "t.sqlite")
    try:
        registry = AppRegistry()
        registry.register("shop", Workflow("flow", [(START, prep, ask)]))
        async for _ in registry.runner("shop", store).run("u", "s1", Content.from_text("o-1")):
            pass
        spans.clear()
        token = telemetry.set_surface("console")
        try:
            done = await operations.answer(
                store, "s1", {"ok": True}, registry=registry, operator="ann", reason="card 4111-SECRET checked"
            )
        finally:
            telemetry._surface.reset(token)
        assert done.error is None
        got = by_name(spans)
        [act] = got["hitl.action answer"]
        assert act.attributes["hitl.operator"] == "ann" and act.attributes["hitl.surface"] == "console"
        assert list(act.attributes["hitl.ids"]) == ["ok"] and act.attributes["hitl.via"] == "here"
        [turn] = got["hitl.turn"]
        assert turn.parent.span_id == act.context.span_id
        assert "SECRET" not in repr(dict(act.attributes))  # the reason is never recorded
    finally:
        await store.close()


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
async def test_a_turn_queued_for_a_worker_continues_the_trace_of_the_answer(
    kind: str, tmp_path: Path, spans: InMemorySpanExporter
) -> None:
    url = str(tmp_path / "w.sqlite") if kind == "sqlite" else pg_fresh_url()
    store = await open_store(url)
    try:
        runner = Runner(crash_app.APP, crash_app.workflow, store)
        async for _ in runner.run("u", "s1", Content.from_text("order-1")):
            pass
        inv = (await store.open_interrupts(session_id="s1", limit=1)).items[0].invocation_id
        spans.clear()
        done = await handoff.queue_answer(store, "s1", APPROVE, operator="ann")
        assert done.error is None
        req = await store.get_turn_request("s1", inv)  # type: ignore[attr-defined]
        assert req is not None and req.payload["traceparent"].startswith("00-")
        await worker_settles(store, "s1", inv)
        got = by_name(spans)
        [act] = got["hitl.action answer"]
        assert act.attributes["hitl.via"] == "worker"
        [turn] = got["hitl.turn"]  # the worker's turn, on "another host"
        assert turn.attributes["hitl.turn.kind"] == "continue"
        assert turn.context.trace_id == act.context.trace_id
        assert turn.parent.span_id == act.context.span_id
        assert turn.attributes["hitl.status"] == "completed"
        nodes = [s for name, ss in got.items() if name.startswith("hitl.node ") for s in ss]
        assert {s.context.trace_id for s in nodes} == {act.context.trace_id}
        assert any(s.name == "hitl.node pay" for s in nodes)
    finally:
        await store.close()


async def test_tracing_off_returns_the_turn_itself_and_stores_no_trace_context(tmp_path: Path) -> None:
    assert telemetry.tracer() is None  # no provider set in this process
    store = await open_store(tmp_path / "t.sqlite")
    try:
        turn = Runner("shop", Workflow("flow", [(START, prep, ask)]), store).run("u", "s1", Content.from_text("x"))
        assert turn.__class__.__name__ == "async_generator" and turn.__qualname__.endswith("Runner._run")
        async for _ in turn:
            pass
        assert telemetry.trace_fields() == {}
    finally:
        await store.close()


def test_tracing_is_on_only_once_a_real_provider_is_set() -> None:
    """Importing the API is not enough (its default provider records nothing);
    setting an SDK provider turns tracing on -- checked in a fresh process, as
    the global provider can be set once per process."""
    code = (
        "import opentelemetry.trace as t; from engine import telemetry\n"
        "assert telemetry.tracer() is None\n"
        "from opentelemetry.sdk.trace import TracerProvider; t.set_tracer_provider(TracerProvider())\n"
        "assert telemetry.tracer() is not None; print('ok')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False)
    assert out.stdout.strip() == "ok", out.stderr


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
async def test_store_calls_are_spans_with_their_statements_at_the_debug_level(
    kind: str, tmp_path: Path, spans: InMemorySpanExporter, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = str(tmp_path / "t.sqlite") if kind == "sqlite" else pg_fresh_url()
    store = await open_store(url)
    try:
        runner = Runner("shop", Workflow("flow", [(START, prep, ask)]), store)
        async for _ in runner.run("u", "s1", Content.from_text("o-1")):
            pass
        assert not [s for s in spans.get_finished_spans() if s.name.startswith("hitl.store")]  # off by default
        monkeypatch.setattr(telemetry, "STORE_SPANS", True)
        spans.clear()
        async for _ in runner.run("u", "s1", Content.from_responses({"ok": True})):
            pass
        got = [s for s in spans.get_finished_spans() if s.name.startswith("hitl.store ")]
        assert got, [s.name for s in spans.get_finished_spans()]
        [turn] = [s for s in spans.get_finished_spans() if s.name == "hitl.turn"]
        assert {s.context.trace_id for s in got} == {turn.context.trace_id}
        assert all(s.attributes["hitl.store.backend"] == kind for s in got)
        assert all(s.attributes["hitl.store.statements"] >= 1 for s in got), [(s.name, dict(s.attributes)) for s in got]
        writes = [s for s in got if s.attributes["hitl.store.commits"] >= 1]
        assert writes, [(s.name, dict(s.attributes)) for s in got]
    finally:
        await store.close()
