"""``hitl serve``'s ``/metrics`` (engine/metrics.py): the store's gauges and the
server's sign-in counters for a direct loopback scraper, without a sign-in;
refused (404) when it comes through a proxy, and from networks not in
``[serve] metrics_from``."""

from __future__ import annotations

from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

from .served import request, serve, write_config
from .test_serve_http import sign_in


def _samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def test_metrics_are_served_to_loopback_and_count_sign_ins(any_store: Path | str, tmp_path: Path) -> None:
    config = write_config(tmp_path)
    with serve(any_store, "--config", str(config), cwd=tmp_path) as served:
        assert sign_in(served.url, "alice")[0] == 303
        assert sign_in(served.url, "alice", "wrong")[0] == 401
        status, headers, body = request(served.url + "/metrics")
        assert status == 200 and headers["Content-Type"].startswith("text/plain; version=0.0.4")
        got = _samples(body)
        assert got[("hitl_serve_signins_total", (("result", "ok"),))] == 1
        assert got[("hitl_serve_signins_total", (("result", "refused"),))] == 1
        assert got[("hitl_store_up", ())] == 1
        # the demo store waits on refund approvals, among others
        assert got[("hitl_open_interrupts", (("app", "refund_approval"), ("node", "finance_approval")))] >= 1
        # through a proxy (which would hand them to whoever it serves): not found
        status, _, _ = request(served.url + "/metrics", headers={"X-Forwarded-For": "203.0.113.7"})
        assert status == 404


def test_metrics_are_refused_to_networks_not_listed(store: Path, tmp_path: Path) -> None:
    config = write_config(tmp_path, extra='metrics_from = ["10.0.0.0/8"]\n')
    with serve(store, "--config", str(config), cwd=tmp_path) as served:
        status, _, _ = request(served.url + "/metrics")  # loopback is not in the list any more
        assert status == 404
        served.wait_log("refused /metrics to 127.0.0.1")  # the log line may follow the answer
