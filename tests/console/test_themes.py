"""Issue 16: a theme chosen in the console persists in hitl.toml, and every status
colour stays readable in light themes (RUNNING was blue on blue in ansi-light)."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from console.config import ConsoleConfig
from console.themes import MIN_CONTRAST, STATUS_BASE, _rgb, contrast
from engine.configfile import set_value

from .conftest import make_app, settle
from .scenarios import build_store


async def test_a_chosen_theme_is_saved_and_used_next_time(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    config = tmp_path / "hitl.toml"
    config.write_text('# team config\n[console]\noperator = "ann"  # who signs\n\n[secrets]\npatterns = ["pin"]\n')
    store = await build_store()
    app = make_app(store, config=ConsoleConfig.load(config))
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        app.theme = "textual-light"  # what the palette's theme picker does
        await settle(pilot)
        assert any(f"Theme textual-light saved to {config}" in n.message for n in app._notifications)
    data = tomllib.loads(config.read_text())
    assert data["console"] == {"operator": "ann", "theme": "textual-light"}
    assert data["secrets"] == {"patterns": ["pin"]}
    assert config.read_text().startswith("# team config\n[console]\ntheme = \"textual-light\"\noperator = \"ann\"  # who signs")
    again = make_app(store, config=ConsoleConfig.load(config))
    assert again.theme == "textual-light"


async def test_a_config_built_in_code_is_not_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.chdir(tmp_path)
    app = make_app(await build_store())
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        app.theme = "textual-light"
        await settle(pilot)
    assert not (tmp_path / "hitl.toml").exists()


def test_set_value_adds_a_table_and_refuses_a_malformed_file(tmp_path: Path):
    f = tmp_path / "hitl.toml"
    set_value(f, "console", "theme", "nord")
    assert tomllib.loads(f.read_text()) == {"console": {"theme": "nord"}}
    f.write_text('[apps]\nrefunds = "pkg.mod:wf"\n')
    set_value(f, "console", "theme", 'a "quoted" theme')
    assert tomllib.loads(f.read_text()) == {"apps": {"refunds": "pkg.mod:wf"}, "console": {"theme": 'a "quoted" theme'}}
    f.write_text("[console\n")
    with pytest.raises(ValueError):
        set_value(f, "console", "theme", "nord")
    assert f.read_text() == "[console\n"  # untouched


async def test_status_colours_are_readable_in_every_light_theme():
    app = make_app(await build_store())
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        light = [name for name, theme in app.available_themes.items() if not theme.dark]
        assert "ansi-light" in light and "textual-light" in light
        for name in light:
            app.theme = name
            await pilot.pause()
            v = app.get_css_variables()
            bg = [c for c in (_rgb(v["background"]), _rgb(v["surface"])) if c is not None]
            for status in STATUS_BASE:
                colour = _rgb(v[status])
                if colour is not None and bg:
                    assert all(contrast(colour, b) >= MIN_CONTRAST for b in bg), (name, status, v[status])
            if name == "ansi-light":
                assert v["status-running"] not in (v["block-cursor-background"], v["primary"]), v["status-running"]
