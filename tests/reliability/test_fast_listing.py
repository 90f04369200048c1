"""The sessions listing on plain sqlite3 (issue 15): ``engine.store.sqlite.listing``
lists the same rows, with the same interrupted invocations and cursors, as the
store path ``hitl sessions`` takes today (``list_sessions`` + per-session
``interrupted_invocations``), on the demo store plus sessions interrupted by a
dead turn, by a dead owner whose lease has not expired yet, one held by a live
owner, and a waiting one with a lapsed lease row -- without importing pydantic,
asyncio or aiosqlite, in two statements whatever the page size."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from engine import handoff
from engine.errors import StoreError
from engine.liveness import interrupted_invocations, new_owner, stopped_invocations
from engine.models import Content
from engine.runner import Runner
from engine.store.factory import interrupt_rows, session_rows
from engine.store.sqlite import SCHEMA_VERSION, SQLiteStore
from engine.store.sqlite.inbox_rows import list_interrupt_rows
from engine.store.sqlite.listing import LISTING_SCHEMA_VERSION
from engine.store.sqlite.session_rows import list_session_rows, read_session_rows
from engine.store.workers import TurnRequest

from . import crash_app
from .conftest import REPO, Hitl
from .test_liveness import _dead_pid, effects  # noqa: F401 (a fixture: the crash app's side-effect log)

YES = {"approved": True}


def _dead_owner() -> str:
    host, _, scope, start, token = new_owner().split(":")
    return ":".join([host, str(_dead_pid()), scope, start, token])


def _fail_appends_from(store: Any, n: int | None) -> None:
    """From the ``n``-th append on, the store's appends fail (its disk went away);
    None: they work again."""
    cls = type(store)
    if n is None:
        for name in ("append_event", "append_events"):
            store.__dict__.pop(name, None)
        return
    count = [0]

    async def append_event(session_id: str, event: Any, **kw: Any) -> Any:
        if count[0] + 1 >= n:
            raise StoreError("database error: disk I/O error (simulated)")
        count[0] += 1
        return await cls.append_event(store, session_id, event, **kw)

    async def append_events(session_id: str, events: list[Any], **kw: Any) -> Any:
        if count[0] + len(events) >= n:
            raise StoreError("database error: disk I/O error (simulated)")
        count[0] += len(events)
        return await cls.append_events(store, session_id, events, **kw)

    store.append_event, store.append_events = append_event, append_events


async def _waiting(store: SQLiteStore, session_id: str) -> str:
    runner = Runner(crash_app.APP, crash_app.workflow, store)
    events = [e async for e in runner.run("u", session_id, Content.from_text("order-1"))]
    return events[0].invocation_id


async def _stranded(store: SQLiteStore, session_id: str) -> str:
    """An invocation whose resume died mid-run, at its 11th append after the
    answer: a leaf started with no end record (in doubt)."""
    inv = await _waiting(store, session_id)
    runner = Runner(crash_app.APP, crash_app.workflow, store)
    _fail_appends_from(store, 11)
    with pytest.raises(StoreError, match="simulated"):
        async for _ in runner.run("u", session_id, Content.from_responses({"finance": YES, "risk": YES})):
            pass
    _fail_appends_from(store, None)
    return inv


async def _held(store: SQLiteStore, session_id: str, reason: str = "nodes in doubt") -> str:
    """A stranded invocation whose continuation a worker claimed, then held (``reason``)."""
    inv = await _stranded(store, session_id)
    await store.request_turn(TurnRequest(app_name=crash_app.APP, session_id=session_id, invocation_id=inv,
                                         kind="continue", requested_at=1.0))
    assert await store.claim_turn_request(session_id, inv, "w-1", 30)
    await store.unclaim_turn_request(session_id, inv, "w-1", held=reason)
    return inv


async def _take_over(store: SQLiteStore, session_id: str, inv: str, owner: str) -> None:
    lapsed = await store.get_lease(session_id, inv)
    assert lapsed is not None and lapsed.expired()
    await store.acquire_lease(session_id, inv, owner, 600, steal_from=lapsed.owner)


@pytest.fixture
async def mixed(db: Path, request: pytest.FixtureRequest) -> Path:
    """The demo store plus the liveness cases the listing must tell apart."""
    request.getfixturevalue("effects")
    store = await SQLiteStore.open(db)
    try:
        await _stranded(store, "x-stranded")  # lapsed lease row: interrupted, pay in doubt
        inv = await _stranded(store, "x-dead-owner")  # an unexpired lease of a dead process
        await _take_over(store, "x-dead-owner", inv, _dead_owner())
        inv = await _stranded(store, "x-live")  # a live owner (this process): running, not interrupted
        await _take_over(store, "x-live", inv, new_owner())
        inv = await _waiting(store, "x-waiting-trace")  # a lapsed lease row left on a waiting invocation
        await store.acquire_lease("x-waiting-trace", inv, _dead_owner(), 0)
        # issue 18: an answer left to a worker (the index still says waiting) reads queued ...
        await _waiting(store, "x-queued")
        assert (await handoff.queue_answer(store, "x-queued", {"finance": YES, "risk": YES})).error is None
        # ... and so does a stranded turn a worker will continue; one a worker held reads interrupted
        inv = await _stranded(store, "x-stranded-queued")
        await store.request_turn(TurnRequest(app_name=crash_app.APP, session_id="x-stranded-queued", invocation_id=inv,
                                             kind="continue", requested_at=1.0))
        await _held(store, "x-held")
    finally:
        await store.close()
    return db


async def _store_path(db: Path, **filters: Any) -> tuple[list[dict[str, Any]], str | None]:
    """What ``hitl sessions`` computes today: the store's page, then each row's interrupted invocations."""
    async with SQLiteStore.open(db, read_only=True) as store:
        page = await store.list_sessions(**filters)
        rows = [
            {
                **s.model_dump(),
                "interrupted": [h.invocation_id for h in await interrupted_invocations(store, s.id, s.status)],
                "queued": [h.invocation_id for h in await stopped_invocations(store, s.id, s.status) if h.queued],
            }
            for s in page.items
        ]
    return rows, page.next_cursor


def _fast_path(db: Path, **filters: Any) -> tuple[list[dict[str, Any]], str | None]:
    page = list_session_rows(db, **filters)
    assert page is not None
    return [{**r.summary_dict(), "interrupted": list(r.interrupted), "queued": list(r.queued)} for r in page.items], \
        page.next_cursor


FILTERS: list[dict[str, Any]] = [
    {},
    {"status": "running"},
    {"status": "waiting", "limit": 3},
    {"text": "X-"},
    {"user_id": "u", "limit": 2},
    {"order": "oldest_open", "limit": 4},
    {"updated_before": 4_000_000_000.0, "limit": 1000},
]


@pytest.mark.parametrize("filters", FILTERS, ids=[json.dumps(f) for f in FILTERS])
async def test_the_fast_listing_equals_the_store_path_page_by_page(mixed: Path, filters: dict[str, Any]) -> None:
    cursor, pages = None, 0
    while True:
        slow = await _store_path(mixed, **filters, cursor=cursor)
        fast = _fast_path(mixed, **filters, cursor=cursor)
        assert fast == slow
        cursor, pages = slow[1], pages + 1
        if cursor is None:
            break
    assert pages >= 1


def test_it_flags_dead_turns_and_dead_owners_only(mixed: Path) -> None:
    rows = {r["id"]: r for r in _fast_path(mixed, limit=1000)[0]}
    assert len(rows["x-stranded"]["interrupted"]) == 1
    assert len(rows["x-dead-owner"]["interrupted"]) == 1, "a dead owner's lease is not live before it expires"
    assert rows["x-live"]["interrupted"] == [] and rows["x-live"]["status"] == "running"
    assert rows["x-waiting-trace"]["interrupted"] == [] and rows["x-waiting-trace"]["status"] == "waiting"
    assert all(r["interrupted"] == [] for sid, r in rows.items() if not sid.startswith("x-"))
    queued = {sid for sid, r in rows.items() if r["queued"]}
    assert queued == {"x-queued", "x-stranded-queued"}
    assert rows["x-queued"]["interrupted"] == [] and rows["x-queued"]["status"] == "waiting"
    assert rows["x-stranded-queued"]["interrupted"] == [] and len(rows["x-held"]["interrupted"]) == 1


def test_it_matches_what_hitl_sessions_prints(mixed: Path, hitl: Hitl) -> None:
    result = hitl("--json", "sessions", "--limit", "7", db_path=mixed)
    assert result.exit_code == 0, result.output
    printed = json.loads(result.output)
    rows, cursor = _fast_path(mixed, limit=7)
    assert printed == {"sessions": rows, "next_cursor": cursor}


def test_two_statements_whatever_the_page_size(mixed: Path) -> None:
    conn = sqlite3.connect(f"file:{mixed}?mode=ro", uri=True, isolation_level=None)
    conn.create_function("hitl_lower", 1, str.lower)
    selects: list[str] = []
    conn.set_trace_callback(lambda sql: selects.append(sql) if sql.lstrip().upper().startswith("SELECT") else None)
    try:
        for limit in (1, 5, 1000):
            selects.clear()
            page = read_session_rows(conn, limit=limit)
            assert len(page.items) == min(limit, len(page.items)) and page.items
            assert len(selects) == 2, selects
    finally:
        conn.close()


def test_it_declines_what_it_cannot_read(tmp_path: Path, db: Path) -> None:
    """None (the caller opens the store as usual, which reports the problem): no
    file, a foreign SQLite file, a bad cursor."""
    assert list_session_rows(tmp_path / "missing.sqlite") is None
    assert not (tmp_path / "missing.sqlite").exists(), "nothing is created"
    foreign = tmp_path / "other.sqlite"
    sqlite3.connect(foreign).execute("CREATE TABLE t (x)").connection.close()
    assert list_session_rows(foreign) is None
    assert list_session_rows(db, cursor="not a cursor") is None
    assert list_session_rows(db) is not None


def test_the_factory_reads_a_file_this_way_and_declines_a_url(db: Path) -> None:
    """The CLI's entry points (engine.store.factory): a path is read here, a URL
    (a string, even ``sqlite://``) is left to the store path."""
    assert session_rows(db, limit=3) == list_session_rows(db, limit=3) is not None
    assert interrupt_rows(db, limit=3) == list_interrupt_rows(db, limit=3) is not None
    assert session_rows(f"sqlite://{db}") is None and interrupt_rows(f"sqlite://{db}") is None
    assert session_rows("postgresql://nobody@127.0.0.1:9/none") is None


def test_its_schema_version_is_the_stores() -> None:
    assert LISTING_SCHEMA_VERSION == SCHEMA_VERSION


def test_it_imports_neither_pydantic_nor_asyncio() -> None:
    probe = (
        "import sys, json, pathlib; from engine.store.factory import default_db_path, interrupt_rows, session_rows; "
        "missing = pathlib.Path('/nonexistent/hitl.sqlite'); default_db_path(); "
        "assert session_rows(missing) is None and interrupt_rows(missing) is None; "
        "print(json.dumps(sorted(sys.modules)))"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, cwd=REPO)
    mods = set(json.loads(out.stdout))
    assert not {"pydantic", "asyncio", "aiosqlite", "engine.models", "engine.store.base"} & mods
    assert "engine.owners" in mods
