"""The Replay screen with Pilot: open it, step, jump (operator actions, g/G,
:at N), play, diff between a mark and the cursor, follow the log cursor, replay
a file without a store -- and at every position the tree, details and state
show exactly a fresh projection of the events up to there."""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console
from textual.pilot import Pilot
from textual.widgets import Static

from console.actions import for_screen
from console.app import HitlApp
from console.screens.help import HelpScreen
from console.screens.replay import SPEEDS, DiffScreen, ReplayScreen, ReplaySource
from console.widgets.node_tree import ROOT, NodeTree
from console.widgets.replay_panels import ReplayLog, ReplayPanel
from engine.projection import Projection, project
from engine.store import MemoryStore
from engine.store.jsonl import export_lines
from engine.views import frame_dict

from .conftest import details_text, drive, make_app
from .replay_store import build_replay_store

SIZE = (90, 26)


@pytest.fixture(scope="module")
def store() -> MemoryStore:
    return build_replay_store()


async def settle(pilot: Pilot[Any]) -> None:
    """Workers done, their messages handled (lighter than conftest.settle: no timers to wait for)."""
    await pilot.app.workers.wait_for_complete()
    await pilot.pause()
    await pilot.app.workers.wait_for_complete()
    await pilot.pause()


def notes(app: HitlApp) -> list[str]:
    return [n.message for n in app._notifications]


def text_of(renderable: Any, width: int = 110) -> str:
    console = Console(width=width, record=True, file=open(os.devnull, "w"))  # noqa: SIM115
    console.print(renderable)
    return console.export_text()


def panel(app: HitlApp, pane: str = "#replay-event") -> str:
    return text_of(app.screen.query_one(pane, ReplayPanel).shown)


async def fresh(store: MemoryStore, session_id: str, k: int) -> Projection:
    events = await store.events(session_id)
    return project([(s.seq, s.event) for s in events[:k]])


async def assert_shows_fresh_state(app: HitlApp, store: MemoryStore, session_id: str) -> None:
    """Tree labels, details and state at the cursor = a fresh fold of the prefix."""
    screen = app.screen
    assert isinstance(screen, ReplayScreen) and screen.frame is not None
    k = screen.position
    expected = await fresh(store, session_id, k)
    assert screen.frame.projection.to_dict() == expected.to_dict()
    tree = screen.query_one(NodeTree)
    statuses = frame_dict(screen.frame)["nodes"] if k else {}
    for path, status in statuses.items():
        node = tree.node_for(path)
        assert node is not None, path
        assert f"@{path.rsplit('@', 1)[1]} " in str(node.label) and status in str(node.label), (path, node.label)
    drawn = {n for n in tree._by_path if n != ROOT and not n.startswith("#")}
    assert drawn == set(statuses)
    state = panel(app, "#replay-state")
    for key, value in expected.state.items():
        assert f"{key} {json.dumps(value)[:20]}" in " ".join(state.split()), key


def replay_app(store: MemoryStore, session_id: str, at: int | None = None) -> HitlApp:
    return make_app(store, replay=ReplaySource(session_id=session_id, at=at))


@asynccontextmanager
async def replaying(
    store: MemoryStore, session_id: str, at: int | None = None
) -> AsyncIterator[tuple[HitlApp, Pilot[Any], ReplayScreen]]:
    """The console opened on the replay of ``session_id`` (at ``at``, else the end), settled."""
    app = replay_app(store, session_id, at)
    async with app.run_test(size=SIZE) as pilot:
        yield app, pilot, await drive(pilot, expect=ReplayScreen, wait=settle)


async def test_t_on_the_session_screen_opens_the_replay_at_the_end(store):
    app = make_app(store)
    async with app.run_test(size=SIZE) as pilot:
        screen = await drive(pilot, "t", session="refund-partial-1", expect=ReplayScreen, wait=settle)
        assert screen.position == screen.total == 15  # with the auto-completion's record
        await assert_shows_fresh_state(app, store, "refund-partial-1")
        assert "risk_approval@1" in details_text(app) or "refund@1" in details_text(app)
        await pilot.press("escape")
        assert type(app.screen).__name__ == "SessionScreen"


async def test_the_log_selection_is_where_the_replay_opens(store):
    app = make_app(store)
    async with app.run_test(size=SIZE) as pilot:
        await drive(pilot, session="refund-partial-1", wait=settle)
        await pilot.press("tab", "tab", "home", "down", "down")  # the log, event 3
        await settle(pilot)
        await pilot.press("t")
        await settle(pilot)
        assert isinstance(app.screen, ReplayScreen) and app.screen.position == 3


