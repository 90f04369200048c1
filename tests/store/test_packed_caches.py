"""The SQLite store keeps large cached projections (seek checkpoints, invocation
snapshots) deflated and reads every form it ever wrote (engine/store/sql/packing.py)."""

from __future__ import annotations

import asyncio
import sqlite3
import zlib
from pathlib import Path
from typing import Any

from pydantic_core import to_json

from engine.store.sql.packing import PACK_OVER
from engine.store.sqlite import SQLiteStore


def big(n: int = 400) -> dict[str, Any]:
    return {"runs": {f"wf@1/n{i}@1": {"status": "COMPLETED", "output": "x", "after": [f"n{i - 1}"]} for i in range(n)}}


def rows(path: Path, sql: str) -> list[tuple[Any, ...]]:
    conn = sqlite3.connect(path)
    try:
        return conn.execute(sql).fetchall()
    finally:
        conn.close()


async def _store(path: Path) -> SQLiteStore:
    store = await SQLiteStore.open(path, inline=True)
    await store.create_session("a", "u", "s")
    return store


def test_a_large_checkpoint_and_snapshot_are_stored_deflated_and_read_back(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite"
    data = big()
    raw = to_json(data)
    assert len(raw) > PACK_OVER

    async def main() -> tuple[Any, Any]:
        store = await _store(path)
        await store.put_projection_checkpoints("s", [(1000, data)])
        await store.put_snapshot("s", "inv", 7, data)
        got = await store.get_projection_checkpoint("s", 5000), await store.get_snapshot("s", "inv")
        await store.close()
        return got

    checkpoint, snapshot = asyncio.run(main())
    assert checkpoint == (1000, data) and snapshot == (7, data)
    [(stored_cp,)] = rows(path, "SELECT data FROM projection_checkpoints")
    [(stored_snap,)] = rows(path, "SELECT data FROM snapshots")
    for stored in (stored_cp, stored_snap):
        assert isinstance(stored, bytes) and stored[:1] == b"z" and int.from_bytes(stored[1:9], "big") == len(raw)
        assert zlib.decompress(stored[9:]) == raw
        assert len(stored) * 5 < len(raw)


def test_small_caches_stay_plain_json(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite"

    async def main() -> Any:
        store = await _store(path)
        await store.put_snapshot("s", "inv", 3, {"runs": {}})
        got = await store.get_snapshot("s", "inv")
        await store.close()
        return got

    assert asyncio.run(main()) == (3, {"runs": {}})
    [(stored,)] = rows(path, "SELECT data FROM snapshots")
    assert stored in ('{"runs":{}}', b'{"runs":{}}')


def test_rows_written_before_packing_read_alike_and_a_damaged_packed_row_is_no_cache(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite"
    data = big()
    text = to_json(data).decode()

    async def make() -> None:  # the store file with session s
        await (await _store(path)).close()

    asyncio.run(make())
    conn = sqlite3.connect(path)
    conn.execute("INSERT INTO projection_checkpoints (session_id, seq, data) VALUES ('s', 1000, ?)", (text,))
    conn.execute("INSERT INTO projection_checkpoints (session_id, seq, data) VALUES ('s', 2000, ?)", (text.encode(),))
    conn.execute("INSERT INTO projection_checkpoints (session_id, seq, data) VALUES ('s', 3000, ?)", (b"x\x01garbage",))
    conn.execute("INSERT INTO snapshots (session_id, invocation_id, seq, data) VALUES ('s', 'old', 4, ?)", (text,))
    conn.execute("INSERT INTO snapshots (session_id, invocation_id, seq, data) VALUES ('s', 'bad', 5, ?)", (b"x\x9c!!",))
    conn.commit()
    conn.close()

    async def main() -> list[Any]:
        store = await SQLiteStore.open(path, inline=True)
        got = [
            await store.get_projection_checkpoint("s", 1500),
            await store.get_projection_checkpoint("s", 2500),
            await store.get_projection_checkpoint("s", 3500),
            await store.get_snapshot("s", "old"),
            await store.get_snapshot("s", "bad"),
        ]
        await store.close()
        return got

    assert asyncio.run(main()) == [(1000, data), (2000, data), None, (4, data), None]


def test_a_checkpoint_packed_before_its_length_was_kept_reads_alike_and_says_its_json_size(tmp_path: Path) -> None:
    """Rows deflated as a bare zlib stream (before the JSON's length was kept with
    them) are read, and the size the turn end spaces checkpoints by is still that
    of their JSON, not of the deflated bytes."""
    path = tmp_path / "s.sqlite"
    data = big()
    raw = to_json(data)

    async def make() -> None:
        await (await _store(path)).close()

    asyncio.run(make())
    conn = sqlite3.connect(path)
    conn.execute("INSERT INTO projection_checkpoints (session_id, seq, data) VALUES ('s', 1000, ?)", (zlib.compress(raw, 1),))
    conn.commit()
    conn.close()

    async def main() -> Any:
        store = await SQLiteStore.open(path, inline=True)
        got = await store.last_projection_checkpoint("s"), await store.get_projection_checkpoint("s", 1000)
        await store.close()
        return got

    assert asyncio.run(main()) == ((1000, len(raw)), (1000, data))
