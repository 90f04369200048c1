"""Every output of a session seeded with secrets in every shape: none shows one.

The session (tests/reliability/leaky_app.py) carries secrets under every key
name the redactor knows, in DSNs and bearer headers inside strings, in
``["password", value]`` pairs, a schema default, an interrupt message, an
exception message that echoes an answer, a wrapped answer
(``{"result": "<JSON>"}``), the start message and an operator's reason; a
refused answer's validation error echoes one too. ``--show-secrets`` still
shows them (the data is intact).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli.conftest import ok, operator_error
from tests.cli_runner import copy_of, hitl_on

from . import leaky_app
from .conftest import Hitl, read_commands

APP = ["--app", "leaky=tests.reliability.leaky_app:workflow"]
S = leaky_app.SECRETS


def seed(hitl: Hitl, db: Path) -> tuple[str, dict[str, str]]:
    """Run the app to its failure; return the session id and outputs of the writes."""
    import asyncio

    from engine import Content, Runner
    from engine.store.sqlite import SQLiteStore

    async def go() -> None:
        async with SQLiteStore.open(db) as store:
            runner = Runner("leaky", leaky_app.workflow, store)
            async for _ in runner.run("u", "leak-1", Content.from_text(f"connect with token={S['start_message']}")):
                pass

    asyncio.run(go())
    outputs: dict[str, str] = {}
    too_long = json.dumps({"rotate": True, "password": [S["echoed"]]})
    outputs["validation error"] = operator_error(hitl("resume", "leak-1", f"rotate={too_long}", *APP), "rotate")
    refused = hitl("--json", "resume", "leak-1", f"rotate={too_long}", *APP)  # --json: the error is JSON on stdout
    assert refused.exit_code == 1 and "rotate" in json.loads(refused.stdout.strip())["error"], refused.output
    outputs["validation error json"] = refused.output
    wrapped = json.dumps({"result": json.dumps({"rotate": True, "password": S["answer_password"]})})
    outputs["dry run"] = ok(hitl("resume", "leak-1", f"rotate={wrapped}", "--dry-run", *APP))
    outputs["dry run json"] = ok(hitl("--json", "resume", "leak-1", f"rotate={wrapped}", "--dry-run", *APP))
    result = hitl("resume", "leak-1", f"rotate={wrapped}", "--reason", f"password={S['reason']}", *APP)
    outputs["resume"] = result.output  # the node fails: exit 1, its error echoes the answer
    assert result.exit_code == 1 and "login refused" in result.output, result.output
    return "leak-1", outputs


COMMANDS = {
    **read_commands("leak-1"),
    "replay json": ["--json", "replay", "leak-1"],
    "replay diff": ["replay", "leak-1", "--at", "12", "--diff-from", "2"],
    "audit": ["audit", "--session", "leak-1"],
    "replay at": ["replay", "leak-1", "--at", "8"],
    "replay at json": ["--json", "replay", "leak-1", "--at", "12"],
    "replay diff json": ["--json", "replay", "leak-1", "--at", "12", "--diff-from", "2"],
}
"""Every read output of the seeded session (the writes' outputs are added by ``seed``)."""


@pytest.fixture(scope="module")
def rendered(demo_template: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, str], Hitl]:
    """The seeded session's every output, once for the module's cases."""
    db = copy_of(demo_template, tmp_path_factory.mktemp("secrets") / "demo.sqlite")
    hitl = hitl_on(db)
    session, outputs = seed(hitl, db)
    assert session == "leak-1"
    for name, argv in COMMANDS.items():
        outputs[name] = ok(hitl(*argv))
    return outputs, hitl


def test_enough_secret_shapes_are_tried() -> None:
    assert len(S) >= 19  # the figure in the report: one case of the test below per shape


@pytest.mark.parametrize("shape", sorted(S))
def test_no_output_shows_this_secret(rendered: tuple[dict[str, str], Hitl], shape: str) -> None:
    outputs, _ = rendered
    leaks = sorted(name for name, text in outputs.items() if S[shape] in text)
    assert not leaks, f"{shape} shown by: {leaks}"


def test_only_secrets_are_masked_and_the_data_is_intact(rendered: tuple[dict[str, str], Hitl]) -> None:
    outputs, hitl = rendered
    assert "expected string" in outputs["validation error"]
    assert "login refused for svc" in outputs["show"] and "app leaky" in outputs["show"]
    assert '"type": "string"' in outputs["events json"] and "connect with token=" in outputs["show"]
    assert "eu-west-1" in outputs["show json"] and "db.internal" in outputs["events json"]
    shown = ok(hitl("--json", "events", "leak-1", "--show-secrets"))
    assert S["cookie"] in shown and S["answer_password"] in shown


def test_console_renderers_use_the_one_redactor() -> None:
    """The console's state panel masks top-level secret keys, and its answer
    views honour --show-secrets (they used to mask regardless)."""
    from rich.console import Console

    from console.widgets import format as fmt
    from console.widgets.replay_panels import state_table
    from engine.redact import Redactor

    def render(renderable: object) -> str:
        console = Console(width=200, record=True)
        console.print(renderable)
        return console.export_text()

    state = {"api_key": S["state_api_key"], "Authorization": S["state_authorization"], "region": "eu-west-1"}
    hiding, showing = Redactor(), Redactor(show=True)  # the app's one Redactor, passed to each renderer
    text = render(state_table(state, set(), {}, red=hiding))
    assert S["state_api_key"] not in text and S["state_authorization"] not in text and "eu-west-1" in text
    assert fmt.shown({"url": f"postgresql://u:{S['dsn']}@h"}, hiding) == {"url": "postgresql://u:***@h"}
    assert S["state_api_key"] in render(state_table(state, set(), {}, red=showing))
    assert fmt.shown({"password": "x"}, showing) == {"password": "x"}
