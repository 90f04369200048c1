"""``hitl.toml``, read once per process.

The operator (``[console]``), the apps (``[apps]``), the secret patterns
(``[secrets]``) and the store (``[store]``) are each read by their own module,
but from one parse of the file: every surface of a process (the CLI, the
console, the server) gets the same configuration from one read. (The parse is
keyed by the file's modification time and size, so a file edited in place is
read again rather than served stale.) Each reader keeps its own error for a
missing or malformed file.
"""

from __future__ import annotations

import os
import tomllib
from functools import lru_cache
from pathlib import Path
from typing import Any


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
