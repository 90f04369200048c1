"""The CLI's Redactor is explicit (issue 12): each command builds one from the
config (Options.redactor) and hands it to what prints and renders; nothing in
console/cli looks it up through click's context, so a renderer called with a
Redactor masks with that one and no other."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from console.cli.output import out, out_json
from console.cli.render import render_plan
from engine.redact import Redactor

CLI = Path(__file__).resolve().parents[2] / "console" / "cli"


def test_no_module_level_redactor_lookup_in_the_cli() -> None:
    for path in sorted(CLI.glob("*.py")):
        tree = ast.parse(path.read_text())
        names = {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
        assert not names & {"safe", "safe_event", "_redactor"}, path.name
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef) and node.name in ("out", "out_json"):
                assert node.args.args[0].arg == "red", path.name
            if isinstance(node, ast.FunctionDef) and node.name != "json_requested":  # (output's: the --json flag)
                for call in ast.walk(node):
                    if isinstance(call, ast.Call) and "get_current_context" in ast.unparse(call.func):
                        assert path.name == "options.py", f"{path.name}: {ast.unparse(call)}"  # never a renderer


def test_out_masks_with_the_redactor_it_is_given(capsys: pytest.CaptureFixture[str]) -> None:
    masked, shown = Redactor(), Redactor(show=True)
    for red in (masked, shown):
        red.learn_from({"password": "hunter2-very-secret"})
        out(red, "the pager said hunter2-very-secret")
        out_json(red, {"note": "hunter2-very-secret"})
    lines = capsys.readouterr().out.splitlines()
    assert "hunter2-very-secret" not in lines[0] + lines[1]
    assert "hunter2-very-secret" in lines[2] and "hunter2-very-secret" in lines[3]


def test_the_dry_run_renderer_masks_with_its_redactor() -> None:
    from engine.models import NodeStatus
    from engine.resume_plan import NodeChange, ResumePlan

    change = NodeChange("app@1/ask@1", NodeStatus.WAITING, NodeStatus.COMPLETED, "auto-complete",
                        output={"api_key": "sk-live-123456"})
    plan = ResumePlan("inv-1", resolves=["ask-1"], changes=[change], still_open=[], runs_anything=True)
    text = "\n".join(render_plan(Redactor(), plan, "s1"))
    assert "sk-live-123456" not in text and "***" in text
    assert "sk-live-123456" in "\n".join(render_plan(Redactor(show=True), plan, "s1"))
