"""Issue 11: the console never misleads -- filters, focus, loading, crashes, screenshots."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from console.app import run_app
from console.screens.session import SessionScreen
from console.screens.sessions import SessionsScreen, SessionTable
from console.widgets.details import Details
from engine.store import MemoryStore

from .conftest import drive, make_app, settle
from .scenarios import build_store
from .test_hostile import screen_text, wait_for


@pytest.fixture
async def store() -> MemoryStore:
    return await build_store()


def info(app: Any) -> str:
    return str(app.screen.query_one("#sessions-info").render())


async def test_every_active_filter_is_visible_and_0_clears_them(store: MemoryStore) -> None:
    app = make_app(store)
    async with app.run_test(size=(140, 40)) as pilot:
        await drive(pilot, command="sessions user=alice")
        assert "filter: user=alice" in screen_text(app) and "(0: clear)" in screen_text(app)
        assert {r.user_id for r in app.screen.rows} == {"alice"}
        await pilot.press("0")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, SessionsScreen)
        assert screen.query_state.user_id is None and "filter: -" in screen_text(app)
        assert len({r.user_id for r in screen.rows}) > 1


async def test_the_sessions_table_keeps_focus_after_an_empty_result(store: MemoryStore) -> None:
    app = make_app(store)
    async with app.run_test(size=(140, 40)) as pilot:
        await drive(pilot, command="sessions user=nobody")
        assert "No session matches" in screen_text(app)
        await pilot.press("0")
        await settle(pilot)
        table = app.screen.query_one(SessionTable)
        assert table.has_focus and table.row_count > 1
        await pilot.press("down")
        assert table.cursor_row == 1  # j/↓ reach the table, not a hidden filter box
        await pilot.press("1")
        await settle(pilot)
        assert app.screen.query_state.status == "waiting"


class SlowStore(MemoryStore):
    """Holds every event read until ``release`` is set."""

    def __init__(self) -> None:
        super().__init__()
        self.release = asyncio.Event()

    async def events(self, *args: Any, **kwargs: Any) -> Any:
        await self.release.wait()
        return await super().events(*args, **kwargs)

    async def invocation_events(self, *args: Any, **kwargs: Any) -> Any:
        await self.release.wait()
        return await super().invocation_events(*args, **kwargs)


async def test_a_loading_session_says_loading_not_no_invocation(store: MemoryStore) -> None:
    from .conftest import copy_into

    slow = await copy_into(store, SlowStore())
    app = make_app(slow)
    async with app.run_test(size=(140, 40)) as pilot:
        await pilot.pause()
        app.open_session("refund-partial")
        await wait_for(pilot, lambda: isinstance(app.screen, SessionScreen), "the session screen")
        await pilot.pause(0.1)
        details = str(app.screen.query_one(Details).shown)
        assert "no invocation" not in details and "loading" in screen_text(app)
        slow.release.set()
        await wait_for(pilot, lambda: app.screen.view is not None, "the session to load")


async def test_palette_screenshot_is_saved_to_a_known_place_and_says_where(store: MemoryStore, tmp_path: Path) -> None:
    target = tmp_path / "no" / "such" / "dir"
    app = make_app(store, screenshot_dir=target)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        saved = app.deliver_screenshot()
        await pilot.pause()
        assert saved is not None and Path(saved).parent == target and Path(saved).read_text().startswith("<svg")
        assert any(f"Screenshot saved to {saved}" in n.message for n in app._notifications)


def test_a_console_crash_exits_non_zero(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def boom(self: Any) -> None:
        raise RuntimeError("boom")

    monkeypatch.setattr(SessionsScreen, "on_mount", boom)
    with pytest.raises(SystemExit) as exc:
        run_app(tmp_path / "s.sqlite", headless=True)
    assert exc.value.code == 1


async def test_a_run_whose_process_died_shows_interrupted_in_the_list_filter_and_triage(store: MemoryStore) -> None:
    app = make_app(store)
    async with app.run_test(size=(160, 40)) as pilot:
        await settle(pilot)
        line = next(ln for ln in screen_text(app).splitlines() if "billing-stuck" in ln)
        assert "⚠ INTERRUPTED IN DOUBT" in line and "RUNNING" not in line
        await pilot.press("6")
        await settle(pilot)
        assert [r.id for r in app.screen.rows] == ["billing-stuck"]
        assert "status: interrupted" in screen_text(app)
        await pilot.press("0")  # the home's triage order: what stopped mid-run first
        await settle(pilot)
        assert app.screen.triage() and app.screen._ordered()[0].id == "billing-stuck"
        app.run_command("sessions status=interrupted")
        await settle(pilot)
        assert [r.id for r in app.screen.rows] == ["billing-stuck"]


async def test_read_only_keys_say_why_and_the_editor_opens_for_a_dry_run(store: MemoryStore) -> None:
    from console.actions import BY_ID
    from console.screens.answer import AnswerScreen

    app = make_app(store, read_only=True)
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(pilot)
        app.open_session("refund-partial")
        await wait_for(pilot, lambda: isinstance(app.screen, SessionScreen) and app.screen.view is not None, "session")
        await settle(pilot)
        await pilot.press("n")
        await settle(pilot)
        for key, action_id in (("R", "invocation.redrive"), ("X", "invocation.cancel"), ("space", "interrupts.toggle")):
            app._notifications.clear()
            await pilot.press(key)
            await settle(pilot)
            said = [n.message for n in app._notifications]
            label = BY_ID[action_id].label  # the key's name, never the internal action id (issue 34)
            assert said == [f"Read-only: {label} is disabled -- it writes to the store. Start hitl without "
                            "--read-only to do this."], (key, said)
        await pilot.press("e")
        await wait_for(pilot, lambda: isinstance(app.screen, AnswerScreen), "the response editor")
        await settle(pilot)
        banner = str(app.screen.query_one("#answer-banner").render())
        assert "Read-only" in banner and "submitting does not" in banner  # said when the editor opens
        app._notifications.clear()
        await pilot.press("ctrl+s")
        await settle(pilot)
        assert isinstance(app.screen, AnswerScreen)  # no confirmation, nothing written
        assert [n.message for n in app._notifications] == [
            "Read-only: Submit is disabled -- it writes to the store. Start hitl without --read-only to do this."
        ]
