"""The HTTP API returns when each open interrupt's deadline passes (engine.deadlines)."""

from __future__ import annotations

from engine import Content, Runner
from engine.store import open_store
from tests.api.conftest import Api
from tests.engine import deadline_app as app


async def test_inbox_and_session_say_when_the_deadline_passes(api: Api) -> None:
    store = await open_store(api.target)
    try:
        runner = Runner(app.APP, app.workflow, store)
        async for _ in runner.run("u", "dl-1", Content.from_text("order-9")):
            pass
        (row,) = [r for r in (await store.open_interrupts()).items if r.session_id == "dl-1"]
    finally:
        await store.close()
    due = row.raised_at + app.HOURS * 3600
    status, body, _ = await api.get("/inbox")
    assert status == 200
    dues = {r["session_id"]: r["due_at"] for r in body["interrupts"]}
    assert dues["dl-1"] == due and dues["r-1"] is None  # refunds without a deadline: none
    status, body, _ = await api.get("/inbox", params={"filter": "due<5h"})
    assert [r["session_id"] for r in body["interrupts"]] == ["dl-1"]
    status, body, _ = await api.get("/sessions/dl-1")
    (opened,) = body["invocations"][0]["open"]
    assert (opened["id"], opened["due_at"], opened["on_deadline"]) == ("approve", due, "answer")
