"""Seek checkpoints (``projection_checkpoints``, engine/checkpoints.py) on
PostgreSQL. A database older than the table (not migrated: opened read-only)
has none: reads then find nothing."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import asyncpg

from ...errors import SessionNotFoundError
from ..sql.packing import cache_from, encoded
from .core import _Core


class _Checkpoints(_Core):
    async def last_projection_checkpoint(self, session_id: str) -> tuple[int, int]:
        async def fn(conn: asyncpg.Connection) -> tuple[int, int]:
            try:  # octet_length of a TOASTed value reads its header, not the value
                row = await conn.fetchrow(
                    "SELECT seq, octet_length(data) FROM projection_checkpoints WHERE session_id = $1"
                    " ORDER BY seq DESC LIMIT 1",
                    session_id,
                )
            except asyncpg.UndefinedTableError:
                return 0, 0
            return (0, 0) if row is None else (int(row[0]), int(row[1] or 0))

        return await self._run(fn)

    async def get_projection_checkpoint(self, session_id: str, at_most: int) -> tuple[int, dict[str, Any]] | None:
        async def fn(conn: asyncpg.Connection) -> tuple[int, str] | None:
            try:
                row = await conn.fetchrow(
                    "SELECT seq, data FROM projection_checkpoints WHERE session_id = $1 AND seq <= $2"
                    " ORDER BY seq DESC LIMIT 1",
                    session_id,
                    at_most,
                )
            except asyncpg.UndefinedTableError:
                return None
            return None if row is None else (int(row[0]), row[1])

        found = await self._run(fn)
        return None if found is None else cache_from(*found)

    async def put_projection_checkpoints(self, session_id: str, rows: Sequence[tuple[int, dict[str, Any] | bytes]]) -> None:
        self._check_writable()
        records = [(session_id, seq, encoded(data).decode()) for seq, data in rows]

        async def fn(conn: asyncpg.Connection) -> None:
            try:
                await conn.executemany(
                    "INSERT INTO projection_checkpoints (session_id, seq, data) VALUES ($1, $2, $3)"
                    " ON CONFLICT (session_id, seq) DO UPDATE SET data = excluded.data",
                    records,
                )
            except asyncpg.ForeignKeyViolationError:
                raise SessionNotFoundError(session_id) from None

        await self._run(fn)
