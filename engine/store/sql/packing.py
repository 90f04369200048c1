"""How the stores keep their large caches: seek checkpoints and invocation
snapshots over :data:`PACK_OVER` bytes of JSON are stored deflated (SQLite;
PostgreSQL compresses large values itself, and stores them as text).

Both are projections (every run of an invocation, or of the whole session):
repetitive JSON that zlib at level 1 shrinks 15-20 times in about 4 ms per MB,
and inflates in about 2 ms per MB. Stored as is, the two checkpoints and the
snapshot of a 1,000-node chain took more room than its 2,000 events. Small ones
(most snapshots) stay plain JSON: packing them would cost a turn more than it
saves. Every form reads alike, and rows written before stay readable: a packed
row is a BLOB starting with ``z``, then the JSON's length in 8 bytes (big-endian),
then the zlib stream -- earlier packed rows are the bare stream, starting with
zlib's header byte ``x`` (0x78); JSON text starts with neither (an object starts
with ``{``). The length is what :func:`json_size` reads: a seek checkpoint's
spacing is decided from the size of its JSON (engine/checkpoints.py), not from
the deflated bytes, which would make a long session's turn ends write one 15-20
times as often -- each a fold and a compaction of every invocation."""

from __future__ import annotations

import json
import zlib
from collections.abc import Callable
from typing import Any

from pydantic_core import to_json

PACK_OVER = 4096
"""JSON longer than this (bytes) is stored deflated."""


PACKED = b"z"
"""The first byte of a packed row (followed by the JSON's length, then the zlib stream)."""

HEAD = 9
"""Bytes before a packed row's zlib stream: :data:`PACKED` and the length."""


def pack(data: bytes | str) -> bytes | str:
    """What to store for this JSON (UTF-8 bytes or text): deflated when large, else as given."""
    if len(data) <= PACK_OVER:
        return data
    raw = data.encode() if isinstance(data, str) else data
    return PACKED + len(raw).to_bytes(HEAD - 1, "big") + zlib.compress(raw, 1)


def json_size(stored_length: int, head: bytes | str | None, read: Callable[[], bytes | str | None]) -> int:
    """The length of a stored row's JSON, from its stored length and first bytes
    (``head``; None or text: the row is not packed); ``read`` gives the whole row,
    needed only for a row packed before the length was kept."""
    if isinstance(head, bytes) and head[:1] == PACKED and len(head) >= HEAD:
        return int.from_bytes(head[1:HEAD], "big")
    if isinstance(head, bytes) and head[:1] == b"x":
        try:
            whole = read()
            return len(zlib.decompress(whole)) if isinstance(whole, bytes) else stored_length
        except zlib.error:
            return stored_length
    return stored_length


def unpack(data: bytes | str | None) -> dict[str, Any] | None:
    """A stored cache row, parsed; None when unreadable (a cache: as good as none)."""
    if data is None:
        return None
    try:
        if isinstance(data, bytes) and data[:1] == PACKED:
            data = zlib.decompress(data[HEAD:])
        elif isinstance(data, bytes) and data[:1] == b"x":  # packed before the length was kept
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
