"""The console's configuration: ``hitl.toml`` (or ``hitl --config FILE``) read
once, by the CLI, and handed to the app whole.

Before this, each surface found the file on its own: the CLI read ``--config``,
but the console's confirmation called ``default_operator()`` with no argument,
so ``hitl --config team.toml`` audited console writes under ``./hitl.toml``'s
operator (or ``$USER``). Now :class:`ConsoleConfig` carries every field a
surface needs -- the operator, the app registry, the secret patterns, the
``[store]`` table, the time zone choice -- and :class:`~console.app.HitlApp`
takes it in its constructor. How values are masked (the Redactor,
``--show-secrets``) is built from these fields elsewhere.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from engine.apps import AppRegistry, default_operator
from engine.configfile import find_config
from engine.redact import DEFAULT_SECRET_PATTERNS, secret_patterns

CONFIG_NAME = "hitl.toml"
"""The config file looked for in the working directory when none is named."""


@dataclass(frozen=True)
class ConsoleConfig:
    """What ``hitl.toml`` says, plus the command line's additions to it."""

    path: Path | None = None
    """The file read (None: there was none)."""
    operator: str = ""
    """Who console writes are recorded under unless changed in the confirmation:
    ``[console] operator``, else ``$USER``; ``""`` when none is known."""
    secret_patterns: tuple[str, ...] = DEFAULT_SECRET_PATTERNS
    """Keys whose values are masked: defaults + ``[secrets] patterns`` + ``--secret-pattern``."""
    store: dict[str, Any] = field(default_factory=dict)
    """The ``[store]`` table (``url``, ``password``)."""
    registry: AppRegistry | None = None
    """The workflow code: the sample apps, ``[apps]``, then ``--app`` specs."""
    utc: bool = False
    """``--utc``: times in UTC instead of the local zone."""
    theme: str | None = None
    """``[console] theme``: the theme the console starts with (None: Textual's default)."""
    save_path: Path | None = None
    """Where a theme chosen in the console is written (the file read, else
    ``./hitl.toml``); None: not persisted (a config built in code, as tests do)."""

    @classmethod
    def load(
        cls,
        path: str | os.PathLike[str] | None = None,
        *,
        apps: list[str] | tuple[str, ...] = (),
        extra_patterns: list[str] | tuple[str, ...] = (),
        utc: bool = False,
    ) -> ConsoleConfig:
        """Read ``path`` (None: ``./hitl.toml``, else ``$XDG_CONFIG_HOME/hitl/hitl.toml``,
        when present: :func:`engine.configfile.find_config`). A malformed file
        raises HitlError, for the CLI to report in one line."""
        from engine.store.factory import store_config

        if path is None:
            path = find_config()  # ./hitl.toml, else the user's config directory
        p = Path(path) if path is not None else None
        return cls(
            path=p,
            operator=default_operator(p) if p is not None else _login(),
            secret_patterns=secret_patterns(p, extra_patterns),
            store=store_config(p),
            registry=AppRegistry.from_options(list(apps), p),
            utc=utc,
            theme=_theme(p),
            save_path=p if p is not None else Path(CONFIG_NAME),
        )


def _login() -> str:
    """No config file: ``$USER`` (the rule of :func:`engine.apps.default_operator`)."""
    return default_operator(os.devnull)


def _theme(path: Path | None) -> str | None:
    """``[console] theme`` of the file (None: none, or not a string)."""
    if path is None:
        return None
    from engine.configfile import read_toml

    try:
        theme = read_toml(path).get("console", {}).get("theme")
    except (OSError, ValueError, AttributeError):
        return None  # a bad file is reported by the readers of its other tables
    return theme if isinstance(theme, str) and theme.strip() else None
