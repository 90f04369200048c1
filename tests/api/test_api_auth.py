"""Who may call the API, tested from the attacker's side: no token, forged,
unknown, malformed, oversized and concurrent guesses; viewers; cookies; the
document; JSON for every error (never a traceback)."""

from __future__ import annotations

import asyncio
import base64
from pathlib import Path

import pytest

from console.serve.api_auth import parse_authorization

from .conftest import TOKENS, Api, config, fill, serve_app

YES = {"approved": True}


async def test_without_credentials_every_endpoint_but_the_document_is_refused(api: Api) -> None:
    for method, path in [("GET", "/sessions"), ("GET", "/inbox"), ("GET", "/sessions/r-1"), ("GET", "/audit"),
                         ("GET", "/sessions/r-1/events"), ("POST", "/sessions/r-1/answer"), ("POST", "/bulk-answer"),
                         ("GET", "/sessions/r-1/stream"), ("GET", "/inbox/stream")]:
        status, err, headers = await api.call(method, path, who=None, json={} if method == "POST" else None)
        assert (status, err["error"]["code"]) == (401, "unauthorized"), (method, path)
        assert headers["WWW-Authenticate"].startswith("Bearer")
    status, doc, _ = await api.get("/openapi.json", who=None)
    assert status == 200 and doc["openapi"] == "3.1.0"


@pytest.mark.parametrize("header", [
    "Bearer bot:wrong-token",                      # forged secret
    "Bearer mallory:bot-token-7f3a",               # unknown name, a real secret
    "Bearer bot-token-7f3a",                       # no name
    "Bearer :",                                    # empty both
    "Basic !!!not-base64",                         # malformed basic
    "Digest bot:bot-token-7f3a",                   # another scheme
    "Bearer bot:" + "x" * 4000,                    # oversized
    "Bearer " + "a" * 70 + ":" + "bot-token-7f3a",  # a name longer than any
])
async def test_a_forged_or_malformed_token_reads_nothing(api: Api, header: str) -> None:
    r = await api.client.get("/api/v1/sessions", headers={"Authorization": header})
    body = await r.json()
    assert (r.status, body["error"]["code"]) == (401, "unauthorized")
    assert "r-1" not in str(body) and TOKENS["bot"][1] not in str(body)


async def test_basic_auth_and_the_bearer_form_both_sign_in(api: Api) -> None:
    basic = base64.b64encode(f"bot:{TOKENS['bot'][1]}".encode()).decode()
    r = await api.client.get("/api/v1/sessions", headers={"Authorization": f"Basic {basic}"})
    assert r.status == 200
    assert parse_authorization("Bearer a:b:c") == ("a:b", "c")  # the token is after the last colon
    assert parse_authorization("Bearer  bot:tok ") == ("bot", "tok")


async def test_guessing_is_rate_limited_before_the_secret_is_checked(tmp_path: Path) -> None:
    from tests.contract.builders import open_store

    store = await open_store("sqlite", tmp_path)
    await fill(store)
    target = store.path  # type: ignore[attr-defined]
    await store.close()
    client = await serve_app(target, config(max_failed=3))
    try:
        guesses = await asyncio.gather(*(client.get("/api/v1/sessions", headers={"Authorization": f"Bearer bot:g{i}"})
                                         for i in range(12)))
        assert all(g.status in (401, 429) for g in guesses)
        assert sum(1 for g in guesses if g.status == 401) >= 3
        right = await client.get("/api/v1/sessions", headers={"Authorization": f"Bearer bot:{TOKENS['bot'][1]}"})
        body = await right.json()
        assert (right.status, body["error"]["code"]) == (429, "rate_limited")  # refused unchecked, even when right
        assert int(right.headers["Retry-After"]) > 0
        other = await client.get("/api/v1/sessions", headers={"Authorization": f"Bearer val:{TOKENS['val'][1]}"})
        assert other.status == 200  # guesses at bot's token do not lock another name out (issue 34)
        for i in range(20):  # ... but an address that keeps guessing is backed off, whatever the names
            await client.get("/api/v1/sessions", headers={"Authorization": f"Bearer eve{i}:x"})
        fresh = await client.get("/api/v1/sessions", headers={"Authorization": "Bearer zed:x"})
        assert fresh.status == 429  # a name never tried before is refused unchecked from this address
    finally:
        await client.close()


async def test_a_viewer_reads_but_cannot_write(api: Api) -> None:
    status, _, _ = await api.get("/sessions", who="val")
    assert status == 200
    for path, body in [("/sessions/r-1/answer", {"answers": {"finance-order-1": YES}}),
                       ("/bulk-answer", {"answer": YES, "filter": "app=refund_approval"}),
                       ("/sessions", {"app_name": "refund_approval", "text": "order-5"})]:
        status, err, _ = await api.post(path, body, who="val")
        assert (status, err["error"]["code"]) == (403, "forbidden")
        assert err["error"]["message"] == "val is signed in as a viewer (viewers cannot write); nothing was written"
    status, audit, _ = await api.get("/audit")
    assert audit["audit"] == []


