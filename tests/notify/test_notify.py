"""Notifications end to end, with real receivers on loopback: each open interrupt
a rule matches is delivered once per channel, signed; a failing receiver is
retried with backoff and then counted as failed; e-mail over STARTTLS with a
login reaches an aiosmtpd sink with a working answer link. SQLite and PostgreSQL."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engine.notify.channels import verify_signature
from engine.notify.config import NotifyConfigError, parse
from engine.notify.links import read_token
from engine.notify.sender import Sender
from engine.store.notify import ledger
from tests.api.conftest import fill
from tests.contract.builders import open_store

from .receivers import HttpReceiver, SmtpSink

SECRET = "whsec-test-4e1f"


@pytest.fixture(params=["sqlite", "postgres"])
async def store(request: pytest.FixtureRequest, tmp_path: Path):
    s = await open_store(request.param, tmp_path)
    await fill(s)
    yield s
    await s.close()


def config(url: str, **rule: object) -> object:
    return parse({
        "retry_seconds": 0.001, "max_retry_seconds": 0.001,
        "channels": {"ops": {"type": "webhook", "url": url, "secret": SECRET}},
        "rules": [{"name": "finance", "on": ["interrupt_opened"], "filter": "node=finance_approval",
                   "channels": ["ops"], **rule}],
    }, "test", {})


async def test_each_matching_interrupt_is_delivered_once_and_signed(store, tmp_path: Path) -> None:
    hook = await HttpReceiver().start()
    try:
        sender = Sender(store, config(hook.url))
        first = await sender.run_once()
        assert len(first.sent) == 3 and first.failed == []
        keys = sorted(json.loads(r.body)["id"] for r in hook.got)
        assert keys == sorted(k for k, _ in first.sent) and all(k.startswith("interrupt_opened:r-") for k in keys)
        for r in hook.got:
            h = r.headers
            assert verify_signature(SECRET, h["X-Hitl-Timestamp"], h["X-Hitl-Signature"], r.body)
            assert not verify_signature("wrong", h["X-Hitl-Timestamp"], h["X-Hitl-Signature"], r.body)
            assert not verify_signature(SECRET, h["X-Hitl-Timestamp"], h["X-Hitl-Signature"], r.body + b" ")
            assert not verify_signature(SECRET, str(int(h["X-Hitl-Timestamp"]) - 301), h["X-Hitl-Signature"], r.body)
            body = json.loads(r.body)
            assert h["X-Hitl-Delivery"] == body["id"] and body["message"].startswith("Finance: refund")
        second = await sender.run_once()
        assert (second.sent, second.due, len(hook.got)) == ([], 0, 3)  # once per channel, by the ledger
        rows = await ledger(store).deliveries()
        assert {(r.status, r.attempts) for r in rows} == {("sent", 1)}
    finally:
        await hook.stop()


async def test_a_failing_receiver_is_retried_then_given_up_and_a_recovering_one_gets_it(store) -> None:
    hook = await HttpReceiver(fail=10**6).start()
    try:
        sender = Sender(store, config(hook.url, attempts=3, filter="node=finance_approval session=r-1"))
        gave_up = []
        for _ in range(50):  # bounded: three tries, each due after the (tiny) backoff
            done = await sender.run_once()
            gave_up += done.gave_up
            if gave_up:
                break
        assert len(gave_up) == 1 and len(hook.got) == 3
        (row,) = await ledger(store).deliveries(status="failed")
        assert row.attempts == 3 and "HTTP 500" in (row.last_error or "")
        hook.fail = 2
        sender2 = Sender(store, config(hook.url, attempts=5, filter="node=finance_approval session=r-2"))
        sent = []
        for _ in range(50):
            sent += (await sender2.run_once()).sent
            if sent:
                break
        assert len(sent) == 1
        (ok,) = [r for r in await ledger(store).deliveries(status="sent")]
        assert ok.attempts == 3  # two failures, then the receiver took it
    finally:
        await hook.stop()


async def test_rules_filter_with_the_inbox_terms(store) -> None:
    hook = await HttpReceiver().start()
    try:
        done = await Sender(store, config(hook.url, filter="node=finance_approval session=r-2")).run_once()
        assert [k.split(":")[1] for k, _ in done.sent] == ["r-2"]
    finally:
        await hook.stop()


async def test_email_over_starttls_with_a_login_carries_a_link_for_its_recipient(store, tmp_path: Path) -> None:
    sink = SmtpSink(tmp_path, "hitl", "smtp-pass-77").start()
    try:
        cfg = parse({
            "public_url": "http://127.0.0.1:8000", "link_secret": "link-secret-1",
            "channels": {"mail": {"type": "smtp", "host": "127.0.0.1", "port": sink.port, "username": "hitl",
                                  "password_env": "SMTP_PW", "from": "hitl@example.test",
                                  "to": ["alice@example.test"], "ca_file": str(sink.cert)}},
            "rules": [{"on": "interrupt_opened", "filter": "session=r-3 node=risk_approval", "channels": ["mail"]}],
        }, "test", {"SMTP_PW": "smtp-pass-77"})
        done = await Sender(store, cfg).run_once()
        assert len(done.sent) == 1, done.failed
        (msg,) = sink.messages
        assert msg["To"] == "alice@example.test" and str(msg["Subject"]).strip().startswith("[hitl] refund_approval: Risk")
        text = msg.get_content()
        url = [w for w in text.split() if w.startswith("http://127.0.0.1:8000/answer/")][0]
        link = read_token("link-secret-1", url.rsplit("/", 1)[1])
        assert (link.session_id, link.interrupt_id, link.to) == ("r-3", "risk-order-3", "alice@example.test")
        assert "smtp-pass-77" not in text
        bad = parse({"channels": {"mail": {"type": "smtp", "host": "127.0.0.1", "port": sink.port, "username": "hitl",
                                           "password": "wrong-pass-x", "from": "h@x.test", "to": ["a@x.test"],
                                           "ca_file": str(sink.cert)}},
                     "rules": [{"on": "interrupt_opened", "filter": "session=r-1", "channels": ["mail"],
                                "attempts": 1}]}, "test", {})
        failed = await Sender(store, bad).run_once()
        assert len(failed.gave_up) == 2 and all("wrong-pass-x" not in e for _, _, e in failed.failed)
    finally:
        sink.stop()


def test_config_errors_are_one_line_naming_the_key_and_never_the_secret() -> None:
    cases = [
        ({"channels": {"x": {"type": "pager"}}}, "notify.channels.x.type"),
        ({"channels": {"x": {"type": "webhook", "url": "ftp://a"}}}, "notify.channels.x.url"),
        ({"channels": {"x": {"type": "webhook", "url": "http://a", "secret_env": "NOPE"}}}, "NOPE"),
        ({"channels": {"x": {"type": "webhook", "url": "http://a"}}, "rules": [{"on": ["x"], "channels": ["x"]}]},
         "notify.rules[1].on"),
        ({"channels": {"x": {"type": "webhook", "url": "http://a"}},
          "rules": [{"on": ["interrupt_open_for"], "channels": ["x"]}]}, "needs after"),
        ({"channels": {"x": {"type": "webhook", "url": "http://a"}},
          "rules": [{"on": ["interrupt_opened"], "channels": ["y"]}]}, "notify.rules[1].channels"),
        ({"channels": {"x": {"type": "webhook", "url": "http://a"}},
          "rules": [{"on": ["interrupt_opened"], "channels": ["x"], "filter": "amount<"}]}, "no value"),
    ]
    for section, says in cases:
        with pytest.raises(NotifyConfigError, match=says.replace("[", r"\[").replace("]", r"\]")) as err:
            parse(section, "hitl.toml", {})
        assert "\n" not in str(err.value)
    with pytest.raises(NotifyConfigError) as err:
        parse({"channels": {"m": {"type": "smtp", "host": "h", "from": "a@b", "to": ["c@d"], "password": "pw-secret",
                                  "password_env": "X"}}}, "hitl.toml", {"X": "pw-secret"})
    assert "pw-secret" not in str(err.value)
