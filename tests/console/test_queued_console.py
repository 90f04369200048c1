"""Issue 18 in the console: an answer left to a worker reads ◷ QUEUED (not
interrupted mid-run) in the sessions list, its summary line and the session
screen; the title bar counts the live workers (per app on a session's screen)
and says "no worker for APP" while turns of an app wait and nobody serves it;
the bulk dialog queues the items of an app without code here."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from textual.widgets import DataTable

from console.screens.session import SessionScreen
from engine import Content, handoff
from engine.apps import AppRegistry
from engine.store.sqlite import SQLiteStore
from engine.store.workers import WorkerRecord
from tests.cli import ghost_app

from .conftest import drive, make_app, settle
from .scenarios import NOW


async def _fill(db: Path, *, worker: bool) -> str:
    """A ghost session whose answer is queued for a worker (none ran it); with
    ``worker``, a live worker of ghost recorded. Returns the invocation id."""
    reg = AppRegistry()
    reg.register("ghost", ghost_app.workflow)
    async with SQLiteStore.open(db) as store:
        async for _ in reg.runner("ghost", store).run("u", "ghost-q", Content.from_text("hello")):
            pass
        inv = (await store.list_invocations("ghost-q"))[0].invocation_id
        assert (await handoff.queue_answer(store, "ghost-q", {"boo": True})).error is None
        if worker:
            await store.put_worker(WorkerRecord(
                worker_id="w-1", host="svc-a", pid=4242, apps=["ghost"], versions={"ghost": "0123abcd4567"},
                started_at=NOW - 60, heartbeat_at=NOW - 1, stale_after=6.0,
            ))
    return inv


@pytest.fixture
def db(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    return Path("queued.sqlite")


def _badge(app: Any) -> str:
    return str(app.screen.query_one("#badges").render())


async def test_a_queued_session_reads_queued_in_the_list_and_on_its_screen(db: Path) -> None:
    inv = await _fill(db, worker=False)
    app = make_app(None, db_path=db)
    async with app.run_test(size=(120, 30)) as pilot:
        await settle(pilot)
        # Triage lists what waits for an operator: an answered session whose turn a
        # worker will run is not there (the summary line counts it), the list by
        # activity (o) shows it, QUEUED.
        assert "queued" in str(app.screen.query_one("#sessions-summary").render())
        await pilot.press("o")
        await settle(pilot)
        table = app.screen.query_one("#sessions-table", DataTable)
        cell = str(table.get_cell("ghost-q", "status"))
        assert cell == "◷ QUEUED", cell
        assert "queued" in str(app.screen.query_one("#sessions-summary").render())
        assert "1 interrupted" not in str(app.screen.query_one("#sessions-summary").render())
        assert "no worker for ghost" in _badge(app)  # its turn waits and nobody serves ghost

        app.open_session("ghost-q")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, SessionScreen) and screen.queued_for == "ghost" and not screen.interrupted
        info = str(screen.query_one("#session-info").render())
        assert "◷ QUEUED for a worker of ghost" in info and "mid-run" not in info, info
        assert "QUEUED" in str(screen.run_tree.root.label)
        assert "no worker for ghost" in _badge(app)
        assert screen.invocation_id == inv


async def test_the_title_bar_counts_the_live_workers(db: Path) -> None:
    await _fill(db, worker=True)
    app = make_app(None, db_path=db)
    async with app.run_test(size=(120, 30)) as pilot:
        await settle(pilot)
        assert "workers 1" in _badge(app) and "no worker" not in _badge(app)
        app.open_session("ghost-q")
        await settle(pilot)
        assert "workers 1 for ghost" in _badge(app)


async def test_a_store_without_workers_shows_no_worker_count(tmp_path: Path) -> None:
    from engine.store import MemoryStore

    app = make_app(MemoryStore())
    async with app.run_test(size=(120, 30)) as pilot:
        await settle(pilot)
        assert "worker" not in _badge(app)


def test_the_bulk_dialog_queues_the_items_of_an_app_without_code_here(db: Path) -> None:
    """engine.bulk with the console's rule (via auto): a SQLite store keeps turn
    requests, so the ghost answer is stored and queued, not refused."""
    from engine import bulk

    asyncio.run(_fill_waiting(db))

    async def body() -> Any:
        async with SQLiteStore.open(db) as store:
            groups = bulk.group(await bulk.select(store, bulk.Where(app="ghost")))
            plan = await bulk.dry_run(store, groups, True, registry=AppRegistry(), via="auto")
            notices: list[str] = []
            done = await bulk.submit(store, groups, True, registry=AppRegistry(), via="auto", on_notice=notices.append)
            return plan, done, notices

    plan, done, notices = asyncio.run(body())
    assert [i.verdict for i in plan.items] == ["auto-complete"] and plan.items[0].worker
    assert [r.status for r in done.results] == ["queued"] and done.ok
    assert notices == [
        "stored; no worker for ghost is alive: the turn runs when one starts (hitl worker --app ghost=...)"
    ]


async def _fill_waiting(db: Path) -> None:
    reg = AppRegistry()
    reg.register("ghost", ghost_app.workflow)
    async with SQLiteStore.open(db) as store:
        async for _ in reg.runner("ghost", store).run("u", "ghost-w", Content.from_text("hello")):
            pass


async def test_the_bulk_dialog_leaves_an_app_without_code_to_a_worker(tmp_path: Path) -> None:
    """The refunds of tests/bulk_store.py in a SQLite store: the legacy app's code
    is not registered here, so its item is validated, stored and queued for a
    worker (a MemoryStore keeps no turn requests: there it is refused, see
    test_bulk_answer.py), and the operator is told first that no worker is alive."""
    from console.screens.bulk_answer import BulkAnswerScreen
    from console.screens.inbox import InboxScreen
    from sample_sessions.demo import FIXTURE_EPOCH
    from tests import bulk_store

    from .test_bulk_answer import NO_APP, Keys, filter_inbox

    db = tmp_path / "refunds.sqlite"
    async with SQLiteStore.open(db) as store:
        built = await bulk_store.build(store, FIXTURE_EPOCH)
    app = make_app(None, db_path=db, clock=lambda: built.now, registry=bulk_store.registry())
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        keys = Keys(pilot)
        await filter_inbox(keys, NO_APP)
        assert isinstance(app.screen, InboxScreen)
        await keys("a", "b")
        dialog = app.screen
        assert isinstance(dialog, BulkAnswerScreen) and len(dialog.groups) == 41
        await keys("y")  # the schema form: approved
        assert dialog.plan is not None
        assert dialog.plan.summary().endswith(": 41 auto-complete, 0 re-execute, 0 refused; 1 left to a worker")
        await keys("ctrl+s", "ctrl+s")
        assert dialog.result is not None and dialog.result.ok
        assert dialog.result.summary().endswith(": 40 applied, 1 queued for a worker, 0 refused of 41 invocations")
        table = dialog.query_one("#bulk-items", DataTable)
        rows = {str(table.get_row_at(i)[1]): table.get_row_at(i) for i in range(table.row_count)}
        assert str(rows["legacy-1"][0]) == "queued"
        assert f"queued for a worker of {bulk_store.LEGACY_APP}" in str(rows["legacy-1"][4])
        said = [n.message for n in app._notifications]
        assert f"stored; no worker for {bulk_store.LEGACY_APP} is alive" in " ".join(said)
    async with SQLiteStore.open(db) as store:
        (req,) = await store.turn_requests()
        assert (req.app_name, req.session_id, req.held) == (bulk_store.LEGACY_APP, "legacy-1", None)


async def test_a_held_turn_says_why_on_the_session_screen(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A stranded turn a worker held (a node in doubt waits for an acknowledged
    re-drive): the session screen reads interrupted mid-run and says why the
    workers leave it, as ``hitl show`` does."""
    from tests.reliability.test_fast_listing import _held

    monkeypatch.setenv("HITL_CRASH_EFFECTS", str(tmp_path / "effects.log"))
    monkeypatch.delenv("HITL_CRASH_KILL_AT", raising=False)
    db = tmp_path / "held.sqlite"
    async with SQLiteStore.open(db) as store:
        await _held(store, "x-held", "nodes in doubt (pay@1): waiting for an acknowledged re-drive")
    app = make_app(None, db_path=db)
    async with app.run_test(size=(160, 30)) as pilot:
        await drive(pilot, session="x-held")
        screen = app.screen
        assert isinstance(screen, SessionScreen) and screen.interrupted and screen.held
        info = str(screen.query_one("#session-info").render())
        assert "mid-run" in info and "held by the workers: nodes in doubt (pay@1)" in info, info
