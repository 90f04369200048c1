"""Issue 18, the operator's side: an answer left to a worker reads QUEUED, not
"interrupted mid-run", on every surface that judges liveness -- one invocation
(``invocation_health``), a session (``session_health``), a page of sessions
(``page_health``: the page's turn requests in one store read), the home summary
and the SQLite listing's fast path. A request a worker *held* (nodes in doubt)
reads interrupted again, with the held reason. Against SQLite and PostgreSQL.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest

from engine import Content, handoff
from engine.apps import AppRegistry
from engine.home import home_summary
from engine.liveness import interrupted_invocations, invocation_health, page_health, session_health
from engine.status import DisplayStatus
from engine.store import open_store
from tests.cli import ghost_app

HELD = "nodes in doubt: ghost@1/after@1 (re-drive with an acknowledgement)"


@pytest.fixture(params=["sqlite", "postgres"])
def db(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return str(tmp_path / "queued.sqlite")
    from tests.contract.builders import pg_fresh_url

    return pg_fresh_url()


async def _ghost_sessions(store: Any, n: int) -> dict[str, str]:
    """``n`` ghost sessions waiting on ``boo``: session id -> invocation id."""
    reg = AppRegistry()
    reg.register("ghost", ghost_app.workflow)
    out = {}
    for k in range(n):
        sid = f"g-{k}"
        async for _ in reg.runner("ghost", store).run("u", sid, Content.from_text("hello")):
            pass
        out[sid] = (await store.list_invocations(sid))[0].invocation_id
    return out


class Counting:
    """Counts the turn-request reads a store gets (the rest passes through)."""

    def __init__(self, store: Any) -> None:
        self._store = store
        self.reads: list[str] = []

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._store, name)
        if name in ("turn_requests_of", "get_turn_request", "turn_requests"):
            async def counted(*a: Any, **kw: Any) -> Any:
                self.reads.append(name)
                return await attr(*a, **kw)

            return counted
        return attr


def test_a_queued_answer_reads_queued_and_a_held_one_interrupted(db: str) -> None:
    async def body() -> None:
        store = await open_store(db)
        try:
            invs = await _ghost_sessions(store, 3)
            for sid in invs:
                done = await handoff.queue_answer(store, sid, {"boo": True}, operator="op")
                assert done.error is None
            sid, inv = "g-0", invs["g-0"]

            h = await invocation_health(store, sid, inv)
            assert (h.queued, h.interrupted, h.queued_for, h.in_doubt) == (True, False, "ghost", ())
            assert h.label == "queued for a worker of ghost" and h.display is DisplayStatus.QUEUED
            assert h.to_dict()["queued"] is True and h.to_dict()["display"] == "QUEUED"
            assert (await session_health(store, sid))[inv].queued
            assert await interrupted_invocations(store, sid, "running") == []

            page = await store.list_sessions()
            counting = Counting(store)
            health = await page_health(counting, [(s.id, s.status) for s in page.items])  # type: ignore[arg-type]
            assert {s: [x.invocation_id for x in hs] for s, hs in health.items()} == {s: [i] for s, i in invs.items()}
            assert all(x.queued for hs in health.values() for x in hs)
            assert counting.reads == ["turn_requests_of"]  # one read for the page, none per row

            summary = await home_summary(store, time.time())
            assert (summary.queued, summary.interrupted, summary.running, summary.waiting) == (3, 0, 0, 0)

            # A worker looked and held it (nodes in doubt): interrupted again, with why.
            assert await store.claim_turn_request(sid, inv, "w-1", 30)
            await store.unclaim_turn_request(sid, inv, "w-1", held=HELD)
            h = await invocation_health(store, sid, inv)
            assert (h.queued, h.interrupted, h.held) == (False, True, HELD)
            assert h.label == "interrupted mid-run" and h.to_dict()["held"] == HELD
            assert [x.invocation_id for x in await interrupted_invocations(store, sid, "running")] == [inv]
            summary = await home_summary(store, time.time())
            assert (summary.queued, summary.interrupted, summary.waiting, summary.in_doubt_exact) == (2, 1, 0, True)
        finally:
            await store.close()

    asyncio.run(body())


def test_the_sqlite_fast_listing_agrees(tmp_path: Path) -> None:
    from engine.store.sqlite.session_rows import list_session_rows

    path = tmp_path / "fast.sqlite"

    async def body() -> dict[str, str]:
        store = await open_store(str(path))
        try:
            invs = await _ghost_sessions(store, 2)
            for sid in invs:
                assert (await handoff.queue_answer(store, sid, {"boo": True})).error is None
            assert await store.claim_turn_request("g-1", invs["g-1"], "w-1", 30)
            await store.unclaim_turn_request("g-1", invs["g-1"], "w-1", held=HELD)
            return invs
        finally:
            await store.close()

    invs = asyncio.run(body())
    rows = list_session_rows(path)
    assert rows is not None
    got = {r.id: (r.interrupted, r.queued) for r in rows.items}
    assert got == {"g-0": ((), (invs["g-0"],)), "g-1": ((invs["g-1"],), ())}
    assert "queued" not in rows.items[0].summary_dict()
