"""Prometheus metrics (engine/metrics.py): the exposition parses with
prometheus_client's parser; the store gauges say what waits (open interrupts by
app and node, queued and held turns) on SQLite and PostgreSQL; a worker's
counters move when it runs a turn, read over its metrics port; the port
answers only ``GET /metrics`` and refuses what is not HTTP."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from console import metrics_http
from engine import Content, Runner, handoff, metrics
from engine.store import open_store
from tests.contract.builders import pg_fresh_url
from tests.observe.worker_turn import worker_settles
from tests.reliability import crash_app
from tests.reliability.worker_procs import APPROVE


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    out = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def value(got: dict[Any, float], name: str, **labels: str) -> float:
    return got.get((name, tuple(sorted(labels.items()))), 0.0)


async def _waiting(store: Any, sessions: list[str]) -> None:
    runner = Runner(crash_app.APP, crash_app.workflow, store)
    for sid in sessions:
        async for _ in runner.run("u", sid, Content.from_text(f"order-{sid}")):
            pass


@pytest.fixture(params=["sqlite", "postgres"])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    url = str(tmp_path / "m.sqlite") if request.param == "sqlite" else pg_fresh_url()
    s = await open_store(url)
    yield s
    await s.close()


async def test_the_store_gauges_count_what_waits_by_app_and_node(store: Any) -> None:
    await _waiting(store, ["a", "b"])
    got = samples(await metrics.render(store))
    # crash_app asks finance and risk in every session: two nodes, two open each
    assert value(got, "hitl_open_interrupts", app=crash_app.APP, node="finance") == 2
    assert value(got, "hitl_open_interrupts", app=crash_app.APP, node="risk") == 2
    age = value(got, "hitl_oldest_open_interrupt_age_seconds", app=crash_app.APP, node="risk")
    assert 0 <= age < 600
    assert value(got, "hitl_store_up") == 1
    assert value(got, "hitl_queued_turns", app=crash_app.APP) == 0
    done = await handoff.queue_answer(store, "a", APPROVE, operator="ann")
    assert done.error is None
    got = samples(await metrics.render(store))
    assert value(got, "hitl_open_interrupts", app=crash_app.APP, node="finance") == 1
    assert value(got, "hitl_queued_turns", app=crash_app.APP) == 1
    assert value(got, "hitl_held_turns", app=crash_app.APP) == 0
    assert value(got, "hitl_live_workers", app=crash_app.APP) == 0  # turns wait and nobody runs them
    assert value(got, "hitl_oldest_queued_turn_age_seconds", app=crash_app.APP) >= 0


async def test_a_store_that_cannot_be_read_says_so_instead_of_failing_the_scrape(tmp_path: Path) -> None:
    s = await open_store(tmp_path / "m.sqlite")
    await s.close()
    got = samples(await metrics.render(s))
    assert value(got, "hitl_store_up") == 0


async def _get(port: int, raw: bytes) -> bytes:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(raw)
    await writer.drain()
    data = await asyncio.wait_for(reader.read(), 30)
    writer.close()
    return data


async def test_a_workers_counters_move_when_it_runs_a_turn(store: Any) -> None:
    await _waiting(store, ["w1"])
    server, port = await metrics_http.start(store, "127.0.0.1", 0)
    try:
        before = samples((await _get(port, b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")).split(b"\r\n\r\n", 1)[1].decode())
        inv = (await store.open_interrupts(session_id="w1", limit=1)).items[0].invocation_id
        assert (await handoff.queue_answer(store, "w1", APPROVE, operator="ann")).error is None
        await worker_settles(store, "w1", inv)
        raw = await _get(port, b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
        head, body = raw.split(b"\r\n\r\n", 1)
        assert head.startswith(b"HTTP/1.1 200 OK") and b"text/plain; version=0.0.4" in head
        after = samples(body.decode())

        def delta(name: str, **labels: str) -> float:
            return value(after, name, **labels) - value(before, name, **labels)

        assert delta("hitl_worker_claims_total", app=crash_app.APP) == 1
        assert delta("hitl_turns_total", app=crash_app.APP, kind="continue", outcome="ran") == 1
        assert delta("hitl_turn_duration_seconds_count", app=crash_app.APP, outcome="ran") == 1
        assert delta("hitl_turn_duration_seconds_bucket", app=crash_app.APP, outcome="ran", le="+Inf") == 1
        assert delta("hitl_answers_total", surface="library", via="worker") == 1
        assert value(after, "hitl_queued_turns", app=crash_app.APP) == 0
    finally:
        server.close()
        await server.wait_closed()


async def test_the_metrics_port_answers_get_metrics_only_and_refuses_what_is_not_http(tmp_path: Path) -> None:
    s = await open_store(tmp_path / "m.sqlite")
    server, port = await metrics_http.start(s, "127.0.0.1", 0)
    try:
        assert (await _get(port, b"GET /other HTTP/1.1\r\n\r\n")).startswith(b"HTTP/1.1 404")
        assert (await _get(port, b"POST /metrics HTTP/1.1\r\n\r\n")).startswith(b"HTTP/1.1 405")
        head = await _get(port, b"HEAD /metrics HTTP/1.1\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 200") and head.endswith(b"\r\n\r\n")  # no body
        assert (await _get(port, b"garbage\r\n\r\n")).startswith(b"HTTP/1.1 400")
        assert (await _get(port, b"GET /metrics HTTP/1.1\r\nX: " + b"a" * 20_000 + b"\r\n\r\n")).startswith(
            b"HTTP/1.1 400"
        )  # a header over the 8 KiB bound
        many = b"".join(b"X-%d: 1\r\n" % i for i in range(150))
        assert (await _get(port, b"GET /metrics HTTP/1.1\r\n" + many + b"\r\n")).startswith(b"HTTP/1.1 400")
        # and it still serves afterwards
        assert (await _get(port, b"GET /metrics HTTP/1.1\r\n\r\n")).startswith(b"HTTP/1.1 200")
    finally:
        server.close()
        await server.wait_closed()
        await s.close()


def test_every_metric_name_is_unique_and_prometheus_legal() -> None:
    import re

    names = metrics.metric_names()
    assert all(re.fullmatch(r"[a-zA-Z_:][a-zA-Z0-9_:]*", n) for n in names), names
    assert "hitl_open_interrupts" in names and "hitl_turns_total" in names
    assert time.time() > 0


def test_the_shipped_dashboard_and_alert_rules_name_only_exported_metrics() -> None:
    """deploy/grafana-dashboard.json and deploy/prometheus-alerts.yml parse, and
    every hitl_* series they query is one this project exports."""
    import json
    import re

    import yaml

    root = Path(__file__).resolve().parents[2] / "deploy"
    dash = json.loads((root / "grafana-dashboard.json").read_text(encoding="utf-8"))
    exprs = [t["expr"] for p in dash["panels"] for t in p["targets"]]
    rules = yaml.safe_load((root / "prometheus-alerts.yml").read_text(encoding="utf-8"))
    alerts = [r for g in rules["groups"] for r in g["rules"]]
    assert {a["alert"] for a in alerts} >= {"HitlInterruptOlderThanSLA", "HitlNoWorkerWhileTurnsQueue", "HitlTurnFailureRate"}
    exprs += [a["expr"] for a in alerts]
    named = {m for e in exprs for m in re.findall(r"\bhitl_[a-z0-9_]+", e)}
    assert named, exprs
    assert named <= metrics.metric_names(), sorted(named - metrics.metric_names())
    assert len(dash["panels"]) == len({p["id"] for p in dash["panels"]})