async def test_stepping_forward_and_back_shows_each_prefix(store):
    async with replaying(store, "deploy-waiting-1", at=8) as (app, pilot, screen):
        assert screen.position == 8
        for expected in range(9, 18):  # 10: gate@1's completion record
            await pilot.press("right_square_bracket")
            assert screen.position == expected
            await assert_shows_fresh_state(app, store, "deploy-waiting-1")
        assert "fresh run 2" in panel(app)  # gate@2: the loop re-triggered it
        assert screen.query_one(NodeTree).cursor_path == "pipeline@1/gate@2"
        for expected in (16, 15, 14):
            await pilot.press("left_square_bracket")
            assert screen.position == expected
            await assert_shows_fresh_state(app, store, "deploy-waiting-1")
        assert "deploy_iterations" in panel(app, "#replay-state")
        await pilot.press("left_square_bracket", "g")
        assert screen.position == 0 and "start of history" in panel(app)
        await pilot.press("left_square_bracket")  # already at the start: stays
        assert screen.position == 0
        await pilot.press("right_square_bracket")
        assert screen.position == 1 and "new invocation" in panel(app)
        await assert_shows_fresh_state(app, store, "deploy-waiting-1")


async def test_jumping_between_operator_actions_and_to_the_ends(store):
    async with replaying(store, "deploy-waiting-1", at=0) as (app, pilot, screen):
        await pilot.press("right_curly_bracket")
        assert screen.position == 9
        text = panel(app)
        assert "answer to gate-1 by demo" in text
        assert "pipeline@1/gate@1 auto-completed from the answer" in text
        assert "pipeline@1 will re-execute (PENDING)" in text
        await assert_shows_fresh_state(app, store, "deploy-waiting-1")
        await pilot.press("right_curly_bracket")
        assert screen.position == 21
        assert screen.check_action("next_action", ()) is None  # none after 21: shown disabled
        await pilot.press("right_curly_bracket")
        assert screen.position == 21
        await pilot.press("G")
        assert screen.position == screen.total == 32
        await pilot.press("left_curly_bracket")
        assert screen.position == 21
        await pilot.press("left_curly_bracket", "left_curly_bracket")
        assert screen.position == 9
        await assert_shows_fresh_state(app, store, "deploy-waiting-1")


async def test_at_n_in_command_mode(store):
    async with replaying(store, "incident-failed-1") as (app, pilot, screen):
        assert screen.position == 16
        await pilot.press("colon", *"at 6", "enter")
        await settle(pilot)
        assert screen.position == 6
        assert "asks for input: mitigate-" in panel(app)
        await assert_shows_fresh_state(app, store, "incident-failed-1")
        app.run_command("at 99")
        await settle(pilot)
        assert screen.position == 6 and any("out of range" in n and "0 to 16" in n for n in notes(app))
        app.run_command("at x")
        await settle(pilot)
        assert screen.position == 6 and any(":at takes one event number" in n for n in notes(app))
        screen.action_at()  # from the palette: the prompt opens with "at " typed
        await settle(pilot)
        await pilot.press("1", "5", "enter")
        await settle(pilot)
        assert screen.position == 15
        assert "incident@1/mitigate@1 failed: PAGER_503" in panel(app)


async def test_diff_between_the_mark_and_the_cursor(store):
    async with replaying(store, "incident-redriven-1", at=16) as (app, pilot, screen):
        assert screen.check_action("diff", ()) is None  # nothing marked yet
        await pilot.press("d")
        assert not isinstance(app.screen, DiffScreen)
        await pilot.press("m", "G", "d")
        await settle(pilot)
        modal = app.screen
        assert isinstance(modal, DiffScreen) and (modal.first, modal.second) == (16, 23)
        rows = {(r.area, r.key): (r.before, r.after) for r in modal.rows}
        assert rows[("node", "incident@1 status")] == ("FAILED", "COMPLETED")
        assert rows[("node", "incident@1/mitigate@1 status")] == ("FAILED", "COMPLETED")
        assert rows[("node", "incident@1/close@1")] == (None, "new run COMPLETED")
        assert rows[("state", "pager_calls")] == (1, 2)
        assert "FAILED" in text_of(modal.query_one(ReplayPanel).shown)
        await pilot.press("escape")
        assert app.screen is screen
        # mark ahead of the cursor: the diff reads later states, the screen keeps its own
        await pilot.press("g", "right_square_bracket", "right_square_bracket", "right_square_bracket", "d")
        await settle(pilot)
        modal = app.screen
        assert isinstance(modal, DiffScreen) and (modal.first, modal.second) == (3, 16)
        await pilot.press("escape")
        assert screen.position == 3
        await assert_shows_fresh_state(app, store, "incident-redriven-1")


