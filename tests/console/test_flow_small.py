"""Small things an operator sees every day: answered strings read as JSON, status
words are never cut without an ellipsis, the first-run message keeps its words,
the audit screen says its zone and what was answered, find unfolds folded runs."""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest

from console.screens.answer import AnswerScreen
from console.screens.session import SessionScreen
from console.widgets.event_log import log_line
from console.widgets.schema_form import SchemaForm
from engine import Content, Runner

from .answer_store import shipping_store
from .conftest import drive, make_app, settle
from .scenarios import build_store, onboard_wf
from .test_answer import app_for
from .test_hostile import screen_text
from .test_live import label, wait_until

PATH = "onboard@1/review@1/sign_off@1"


@asynccontextmanager
async def opened(store: Any, size: tuple[int, int], session_id: str | None = None, *,
                 factory: Any = make_app) -> AsyncIterator[tuple[Any, Any]]:
    """The console over ``store`` at ``size``, settled, on ``session_id`` when given."""
    app = factory(store)
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        if session_id is not None:
            app.open_session(session_id)
            await settle(pilot)
        yield app, pilot


async def test_a_string_answer_is_shown_quoted_in_the_tree_and_the_log() -> None:
    store = await build_store()
    app = make_app(store, poll_interval=0.1)
    async with app.run_test(size=(120, 34)) as pilot:
        screen = await drive(pilot, session="onboard-nested", expect=SessionScreen)
        runner = Runner("onboarding", onboard_wf, store)

        async def answer() -> None:
            async for _ in runner.run("frank", "onboard-nested", Content.from_responses({"sign-off": "none"})):
                pass

        await asyncio.create_task(answer())
        await wait_until(pilot, lambda: "COMPLETED" in label(screen, PATH))
        # a bare ``none`` reads like "no answer"; the answer was the string "none"
        assert 'answered → "none"' in label(screen, PATH)
    events = await store.events("onboard-nested")
    responses = [log_line(se, app.redactor).summary for se in events if se.event.kind == "response"]
    assert any('sign-off="none"' in s for s in responses), responses


@pytest.mark.parametrize("size", [(80, 24), (120, 40)], ids=["80x24", "120x40"])
async def test_the_answer_form_takes_the_height_its_fields_need(size: tuple[int, int]) -> None:
    """The shipping form (a section, a list, a boolean) is taller than a fixed box:
    the box grows to its fields and the editors pane scrolls instead, so no form
    scrolls inside a box with empty space below it."""
    async with opened(await shipping_store(), size, "shipping-1", factory=app_for) as (app, pilot):
        await pilot.press("e", "+", "+", "+")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, AnswerScreen)
        box = screen.query(".answer-form-box").first()
        await wait_until(pilot, lambda: box.size.height > 0)
        await settle(pilot)
        assert box.max_scroll_y == 0, f"the form scrolls inside its box ({box.size.height} rows, {box.virtual_size.height} needed)"
        assert box.size.height >= box.query_one(SchemaForm).size.height


def _look(widget: Any) -> tuple[str, ...]:
    """What tells a widget apart on screen: its border, outline and colours."""
    s = widget.styles
    return (str(s.border), str(s.outline), str(widget.rich_style), str(s.background), str(s.text_style))


async def test_every_focus_stop_of_the_answer_form_is_visible_and_shows_focus() -> None:
    """Tab through the shipping editor (a form, and a JSON-only answer that is
    invalid): each stop is a widget on screen whose look changes with focus."""
    async with opened(await shipping_store(), (120, 40), "shipping-1", factory=app_for) as (app, pilot):
        await pilot.press("e")
        await settle(pilot)
        assert isinstance(app.screen, AnswerScreen)
        stops: list[Any] = []
        focused_look: dict[int, tuple[str, ...]] = {}
        blurred_look: dict[int, tuple[str, ...]] = {}
        for _ in range(40):
            widget = app.focused
            assert widget is not None
            if widget in stops:
                break
            stops.append(widget)
            assert widget.display and widget.visible and widget.region.area > 0, f"an invisible focus stop: {widget!r}"
            focused_look[id(widget)] = _look(widget)
            await pilot.press("tab")
            await settle(pilot)
            blurred_look[id(widget)] = _look(widget)
        assert len(stops) >= 5
        same = [repr(w) for w in stops if focused_look[id(w)] == blurred_look[id(w)]]
        assert not same, f"focus does not show on {same}"


