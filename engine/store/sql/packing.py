"""How the stores keep their large caches: seek checkpoints and invocation
snapshots over :data:`PACK_OVER` bytes of JSON are stored deflated (SQLite;
PostgreSQL compresses large values itself, and stores them as text).

Both are projections (every run of an invocation, or of the whole session):
repetitive JSON that zlib at level 1 shrinks 15-20 times in about 4 ms per MB,
and inflates in about 2 ms per MB. Stored as is, the two checkpoints and the
snapshot of a 1,000-node chain took more room than its 2,000 events. Small ones
(most snapshots) stay plain JSON: packing them would cost a turn more than it
saves. Both forms read alike, and rows written before stay readable: a packed
row is a BLOB starting with zlib's header byte ``x`` (0x78), which JSON text
never starts with (an object starts with ``{``)."""

from __future__ import annotations

import json
import zlib
from typing import Any

from pydantic_core import to_json

PACK_OVER = 4096
"""JSON longer than this (bytes) is stored deflated."""


def pack(data: bytes | str) -> bytes | str:
    """What to store for this JSON (UTF-8 bytes or text): deflated when large, else as given."""
    if len(data) <= PACK_OVER:
        return data
    return zlib.compress(data.encode() if isinstance(data, str) else data, 1)


def unpack(data: bytes | str | None) -> dict[str, Any] | None:
    """A stored cache row, parsed; None when unreadable (a cache: as good as none)."""
    if data is None:
        return None
    try:
        if isinstance(data, bytes) and data[:1] == b"x":
            data = zlib.decompress(data)
        value = json.loads(data)
    except (ValueError, TypeError, zlib.error):
        return None
    return value if isinstance(value, dict) else None


def cache_from(seq: int, text: str | bytes) -> tuple[int, dict[str, Any]] | None:
    """A cached projection row, parsed; None when unreadable (a cache: as good as none)."""
    data = unpack(text)
    return None if data is None else (seq, data)


def encoded(data: dict[str, Any] | bytes) -> bytes:
    """A checkpoint's UTF-8 JSON: as given when already encoded (engine.checkpoints.Builder's rows)."""
    return data if isinstance(data, bytes) else to_json(data)