async def test_moving_the_log_cursor_moves_the_replay(store):
    async with replaying(store, "refund-partial-1") as (app, pilot, screen):
        assert screen.position == 15
        screen.query_one(ReplayLog).focus()
        await pilot.press("up", "up", "up")  # past finance_approval's completion record
        await settle(pilot)
        assert screen.position == 12 and "answer to finance-order-1002" in panel(app)
        await assert_shows_fresh_state(app, store, "refund-partial-1")
        await pilot.press("G")  # the log binds no registry key: G reaches the screen
        assert screen.position == 15 and screen.query_one(ReplayLog).cursor == 14


async def wait_for(pilot, predicate, message: str, deadline: float = 30.0) -> None:
    """Wait on the screen's state (a deadline against hangs, not a timing check)."""
    loop = asyncio.get_running_loop()
    end = loop.time() + deadline
    while not predicate():
        assert loop.time() < end, message
        await pilot.pause(0.02)


async def test_play_runs_to_the_end_then_pauses(store):
    async with replaying(store, "refund-partial-1", at=0) as (app, pilot, screen):
        assert SPEEDS[screen.speed] == 16  # the default: a history plays in seconds, not minutes
        await pilot.press("plus")
        assert SPEEDS[screen.speed] == 32 and "32/s" in str(screen.query_one("#replay-info", Static).render())
        screen.speed = len(SPEEDS) - 1  # the fastest: 8 events a tick
        await pilot.press("p")
        await wait_for(pilot, lambda: not screen.playing, "play stops by itself at the end")
        assert screen.position == screen.total
        await assert_shows_fresh_state(app, store, "refund-partial-1")
        screen.speed = 0  # 1 event/s, one a tick
        await pilot.press("p")  # at the end, play starts over
        await wait_for(pilot, lambda: screen.position > 0, "play started over from the beginning")
        await pilot.press("p")
        assert not screen.playing and 0 < screen.position < screen.total


async def test_replay_is_read_only_by_construction(store):
    assert not [a.id for a in for_screen("replay") if a.read_only_disabled]
    app = replay_app(store, "incident-failed-1")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert not [a.id for a, _ in app.applicable_actions(app.screen) if a.read_only_disabled]
        app.run_command("interrupts.answer")
        await settle(pilot)
        assert any("'answer the selected ids' applies on the inbox, session screen, not here" in n for n in notes(app))
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        listed = [a.id for _, actions in app.screen.sections for a in actions]
        assert "replay.next_action" in listed
        # the navigation keys of its tree (issue 16), but g / G once: the replay's start / end
        replay_keys = {a.key for a in for_screen("replay")}
        navigation = {a.id for a in for_screen("tree") if a.key not in replay_keys}
        assert "nav.first" not in navigation and "nav.home" in navigation
        assert set(listed) == {a.id for a in for_screen("replay") + for_screen("app")} | navigation


async def test_an_exported_file_replays_without_a_store(store, tmp_path: Path):
    path = tmp_path / "incident.jsonl"
    path.write_text("".join([line async for line in export_lines(store, "incident-redriven-1")]))
    app = make_app(None, replay=ReplaySource(file=path, at=0))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, ReplayScreen) and screen.total == 23
        assert app.storeless and app.check_action("show_inbox", ()) is None
        await pilot.press("right_curly_bracket", "right_curly_bracket")
        assert screen.position == 17 and "redrive by sam (pager API back)" in panel(app)
        await assert_shows_fresh_state(app, store, "incident-redriven-1")
        await pilot.press("escape", "h")  # nothing to go back to, no store to browse
        assert app.screen is screen


async def test_a_broken_file_is_one_line_not_a_crash(tmp_path: Path):
    path = tmp_path / "bad.jsonl"
    path.write_text('{"format": "hitl-session", "version": 1}\n')
    app = make_app(None, replay=ReplaySource(file=path))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert any(n.startswith(f"Cannot replay {path}: line 1") for n in notes(app))
        await pilot.press("right_square_bracket", "d", "p")  # nothing loaded: keys are harmless
        assert isinstance(app.screen, ReplayScreen) and app.screen.frame is None
