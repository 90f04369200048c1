"""The home summary's aggregate reads on SQLite (:meth:`SessionStore.overview`).

Five statements in one read transaction, each answered by an index or a
bounded scan: sessions by status (``sessions_by_status``), open interrupts by app
(the partial ``interrupts_inbox_by_app``), the oldest open interrupt
(``sessions_by_oldest_open``), the running invocations of running sessions with
their lease rows (``sessions_by_status`` then ``invocations_by_status``), and the
interrupts raised per hour since ``since`` (a scan of the interrupt index rows,
which are a few per session).
"""

from __future__ import annotations

import sqlite3

from ..base import StoreOverview
from ..metric_rows import OPEN_BY_NODE_SQL, QUEUED_BY_APP_SQL, StoreMetrics, store_metrics
from ..sql.overview import OLDEST_SQL, OPEN_BY_APP_SQL, OPEN_BY_OWNER_SQL, STATUS_SQL

RUNNING_SQL = (
    "SELECT i.session_id, i.invocation_id, l.owner, l.expires_at FROM sessions AS s"
    " JOIN invocations AS i ON i.session_id = s.id AND i.status = 'running'"
    " LEFT JOIN leases AS l ON l.session_id = i.session_id AND l.invocation_id = i.invocation_id"
    " WHERE s.status = 'running' ORDER BY i.session_id, i.started_seq LIMIT ?"
)
RAISED_SQL = (
    "SELECT CAST((raised_at - ?) / ? AS INTEGER) AS b, count(*) FROM interrupts"
    " WHERE raised_at >= ? AND raised_at < ? GROUP BY b"
)


def read_overview(
    conn: sqlite3.Connection, since: float, bucket: float, buckets: int, running_limit: int
) -> StoreOverview:
    """The :class:`StoreOverview` of the store behind ``conn``, in one read transaction."""
    conn.execute("BEGIN")
    try:
        status = {s: n for s, n in conn.execute(STATUS_SQL)}
        by_app = {a: n for a, n in conn.execute(OPEN_BY_APP_SQL)}
        oldest = conn.execute(OLDEST_SQL).fetchone()[0]
        by_owner = {o: n for o, n in conn.execute(OPEN_BY_OWNER_SQL)}
        running = [tuple(r) for r in conn.execute(RUNNING_SQL, (running_limit,))]
        raised = [0] * buckets
        for b, n in conn.execute(RAISED_SQL, (since, bucket, since, since + bucket * buckets)):
            if 0 <= b < buckets:
                raised[b] = n
    finally:
        conn.execute("COMMIT")
    return StoreOverview(
        status_counts=status, open_by_app=by_app, oldest_open_at=oldest, raised=raised, running=running,
        open_by_owner=by_owner,
    )


def read_metrics(conn: sqlite3.Connection) -> StoreMetrics:
    """The :class:`StoreMetrics` of the store behind ``conn``, in one read transaction."""
    conn.execute("BEGIN")
    try:
        return store_metrics(conn.execute(OPEN_BY_NODE_SQL).fetchall(), conn.execute(QUEUED_BY_APP_SQL).fetchall())
    finally:
        conn.execute("COMMIT")
