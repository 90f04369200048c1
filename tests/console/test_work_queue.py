"""The inbox as a work queue: a submit started from the inbox comes back to the
inbox with the cursor on the next open row, keys typed before the outcome count
there, the outcome is one line, and a refused answer reopens its editor with the
text as typed. The store is the oracle."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from console.answering import writes
from console.screens.answer import AnswerScreen
from console.screens.answer_dialogs import ConfirmWrite
from console.screens.inbox import InboxScreen
from engine.errors import AlreadyResolvedError
from engine.outcome import Outcome

from .answer_store import demo_store
from .test_answer import app_for, editor, settle, wait_until
from .test_trust import open_inbox, toasts


@pytest.fixture(autouse=True)
def _operator(monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> None:
    monkeypatch.setenv("USER", "tester")
    monkeypatch.chdir(tmp_path)


class HeldWrite:
    """Holds every console write until released (the turn is 'still running')."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, outcome: Outcome | None = None) -> None:
        self.gate = asyncio.Event()
        self.started = 0
        real = writes.execute

        async def held(*args: Any, **kw: Any) -> Outcome:
            self.started += 1
            await self.gate.wait()
            return outcome if outcome is not None else await real(*args, **kw)

        monkeypatch.setattr(writes, "execute", held)


async def answered(store: Any, interrupt_id: str) -> bool:
    return interrupt_id not in {r.interrupt_id for r in (await store.open_interrupts(limit=1000)).items}


async def yes_and_submit(pilot: Any, inbox: InboxScreen) -> str:
    """``e``, ``y``, ``ctrl+s``, ``ctrl+s`` on the inbox's cursor row; returns its interrupt id."""
    wanted = inbox.selected.interrupt_id  # type: ignore[union-attr]
    await pilot.press("e", "y")  # typed before the editor shows: kept for its form
    # (no settle: a held write is a worker that does not complete)
    await wait_until(pilot, lambda: isinstance(pilot.app.screen, AnswerScreen))
    screen = pilot.app.screen
    assert isinstance(screen, AnswerScreen) and screen.selected == [wanted]
    await wait_until(pilot, lambda: screen.submit_problem() is None)
    await pilot.press("ctrl+s")
    await wait_until(pilot, lambda: isinstance(pilot.app.screen, ConfirmWrite))
    await pilot.press("ctrl+s")
    return wanted


@pytest.mark.parametrize("size", [(80, 24), (120, 40)])
async def test_a_submit_from_the_inbox_returns_to_the_next_open_row(monkeypatch: pytest.MonkeyPatch, size) -> None:
    store = await demo_store()
    held = HeldWrite(monkeypatch)
    app = app_for(store)
    async with app.run_test(size=size) as pilot:
        inbox = await open_inbox(pilot)
        order = [inbox._key(r) for r in inbox.sorted_rows(inbox.rows)]
        first = await yes_and_submit(pilot, inbox)
        await wait_until(pilot, lambda: held.started == 1)
        # The turn is still running: the inbox is back, on the row that followed.
        assert app.screen is inbox
        assert inbox._key(inbox.selected) == order[1]  # type: ignore[arg-type]
        assert first not in {r.interrupt_id for r in inbox.rows if inbox._key(r) == order[0]}
        # A key pressed before the outcome appears is the inbox's: j moves, k moves back.
        await pilot.press("j")
        assert inbox._key(inbox.selected) == order[2]  # type: ignore[arg-type]
        await pilot.press("k")
        held.gate.set()
        await wait_until(pilot, lambda: any(f"Answered {first}" in t for t in toasts(app)))
        await settle(pilot)
        assert app.screen is inbox and inbox._key(inbox.selected) == order[1]  # type: ignore[arg-type]
        assert order[0] not in {inbox._key(r) for r in inbox.rows}
    assert await answered(store, first)


async def test_the_next_answer_can_be_typed_while_the_first_turn_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    """Answer, answer: two rows of the queue with no wait and no esc in between."""
    store = await demo_store()
    held = HeldWrite(monkeypatch)
    app = app_for(store)
    async with app.run_test(size=(120, 40)) as pilot:
        inbox = await open_inbox(pilot)
        rows = inbox.sorted_rows(inbox.rows)
        # two rows of different sessions, so the second answer does not wait on the first's turn
        inbox.query_one("#inbox-table").move_cursor(
            row=next(i for i, r in enumerate(rows) if r.session_id != rows[1].session_id and i > 0) - 1)
        first = await yes_and_submit(pilot, inbox)
        await wait_until(pilot, lambda: held.started == 1 and app.screen is inbox)
        second = await yes_and_submit(pilot, inbox)
        await wait_until(pilot, lambda: held.started == 2 and app.screen is inbox)
        held.gate.set()
        await wait_until(pilot, lambda: sum("Answered" in t for t in toasts(app)) == 2)
    assert first != second
    assert await answered(store, first) and await answered(store, second)


async def test_a_refused_answer_from_the_inbox_reopens_its_editor_with_the_text(monkeypatch: pytest.MonkeyPatch) -> None:
    store = await demo_store()
    inbox_row: dict[str, Any] = {}
    refused = Outcome("answer", "", "", "tester", None, error=AlreadyResolvedError(["finance-order-1001"], " meanwhile"),
                      error_kind="conflict")
    held = HeldWrite(monkeypatch, refused)
    app = app_for(store)
    async with app.run_test(size=(120, 40)) as pilot:
        inbox = await open_inbox(pilot)
        inbox_row["rec"] = inbox.selected
        wanted = await yes_and_submit(pilot, inbox)
        await wait_until(pilot, lambda: held.started == 1 and app.screen is inbox)
        held.gate.set()
        await wait_until(pilot, lambda: isinstance(app.screen, AnswerScreen))
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, AnswerScreen) and screen.selected == [wanted]
        assert editor(screen, wanted).check.value == {"approved": True, "note": ""} or \
            editor(screen, wanted).check.value == {"approved": True}
        assert any("answered meanwhile" in t for t in toasts(app))
    assert not await answered(store, wanted)