@pytest.mark.parametrize("size", [(80, 24), (120, 40)], ids=["80x24", "120x40"])
async def test_the_audit_screen_says_its_zone_and_what_was_answered(size: tuple[int, int]) -> None:
    store = await build_store()
    app = make_app(store)
    async with app.run_test(size=size) as pilot:
        await drive(pilot, command="audit session=support-multi")
        await wait_until(pilot, lambda: "1 shown" in screen_text(app))
        text = screen_text(app)
        assert "TIME (UTC)" in text  # the zone, said once, as the session's event log says it
        # what was answered, quoted like the tree and the log -- at 80 columns too: the
        # columns are chosen by width (WHAT after TIME and ACTION), nothing scrolls sideways
        assert 'triage-t1="billing"' in text, text
        assert "WHAT" in text.splitlines()[2]
        table = app.screen.query_one("#audit-table")
        assert table.virtual_size.width <= table.scrollable_content_region.width
        assert all(len(line.rstrip()) <= size[0] for line in text.splitlines())
        assert text.splitlines()[2].lstrip().startswith("TIME")  # the info line is one line


async def test_the_audit_screen_masks_an_answered_secret() -> None:
    store = await build_store()
    runner = Runner("onboarding", onboard_wf, store)
    async for _ in runner.run("frank", "onboard-nested", Content.from_responses({"sign-off": "sk_live_abcdefghijklmnop1234"})):
        pass
    app = make_app(store)
    async with app.run_test(size=(160, 30)) as pilot:
        await drive(pilot, command="audit session=onboard-nested")
        await wait_until(pilot, lambda: "1 shown" in screen_text(app))
        text = screen_text(app)
        assert "sign-off=" in text and "sk_live_abcdefghijklmnop1234" not in text, text


@pytest.mark.parametrize("size", [(80, 24), (120, 40)], ids=["80x24", "120x40"])
async def test_find_in_the_node_tree_unfolds_a_folded_run_that_matches(size: tuple[int, int]) -> None:
    """drafting-loop folds review@1 under "5 earlier runs": `/review@1` finds it,
    unfolds the fold and puts the cursor on it; `;` goes on to the next match."""
    async with opened(await build_store(), size, "drafting-loop") as (app, pilot):
        screen = app.screen
        assert isinstance(screen, SessionScreen)
        screen.run_tree.focus()
        await settle(pilot)
        await pilot.press("slash", *"review@1", "enter")
        await settle(pilot)
        assert screen.run_tree.cursor_path == "drafting@1/review@1"
        assert "drafting@1/review@1" in screen_text(app)  # unfolded, on screen
        await pilot.press("slash", *"decide@", "enter")
        await settle(pilot)
        first = screen.run_tree.cursor_path
        await pilot.press("semicolon")
        await settle(pilot)
        assert {first, screen.run_tree.cursor_path} == {"drafting@1/decide@1", "drafting@1/decide@2"}


def _info_lines(app: Any, selector: str) -> list[str]:
    widget = app.screen.query_one(selector)
    return [line.text.rstrip() for line in widget.render_lines(widget.region.reset_offset) if line.text.strip()]


@pytest.mark.parametrize("size", [(80, 24), (120, 40)], ids=["80x24", "120x40"])
async def test_the_session_and_replay_headers_fit_one_line_and_keep_the_status_word(size: tuple[int, int]) -> None:
    """At 80 columns the session header wrapped (``18`` / ``events``) and the
    replay's (``❚❚`` / ``paused``): the least needed parts go first, the status
    word and the replay's state are never cut."""
    async with opened(await build_store(), size, "drafting-loop") as (app, pilot):
        lines = _info_lines(app, "#session-info")
        assert len(lines) == 1 and "◆ WAITING" in lines[0] and "drafting-loop" in lines[0], lines
        if size[0] >= 120:
            assert "carol" in lines[0] and "30 events" in lines[0]  # room for all of it
        await pilot.press("t")
        await settle(pilot)
        await wait_until(pilot, lambda: "event " in _info_lines(app, "#replay-info")[0])
        lines = _info_lines(app, "#replay-info")
        assert len(lines) == 1 and "paused" in lines[0] and lines[0].endswith("read-only"), lines


