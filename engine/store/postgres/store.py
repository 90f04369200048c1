"""The store: its parts put together."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..base import Capability
from .bulk import _Bulk
from .checkpoints import _Checkpoints
from .leases import _Leases
from .overview import _Overview
from .reads import _Reads
from .warm import _Warm
from .workers import _WorkerSteps, _WorkerTables
from .writes import _Writes

if TYPE_CHECKING:
    from ..deadlines import Timers
    from ..notify import Ledger


class PostgresStore(_Reads, _Writes, _Leases, _Bulk, _Checkpoints, _WorkerTables, _WorkerSteps, _Warm, _Overview):
    """:class:`~engine.store.base.SessionStore` on a PostgreSQL server.

    Open with ``store = await PostgresStore.open(url)`` or ``async with
    PostgresStore.open(url) as store:``. One store holds one connection pool;
    any number of stores, on any number of hosts, may share a database.
    """

    read_only: bool
    """True when opened read-only: the server refuses every write."""

    def notification_ledger(self) -> Ledger:
        """The notification ledger of this store (:mod:`engine.store.notify`)."""
        from .notify import PostgresLedger

        return PostgresLedger(self)

    def deadline_timers(self) -> Timers:
        """The deadline timers of this store (:mod:`engine.store.deadlines`)."""
        from .deadlines import PostgresTimers

        return PostgresTimers(self)

    path = None
    """Not a file (the ``path`` capability of file stores)."""

    capabilities: frozenset[Capability] = frozenset(
        {
            "worker_queue",
            "skip_corrupt",
            "corrupt_events",
            "bulk_load",
            "checkpoint",
            "migrate",
            "notify",
            "snapshot_and_events",
            "answer_reads",
            "append_and_release",
            "acquire_and_append",
            "create_in_first_write",
            "projection_checkpoints",
            "leases_of",
        }
    )
    """Optional features (see :data:`engine.store.base.Capability`)."""
