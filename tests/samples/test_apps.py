"""engine.apps.AppRegistry: specs, lazy imports, config files, clear errors."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from engine.apps import SAMPLE_APPS, AppRegistry, AppSpecError, AppUnavailableError, parse_spec
from engine.errors import HitlError
from sample_sessions import APPS


def test_samples_are_registered_and_load() -> None:
    reg = AppRegistry()
    assert set(reg.names()) == set(SAMPLE_APPS) == set(APPS)
    for name, module in APPS.items():
        assert reg.get(name) is module.workflow


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("pkg.mod:wf", ("mod", "pkg.mod:wf")),
        ("mine=pkg.mod:obj.wf", ("mine", "pkg.mod:obj.wf")),
        (" a = b:c ", ("a", "b:c")),
    ],
)
def test_parse_spec(text: str, expected: tuple[str, str]) -> None:
    assert parse_spec(text) == expected


@pytest.mark.parametrize("text", ["pkg.mod", "a=:wf", "a=pkg.mod:", "pkg-x.mod:wf", "a=pkg:1wf"])
def test_bad_specs(text: str) -> None:
    with pytest.raises(AppSpecError, match="module"):
        parse_spec(text)


def test_specs_are_imported_lazily_and_errors_say_why() -> None:
    reg = AppRegistry(samples=False)
    reg.add_spec("ghost=tests.cli.ghost_app_lazy:workflow")
    assert "tests.cli.ghost_app_lazy" not in sys.modules  # registering imports nothing
    with pytest.raises(AppUnavailableError, match="ModuleNotFoundError") as info:
        reg.get("ghost")
    assert isinstance(info.value, HitlError) and "can be read but not resumed" in str(info.value)
    with pytest.raises(AppUnavailableError, match="not registered"):
        reg.get("nobody")
    assert reg.unavailable_reason("nobody") is not None
    reg.add_spec("ghost=tests.cli.ghost_app:workflow")
    assert reg.get("ghost").name == "ghost" and reg.unavailable_reason("ghost") is None
    reg.add_spec("bad=tests.cli.ghost_app:not_a_node")
    with pytest.raises(AppUnavailableError, match="not a workflow node"):
        reg.get("bad")
    reg.add_spec("bad2=tests.cli.ghost_app:missing")
    with pytest.raises(AppUnavailableError, match="has no attribute 'missing'"):
        reg.get("bad2")


def test_config_file(tmp_path: Path) -> None:
    (tmp_path / "my_flows.py").write_text(
        "from engine import START, Workflow, node\n\n@node\nasync def a(x):\n    return x\n\nwf = Workflow('mine', [(START, a)])\n"
    )
    config = tmp_path / "hitl.toml"
    config.write_text('[apps]\nmine = "my_flows:wf"\nrefund_approval = "tests.cli.ghost_app:workflow"\n')
    reg = AppRegistry.from_options(["extra=tests.cli.ghost_app:workflow"], config)
    assert reg.get("mine").name == "mine"  # imported from the config's directory
    assert reg.get("refund_approval").name == "ghost"  # config replaces a sample
    assert "extra" in reg
    for text, match in [("[apps]\nx = 3\n", "must be"), ("apps = 1\n", "table"), ("[apps\n", "cannot be read")]:
        config.write_text(text)
        with pytest.raises(AppSpecError, match=match):
            AppRegistry().load_config(config)
    with pytest.raises(AppSpecError, match="does not exist"):
        AppRegistry().load_config(tmp_path / "nope.toml")
