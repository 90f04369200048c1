"""Owners and approvals in the console, keys pressed and the store checked
afterwards (SQLite and PostgreSQL): ``c`` / ``C`` on marked inbox rows claim and
assign every marked id (each recorded, audited); under a two-approver rule the
first operator's answer is an approval and only the second one's is applied."""

from __future__ import annotations

from pathlib import Path

from console.screens.inbox import InboxScreen
from console.screens.owner_dialogs import AssignTo
from engine.store.base import SessionStore

from .conftest import drive
from .test_answer import open_session, settle, submit, wait_until
from .test_owners_console import console, owner, store  # noqa: F401 (the fixture)


async def test_c_and_C_on_marked_inbox_rows(store: SessionStore, tmp_path: Path) -> None:  # noqa: F811
    app = console(store, tmp_path, me="bob")
    async with app.run_test(size=(160, 30)) as pilot:
        inbox = await drive(pilot, "i", expect=InboxScreen, wait=settle)
        assert [r.interrupt_id for r in inbox.rows] == ["fan-a", "fan-b"]
        await pilot.press("space", "down", "space")  # mark both rows
        await settle(pilot)
        await pilot.press("c")
        await settle(pilot, 3)
        await wait_until(pilot, lambda: inbox.owner_column)
        assert (await owner(store, "fan-a"), await owner(store, "fan-b")) == ("bob", "bob")
        await pilot.press("C")
        await settle(pilot)
        assert isinstance(pilot.app.screen, AssignTo)
        await pilot.press(*"ann", "enter")
        await settle(pilot, 3)
    assert (await owner(store, "fan-a"), await owner(store, "fan-b")) == ("ann", "ann")
    audit = [(r.action, r.operator, r.details["ids"], r.details["owner"])
             for r in (await store.audit_log(session_id="fanout-1")).items][::-1]
    assert audit == [("claim", "bob", ["fan-a", "fan-b"], "bob"), ("assign", "bob", ["fan-a", "fan-b"], "ann")]


async def answer_fan_a(store: SessionStore, tmp_path: Path, me: str) -> str | None:  # noqa: F811
    """``me`` answers fan-a yes in the console; the outcome's approval progress."""
    app = console(store, tmp_path, me=me, toml='[[answer]]\napp = "fanout"\napprovals = 2\n')
    async with app.run_test(size=(120, 40)) as pilot:
        await open_session(pilot, "fanout-1")
        await pilot.press("e")
        await settle(pilot)
        screen = pilot.app.screen
        await pilot.press("y")
        await settle(pilot)
        await wait_until(pilot, lambda: screen.submit_problem() is None)  # type: ignore[attr-defined]
        outcome = (await submit(pilot, f"{me} agrees")).outcome
        assert outcome.error is None
        return outcome.approval


async def test_two_approvers_in_turn_the_answer_applies_after_the_second(store: SessionStore,  # noqa: F811
                                                                         tmp_path: Path) -> None:
    assert await answer_fan_a(store, tmp_path, "ann") == "1 of 2 approvals"
    events = [se.event for se in await store.events("fanout-1")]
    assert events[-1].kind == "approve" and events[-1].custom_metadata["operator"] == "ann"
    assert not any(e.kind == "response" for e in events)  # not answered yet
    assert "fan-a" in [r.interrupt_id for r in (await store.open_interrupts(session_id="fanout-1")).items]
    assert await answer_fan_a(store, tmp_path, "bob") is None  # the rule is met: answered
    events = [se.event for se in await store.events("fanout-1")]
    (answer,) = [e for e in events if e.kind == "response"]
    assert answer.custom_metadata["operator"] == "bob"
    assert [e.custom_metadata["operator"] for e in events if e.kind == "approve"] == ["ann"]
    assert [r.interrupt_id for r in (await store.open_interrupts(session_id="fanout-1")).items] == ["fan-b"]
