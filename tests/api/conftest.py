"""An in-process ``hitl serve`` app (the console server with its API mounted)
on a store of three waiting refunds, over SQLite and PostgreSQL, and a client
that checks every JSON response against the OpenAPI document."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from aiohttp.test_utils import TestClient, TestServer

from console.serve import api_models
from console.serve.config import OperatorEntry, ServeConfig
from engine import Content
from engine.store.base import SessionStore
from tests.browser.conftest import demo_db  # noqa: F401 (the demo store, built once: a fixture here too)
from tests.browser.served import HASHER
from tests.bulk_store import registry
from tests.contract.builders import location, open_store

TOKENS = {"bot": ("operator", "bot-token-7f3a"), "val": ("viewer", "viewer-token-91c2"),
          "amy": ("operator", "amy-token-5d1e")}  # a second operator: claims and answers of two people
ORDERS = {"r-1": "order-1", "r-2": "order-2", "r-3": "order-3"}


async def fill(store: SessionStore) -> dict[str, str]:
    """Three refund sessions, each waiting on its finance and risk approval: session -> invocation."""
    runner = registry().runner("refund_approval", store)
    out = {}
    for sid, order in ORDERS.items():
        async for e in runner.run("clerk", sid, Content.from_text(order)):
            out.setdefault(sid, e.invocation_id)
    return out


def config(max_failed: int = 5) -> ServeConfig:
    ops = {n: OperatorEntry(n, role, HASHER.hash(secret)) for n, (role, secret) in TOKENS.items()}
    return ServeConfig(operators=ops, max_failed_signins=max_failed, signin_window_seconds=600)


class Api:
    """A client of the API: requests as a named token holder, responses checked against the document."""

    def __init__(self, client: TestClient, invocations: dict[str, str], kind: str, target: Any = None) -> None:
        self.client, self.invocations, self.kind, self.target = client, invocations, kind, target
        self.doc = api_models.openapi("test")

    def headers(self, who: str | None, extra: dict[str, str] | None = None) -> dict[str, str]:
        h = dict(extra or {})
        if who is not None:
            h["Authorization"] = f"Bearer {who}:{TOKENS[who][1]}"
        return h

    async def call(self, method: str, path: str, *, who: str | None = "bot", json: Any = None,
                   headers: dict[str, str] | None = None, **kw: Any) -> tuple[int, Any, Any]:
        r = await self.client.request(method, "/api/v1" + path, json=json, headers=self.headers(who, headers), **kw)
        body = await r.json() if r.content_type == "application/json" else await r.text()
        if r.content_type == "application/json":
            self.check(method, path, r.status, body)
        return r.status, body, r.headers

    async def get(self, path: str, **kw: Any) -> tuple[int, Any, Any]:
        return await self.call("GET", path, **kw)

    async def post(self, path: str, json: Any = None, **kw: Any) -> tuple[int, Any, Any]:
        return await self.call("POST", path, json={} if json is None else json, **kw)

    def check(self, method: str, path: str, status: int, body: Any) -> None:
        """The body matches the document's schema for that operation and status."""
        op = self._operation(method, path.split("?")[0])
        if op is None:
            assert status in (404, 405), (method, path, status)
            schema: dict[str, Any] = {"$ref": "#/components/schemas/ErrorResponse"}
        else:
            resp = op["responses"].get(str(status)) or op["responses"]["default"]
            schema = resp["content"]["application/json"]["schema"]
        full = {**schema, "components": self.doc["components"]}
        jsonschema.validate(body, full, cls=jsonschema.Draft202012Validator)
        if status >= 400:
            assert set(body) == {"error"} and body["error"]["code"] and body["error"]["message"]
            assert "\n" not in body["error"]["message"] and "Traceback" not in body["error"]["message"]

    def _operation(self, method: str, path: str) -> dict[str, Any] | None:
        parts = ("/api/v1" + path).split("/")
        for template, ops in self.doc["paths"].items():
            t = template.split("/")
            same = len(t) == len(parts) and all(a == b or a.startswith("{") for a, b in zip(t, parts, strict=True))
            if same and method.lower() in ops:
                return ops[method.lower()]
        return None


async def serve_app(target: Any, cfg: ServeConfig, **options: Any) -> TestClient:
    from console.serve.web import ConsoleServer, ServeOptions

    server = ConsoleServer(ServeOptions(db=target, **options), cfg, host="127.0.0.1", port=0)
    app = await server._make_app()
    client = TestClient(TestServer(app))
    await client.start_server()
    client.server_obj = server  # type: ignore[attr-defined]
    return client


@pytest.fixture(params=["sqlite", "postgres"])
async def api(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Api]:
    store = await open_store(request.param, tmp_path)
    try:
        invocations = await fill(store)
        target = location(store)
    finally:
        await store.close()
    client = await serve_app(target, config())
    try:
        yield Api(client, invocations, request.param, target)
    finally:
        await client.close()
