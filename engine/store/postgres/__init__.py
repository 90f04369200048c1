"""PostgreSQL session store, for teams: many hosts, one server, on asyncpg.

Same tables (:mod:`engine.store.sql.columns` says what each holds) and the
same guarantees as :mod:`engine.store.sqlite` (read its docstring); this module
says what differs.

Why asyncpg
    It speaks PostgreSQL's binary protocol natively from asyncio with its own
    pool and a per-connection prepared-statement cache, so an append -- one
    ``SELECT hitl_append_many(...)`` -- is one round trip with no per-call parse;
    ``executemany`` pipelines imports and bulk loads; ``add_listener`` gives
    LISTEN/NOTIFY on a pooled connection. psycopg 3's async mode would do, but
    is slower per statement and adds nothing we use.

The append is one server-side function
    ``hitl_append`` (PL/pgSQL, created by the migrations) does the whole append
    path in ONE statement, hence one implicit transaction and one round trip:
    it locks the session row (``FOR UPDATE``: appends to one session are
    serialised, so ``seq`` is contiguous under any number of writers and "an id
    answered once" is checked and written atomically), checks ``expected_seq``,
    checks the lease under ``FOR SHARE`` (a steal waits for a fenced append in
    flight and vice versa), writes the event, the interrupt index, the
    invocation, the session summary and state, the audit row, and notifies
    ``hitl_events`` (delivered at commit). What an event does to the derived
    rows is still decided in Python by :func:`engine.store.base.index_effects`
    and passed in as arguments; the function only writes it. The one rule it
    restates in SQL is :func:`engine.store.base.session_status` (a CASE).
    Every append goes through ``hitl_append_many`` (a list of one or more
    events, one statement), which does the same set-based -- the session row
    locked and written once, one INSERT of the events, each derived row written
    once -- and hands the shapes it does not take (events of several
    invocations, an interrupt id named by two events, one opened or answered
    after a cancel) to ``hitl_append_each``, which calls ``hitl_append`` per
    event. Either way it notifies once, with the statement's last seq (listeners
    re-read from the last seq they saw: one notification per commit wakes them
    as one per event did).

Errors
    The function raises SQLSTATEs of class ``HT`` that :func:`_translate` turns
    into the same exceptions SQLiteStore raises. Serialisation failures and
    deadlocks are retried (the unit of work is one transaction, safe to redo);
    a lost connection is not (an append may have committed): the error says so.
    Every message names the server by its masked URL (:func:`mask_url`).

Read-only
    A read-only store's connections run with ``default_transaction_read_only``
    on: the server itself refuses writes, whatever code path asks.

Schema migrations
    ``hitl_schema(version)`` holds the version; ``_MIGRATIONS[i]`` upgrades
    ``i`` to ``i + 1``. A writer runs the pending ones in one transaction under
    an advisory lock when it opens the store (:meth:`PostgresStore.migrate`);
    a newer schema is refused untouched. ``?schema=NAME`` in the URL puts the
    tables in that schema (created by a writer) instead of ``public``.

Batches
    An import or a bulk load does not go through ``hitl_append``: the derived
    rows of whole sessions are computed in one pass in Python (:class:`_Batch`,
    the same rules and checks) and written with one statement of unnest'ed
    column arrays, so a 100,000-event session imports in seconds, not minutes.
    ``append_events`` (an answer with its auto-completions, a node's end with
    the next node's start) is one ``hitl_append_many`` call.

A turn's first and last writes
    ``acquire_and_append`` and ``append_and_release`` (the capabilities of that
    name) are one statement each too: ``hitl_acquire_append`` takes the lease
    as ``acquire_lease`` does, checks that the invocation did not move on, and
    appends through ``hitl_append_many`` fenced by it; ``hitl_append_release``
    appends fenced, keeps the snapshot and deletes the lease. So a resume that
    runs one node is 5 round trips: the answer's lookup, the invocation's read,
    the first write, the node's write, the last write.

Round trips
    Every store call is one statement, hence one round trip: no BEGIN/COMMIT
    around a single atomic statement, reads that find nothing tell a missing
    session from the same statement (LEFT JOIN from the session row), and the
    pool does not reset connections on release (:func:`_keep_session`). A
    process that opens the store for one turn (``hitl resume``, ``hitl
    start``: ``defer_schema_check``) sends no schema check of its own: the
    turn's first read carries it (:mod:`.onetrip`).

Connection poolers
    Session mode only (:mod:`.pooler`): the settings PgBouncer refuses at a
    connection's start ride on the connection's first read as SET statements.

All SQL of this backend lives in this package.
"""

from .errors import ConnectionLostError
from .listen import Listener
from .schema import NOTIFY_CHANNEL, SCHEMA_VERSION
from .store import PostgresStore
from .urls import is_postgres_url, mask_url

__all__ = [
    "NOTIFY_CHANNEL",
    "SCHEMA_VERSION",
    "ConnectionLostError",
    "Listener",
    "PostgresStore",
    "is_postgres_url",
    "mask_url",
]
