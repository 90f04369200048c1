"""The API's writes: through engine.operations (and engine.handoff for workers),
refusals with stable codes and the CLI's line, idempotency keys; SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from .conftest import Api

YES = {"approved": True, "note": "api"}


async def _events(api: Api, sid: str) -> int:
    status, body, _ = await api.get(f"/sessions/{sid}/events?limit=5000")
    return len(body["events"])


async def test_answer_runs_what_it_unblocks_and_says_what_ran(api: Api) -> None:
    status, body, _ = await api.post("/sessions/r-1/answer", {"answers": {"finance-order-1": YES}, "reason": "fine"})
    assert status == 200, body
    assert (body["outcome"], body["kind"], body["operator"]) == ("applied", "answer", "bot")
    assert body["open"] == ["risk-order-1"] and body["status"] == "WAITING"
    assert body["message"].startswith(f"invocation {api.invocations['r-1']}") or "keeps waiting" in body["message"]
    status, body, _ = await api.post("/sessions/r-1/answer", {"answers": {"risk-order-1": YES}})
    assert (status, body["outcome"], body["status"], body["open"]) == (200, "applied", "COMPLETED", [])
    assert any(p.split("/")[-1].startswith("pay@") for p in body["ran"])
    assert body["events"][0]["kind"] == "response" and body["events"][0]["seq"] is not None
    assert body["message"] == f"invocation {api.invocations['r-1']}: COMPLETED"


async def test_dry_run_returns_what_the_cli_prints_and_writes_nothing(api: Api) -> None:
    before = await _events(api, "r-2")
    status, body, _ = await api.post(
        "/sessions/r-2/answer", {"answers": {"finance-order-2": YES, "risk-order-2": YES}, "dry_run": True})
    assert status == 200 and body["kind"] == "dry_run", body
    assert sorted(body["resolves"]) == ["finance-order-2", "risk-order-2"] and body["still_open"] == []
    assert body["would_run"] is True and body["refusal"] is None
    assert body["lines"][0] == f"dry run: session r-2, invocation {api.invocations['r-2']} (nothing was written)"
    assert {c["effect"] for c in body["changes"]} >= {"auto-complete"}
    assert await _events(api, "r-2") == before
    status, err, _ = await api.post("/sessions/r-2/answer", {"answers": {"nope": 1}, "dry_run": True})
    assert (status, err["error"]["code"]) == (422, "unknown_interrupt")


async def test_refusals_have_stable_codes_and_the_cli_line_and_write_nothing(api: Api) -> None:
    before = await _events(api, "r-3")
    cases = [
        ({"answers": {"nope-1": YES}}, 422, "unknown_interrupt", "nope-1"),
        ({"answers": {"finance-order-3": {"approved": "maybe"}}}, 422, "invalid_response", "finance-order-3"),
        ({"answers": {" ": YES}}, 400, "blank_id", "empty"),
        ({"answers": {}}, 400, "bad_request", "answers"),
        ({"answers": {"finance-order-3": YES}, "colour": "red"}, 400, "bad_request", "colour"),
    ]
    for payload, code, name, says in cases:
        status, err, _ = await api.post("/sessions/r-3/answer", payload)
        assert (status, err["error"]["code"]) == (code, name), (payload, err)
        assert says in err["error"]["message"], err
    assert await _events(api, "r-3") == before
    status, err, _ = await api.post("/sessions/missing/answer", {"answers": {"x": 1}})
    assert (status, err["error"]["code"]) == (404, "session_not_found")
    raw = await api.client.post("/api/v1/sessions/r-3/answer", data=b'{"answers": ', headers={
        **api.headers("bot"), "Content-Type": "application/json"})
    assert raw.status == 400 and (await raw.json())["error"]["code"] == "bad_request"
    status, _, _ = await api.post("/sessions/r-3/answer", {"answers": {"finance-order-3": YES}})
    assert status == 200
    status, err, _ = await api.post("/sessions/r-3/answer", {"answers": {"finance-order-3": YES}})
    assert (status, err["error"]["code"]) == (409, "already_resolved") and "finance-order-3" in err["error"]["message"]


async def test_an_idempotency_key_never_answers_twice(api: Api) -> None:
    payload = {"answers": {"finance-order-2": YES}}
    key = {"Idempotency-Key": "k-1"}
    results = await asyncio.gather(*(api.post("/sessions/r-2/answer", payload, headers=key) for _ in range(5)))
    assert [s for s, _, _ in results] == [200] * 5
    assert len({str(b) for _, b, _ in results}) == 1  # every caller got the first response
    assert sum(1 for _, _, h in results if h.get("Idempotent-Replayed") == "true") == 4
    status, audit, _ = await api.get("/audit?session=r-2")
    assert len(audit["audit"]) == 1
    status, err, _ = await api.post("/sessions/r-2/answer", {"answers": {"risk-order-2": YES}}, headers=key)
    assert (status, err["error"]["code"]) == (422, "idempotency_key_reused")
    # Without a key, a retry is refused by the engine: never a second answer.
    status, err, _ = await api.post("/sessions/r-2/answer", payload)
    assert (status, err["error"]["code"]) == (409, "already_resolved")
    # A refusal is replayed as it was (the key's request ran once).
    bad = {"Idempotency-Key": "k-2"}
    first = await api.post("/sessions/r-2/answer", {"answers": {"nope": 1}}, headers=bad)
    again = await api.post("/sessions/r-2/answer", {"answers": {"nope": 1}}, headers=bad)
    assert first[0] == again[0] == 422 and first[1] == again[1] and again[2]["Idempotent-Replayed"] == "true"


async def test_concurrent_answers_to_one_id_write_one(api: Api) -> None:
    payload = {"answers": {"finance-order-1": YES}}
    results = await asyncio.gather(*(api.post("/sessions/r-1/answer", payload) for _ in range(4)))
    statuses = sorted(s for s, _, _ in results)
    assert statuses[0] == 200 and statuses.count(200) == 1 and set(statuses[1:]) == {409}, results
    status, audit, _ = await api.get("/audit?session=r-1")
    assert len(audit["audit"]) == 1


async def test_on_behalf_of_is_recorded_with_the_caller(api: Api) -> None:
    status, body, _ = await api.post("/sessions/r-1/answer", {"answers": {"finance-order-1": YES}, "operator": "alice"})
    assert (status, body["operator"]) == (200, "alice via bot")
    status, audit, _ = await api.get("/audit?operator=alice via bot")
    assert len(audit["audit"]) == 1


async def test_bulk_answer_dry_run_per_item_then_submit(api: Api) -> None:
    req = {"filter": "node=finance_approval", "answer": YES, "dry_run": True}
    status, plan, _ = await api.post("/bulk-answer", req)
    assert status == 200 and plan["kind"] == "dry_run", plan
    assert plan["counts"]["auto-complete"] == 3 and len(plan["items"]) == 3
    assert {i["verdict"] for i in plan["items"]} == {"auto-complete"}
    assert plan["summary"].startswith("3 interrupts in 3 invocations")
    items = [{"session_id": i["session_id"], "invocation_id": i["invocation_id"][:8],
              "interrupt_id": i["interrupt_ids"][0]} for i in plan["items"]]
    status, done, _ = await api.post("/bulk-answer", {"items": items, "answer": YES, "reason": "monthly"})
    assert status == 200 and done["ok"] and done["counts"]["applied"] == 3, done
    status, audit, _ = await api.get("/audit?operator=bot")
    assert {r["details"]["batch"] for r in audit["audit"]} == {done["batch"]}
    status, err, _ = await api.post("/bulk-answer", {"answer": YES})
    assert (status, err["error"]["code"]) == (400, "bad_request")
    status, err, _ = await api.post("/bulk-answer", {"answer": YES, "filter": "node=finance_approval"})
    assert (status, err["error"]["code"]) == (422, "nothing_matches")


async def test_cancel_needs_a_reason_then_closes_and_later_answers_name_it(api: Api) -> None:
    inv = api.invocations["r-3"]
    status, err, _ = await api.post(f"/sessions/r-3/invocations/{inv}/cancel", {})
    assert (status, err["error"]["code"]) == (400, "bad_request") and "reason" in err["error"]["message"]
    status, err, _ = await api.post(f"/sessions/r-3/invocations/{inv}/cancel", {"reason": "   "})
    assert status == 400 and "needs a reason" in err["error"]["message"]
    status, body, _ = await api.post(f"/sessions/r-3/invocations/{inv[:8]}/cancel", {"reason": "duplicate"})
    assert (status, body["status"], body["outcome"]) == (200, "CANCELLED", "applied"), body
    assert body["message"] == f"cancelled invocation {inv}; closed finance-order-3, risk-order-3"
    status, err, _ = await api.post("/sessions/r-3/answer", {"answers": {"finance-order-3": YES}})
    assert status == 422 and err["error"]["code"] in ("invocation_cancelled", "unknown_interrupt")
    assert "cancel" in err["error"]["message"]
    status, err, _ = await api.post(f"/sessions/r-3/invocations/{inv}/redrive", {})
    assert (status, err["error"]["code"]) == (422, "invocation_cancelled")


async def test_redrive_of_a_waiting_invocation_is_refused_and_via_worker_is_queued(api: Api) -> None:
    inv = api.invocations["r-2"]
    status, err, _ = await api.post(f"/sessions/r-2/invocations/{inv}/redrive", {"via": "local"})
    assert (status, err["error"]["code"]) == (422, "not_redrivable")
    status, err, _ = await api.post("/sessions/r-2/invocations/nope/redrive", {})
    assert (status, err["error"]["code"]) == (404, "invocation_not_found")


async def test_start_runs_the_app_here_or_queues_it(api: Api) -> None:
    status, body, _ = await api.post("/sessions", {"app_name": "refund_approval", "text": "order-9", "session_id": "s-9"})
    assert status == 200, body
    assert (body["kind"], body["outcome"], body["status"]) == ("start", "applied", "WAITING")
    assert sorted(body["open"]) == ["finance-order-9", "risk-order-9"]
    status, err, _ = await api.post("/sessions", {"app_name": "no_such_app", "text": "x"})
    assert (status, err["error"]["code"]) == (422, "app_unavailable")
    status, body, _ = await api.post("/sessions", {"app_name": "refund_approval", "text": "order-10", "via": "worker"})
    assert (status, body["outcome"], body["queued_for"]) == (200, "queued", "refund_approval")
    assert "no worker for refund_approval is alive" in body["notice"]


async def test_an_answer_via_a_worker_is_stored_and_queued(api: Api) -> None:
    status, body, _ = await api.post("/sessions/r-1/answer", {"answers": {"finance-order-1": YES, "risk-order-1": YES},
                                                              "via": "worker"})
    assert status == 200, body
    assert (body["outcome"], body["queued_for"]) == ("queued", "refund_approval")
    assert body["message"].startswith("stored; no worker for refund_approval is alive")
    status, show, _ = await api.get("/sessions/r-1")
    assert show["invocations"][0]["health"]["queued_for"] == "refund_approval"


async def test_an_idempotency_key_holds_across_servers_and_restarts(api: Api) -> None:
    from console.serve.api_auth import fingerprint
    from engine.store.idempotency import keys_of
    from tests.contract.builders import open_store

    from .conftest import config, serve_app

    start = {"app_name": "refund_approval", "text": "order-77", "session_id": "s-77"}
    key = {"Idempotency-Key": "start-77"}
    first = await api.post("/sessions", start, headers=key)
    assert first[0] == 200 and first[1]["outcome"] == "applied"
    other = await serve_app(api.target, config())  # another hitl serve on the same store (or this one, restarted)
    try:
        again = Api(other, api.invocations, api.kind, api.target)
        status, body, headers = await again.post("/sessions", start, headers=key)
        assert (status, body, headers["Idempotent-Replayed"]) == (200, first[1], "true")
        status, err, _ = await again.post("/sessions", {**start, "text": "order-78"}, headers=key)
        assert (status, err["error"]["code"]) == (422, "idempotency_key_reused")
        status, show, _ = await again.get("/sessions/s-77")
        assert len(show["invocations"]) == 1  # started once
        store = await open_store(api.kind, Path("."), path=api.target)
        raw = json.dumps({"answers": {"finance-order-1": YES}}).encode()
        fp = fingerprint("POST", "/api/v1/sessions/r-1/answer", raw)
        try:  # the same request, still running elsewhere (or its server died mid-write)
            assert (await keys_of(store).begin("bot", "busy-1", fp, 0.0))[0] == "new"
        finally:
            await store.close()
        r = await other.post("/api/v1/sessions/r-1/answer", data=raw, headers={
            **api.headers("bot"), "Content-Type": "application/json", "Idempotency-Key": "busy-1"})
        assert (r.status, (await r.json())["error"]["code"]) == (409, "idempotency_key_in_use")
        status, audit, _ = await again.get("/audit?session=r-1")
        assert audit["audit"] == []
    finally:
        await other.close()


async def test_a_queued_write_asks_who_serves_its_app_once(api: Api, monkeypatch: pytest.MonkeyPatch) -> None:
    """The notice that no worker is alive comes with the routed write's outcome: the API
    does not read the workers again to say it."""
    import engine.handoff

    asked: list[str | None] = []
    real = engine.handoff.live_workers

    async def counting(store: Any, app_name: str | None = None) -> Any:
        asked.append(app_name)
        return await real(store, app_name)

    monkeypatch.setattr(engine.handoff, "live_workers", counting)
    status, body, _ = await api.post("/sessions/r-1/answer", {"answers": {"finance-order-1": YES}, "via": "worker"})
    assert (status, body["outcome"]) == (200, "queued"), body
    assert "no worker for refund_approval is alive" in body["notice"]
    assert asked == ["refund_approval"]
