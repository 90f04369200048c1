"""Signed answer links, from the attacker's side: a link answers its one
interrupt once, as its recipient; forged, altered, oversized, expired, replayed
and concurrent uses answer nothing, and the page then says who answered when."""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import time
from pathlib import Path

import pytest

from engine.notify.links import Link, make_token, read_token
from tests.browser.served import hitl_bin
from tests.contract.builders import location, open_store

from .conftest import TOKENS, config, fill, serve_app

SECRET = "link-secret-for-tests"
SLACK = "slack-signing-secret-3c"


@pytest.fixture(params=["sqlite", "postgres"])
async def served(request: pytest.FixtureRequest, tmp_path: Path):
    store = await open_store(request.param, tmp_path)
    try:
        invs = await fill(store)
        target = location(store)
        seqs = {r.interrupt_id: r.raised_seq for sid in invs for r in (await store.open_interrupts(session_id=sid)).items}
    finally:
        await store.close()
    toml = tmp_path / "hitl.toml"
    toml.write_text(f'[notify]\npublic_url = "http://127.0.0.1:8000"\nlink_secret = "{SECRET}"\n'
                    f'[notify.channels.slack]\ntype = "slack"\nurl = "http://127.0.0.1:9/"\nrecipient = "slack"\n'
                    f'signing_secret = "{SLACK}"\n', encoding="utf-8")
    client = await serve_app(target, config(), config=str(toml))
    client.seqs = seqs  # type: ignore[attr-defined]
    client.toml = toml  # type: ignore[attr-defined]
    client.target = target  # type: ignore[attr-defined]
    yield client
    await client.close()


def token(served, iid: str, sid: str, to: str = "alice", expires: float | None = None) -> str:
    return make_token(SECRET, Link(sid, iid, served.seqs[iid], to, expires or time.time() + 3600))


async def audit(served, sid: str) -> list[dict]:
    r = await served.get(f"/api/v1/audit?session={sid}", headers={"Authorization": f"Bearer bot:{TOKENS['bot'][1]}"})
    return (await r.json())["audit"]


async def test_a_link_shows_the_question_and_answers_once_as_its_recipient(served) -> None:
    t = token(served, "finance-order-1", "r-1")
    r = await served.get(f"/answer/{t}")
    page = await r.text()
    assert r.status == 200 and "Finance: refund" in page and 'id="approve"' in page and 'id="reject"' in page
    assert 'name="f.note"' in page and "for alice" in page and r.headers["Cache-Control"] == "no-store"
    r = await served.post(f"/answer/{t}", data={"action": "dry-approve"})
    assert r.status == 200 and "dry run: session r-1" in await r.text()
    assert await audit(served, "r-1") == []  # the dry run wrote nothing
    r = await served.post(f"/answer/{t}", data={"action": "approve", "f.note": "ok by me", "reason": "looked fine"})
    assert r.status == 200 and "answered by alice" in await r.text()
    (row,) = await audit(served, "r-1")
    assert (row["operator"], row["reason"], row["details"]["ids"]) == ("alice", "looked fine", ["finance-order-1"])
    again = await served.post(f"/answer/{t}", data={"action": "reject"})  # a replay
    text = await again.text()
    assert again.status == 409 and "already answered by alice at" in text
    r = await served.get(f"/answer/{t}")
    assert "already answered by alice" in await r.text() and 'id="approve"' not in await r.text()
    assert len(await audit(served, "r-1")) == 1


async def test_forged_altered_oversized_and_expired_links_answer_nothing(served) -> None:
    good = token(served, "finance-order-2", "r-2")
    claim, sig = good.split(".")
    other = token(served, "risk-order-2", "r-2").split(".")[0]
    cases = {
        "altered signature": f"{claim}.{sig[:-2]}{'AA' if sig[-2:] != 'AA' else 'BB'}",
        "another claim, this signature": f"{other}.{sig}",
        "signed with another secret": make_token("not-the-secret", Link("r-2", "finance-order-2",
                                                                        served.seqs["finance-order-2"], "x",
                                                                        time.time() + 60)),
        "oversized": claim + "A" * 3000 + "." + sig,
        "not a token": "hello",
    }
    for what, bad in cases.items():
        for method in ("get", "post"):
            r = await getattr(served, method)(f"/answer/{bad}", **({"data": {"action": "approve"}} if method == "post"
                                                                   else {}))
            assert r.status == 403, what
            assert "not valid" in await r.text() and "Finance" not in await r.text()
    expired = token(served, "finance-order-2", "r-2", expires=time.time() - 1)
    r = await served.post(f"/answer/{expired}", data={"action": "approve"})
    assert r.status == 410 and "expired" in await r.text()
    assert await audit(served, "r-2") == []
    r = await served.post(f"/answer/{good}", data={"action": "approve"}, headers={"Origin": "http://evil.example"})
    assert r.status == 403 and await audit(served, "r-2") == []  # a cross-site post: refused by the guard


