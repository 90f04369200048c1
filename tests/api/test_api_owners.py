"""The API's claim / assign / release and its answers' owner and permission checks,
from the attacker's side too: a viewer's claim, a token claiming or answering in
someone else's name, racing claims -- on SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio

from engine.permissions import policy_from, use_policy

from .conftest import Api

YES = {"approved": True, "note": "api"}


async def _events(api: Api, sid: str) -> int:
    _, body, _ = await api.get(f"/sessions/{sid}/events?limit=5000")
    return len(body["events"])


async def test_a_claimed_interrupt_answered_by_another_is_refused_without_force(api: Api) -> None:
    status, body, _ = await api.post("/sessions/r-1/claim", {"ids": ["finance-order-1"], "reason": "mine"})
    assert status == 200 and body["owner"] == "bot" and body["previous"] == {"finance-order-1": None}, body
    before = await _events(api, "r-1")
    status, err, _ = await api.post("/sessions/r-1/answer", {"answers": {"finance-order-1": YES}}, who="amy")
    assert (status, err["error"]["code"]) == (409, "claimed_by_other")
    assert err["error"]["message"].startswith("interrupt finance-order-1 is claimed by bot; nothing was written")
    status, err, _ = await api.post("/sessions/r-1/claim", {"ids": ["finance-order-1"]}, who="amy")
    assert (status, err["error"]["code"]) == (409, "owned_by_other")
    assert await _events(api, "r-1") == before
    status, body, _ = await api.post("/sessions/r-1/answer", {"answers": {"finance-order-1": YES}, "force": True},
                                     who="amy")
    assert status == 200 and body["operator"] == "amy", body
    _, inbox, _ = await api.get("/sessions/r-1")
    assert inbox is not None


async def test_a_viewer_cannot_claim(api: Api) -> None:
    before = await _events(api, "r-1")
    for action, extra in (("claim", {}), ("assign", {"to": "val"}), ("release", {})):
        status, err, _ = await api.post(f"/sessions/r-1/{action}", {"ids": ["finance-order-1"], **extra}, who="val")
        assert (status, err["error"]["code"]) == (403, "forbidden"), err
    assert await _events(api, "r-1") == before


async def test_a_token_cannot_claim_or_answer_as_someone_else(api: Api) -> None:
    """A body's operator is recorded as ``NAME via CALLER``: it neither becomes the
    named operator's claim nor passes a rule that allows only that operator."""
    use_policy(policy_from({"groups": {"finance": ["bot"]},
                            "answer": [{"app": "refund_approval", "node": "finance_approval", "allow": ["@finance"]}]}))
    status, body, _ = await api.post("/sessions/r-2/claim", {"ids": ["risk-order-2"], "operator": "bot"}, who="amy")
    assert status == 200 and body["owner"] == "bot via amy"
    status, err, _ = await api.post("/sessions/r-2/answer", {"answers": {"risk-order-2": YES}}, who="bot")
    assert (status, err["error"]["code"]) == (409, "claimed_by_other")  # not bot's claim: bot is asked to force
    before = await _events(api, "r-2")
    status, err, _ = await api.post(
        "/sessions/r-2/answer", {"answers": {"finance-order-2": YES}, "operator": "bot"}, who="amy")
    assert (status, err["error"]["code"]) == (403, "not_allowed")
    assert err["error"]["message"] == ("bot via amy may not answer interrupt finance-order-2: only @finance may "
                                       "(rule app=refund_approval node=finance_approval); nothing was written")
    assert await _events(api, "r-2") == before
    status, body, _ = await api.post("/sessions/r-2/answer", {"answers": {"finance-order-2": YES}}, who="bot")
    assert status == 200, body


async def test_racing_claims_over_the_api_one_wins(api: Api) -> None:
    who = ["bot", "amy"] * 5
    got = await asyncio.gather(*(api.post("/sessions/r-3/claim", {"invocation_id": api.invocations["r-3"]}, who=w)
                                 for w in who))
    wrote = [(w, body) for w, (status, body, _) in zip(who, got, strict=True) if status == 200 and body["event_ids"]]
    assert len(wrote) == 1
    winner = wrote[0][0]
    for w, (status, body, _) in zip(who, got, strict=True):
        if w != winner:
            assert status == 409 and body["error"]["code"] in ("owned_by_other", "owner_changed"), body
    _, audit, _ = await api.get("/audit?limit=100")
    claims = [r for r in audit["audit"] if r["action"] == "claim" and r["session_id"] == "r-3"]
    assert len(claims) == 1 and claims[0]["operator"] == winner


async def test_two_approvals_over_the_api(api: Api) -> None:
    use_policy(policy_from({"groups": {"finance": ["bot"], "legal": ["amy"]},
                            "answer": [{"node": "finance_approval", "approvals": 2, "all_of": ["finance", "legal"]}]}))
    status, body, _ = await api.post("/sessions/r-1/answer", {"answers": {"finance-order-1": YES}, "reason": "ok"})
    assert status == 200 and body["outcome"] == "approval" and body["approval"] == "1 of 2 approvals", body
    assert body["message"] == "approval recorded for finance-order-1: 1 of 2 approvals"
    status, err, _ = await api.post("/sessions/r-1/answer", {"answers": {"finance-order-1": YES}})
    assert (status, err["error"]["code"]) == (422, "approval")
    status, body, _ = await api.post("/sessions/r-1/answer", {"answers": {"finance-order-1": YES}}, who="amy")
    assert status == 200 and body["outcome"] == "applied" and body["open"] == ["risk-order-1"], body
    _, audit, _ = await api.get("/audit?limit=100")
    mine = [(r["action"], r["operator"]) for r in audit["audit"] if r["session_id"] == "r-1"][::-1]
    assert mine == [("approve", "bot"), ("answer", "amy")]