@pytest.mark.parametrize("size", [(80, 24), (120, 40)], ids=["80x24", "120x40"])
async def test_n_is_the_next_waiting_node_even_while_a_find_is_active(size: tuple[int, int]) -> None:
    """One key, one meaning on the session screen: `n` moved to the next match
    while a find was active and to the next waiting node otherwise; now `n` is
    always the next waiting node and `;` / `,` step through the matches."""
    async with opened(await build_store(), size, "refund-partial") as (app, pilot):
        screen = app.screen
        assert isinstance(screen, SessionScreen)
        tree = screen.run_tree
        tree.focus()
        await pilot.press("slash", *"COMPLETED", "enter")
        await settle(pilot)
        assert tree.find_query == "COMPLETED" and "COMPLETED" in (tree.nav_text(tree.cursor_line) or "")
        tree.select_path("refund@1/legal@1")
        await settle(pilot)
        await pilot.press("n")
        await settle(pilot)
        assert tree.cursor_path == "refund@1/ops@1"  # the next waiting node, not a COMPLETED match
        await pilot.press("semicolon")
        await settle(pilot)
        assert "COMPLETED" in (tree.nav_text(tree.cursor_line) or "")


@pytest.mark.parametrize("size", [(120, 100)], ids=["120x100"])
async def test_g_and_G_in_replay_are_start_and_end_wherever_focus_is(size: tuple[int, int]) -> None:
    """One key, one meaning in replay: `g` / `G` jump to the start / end of the
    history from every pane (a panel's first / last line is home / end)."""
    from console.screens.replay import ReplayScreen

    async with opened(await build_store(), size, "drafting-loop") as (app, pilot):
        await pilot.press("t")
        await settle(pilot)
        replay = app.screen
        assert isinstance(replay, ReplayScreen)
        await wait_until(pilot, lambda: replay.replay is not None)
        panes = [w for w in replay.query("*") if w.focusable and w.display]
        assert len(panes) >= 3
        for pane in panes:
            pane.focus()
            await settle(pilot)
            await pilot.press("g")
            await settle(pilot)
            assert replay.position == 0, f"g on {pane!r}"
            await pilot.press("G")
            await settle(pilot)
            assert replay.position == replay.total, f"G on {pane!r}"

        await pilot.press("question_mark")
        await settle(pilot)
        rows = [re.search(r"│\s+(\S+)\s+(?:replay|nav)\.\w+\s", line) for line in screen_text(app).splitlines()]
        keys = [m.group(1) for m in rows if m]
        assert keys.count("g") == 1 and keys.count("G") == 1, keys  # the help lists the one meaning


async def test_y_in_the_editor_is_yes_and_its_help_lists_no_other_meaning() -> None:
    """The editor's help listed `y` as the form's yes and as nav.copy (which no
    pane of the editor has): `y` is yes, the copy is ctrl+o."""
    from .answer_store import demo_store

    async with opened(await demo_store(), (140, 120), "refund-waiting-1", factory=app_for) as (app, pilot):
        await pilot.press("e")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, AnswerScreen)
        await pilot.press("y")
        await settle(pilot)
        assert screen.values() == {"finance-order-1001": {"approved": True}}
        screen.query_one("#answer-ids").focus()  # y moved on to the note, where ? is text
        await settle(pilot)
        await pilot.press("question_mark")
        await settle(pilot)
        rows = [re.search(r"│\s+(\S+)\s+[a-z]+\.\w+\s", line) for line in screen_text(app).splitlines()]
        keys = [m.group(1) for m in rows if m]
        assert "^o" in keys or "ctrl+o" in keys, keys
        assert "y" not in keys and "n" not in keys, keys  # only the form's keys table says what y / n do
