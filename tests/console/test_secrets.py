"""Values of secret-looking keys are masked everywhere the console shows stored
data (tree summaries, details, event JSON), unless --show-secrets."""

from __future__ import annotations

import pytest

from engine import START, Content, Runner, Workflow, node
from engine.store import MemoryStore

from .conftest import details_text, make_app, settle
from .test_answer import open_session


@node
async def connect(ctx, node_input):
    ctx.state["db_password"] = "hunter2"
    return {"host": "db1", "api_key": "sk-live-123"}


@pytest.fixture
async def secret_store() -> MemoryStore:
    store = MemoryStore()
    runner = Runner("vault", Workflow("wf", [(START, connect)]), store)
    async for _ in runner.run("u", "s-secret", Content.from_text("go")):
        pass
    return store


@pytest.mark.parametrize("show", [False, True])
async def test_secret_values_are_masked_unless_shown(secret_store, show):
    app = make_app(secret_store, show_secrets=show)
    async with app.run_test(size=(120, 36)) as pilot:
        screen = await open_session(pilot, "s-secret")
        await settle(pilot)
        screen.run_tree.select_path("wf@1/connect@1")
        await settle(pilot)
        node_text = details_text(app)
        assert "db1" in node_text  # ordinary values stay visible
        assert ("sk-live-123" in node_text) is show
        screen.log_widget.focus()
        screen.log_widget.action_last()
        await pilot.press("up", "enter")  # connect's end record carries the state delta
        await settle(pilot)
        assert ("hunter2" in details_text(app) + node_text) is show
