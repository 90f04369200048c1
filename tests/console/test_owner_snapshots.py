"""Owners and deadlines on screen, the console's clock fixed (``owned_store``):
the home list's OWNER column (yours in bold), the inbox's DUE and OWNER columns,
and the session details' deadline row. Plus the home's owner filters, pressed."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from console.config import ConsoleConfig
from console.screens.sessions import SessionsScreen
from sample_sessions.clock import frozen_engine

from .conftest import keys_then_settle
from .owned_store import RAISED, owned_registry, owned_store
from .test_answer import app_for, settle, wait_until


@pytest.fixture(scope="module")
def store() -> Any:
    return owned_store()


def console(store: Any, me: str = "ann") -> Any:
    return app_for(store, registry=owned_registry(), config=ConsoleConfig(path=None, operator=me))


def test_home_with_owners_80x24(snap_compare, store):
    """OWNER before ACTIVE once a session has an owned open interrupt; ann's own in bold."""
    assert snap_compare(console(store), terminal_size=(80, 24), run_before=keys_then_settle())


def test_home_with_owners_120x40(snap_compare, store):
    assert snap_compare(console(store), terminal_size=(120, 40), run_before=keys_then_settle())


def test_inbox_due_and_owner_80x24(snap_compare, store):
    """DUE (1h left on refund-1, none on the others) and OWNER, never cut."""
    assert snap_compare(console(store), terminal_size=(80, 24), run_before=keys_then_settle("i"))


def test_inbox_due_and_owner_120x40(snap_compare, store):
    assert snap_compare(console(store), terminal_size=(120, 40), run_before=keys_then_settle("i"))


async def open_due(pilot: Any) -> None:
    """A snapshot's ``run_before``: the session due-1, its waiting node selected."""
    await settle(pilot)
    pilot.app.open_session("due-1")
    await settle(pilot)


def test_session_details_deadline_row(snap_compare, store):
    """The waiting node's details: the deadline (when, time left, then what)."""

    assert snap_compare(console(store), terminal_size=(120, 40), run_before=open_due)


async def listed(pilot: Any) -> list[str]:
    screen = pilot.app.screen
    assert isinstance(screen, SessionsScreen)
    table = screen.query_one("#sessions-table")
    return [str(k.value) for k in table.rows]


@pytest.mark.parametrize(("typed", "want"), [
    ("owner=me", ["due-1"]),
    ("owner=bob", ["fanout-1"]),
    ("unowned", ["fanout-1", "quiet-1"]),  # fan-b is nobody's
    ("owner=me due", ["due-1"]),
    ("owner=me fanout", []),
])
async def test_home_owner_filters(store: Any, typed: str, want: list[str]) -> None:
    async with console(store).run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        assert sorted(await listed(pilot)) == ["due-1", "fanout-1", "quiet-1"]
        await pilot.press("slash")
        await pilot.press(*[("space" if ch == " " else ch) for ch in typed], "enter")
        screen = pilot.app.screen
        await wait_until(pilot, lambda: screen.query_state.text == typed and not screen._busy)
        await settle(pilot)
        assert sorted(await listed(pilot)) == want


TWO_APPROVERS = '[[answer]]\napp = "due"\napprovals = 2\n'


def approvals_console(tmp_path: Any, me: str = "bob") -> Any:
    """refund-1 under a two-approver rule, ann's approval recorded."""
    from engine import operations
    from engine.permissions import load_policy

    cfg = tmp_path / "hitl.toml"
    cfg.write_text(TWO_APPROVERS)
    store = owned_store()
    with frozen_engine(RAISED + 1800, seed="approve"):  # the approval's time and id: stable on screen
        out = asyncio.run(operations.answer(store, "due-1", {"refund-1": True}, registry=owned_registry(),
                                            operator="ann", reason="ok", policy=load_policy(cfg)))
    assert out.error is None and out.approval == "1 of 2 approvals"
    return app_for(store, registry=owned_registry(), config=ConsoleConfig(path=cfg, operator=me))


def test_inbox_shows_approvals_before_the_next_one(snap_compare, tmp_path):
    """The inbox row says "1 of 2 approvals" beside what it asks, before bob approves."""
    assert snap_compare(approvals_console(tmp_path), terminal_size=(120, 40), run_before=keys_then_settle("i"))


def test_session_details_show_approvals(snap_compare, tmp_path):
    """The interrupt's details: an approvals row, 1 of 2."""

    assert snap_compare(approvals_console(tmp_path), terminal_size=(120, 40), run_before=open_due)
