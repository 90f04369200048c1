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

from tests.cli.conftest import ok, operator_error

from . import leaky_app
from .conftest import Hitl

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
    outputs["validation error json"] = operator_error(
        hitl("--json", "resume", "leak-1", f"rotate={too_long}", *APP), "rotate"
    )
    wrapped = json.dumps({"result": json.dumps({"rotate": True, "password": S["answer_password"]})})
    outputs["dry run"] = ok(hitl("resume", "leak-1", f"rotate={wrapped}", "--dry-run", *APP))
    outputs["dry run json"] = ok(hitl("--json", "resume", "leak-1", f"rotate={wrapped}", "--dry-run", *APP))
    result = hitl("resume", "leak-1", f"rotate={wrapped}", "--reason", f"password={S['reason']}", *APP)
    outputs["resume"] = result.output  # the node fails: exit 1, its error echoes the answer
    assert result.exit_code == 1 and "login refused" in result.output, result.output
    return "leak-1", outputs


def test_no_output_shows_a_secret(hitl: Hitl, db: Path) -> None:
    session, outputs = seed(hitl, db)
    commands = {
        "show": ["show", session],
        "show json": ["--json", "show", session],
        "show all": ["show", session, "--all-runs"],
        "events": ["events", session],
        "events json": ["--json", "events", session],
        "replay": ["replay", session],
        "replay json": ["--json", "replay", session],
        "replay at": ["replay", session, "--at", "8"],
        "replay at json": ["--json", "replay", session, "--at", "12"],
        "replay diff json": ["--json", "replay", session, "--at", "12", "--diff-from", "2"],
        "replay diff": ["replay", session, "--at", "12", "--diff-from", "2"],
        "inbox json": ["--json", "inbox", "--session", session],
        "audit": ["audit", "--session", session],
        "audit json": ["--json", "audit", "--session", session],
        "sessions json": ["--json", "sessions"],
    }
    for name, argv in commands.items():
        outputs[name] = ok(hitl(*argv))
    leaks = {
        (name, key) for name, text in outputs.items() for key, secret in S.items() if secret in text
    }
    assert not leaks, sorted(leaks)
    tried = len(S)
    assert tried >= 19
    # Only secrets are masked (the rest stays readable), and the data is intact.
    assert "expected string" in outputs["validation error"]
    assert "login refused for svc" in outputs["show"] and "app leaky" in outputs["show"]
    assert '"type": "string"' in outputs["events json"] and "connect with token=" in outputs["show"]
    assert "eu-west-1" in outputs["show json"] and "db.internal" in outputs["events json"]
    shown = ok(hitl("--json", "events", session, "--show-secrets"))
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
