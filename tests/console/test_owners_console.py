"""Owners in the console (Pilot, keys pressed, the store checked afterwards), on
SQLite and PostgreSQL: ``c`` claims the node's ids (again: releases them), an
interrupt someone else claimed asks first -- saying whose -- before the editor
opens, and answering anyway records a forced answer; ``C`` assigns to a group."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from console.config import ConsoleConfig
from console.screens.answer import AnswerScreen
from console.screens.owner_dialogs import AnswerOwned, AssignTo
from engine import Content, Runner, ownership
from engine.bulk import parse_where
from engine.store.base import SessionStore
from tests.contract.builders import open_store

from .answer_store import fanout_wf, registry
from .conftest import drive
from .test_answer import app_for, open_session, settle, submit, wait_until


@pytest.fixture(params=["sqlite", "postgres"])
async def store(request: pytest.FixtureRequest, tmp_path: Path):
    s = await open_store(request.param, tmp_path)
    async for _ in Runner("fanout", fanout_wf, s).run("zoe", "fanout-1", Content.from_text("T-7")):
        pass
    yield s
    await s.close()


async def owner(store: SessionStore, iid: str) -> str | None:
    (row,) = await store.lookup_interrupts("fanout-1", [iid])
    return row.owner


def console(store: SessionStore, tmp_path: Path, me: str = "bob", toml: str = "") -> Any:
    path = None
    if toml:
        path = tmp_path / "hitl.toml"
        path.write_text(toml)
    return app_for(store, registry=registry(), config=ConsoleConfig(path=path, operator=me))  # type: ignore[arg-type]


async def test_answering_someone_elses_claim_asks_first_then_forces(store: SessionStore, tmp_path: Path) -> None:
    assert (await ownership.claim(store, "fanout-1", ["fan-a"], operator="ann", reason="mine")).error is None
    app = console(store, tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        session = await open_session(pilot, "fanout-1")
        assert session.run_tree.cursor_path == "fanout@1/ask_a@1"
        await pilot.press("e")
        await settle(pilot)
        dialog = pilot.app.screen
        assert isinstance(dialog, AnswerOwned)
        body = str(dialog.query_one("#owned-body").render())
        assert "fan-a is claimed by ann" in body
        await pilot.press("escape")  # back: nothing opens, nothing is written
        await settle(pilot)
        assert pilot.app.screen is session
        n = len(await store.events("fanout-1"))
        await pilot.press("e")
        await settle(pilot)
        await pilot.press("y")  # answer anyway
        await settle(pilot)
        screen = pilot.app.screen
        assert isinstance(screen, AnswerScreen)
        await pilot.press("y")  # the form's boolean
        await settle(pilot)
        await wait_until(pilot, lambda: screen.submit_problem() is None)
        outcome = (await submit(pilot, "urgent")).outcome
        assert outcome.error is None
    events = [se.event for se in await store.events("fanout-1")]
    answer = events[n]
    assert answer.kind == "response" and answer.custom_metadata["operator"] == "bob"
    assert [r.interrupt_id for r in (await store.open_interrupts(session_id="fanout-1")).items] == ["fan-b"]


async def test_c_claims_then_releases_and_C_assigns_to_a_group(store: SessionStore, tmp_path: Path) -> None:
    app = console(store, tmp_path, toml='[groups]\nfinance = ["bob", "ann"]\n')
    async with app.run_test(size=(120, 40)) as pilot:
        await open_session(pilot, "fanout-1")
        await pilot.press("c")
        await settle(pilot, 3)
        assert await owner(store, "fan-a") == "bob"
        await pilot.press("c")  # mine already: released
        await settle(pilot, 3)
        assert await owner(store, "fan-a") is None
        await pilot.press("C")
        await settle(pilot)
        assert isinstance(pilot.app.screen, AssignTo)
        await pilot.press(*"@finance", "enter")
        await settle(pilot, 3)
        assert await owner(store, "fan-a") == "@finance"
        await pilot.press("e")  # a group bob is in: no question
        await settle(pilot)
        assert isinstance(pilot.app.screen, AnswerScreen)
    audit = [(r.action, r.operator) for r in (await store.audit_log(session_id="fanout-1")).items][::-1]
    assert audit == [("claim", "bob"), ("release", "bob"), ("assign", "bob")]


async def test_a_read_only_console_cannot_claim(store: SessionStore, tmp_path: Path) -> None:
    app = app_for(store, registry=registry(), read_only=True, config=ConsoleConfig(operator="val"))
    async with app.run_test(size=(120, 40)) as pilot:
        await open_session(pilot, "fanout-1")
        await pilot.press("c", "C")
        await settle(pilot)
    assert await owner(store, "fan-a") is None
    assert (await store.audit_log(session_id="fanout-1")).items == []


async def test_inbox_shows_owner_claims_with_c_and_asks_before_answering(store: SessionStore, tmp_path: Path) -> None:
    from console.screens.inbox import InboxScreen

    app = console(store, tmp_path)
    async with app.run_test(size=(160, 30)) as pilot:
        await drive(pilot, "i", wait=settle)
        inbox = pilot.app.screen
        assert isinstance(inbox, InboxScreen) and not inbox.owner_column  # nobody owns anything: no column
        assert [r.interrupt_id for r in inbox.rows] == ["fan-a", "fan-b"]
        await pilot.press("c")  # the row under the cursor
        await settle(pilot, 3)
        await wait_until(pilot, lambda: inbox.owner_column)
        assert await owner(store, "fan-a") == "bob"
        table = inbox.query_one("#inbox-table")
        assert str(table.get_cell(inbox._key(inbox.rows[0]), "owner")) == "bob"  # type: ignore[attr-defined]
        assert (await ownership.assign(store, "fanout-1", ["fan-b"], to="ann", operator="lead")).error is None
        inbox.apply_filter(parse_where("owner=me", me="bob"))
        await settle(pilot, 3)
        assert [r.interrupt_id for r in inbox.rows] == ["fan-a"]
        inbox.apply_filter(parse_where("owner=ann"))
        await settle(pilot, 3)
        assert [r.interrupt_id for r in inbox.rows] == ["fan-b"]
        await pilot.press("e")
        await settle(pilot)
        assert isinstance(pilot.app.screen, AnswerOwned)
        assert "fan-b is claimed by ann" in str(pilot.app.screen.query_one("#owned-body").render())


async def test_an_operator_outside_the_allowed_group_is_refused_in_the_console(store: SessionStore,
                                                                               tmp_path: Path) -> None:
    app = console(store, tmp_path, me="carol",
                  toml='[groups]\nfinance = ["ann"]\n\n[[answer]]\napp = "fanout"\nallow = ["@finance"]\n')
    n = len(await store.events("fanout-1"))
    async with app.run_test(size=(120, 40)) as pilot:
        session = await open_session(pilot, "fanout-1")
        await pilot.press("e")
        await settle(pilot)
        screen = pilot.app.screen
        assert isinstance(screen, AnswerScreen)
        await pilot.press("y")
        await settle(pilot)
        await wait_until(pilot, lambda: screen.submit_problem() is None)
        await pilot.press("ctrl+s")
        await settle(pilot)
        await pilot.press(*"why", "ctrl+s")
        draft = session.drafts[session.invocation_id]  # type: ignore[index]
        await wait_until(pilot, lambda: draft.error is not None)
        assert draft.error == ("carol may not answer interrupt fan-a: only @finance may (rule app=fanout); "
                               "nothing was written")
    assert len(await store.events("fanout-1")) == n
