"""Secrets in free text and in secret-named schema defaults (issue 42.4): a
known secret value (seen under a secret key anywhere in the session) is
masked wherever it appears -- in an operator's reason, an answer's free text,
an error message -- on every surface, the console's node details included."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from tests.cli.conftest import ok
from tests.cli_runner import copy_of, hitl_on

from . import leaky_app
from .conftest import Hitl, read_commands

APP = ["--app", "leaky=tests.reliability.leaky_app:workflow"]
S = leaky_app.SECRETS
NEW = "fresh-pw-0101"
"""The password the operator answers with, and then types in their reason."""

COMMANDS = {
    **read_commands("leak-2"),
    "replay json": ["--json", "replay", "leak-2"],
    "replay diff": ["replay", "leak-2", "--at", "12", "--diff-from", "2"],
    "audit": ["audit", "--session", "leak-2"],
    "inbox": ["inbox", "--session", "leak-2"],
    "audit all": ["audit"],
}


@pytest.fixture(scope="module")
def rendered(demo_template: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, str], Hitl, Path]:
    db = copy_of(demo_template, tmp_path_factory.mktemp("free-text") / "demo.sqlite")
    hitl = hitl_on(db)
    async def go() -> None:
        from engine import Content, Runner
        from engine.store.sqlite import SQLiteStore

        async with SQLiteStore.open(db) as store:
            async for _ in Runner("leaky", leaky_app.workflow, store).run("u", "leak-2", Content.from_text("go")):
                pass

    asyncio.run(go())
    outputs: dict[str, str] = {"inbox json open": ok(hitl("--json", "inbox", "--session", "leak-2"))}
    outputs["inbox open"] = ok(hitl("inbox", "--session", "leak-2"))
    answer = json.dumps({"rotate": True, "password": NEW})
    result = hitl("resume", "leak-2", f"rotate={answer}", "--reason", f"rotating password {NEW} as agreed", *APP)
    outputs["resume"] = result.output
    for name, argv in COMMANDS.items():
        outputs[name] = ok(hitl(*argv))
    return outputs, hitl, db


@pytest.mark.parametrize("secret", [NEW, S["schema_default"]])
def test_no_output_shows_a_known_secret_in_free_text(rendered: tuple[dict[str, str], Hitl, Path], secret: str) -> None:
    outputs, _, _ = rendered
    leaks = sorted(name for name, text in outputs.items() if secret in text)
    assert not leaks, f"{secret} shown by: {leaks}"


def test_the_reason_is_shown_with_only_the_secret_masked(rendered: tuple[dict[str, str], Hitl, Path]) -> None:
    outputs, hitl, _ = rendered
    assert "rotating password *** as agreed" in outputs["audit json"], outputs["audit json"]
    assert NEW in ok(hitl("--json", "audit", "--session", "leak-2", "--show-secrets"))


def test_known_values_are_masked_in_free_text_without_a_keyword(rendered: tuple[dict[str, str], Hitl, Path]) -> None:
    """The answered secret typed again in a re-drive's reason with no secret word
    beside it (only the known value can tell) is masked in the audit listing too."""
    _, hitl, db = rendered

    async def inv() -> str:
        from engine.store.sqlite import SQLiteStore

        async with SQLiteStore.open(db, read_only=True) as store:
            return (await store.list_invocations("leak-2"))[0].invocation_id

    hitl("redrive", "leak-2", asyncio.run(inv()), "--reason", f"same as {NEW} before", *APP)
    shown = ok(hitl("--json", "audit", "--session", "leak-2")) + ok(hitl("audit", "--session", "leak-2"))
    assert "redrive" in shown and NEW not in shown and "same as *** before" in shown, shown


@pytest.mark.parametrize(
    ("text", "masked"),
    [
        ("rotating password Hunter-22 today", "rotating password *** today"),
        ("the token is abc123", "the token is ***"),
        ("password reset requested", "password reset requested"),
        ("api key rotated: k-99", "api key rotated: k-99"),
    ],
)
def test_a_secret_looking_word_after_a_secret_name_is_masked(text: str, masked: str) -> None:
    from engine.redact import Redactor

    assert Redactor().text(text) == masked


def test_console_node_details_mask_the_error_row(rendered: tuple[dict[str, str], Hitl, Path]) -> None:
    from rich.console import Console

    from console.widgets.details import invocation_details, node_details
    from engine.redact import Redactor
    from engine.resume import load_invocation
    from engine.store.sqlite import SQLiteStore

    _, _, db = rendered

    async def go() -> str:
        async with SQLiteStore.open(db, read_only=True) as store:
            inv = (await store.list_invocations("leak-2"))[0].invocation_id
            proj = await load_invocation(store, "leak-2", inv)
        red = Redactor()
        console = Console(width=300, record=True)
        failed = next(r for r in proj.runs(inv) if r.error_code)
        console.print(node_details(proj, inv, failed.path, {}, red=red))
        console.print(invocation_details(proj, inv, {}, red=red))
        return console.export_text()

    text = asyncio.run(go())
    assert "login refused" in text
    assert NEW not in text and "password=" not in text.replace("password=***", ""), text
