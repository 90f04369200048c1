"""Page cursors: the sort key of a page's last row, as an opaque string a caller
passes back for the next page (plain :mod:`json`: the fast paths use them)."""

from __future__ import annotations

import json
from typing import Any


def encode_cursor(*key: Any) -> str:
    return json.dumps(list(key), separators=(",", ":"))


def decode_cursor(cursor: str, types: tuple[type, ...]) -> list[Any]:
    try:
        key = json.loads(cursor)
        if isinstance(key, list) and len(key) == len(types):
            return [float(v) if t is float else t(v) for v, t in zip(key, types, strict=True)]
    except (ValueError, TypeError):
        pass
    raise ValueError(f"invalid page cursor {cursor!r}; pass back a next_cursor this store returned")