async def test_concurrent_uses_answer_once_and_an_answer_elsewhere_closes_the_link(served) -> None:
    t = token(served, "finance-order-3", "r-3", to="carol")
    results = await asyncio.gather(*(served.post(f"/answer/{t}", data={"action": "approve"}) for _ in range(6)))
    statuses = sorted(r.status for r in results)
    assert statuses == [200] + [409] * 5, statuses
    assert len(await audit(served, "r-3")) == 1
    t2 = token(served, "risk-order-3", "r-3", to="dave")
    r = await served.post("/api/v1/sessions/r-3/answer", json={"answers": {"risk-order-3": {"approved": False}}},
                          headers={"Authorization": f"Bearer bot:{TOKENS['bot'][1]}"})
    assert r.status == 200
    r = await served.get(f"/answer/{t2}")
    assert "already answered by bot at" in await r.text()


async def test_an_invalid_answer_is_refused_on_the_page_and_nothing_is_written(served) -> None:
    t = token(served, "finance-order-1", "r-1")
    r = await served.post(f"/answer/{t}", data={"action": "approve", "f.note": "x" * 600})
    assert r.status == 422 and "finance-order-1" in await r.text() and 'id="approve"' in await r.text()
    assert await audit(served, "r-1") == []


def test_hitl_link_prints_a_link_for_an_open_interrupt(served) -> None:
    if served.seqs and not isinstance(served.target, Path):
        pytest.skip("hitl link on a URL store is the same code path")
    done = subprocess.run([hitl_bin(), "--db", str(served.target), "--config", str(served.toml), "link", "r-2",
                           "finance-order-2", "--to", "erin"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    url = done.stdout.strip()
    assert re.fullmatch(r"http://127\.0\.0\.1:8000/answer/[A-Za-z0-9_\-]+\.[A-Za-z0-9_\-]+", url)
    link = read_token(SECRET, url.rsplit("/", 1)[1])
    assert (link.session_id, link.interrupt_id, link.to) == ("r-2", "finance-order-2", "erin")
    bad = subprocess.run([hitl_bin(), "--db", str(served.target), "--config", str(served.toml), "link", "r-2",
                          "nope", "--to", "erin"], capture_output=True, text=True, timeout=120)
    assert bad.returncode == 1 and "is not open" in bad.stderr and "Traceback" not in bad.stderr


def slack_request(value: str, user: str = "frank", secret: str = SLACK, ts: int | None = None) -> tuple[bytes, dict]:
    from urllib.parse import urlencode

    from engine.notify.channels import slack_signature

    body = urlencode({"payload": json.dumps({"type": "block_actions", "user": {"username": user},
                                             "actions": [{"action_id": "hitl-approve", "value": value}]})}).encode()
    stamp = str(ts if ts is not None else int(time.time()))
    return body, {"X-Slack-Request-Timestamp": stamp, "X-Slack-Signature": slack_signature(secret, stamp, body),
                  "Content-Type": "application/x-www-form-urlencoded"}


async def test_a_slack_button_answers_only_with_slacks_signature_and_once(served) -> None:
    from engine.notify.channels import slack_body
    from engine.notify.facts import Notification

    t = token(served, "finance-order-2", "r-2", to="slack")
    buttons = slack_body(Notification("k", "interrupt_opened", "r", ("slack",), 1, "s"), {"slack": f"http://x/answer/{t}"},
                         interactive=True)["blocks"][1]["elements"]
    assert [b.get("value") for b in buttons[:2]] == [f"approve:{t}", f"reject:{t}"]
    for body, headers in [
        slack_request(f"approve:{t}", secret="not-slacks"),              # forged signature
        slack_request(f"approve:{t}", ts=int(time.time()) - 3600),       # a replay of an old request
        (slack_request(f"approve:{t}")[0], {"Content-Type": "application/x-www-form-urlencoded"}),  # unsigned
    ]:
        r = await served.post("/answer/slack/actions", data=body, headers=headers)
        assert r.status == 401
    assert await audit(served, "r-2") == []
    body, headers = slack_request(f"approve:{t}")
    r = await served.post("/answer/slack/actions", data=body, headers=headers)
    assert r.status == 200 and (await r.json())["text"] == "approved by frank via slack"
    (row,) = await audit(served, "r-2")
    assert row["operator"] == "frank via slack"
    r = await served.post("/answer/slack/actions", data=body, headers=headers)  # the same request again
    assert "already answered by frank via slack" in (await r.json())["text"]
    assert len(await audit(served, "r-2")) == 1
    bad, headers = slack_request("approve:" + t[:-3] + "xyz")
    r = await served.post("/answer/slack/actions", data=bad, headers=headers)
    assert "not valid" in (await r.json())["text"]


async def test_a_link_whose_recipient_may_not_answer_answers_nothing(served) -> None:
    """hitl.toml's [[answer]] rules hold for signed links too: the recipient is the operator."""
    from engine.permissions import reset_policy

    with open(served.toml, "a", encoding="utf-8") as f:
        f.write('\n[groups]\nfinance = ["bob"]\n\n[[answer]]\nnode = "finance_approval"\nallow = ["@finance"]\n')
    try:
        t = token(served, "finance-order-3", "r-3", to="alice")
        r = await served.post(f"/answer/{t}", data={"action": "approve", "reason": "ok"})
        text = await r.text()
        assert "alice may not answer interrupt finance-order-3: only @finance may" in text
        assert await audit(served, "r-3") == []
    finally:
        reset_policy()
