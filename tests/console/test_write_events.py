"""A write started in the console moves the tree from the events it persisted,
without reading them back from the store (issue 14: the write worker already
has the events it runs). Each WriteEvent carries its seq; one that directly
follows what the screen shows is applied as it is. Here every store read of
events is held back while the write runs: the tree and the log still follow the
turn to its end, and the before/after view opens once reads are let through."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from console.screens.answer_dialogs import ConfirmWrite, OutcomeScreen
from console.screens.session import SessionScreen
from engine.models import NodeStatus

from .answer_store import demo_store, invocation
from .test_answer import app_for, editor_screen, open_session, settle, wait_until, write

pytestmark = pytest.mark.usefixtures("operator")  # $USER, no hitl.toml


async def test_a_console_write_moves_the_tree_without_reading_its_events_back() -> None:
    store = await demo_store()
    inv, _ = await invocation(store, "refund-waiting-1")
    app = app_for(store)
    async with app.run_test(size=(120, 40)) as pilot:
        session = await open_session(pilot, "refund-waiting-1")
        screen = await editor_screen(pilot, "e")
        await write(pilot, screen, {"finance-order-1001": '{"approved": true}'})
        await pilot.press("ctrl+s")
        await settle(pilot)
        assert isinstance(app.screen, ConfirmWrite)
        await pilot.press(*"ok")

        gate = asyncio.Event()  # held: every read of events from here until set
        reads = store.events

        async def held_events(*a: Any, **kw: Any) -> Any:
            await gate.wait()
            return await reads(*a, **kw)

        store.events = held_events  # type: ignore[method-assign]
        before = (await store.get_session("refund-waiting-1")).last_seq
        await pilot.press("ctrl+s")

        def moved() -> bool:
            run = session.proj.get(inv, "refund@1/finance_approval@1")
            return run is not None and run.status is NodeStatus.COMPLETED and run.auto_completed

        await wait_until(pilot, moved)
        last = (await store.get_session("refund-waiting-1")).last_seq
        await wait_until(pilot, lambda: session.log_seq == session.tree_seq)
        assert before < session.log_seq <= last  # the log grew by the write's events, none read back
        assert isinstance(session, SessionScreen)
        gate.set()
        await wait_until(pilot, lambda: isinstance(app.screen, OutcomeScreen))
        await settle(pilot)
        assert app.screen.outcome.error is None and session.log_seq == last