async def test_the_console_sign_in_cookie_works_for_the_api(api: Api) -> None:
    r = await api.client.post("/login", data={"name": "bot", "secret": TOKENS["bot"][1]}, allow_redirects=False)
    assert r.status == 303
    cookie = r.headers["Set-Cookie"].split(";", 1)[0]
    r = await api.client.get("/api/v1/sessions", headers={"Cookie": cookie})
    assert r.status == 200
    r = await api.client.post("/api/v1/sessions/r-1/answer", json={"answers": {"finance-order-1": YES}},
                              headers={"Cookie": cookie})
    assert r.status == 200 and (await r.json())["operator"] == "bot"
    r = await api.client.post("/api/v1/sessions/r-1/answer", json={"answers": {"risk-order-1": YES}},
                              headers={"Cookie": cookie, "Origin": "http://evil.example"})
    assert r.status == 403  # a cross-site post with the cookie is refused before the API sees it


async def test_unknown_paths_methods_and_oversized_bodies_are_json_errors(api: Api) -> None:
    status, err, _ = await api.get("/nope")
    assert (status, err["error"]["code"]) == (404, "not_found")
    status, err, headers = await api.call("DELETE", "/sessions")
    assert (status, err["error"]["code"]) == (405, "method_not_allowed") and "GET" in headers["Allow"]
    big = b'{"answers": {"finance-order-1": "' + b"x" * (5 * 1024 * 1024) + b'"}}'
    r = await api.client.post("/api/v1/sessions/r-1/answer", data=big, headers={
        **api.headers("bot"), "Content-Type": "application/json"})
    assert (r.status, (await r.json())["error"]["code"]) == (413, "too_large")
    r = await api.client.post("/api/v1/sessions/r-1/answer", data=b"answers=1", headers={
        **api.headers("bot"), "Content-Type": "application/x-www-form-urlencoded"})
    assert (r.status, (await r.json())["error"]["code"]) == (415, "unsupported_media_type")


async def test_a_read_only_server_refuses_writes(tmp_path: Path) -> None:
    from tests.contract.builders import open_store

    store = await open_store("sqlite", tmp_path)
    await fill(store)
    target = store.path  # type: ignore[attr-defined]
    await store.close()
    client = await serve_app(target, config(), read_only=True)
    try:
        auth = {"Authorization": f"Bearer bot:{TOKENS['bot'][1]}"}
        r = await client.post("/api/v1/sessions/r-1/answer", json={"answers": {"finance-order-1": YES}}, headers=auth)
        assert (r.status, (await r.json())["error"]["code"]) == (403, "read_only")
        r = await client.get("/api/v1/sessions/r-1", headers=auth)
        assert r.status == 200
    finally:
        await client.close()


async def test_loopback_without_sign_in_records_the_operator_given(tmp_path: Path) -> None:
    from console.serve.config import ServeConfig
    from tests.contract.builders import open_store

    store = await open_store("sqlite", tmp_path)
    await fill(store)
    target = store.path  # type: ignore[attr-defined]
    await store.close()
    client = await serve_app(target, ServeConfig())
    try:
        r = await client.post("/api/v1/sessions/r-1/answer",
                              json={"answers": {"finance-order-1": YES}, "operator": "carol"})
        assert r.status == 200 and (await r.json())["operator"] == "carol"
        r = await client.get("/api/v1/sessions", headers={"Authorization": "Bearer bot:x"})
        assert (r.status, (await r.json())["error"]["code"]) == (401, "unauthorized")  # no tokens configured
    finally:
        await client.close()


def test_the_document_lists_every_route_with_its_models() -> None:
    from console.serve import api_models

    doc = api_models.openapi("t")
    for r in api_models.ROUTES:
        op = doc["paths"][f"/api/v1{r.path}"][r.method.lower()]
        assert op["operationId"] == r.handler
        if r.body is not None:
            assert op["requestBody"]["content"]["application/json"]["schema"]["$ref"].endswith(r.body.__name__)
            assert r.body.__name__ in doc["components"]["schemas"]
        assert "default" in op["responses"]
    assert doc["components"]["schemas"]["AnswerRequest"]["additionalProperties"] is False
    from engine.status import SESSION_FILTERS

    status = next(p for p in doc["paths"]["/api/v1/sessions"]["get"]["parameters"] if p["name"] == "status")
    assert set(status["schema"]["anyOf"][0]["enum"]) == set(SESSION_FILTERS)  # the CLI's --status values, no other
