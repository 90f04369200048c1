"""What a ``/metrics`` scrape reads from a store (:meth:`SessionStore.metric_reads`):
the two aggregate statements every SQL backend runs, and the rows folded into
:class:`StoreMetrics` (:mod:`engine.metrics` renders them)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

_DEFERRED = ConfigDict(defer_build=True)


class StoreMetrics(BaseModel):
    """What ``/metrics`` reads from the store at a scrape, in one store call
    (:meth:`SessionStore.metric_reads`): aggregates over the open-interrupt and
    turn-request indexes, whose size is what is waiting now, never history."""

    model_config = _DEFERRED

    open_interrupts: list[tuple[str, str, int, float]] = Field(default_factory=list)
    """``(app, node name, open interrupts, oldest raised_at)`` per app and node."""
    queued_turns: list[tuple[str, int, int, float]] = Field(default_factory=list)
    """``(app, turn requests, of them held, oldest requested_at)`` per app."""


OPEN_BY_NODE_SQL = (
    "SELECT app_name, path, count(*), min(raised_at) FROM interrupts WHERE status = 'open' GROUP BY app_name, path"
)
QUEUED_BY_APP_SQL = "SELECT app_name, count(*), count(held), min(requested_at) FROM turn_requests GROUP BY app_name"
"""The two statements behind :class:`StoreMetrics`, the same in both SQL dialects."""


def store_metrics(open_rows: Iterable[Any], queued_rows: Iterable[Any]) -> StoreMetrics:
    """:class:`StoreMetrics` from :data:`OPEN_BY_NODE_SQL`'s and :data:`QUEUED_BY_APP_SQL`'s
    rows: paths folded into their node's name (``flow@1/approve@2`` -> ``approve``)."""
    by_node: dict[tuple[str, str], list[float]] = {}
    for app, path, count, oldest in open_rows:
        name = str(path).rsplit("/", 1)[-1].rsplit("@", 1)[0]
        cell = by_node.setdefault((str(app), name), [0, float(oldest)])
        cell[0] += int(count)
        cell[1] = min(cell[1], float(oldest))
    return StoreMetrics(
        open_interrupts=[(app, name, int(c), o) for (app, name), (c, o) in sorted(by_node.items())],
        queued_turns=sorted((str(a), int(n), int(h), float(o)) for a, n, h, o in queued_rows),
    )
