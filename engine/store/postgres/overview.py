"""The home summary's aggregate reads on PostgreSQL (:meth:`SessionStore.overview`):
the statements both dialects share (:mod:`engine.store.sql.overview`) and the
SQLite store's others (:mod:`engine.store.sqlite.overview`) in PostgreSQL's
dialect, in one read-only transaction."""

from __future__ import annotations

import asyncpg

from ..base import StoreOverview
from ..metric_rows import OPEN_BY_NODE_SQL, QUEUED_BY_APP_SQL, StoreMetrics, store_metrics
from ..sql.overview import OLDEST_SQL, OPEN_BY_APP_SQL, OPEN_BY_OWNER_SQL, STATUS_SQL
from .core import _Core

_RUNNING_SQL = (
    "SELECT i.session_id, i.invocation_id, l.owner, l.expires_at FROM sessions AS s"
    " JOIN invocations AS i ON i.session_id = s.id AND i.status = 'running'"
    " LEFT JOIN leases AS l ON l.session_id = i.session_id AND l.invocation_id = i.invocation_id"
    " WHERE s.status = 'running' ORDER BY i.session_id, i.started_seq LIMIT $1"
)
_RAISED_SQL = (
    "SELECT floor((raised_at - $1) / $2)::int AS b, count(*) FROM interrupts"
    " WHERE raised_at >= $1 AND raised_at < $3 GROUP BY b"
)


class _Overview(_Core):
    async def overview(
        self, *, since: float, bucket: float = 3600.0, buckets: int = 24, running_limit: int = 500
    ) -> StoreOverview:
        async def fn(conn: asyncpg.Connection) -> StoreOverview:
            async with conn.transaction(readonly=True):
                status = {r[0]: int(r[1]) for r in await conn.fetch(STATUS_SQL)}
                by_app = {r[0]: int(r[1]) for r in await conn.fetch(OPEN_BY_APP_SQL)}
                oldest = await conn.fetchval(OLDEST_SQL)
                by_owner = {r[0]: int(r[1]) for r in await conn.fetch(OPEN_BY_OWNER_SQL)}
                running = [
                    (r[0], r[1], r[2], r[3]) for r in await conn.fetch(_RUNNING_SQL, running_limit)
                ]
                raised = [0] * buckets
                end = float(since) + float(bucket) * buckets
                for r in await conn.fetch(_RAISED_SQL, float(since), float(bucket), end):
                    if 0 <= r[0] < buckets:
                        raised[r[0]] = int(r[1])
            return StoreOverview(
                status_counts=status, open_by_app=by_app, oldest_open_at=oldest, raised=raised, running=running,
                open_by_owner=by_owner,
            )

        return await self._run(fn)

    async def metric_reads(self) -> StoreMetrics:
        """Open interrupts per app and node, queued turns per app (``/metrics``)."""

        async def fn(conn: asyncpg.Connection) -> StoreMetrics:
            async with conn.transaction(readonly=True):
                return store_metrics(await conn.fetch(OPEN_BY_NODE_SQL), await conn.fetch(QUEUED_BY_APP_SQL))

        return await self._run(fn)
