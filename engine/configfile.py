"""``hitl.toml``, read once per process.

The operator (``[console]``), the apps (``[apps]``), the secret patterns
(``[secrets]``) and the store (``[store]``) are each read by their own module,
but from one parse of the file: every surface of a process (the CLI, the
console, the server) gets the same configuration from one read. (The parse is
keyed by the file's modification time and size, so a file edited in place is
read again rather than served stale.) Each reader keeps its own error for a
missing or malformed file.

Where the file is looked for when none is named (``--config FILE``): the
current directory first, then the user's config directory --
:func:`find_config`, in the order :func:`config_candidates` lists.
"""

from __future__ import annotations

import os
import tomllib
from functools import lru_cache
from pathlib import Path
from typing import Any

CONFIG_NAME = "hitl.toml"


def user_config_path(env: dict[str, str] | None = None) -> Path:
    """``$XDG_CONFIG_HOME/hitl/hitl.toml``, else ``~/.config/hitl/hitl.toml`` (an
    empty or relative ``$XDG_CONFIG_HOME`` is ignored, as the XDG spec says)."""
    env = os.environ if env is None else env
    base = env.get("XDG_CONFIG_HOME", "")
    root = Path(base) if base and Path(base).is_absolute() else Path(env.get("HOME") or Path.home()) / ".config"
    return root / "hitl" / CONFIG_NAME


def config_candidates(env: dict[str, str] | None = None) -> list[Path]:
    """Where ``hitl.toml`` is looked for, in order: ``./hitl.toml``, then
    :func:`user_config_path`."""
    return [Path(CONFIG_NAME), user_config_path(env)]


def find_config(env: dict[str, str] | None = None) -> Path | None:
    """The first of :func:`config_candidates` that is a file (None: there is none)."""
    return next((p for p in config_candidates(env) if p.is_file()), None)


def read_toml(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The parsed file (the same object on every call for the same file; do not
    mutate it). Raises FileNotFoundError, OSError, UnicodeDecodeError or
    tomllib.TOMLDecodeError, which the caller turns into its own message; a
    failed read is not cached."""
    p = Path(path).resolve()
    st = p.stat()
    return _parse(str(p), st.st_mtime_ns, st.st_size)


@lru_cache(maxsize=8)
def _parse(resolved: str, mtime_ns: int, size: int) -> dict[str, Any]:
    return tomllib.loads(Path(resolved).read_text(encoding="utf-8"))
