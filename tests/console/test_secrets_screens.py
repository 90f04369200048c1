"""Every console screen of a session seeded with secrets in every shape
(tests/reliability/leaky_app.py): the session screen (tree, details, state),
the answer editor (message, payload, schema), the dry run, the confirmation
and the after view show none of them (only what the operator types is shown
as typed, in the editor and the reason field); with --show-secrets the dry run and
the after view do show them (the app's one Redactor is passed to them)."""

from __future__ import annotations

import html
import json
import re
from typing import Any

import pytest

from console.screens.answer import AnswerScreen
from console.screens.answer_dialogs import ConfirmWrite, OutcomeScreen
from console.screens.session import SessionScreen
from console.widgets.plain import Static
from engine import Content, Runner
from engine.apps import AppRegistry
from engine.store import MemoryStore
from tests.reliability import leaky_app

from .conftest import drive
from .test_answer import app_for, plain, settle, wait_until

S = leaky_app.SECRETS
ANSWER = json.dumps({"rotate": True, "password": S["answer_password"]})
REASON = f"password={S['reason']}"


pytestmark = pytest.mark.usefixtures("operator")  # $USER, no hitl.toml


async def leaky_store() -> MemoryStore:
    store = MemoryStore()
    runner = Runner("leaky", leaky_app.workflow, store)
    async for _ in runner.run("u", "leak-1", Content.from_text(f"connect with token={S['start_message']}")):
        pass
    return store


def screen_text(app: Any) -> str:
    """Everything on screen, as text (the SVG screenshot, unescaped)."""
    svg = app.export_screenshot()
    return html.unescape(re.sub(r"<[^>]+>", "", svg)).replace("\xa0", " ")


def leaks(text: str, names: list[str] | None = None) -> list[str]:
    return [k for k, v in S.items() if (names is None or k in names) and v in text]


@pytest.mark.parametrize("show", [False, True])
async def test_console_screens_show_no_secret_unless_asked(show: bool) -> None:
    store = await leaky_store()
    reg = AppRegistry()
    reg.register("leaky", leaky_app.workflow)
    app = app_for(store, registry=reg, show_secrets=show)
    seen: dict[str, str] = {}
    async with app.run_test(size=(160, 50)) as pilot:
        session = await drive(pilot, session="leak-1", path="leaky@1/connect@1", expect=SessionScreen, wait=settle)
        seen["session (connect selected)"] = screen_text(app)
        session.run_tree.select_path("leaky@1/confirm@1")
        await settle(pilot)
        seen["session (confirm selected)"] = screen_text(app)

        await pilot.press("e")
        await settle(pilot)
        editor_screen = app.screen
        assert isinstance(editor_screen, AnswerScreen), type(editor_screen)
        (ed,) = editor_screen.editors()
        seen["answer editor"] = screen_text(app) + plain(ed._side())
        ed.set_text(ANSWER)
        await settle(pilot)
        await wait_until(pilot, lambda: editor_screen.preview is not None and editor_screen.submit_problem() is None)
        await settle(pilot)
        dry = plain(editor_screen.query_one("#answer-preview-body", Static).content)
        seen["dry run"] = dry
        assert "Dry run" in dry and "rotate" in dry

        await pilot.press("ctrl+s")
        await settle(pilot)
        assert isinstance(app.screen, ConfirmWrite)
        await pilot.press(*REASON)
        await settle(pilot)
        # What the operator types (the editor behind, the reason field) is theirs to see; the
        # dialog's own text -- its summary and the equivalent command -- is masked.
        seen["confirm"] = plain(app.screen.query_one("#confirm-command", Static).content) + plain(app.screen.body)
        await pilot.press("ctrl+s")
        await wait_until(pilot, lambda: isinstance(app.screen, OutcomeScreen))
        await settle(pilot)
        outcome = app.screen
        after = plain(outcome.query_one("#outcome-body", Static).content)
        seen["after view"] = after
        assert "login refused for svc" in after  # the node failed; its error echoes the answer
    if not show:
        found = {name: leaks(text) for name, text in seen.items() if leaks(text)}
        assert not found, found
        assert "***" in seen["dry run"] and "***" in seen["after view"]
    else:  # asked for: the dry run's command and the after view show the typed password and the reason
        assert leaks(seen["dry run"], ["answer_password"]) == ["answer_password"], seen["dry run"]
        assert set(leaks(seen["after view"], ["answer_password", "reason"])) == {"answer_password", "reason"}
        assert S["answer_password"] in seen["confirm"]


def test_renderers_use_the_redactor_they_are_given() -> None:
    """The dry run and the after view mask with the Redactor passed to them (the
    app's), not a module default; no console or engine module calls the bare
    ``mask``/``mask_event`` helpers any more."""
    from pathlib import Path

    from console.widgets.answer_views import Preview, outcome_renderable, preview_renderable
    from engine.models import Event
    from engine.outcome import Outcome
    from engine.redact import Redactor
    from engine.replay import DiffRow

    secret = S["answer_password"]
    preview = Preview(command=f"hitl resume leak-1 'rotate={{\"password\":\"{secret}\"}}'", error=f"password={secret}")
    outcome = Outcome(
        "answer", "leak-1", "inv", "ann", f"password={secret}", error=RuntimeError(f"failed with {secret}"),
        error_kind="failed", written=[Event(invocation_id="inv", author="user") for _ in range(2)],
        rows=[DiffRow("state", "api_key", None, secret), DiffRow("node", "a@1 output", None, {"password": secret})],
    )
    hiding, showing = Redactor(), Redactor(show=True)
    hiding.learn_from({"password": secret})
    import console.widgets.format as fmt

    # No module keeps a Redactor for renderers to fall back on: the app's is passed to each.
    assert not hasattr(fmt, "configure_secrets") and not hasattr(fmt, "redactor") and not hasattr(fmt, "_SECRETS")
    assert secret not in plain(preview_renderable(preview, redactor=hiding))
    assert secret not in plain(outcome_renderable(outcome, hiding, preview.command))
    assert secret in plain(preview_renderable(preview, redactor=showing))
    assert plain(outcome_renderable(outcome, showing, preview.command)).count(secret) >= 3
    root = Path(__file__).resolve().parents[2]
    bare = re.compile(r"from engine\.redact import[^\n]*\bmask(_event)?\b")
    offenders = [
        str(p.relative_to(root))
        for d in ("console", "engine")
        for p in (root / d).rglob("*.py")
        if p.name != "redact.py" and bare.search(p.read_text(encoding="utf-8"))
    ]
    assert not offenders, offenders


@pytest.mark.parametrize("show", [False, True])
async def test_the_after_views_answered_row_follows_the_apps_redactor(show: bool) -> None:
    """The before/after diff quotes each answer ("answered by X: {...}") through the
    app's Redactor: masked by default, shown with --show-secrets."""
    from console.answering.jobs import WriteJob, execute
    from console.widgets.answer_views import shown_rows
    from engine.redact import Redactor

    store = await leaky_store()
    reg = AppRegistry()
    reg.register("leaky", leaky_app.workflow)
    (inv,) = [i.invocation_id for i in await store.list_invocations("leak-1")]
    job = WriteJob(kind="answer", session_id="leak-1", invocation_id=inv, app_name="leaky", user_id="u",
                   operator="tester", reason="r", answers={"rotate": json.loads(ANSWER)})
    outcome = await execute(store, reg, job)
    (row,) = [r for r in shown_rows(outcome, Redactor(show=show)) if r.area == "interrupt"]
    assert row.after.startswith("answered by tester: ")
    assert (S["answer_password"] in row.after) is show, row.after
