"""Small things an operator sees every day: answered strings read as JSON, status
words are never cut without an ellipsis, the first-run message keeps its words,
the audit screen says its zone and what was answered, find unfolds folded runs."""

from __future__ import annotations

import asyncio

from console.screens.session import SessionScreen
from console.widgets.event_log import log_line
from engine import Content, Runner

from .conftest import make_app, settle
from .scenarios import build_store, onboard_wf
from .test_live import label, wait_until

PATH = "onboard@1/review@1/sign_off@1"


async def test_a_string_answer_is_shown_quoted_in_the_tree_and_the_log() -> None:
    store = await build_store()
    app = make_app(store, poll_interval=0.1)
    async with app.run_test(size=(120, 34)) as pilot:
        await settle(pilot)
        app.open_session("onboard-nested")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, SessionScreen)
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
