"""The home summary's aggregate statements that read the same in both dialects
(:meth:`SessionStore.overview`; each backend adds the running invocations and
the interrupts raised per hour in its own dialect). The other aggregates of a
``/metrics`` scrape are :mod:`engine.store.metric_rows`'s."""

from __future__ import annotations

STATUS_SQL = "SELECT status, count(*) FROM sessions GROUP BY status"
OPEN_BY_APP_SQL = "SELECT app_name, count(*) FROM interrupts WHERE status = 'open' GROUP BY app_name"
OLDEST_SQL = "SELECT min(oldest_open_at) FROM sessions WHERE oldest_open_at IS NOT NULL"
OPEN_BY_OWNER_SQL = (
    "SELECT owner, count(*) FROM interrupts WHERE status = 'open' AND owner IS NOT NULL GROUP BY owner"
)
"""The home's "yours": open interrupts per owner (the partial index ``interrupts_open_by_owner``)."""
