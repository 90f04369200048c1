"""The README's "Coming from ADK" example runs as printed, and its workflow registers as an app."""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import io
import sys
from pathlib import Path

from engine.apps import AppRegistry
from engine.nodes import BaseNode

README = Path(__file__).resolve().parents[2] / "README.md"


def _example() -> str:
    text = README.read_text(encoding="utf-8")
    section = text[text.index("### ADK code as it is: `engine.adk`") :]
    start = section.index("```python\n") + len("```python\n")
    return section[start : section.index("```", start)]


def test_readme_adk_example_runs_and_registers(tmp_path: Path, monkeypatch) -> None:
    code = _example()
    assert "# adk_refund.py" in code
    (tmp_path / "adk_refund.py").write_text(code, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    sys.modules.pop("adk_refund", None)
    module = importlib.import_module("adk_refund")
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        asyncio.run(module.main())
    assert out.getvalue().splitlines() == ["ask True", "pay paid"]

    # `[apps] refunds = "adk_refund:root_agent"` in hitl.toml: the ADK Workflow is the app.
    reg = AppRegistry()
    reg.add_spec("refunds=adk_refund:root_agent", base_dir=str(tmp_path))
    wf = reg.get("refunds")
    assert isinstance(wf, BaseNode) and wf.name == "refund"
    sys.modules.pop("adk_refund", None)
