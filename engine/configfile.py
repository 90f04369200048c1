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
from collections.abc import Mapping
from functools import lru_cache
from pathlib import Path
from typing import Any

CONFIG_NAME = "hitl.toml"


def user_config_path(env: Mapping[str, str] | None = None) -> Path:
    """``$XDG_CONFIG_HOME/hitl/hitl.toml``, else ``~/.config/hitl/hitl.toml`` (an
    empty or relative ``$XDG_CONFIG_HOME`` is ignored, as the XDG spec says)."""
    environ = os.environ if env is None else env
    base = environ.get("XDG_CONFIG_HOME", "")
    root = Path(base) if base and Path(base).is_absolute() else Path(environ.get("HOME") or Path.home()) / ".config"
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
    tomllib.TOMLDecodeError (a ValueError: callers catch ValueError, so that
    they need not import tomllib), which the caller turns into its own message; a
    failed read is not cached."""
    p = Path(path).resolve()
    st = p.stat()
    return _parse(str(p), st.st_mtime_ns, st.st_size)


@lru_cache(maxsize=8)
def _parse(resolved: str, mtime_ns: int, size: int) -> dict[str, Any]:
    import tomllib  # here: most commands find no hitl.toml, and its parser is a dozen modules

    return tomllib.loads(Path(resolved).read_text(encoding="utf-8"))


def set_value(path: str | os.PathLike[str], table: str, key: str, value: str) -> None:
    """Set ``[table] key = "value"`` in the TOML file at ``path`` (created if missing),
    changing only that line: comments, order and the other tables stay as written.
    The result is parsed before it replaces the file (atomically); ValueError when
    the file is not valid TOML, OSError when it cannot be written."""
    import json
    import re
    import tomllib

    p = Path(path)
    text = p.read_text(encoding="utf-8") if p.exists() else ""
    tomllib.loads(text)  # a malformed file is not touched (TOMLDecodeError is a ValueError)
    line = f"{key} = {json.dumps(value)}"  # a JSON string is a TOML basic string
    lines = text.splitlines()
    header = re.compile(rf"^\s*\[\s*{re.escape(table)}\s*\]\s*(#.*)?$")
    start = next((i for i, ln in enumerate(lines) if header.match(ln)), None)
    if start is None:
        lines += ([""] if lines and lines[-1].strip() else []) + [f"[{table}]", line]
    else:
        end = next((i for i in range(start + 1, len(lines)) if re.match(r"^\s*\[", lines[i])), len(lines))
        mine = re.compile(rf"^\s*{re.escape(key)}\s*=")
        at = next((i for i in range(start + 1, end) if mine.match(lines[i])), None)
        if at is None:
            lines.insert(start + 1, line)
        else:
            lines[at] = line
    new = "\n".join(lines) + "\n"
    if tomllib.loads(new).get(table, {}).get(key) != value:
        raise ValueError(f"cannot set [{table}] {key} in {p}: the file's layout is not one this edit understands")
    tmp = p.with_name(f".{p.name}.tmp")
    tmp.write_text(new, encoding="utf-8")
    os.replace(tmp, p)
