"""The API's reads: each the matching ``hitl`` command's --json, on SQLite and PostgreSQL."""

from __future__ import annotations

from .conftest import ORDERS, Api


async def test_sessions_page_and_filter_like_hitl_sessions(api: Api) -> None:
    status, body, _ = await api.get("/sessions")
    assert status == 200
    assert sorted(s["id"] for s in body["sessions"]) == sorted(ORDERS)
    assert all(s["status"] == "waiting" and s["open_interrupts"] == 2 for s in body["sessions"])
    status, first, _ = await api.get("/sessions?limit=2")
    assert len(first["sessions"]) == 2 and first["next_cursor"]
    status, second, _ = await api.get(f"/sessions?limit=2&cursor={first['next_cursor']}")
    assert len(second["sessions"]) == 1 and second["next_cursor"] is None
    assert {s["id"] for s in first["sessions"] + second["sessions"]} == set(ORDERS)
    status, none, _ = await api.get("/sessions?app=nope")
    assert (status, none["sessions"]) == (200, [])
    status, err, _ = await api.get("/sessions?cursor=garbage")
    assert (status, err["error"]["code"]) == (400, "bad_cursor")
    status, err, _ = await api.get("/sessions?limit=0")
    assert (status, err["error"]["code"]) == (400, "bad_request") and "limit" in err["error"]["message"]


async def test_inbox_reads_the_bulk_filter_language(api: Api) -> None:
    status, body, _ = await api.get("/inbox")
    assert status == 200 and len(body["interrupts"]) == 6
    status, body, _ = await api.get("/inbox", params={"filter": "node=finance_approval"})
    assert sorted(r["interrupt_id"] for r in body["interrupts"]) == sorted(f"finance-{o}" for o in ORDERS.values())
    row = body["interrupts"][0]
    assert row["args"]["response_schema"]["properties"]["approved"]["type"] == "boolean"
    status, err, _ = await api.get("/inbox", params={"filter": "amount<"})
    assert status == 422 and "no value" in err["error"]["message"]


async def test_a_session_has_its_tree_open_interrupts_schema_and_form(api: Api) -> None:
    status, body, _ = await api.get("/sessions/r-1")
    assert status == 200
    (inv,) = body["invocations"]
    assert inv["invocation_id"] == api.invocations["r-1"]
    nodes = {n["node"].split("@")[0]: n for n in inv["nodes"]}
    assert {"fetch_order", "finance_approval", "risk_approval"} <= set(nodes)
    assert nodes["finance_approval"]["status"] == "WAITING" and nodes["fetch_order"]["status"] == "COMPLETED"
    ask = {i["id"]: i for i in inv["open"]}["finance-order-1"]
    assert ask["message"].startswith("Finance: refund") and ask["payload"]["order_id"] == "order-1"
    assert ask["form"]["kind"] == "object"
    assert [(f["name"], f["kind"], f["required"]) for f in ask["form"]["fields"]] == [
        ("approved", "boolean", True), ("note", "string", False)]
    assert any("approved" in line for line in ask["schema_lines"])
    assert inv["allowed"] == {"answer": True, "redrive": False, "cancel": True, "cancelled": None}
    status, err, _ = await api.get("/sessions/nope")
    assert (status, err["error"]["code"]) == (404, "session_not_found")
    assert err["error"]["message"] == "session 'nope' does not exist (list them with `hitl sessions`)"


async def test_events_are_paged_by_seq(api: Api) -> None:
    status, body, _ = await api.get("/sessions/r-2/events?limit=2")
    assert status == 200 and [e["seq"] for e in body["events"]] == [1, 2] and body["next_after"] == 2
    status, rest, _ = await api.get("/sessions/r-2/events?after=2&limit=5000")
    assert rest["events"][0]["seq"] == 3 and rest["next_after"] is None
    assert rest["events"][-1]["seq"] == len(rest["events"]) + 2


async def test_audit_lists_writes_by_the_token_name(api: Api) -> None:
    status, body, _ = await api.get("/audit")
    assert (status, body["audit"]) == (200, [])
    await api.post("/sessions/r-1/answer", {"answers": {"finance-order-1": {"approved": True}}, "reason": "ok"})
    status, body, _ = await api.get("/audit?operator=bot")
    (row,) = body["audit"]
    assert (row["action"], row["operator"], row["reason"], row["session_id"]) == ("answer", "bot", "ok", "r-1")
    assert row["details"]["ids"] == ["finance-order-1"]
