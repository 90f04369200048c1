"""Where ``hitl.toml`` is looked for without ``--config``: ``./hitl.toml`` first,
then ``$XDG_CONFIG_HOME/hitl/hitl.toml`` (``~/.config/hitl/hitl.toml`` when
unset) -- engine.configfile.find_config, used by the CLI and the console."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from console.cli import Options, cli
from console.config import ConsoleConfig
from engine.apps import default_operator
from engine.configfile import config_candidates, find_config, user_config_path


@pytest.fixture
def places(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    """An empty working directory and an empty home; XDG_CONFIG_HOME unset."""
    work, home = tmp_path / "work", tmp_path / "home"
    work.mkdir()
    home.mkdir()
    monkeypatch.chdir(work)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    return work, home


def write(path: Path, operator: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f'[console]\noperator = "{operator}"\n')
    return path


def test_the_user_config_directory_follows_xdg(places, monkeypatch) -> None:
    _, home = places
    assert user_config_path() == home / ".config" / "hitl" / "hitl.toml"
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / "xdg"))
    assert user_config_path() == home / "xdg" / "hitl" / "hitl.toml"
    monkeypatch.setenv("XDG_CONFIG_HOME", "relative/dir")  # not absolute: ignored, as the spec says
    assert user_config_path() == home / ".config" / "hitl" / "hitl.toml"
    assert config_candidates()[0] == Path("hitl.toml")


def test_no_file_anywhere(places) -> None:
    assert find_config() is None
    assert Options().config_path() is None


def test_the_user_config_is_read_when_the_directory_has_none(places, monkeypatch) -> None:
    _, home = places
    user = write(home / ".config" / "hitl" / "hitl.toml", "from-home")
    assert find_config() == user
    assert Options().config_path() == str(user)
    assert default_operator() == "from-home"
    assert ConsoleConfig.load().operator == "from-home"
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / "xdg"))
    xdg = write(home / "xdg" / "hitl" / "hitl.toml", "from-xdg")
    assert find_config() == xdg and default_operator() == "from-xdg"


def test_the_current_directory_comes_first(places) -> None:
    work, home = places
    write(home / ".config" / "hitl" / "hitl.toml", "from-home")
    write(work / "hitl.toml", "from-here")
    assert find_config() == Path("hitl.toml")
    assert default_operator() == "from-here" and ConsoleConfig.load().operator == "from-here"


def test_config_names_the_file_and_wins(places, tmp_path) -> None:
    work, home = places
    write(work / "hitl.toml", "from-here")
    other = write(tmp_path / "team.toml", "team")
    assert Options(config=str(other)).config_path() == str(other)
    assert ConsoleConfig.load(other).operator == "team"


def test_apps_of_the_user_config_are_registered(places, tmp_path) -> None:
    """An [apps] module beside the user's config file imports (its directory is searched)."""
    _, home = places
    cfg = home / ".config" / "hitl"
    cfg.mkdir(parents=True)
    (cfg / "homeflows.py").write_text("from tests.graphs import NESTED as flow\n")
    (cfg / "hitl.toml").write_text('[apps]\nhomeapp = "homeflows:flow"\n')
    db = tmp_path / "s.sqlite"
    result = CliRunner().invoke(cli, ["--db", str(db), "start", "homeapp", "--session", "h1", "hi"])
    assert result.exit_code == 0, result.output
    assert "session h1  app homeapp" in result.stdout


def test_the_help_says_where_it_looks() -> None:
    text = CliRunner().invoke(cli, ["--help"]).stdout
    assert "./hitl.toml" in text and "$XDG_CONFIG_HOME/hitl/hitl.toml" in text and "~/.config/hitl/hitl.toml" in text
