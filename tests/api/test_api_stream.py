"""The live streams (server-sent events), on SQLite and PostgreSQL: a session's
new events, from the API's own writes and from another process's; reconnecting
with Last-Event-ID; the inbox's opened/closed."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

from engine import Content
from tests.bulk_store import registry
from tests.contract.builders import open_store

from .conftest import Api

YES = {"approved": True}
BOUND = 60.0
"""A stream that never sends what a test waits for fails the test after this long (a bound, not an assertion)."""


async def frames(response: Any) -> AsyncIterator[dict[str, Any]]:
    """The stream's frames as {"event", "id", "data"} (comments skipped)."""
    frame: dict[str, Any] = {}
    async for raw in response.content:
        line = raw.decode().rstrip("\n")
        if not line:
            if frame:
                yield frame
            frame = {}
        elif line.startswith(":"):
            continue
        else:
            key, _, value = line.partition(": ")
            frame[key] = json.loads(value) if key == "data" else value


async def until(stream: AsyncIterator[dict[str, Any]], want: Any) -> list[dict[str, Any]]:
    seen = []

    async def read() -> list[dict[str, Any]]:
        async for f in stream:
            seen.append(f)
            if want(f):
                return seen
        raise AssertionError(f"the stream ended before the frame came: {seen}")

    return await asyncio.wait_for(read(), BOUND)


async def test_a_session_stream_sends_new_events_once_in_order(api: Api) -> None:
    r = await api.client.get("/api/v1/sessions/r-1/stream", headers=api.headers("bot"))
    assert r.status == 200 and r.headers["Content-Type"].startswith("text/event-stream")
    stream = frames(r)
    backlog = await until(stream, lambda f: f["data"]["kind"] == "interrupt" and "risk" in json.dumps(f["data"]))
    seqs = [int(f["id"]) for f in backlog]
    assert seqs == list(range(1, len(seqs) + 1))
    status, body, _ = await api.post("/sessions/r-1/answer", {"answers": {"finance-order-1": YES}})
    assert status == 200
    got = await until(stream, lambda f: f["data"]["kind"] == "response")
    assert int(got[-1]["id"]) == body["events"][0]["seq"]
    assert [int(f["id"]) for f in backlog + got] == list(range(1, int(got[-1]["id"]) + 1))  # none twice, none missed
    r.close()


async def test_a_stream_sees_another_processs_writes_and_resumes_after_last_event_id(api: Api, tmp_path) -> None:
    status, events, _ = await api.get("/sessions/r-2/events?limit=5000")
    last = events["events"][-1]["seq"]
    r = await api.client.get("/api/v1/sessions/r-2/stream", headers={**api.headers("bot"), "Last-Event-ID": str(last)})
    stream = frames(r)
    other = await open_store(api.kind, tmp_path, path=api.target)  # another writer: not this server's connection
    try:
        runner = registry().runner("refund_approval", other)
        async for _ in runner.run("clerk", "r-2", Content.from_responses({"finance-order-2": YES}),
                                  api.invocations["r-2"]):
            pass
    finally:
        await other.close()
    got = await until(stream, lambda f: f["data"]["kind"] == "response")
    assert int(got[0]["id"]) == last + 1  # nothing before Last-Event-ID is sent again
    r.close()


async def test_the_inbox_stream_sends_opened_then_closed(api: Api) -> None:
    r = await api.client.get("/api/v1/inbox/stream?filter=node%3Dfinance_approval", headers=api.headers("bot"))
    stream = frames(r)
    opened = await until(stream, lambda f: f["data"]["interrupt_id"] == "finance-order-3")
    assert sorted(f["data"]["interrupt_id"] for f in opened) == ["finance-order-1", "finance-order-2", "finance-order-3"]
    assert {f["event"] for f in opened} == {"opened"}
    await api.post("/sessions/r-1/answer", {"answers": {"finance-order-1": YES}})
    (closed,) = await until(stream, lambda f: f["event"] == "closed")
    assert closed["data"] == {"session_id": "r-1", "invocation_id": api.invocations["r-1"],
                              "interrupt_id": "finance-order-1"}
    r.close()
    status, err, _ = await api.get("/inbox/stream", params={"filter": "amount<"})
    assert status == 422 and err["error"]["code"]
    status, err, _ = await api.get("/sessions/nope/stream")
    assert (status, err["error"]["code"]) == (404, "session_not_found")


async def test_streams_end_when_the_server_shuts_down(api: Api) -> None:
    r = await api.client.get("/api/v1/sessions/r-3/stream", headers=api.headers("bot"))
    q = await api.client.get("/api/v1/inbox/stream", headers=api.headers("bot"))
    stream = frames(r)
    await until(stream, lambda f: f["data"]["kind"] == "interrupt" and "risk" in json.dumps(f["data"]))
    await api.client.app.shutdown()  # what hitl serve's Ctrl-C runs first

    async def drained(resp: Any) -> None:
        async for _ in resp.content:
            pass

    await asyncio.wait_for(asyncio.gather(drained(r), drained(q)), BOUND)  # both ended: EOF
