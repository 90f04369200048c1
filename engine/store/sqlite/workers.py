"""Turn requests, worker heartbeats and invocation graph versions on SQLite
(:mod:`engine.store.workers` says what they are). A mixin of :class:`SQLiteStore`."""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from ..sql.columns import REQUEST_COLS as _REQ_COLS
from ..sql.columns import WORKER_COLS as _WORKER_COLS
from ..sql.rows import request_from_row as _req
from ..sql.rows import worker_from_row as _worker

if TYPE_CHECKING:  # annotations only: the rows are made by ..sql.rows, which imports them when it does
    from ..workers import Settle, TurnRequest, WorkerRecord

T = TypeVar("T")

TABLES = [
    """CREATE TABLE IF NOT EXISTS turn_requests (
        app_name TEXT NOT NULL,
        session_id TEXT NOT NULL,
        invocation_id TEXT NOT NULL,
        kind TEXT NOT NULL,
        payload TEXT NOT NULL DEFAULT '{}',
        requested_at REAL NOT NULL,
        claimed_by TEXT,
        claimed_until REAL,
        held TEXT,
        note TEXT,
        PRIMARY KEY (session_id, invocation_id)
    ) WITHOUT ROWID""",
    "CREATE INDEX IF NOT EXISTS turn_requests_by_app ON turn_requests(app_name, requested_at)",
    """CREATE TABLE IF NOT EXISTS workers (
        worker_id TEXT PRIMARY KEY,
        host TEXT NOT NULL,
        pid INTEGER NOT NULL,
        apps TEXT NOT NULL,
        versions TEXT NOT NULL,
        current TEXT NOT NULL,
        state TEXT NOT NULL,
        started_at REAL NOT NULL,
        heartbeat_at REAL NOT NULL,
        stale_after REAL NOT NULL
    ) WITHOUT ROWID""",
    """CREATE TABLE IF NOT EXISTS invocation_graphs (
        session_id TEXT NOT NULL,
        invocation_id TEXT NOT NULL,
        graph TEXT NOT NULL,
        PRIMARY KEY (session_id, invocation_id)
    ) WITHOUT ROWID""",
]
"""The tables of the workers' migration."""



def migrate(conn: sqlite3.Connection) -> None:
    """Turn requests, worker heartbeats and invocation graph versions. Idempotent."""
    for sql in TABLES:
        conn.execute(sql)


def _request_tx(conn: sqlite3.Connection, r: TurnRequest) -> None:
    # A newer request for the same invocation replaces the old one (an acknowledged
    # re-drive replaces a continuation held for nodes in doubt); a claim stands.
    conn.execute(
        f"INSERT INTO turn_requests ({_REQ_COLS}) VALUES (?, ?, ?, ?, ?, ?, NULL, NULL, NULL, NULL)"
        " ON CONFLICT (session_id, invocation_id) DO UPDATE SET kind = excluded.kind, payload = excluded.payload,"
        " requested_at = excluded.requested_at, held = NULL, note = NULL",
        (r.app_name, r.session_id, r.invocation_id, r.kind, json.dumps(r.payload), r.requested_at),
    )


def _list_tx(conn: sqlite3.Connection, apps: list[str] | None, limit: int, claimed: bool = False) -> list[TurnRequest]:
    only = " AND claimed_by IS NOT NULL" if claimed else ""
    if apps is None:
        rows = conn.execute(
            f"SELECT {_REQ_COLS} FROM turn_requests WHERE 1{only} ORDER BY requested_at LIMIT ?", (limit,)
        ).fetchall()
    else:
        marks = ", ".join("?" for _ in apps)
        rows = conn.execute(
            f"SELECT {_REQ_COLS} FROM turn_requests WHERE app_name IN ({marks}){only} ORDER BY requested_at LIMIT ?",
            (*apps, limit),
        ).fetchall()
    return [_req(r) for r in rows]


def _get_tx(conn: sqlite3.Connection, session_id: str, invocation_id: str) -> TurnRequest | None:
    row = conn.execute(
        f"SELECT {_REQ_COLS} FROM turn_requests WHERE session_id = ? AND invocation_id = ?",
        (session_id, invocation_id),
    ).fetchone()
    return _req(row) if row else None


def _claim_tx(
    conn: sqlite3.Connection, session_id: str, invocation_id: str, owner: str, ttl: float, expected: str | None
) -> bool:
    now = time.time()
    cur = conn.execute(
        "UPDATE turn_requests SET claimed_by = ?, claimed_until = ? WHERE session_id = ? AND invocation_id = ?"
        " AND held IS NULL AND (claimed_by IS ? OR claimed_until <= ?)",
        (owner, now + ttl, session_id, invocation_id, expected, now),
    )
    return cur.rowcount == 1


def _unclaim_tx(
    conn: sqlite3.Connection, session_id: str, invocation_id: str, owner: str, held: str | None, note: str | None
) -> None:
    conn.execute(
        "UPDATE turn_requests SET claimed_by = NULL, claimed_until = NULL, held = ?, note = COALESCE(?, note)"
        " WHERE session_id = ? AND invocation_id = ? AND claimed_by = ?",
        (held, note, session_id, invocation_id, owner),
    )


def _drop_tx(
    conn: sqlite3.Connection, session_id: str, invocation_id: str, owner: str | None, requested_at: float | None
) -> None:
    conn.execute(
        "DELETE FROM turn_requests WHERE session_id = ? AND invocation_id = ?"
        " AND (? IS NULL OR claimed_by = ?) AND (? IS NULL OR requested_at = ?)",
        (session_id, invocation_id, owner, owner, requested_at, requested_at),
    )


def _graph_tx(conn: sqlite3.Connection, session_id: str, invocation_id: str, graph: str) -> str:
    cur = conn.execute(
        "INSERT OR IGNORE INTO invocation_graphs (session_id, invocation_id, graph) VALUES (?, ?, ?)",
        (session_id, invocation_id, graph),
    )
    if cur.rowcount == 1:
        return graph  # recorded now: nothing to read back
    row = conn.execute(
        "SELECT graph FROM invocation_graphs WHERE session_id = ? AND invocation_id = ?", (session_id, invocation_id)
    ).fetchone()
    return str(row[0])


def _put_worker_tx(
    conn: sqlite3.Connection, w: WorkerRecord, renew: list[tuple[str, str]] | None = None, ttl: float = 30.0
) -> None:
    conn.execute(
        f"INSERT OR REPLACE INTO workers ({_WORKER_COLS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (w.worker_id, w.host, w.pid, json.dumps(w.apps), json.dumps(w.versions), json.dumps(w.current), w.state,
         w.started_at, w.heartbeat_at, w.stale_after),
    )
    for session_id, invocation_id in renew or []:  # the claims it runs, renewed in the same commit
        _claim_tx(conn, session_id, invocation_id, w.worker_id, ttl, w.worker_id)


def _list_workers_tx(conn: sqlite3.Connection) -> list[WorkerRecord]:
    return [_worker(r) for r in conn.execute(f"SELECT {_WORKER_COLS} FROM workers ORDER BY started_at, worker_id")]


def _drop_worker_tx(conn: sqlite3.Connection, worker_id: str) -> None:
    conn.execute("DELETE FROM workers WHERE worker_id = ?", (worker_id,))


def _data_version(conn: sqlite3.Connection) -> int:
    return int(conn.execute("PRAGMA data_version").fetchone()[0])


class _StoreCalls:
    """What the mixins below use of :class:`SQLiteStore` (engine/store/sqlite/store.py),
    declared so that a unit of work's return type reaches its caller."""

    if TYPE_CHECKING:

        async def _call(self, fn: Callable[..., T], *args: Any) -> T: ...

        async def _write(self, fn: Callable[..., T], *args: Any) -> T: ...

        def _check_writable(self) -> None: ...


class _WorkerTables(_StoreCalls):
    """The store calls over the tables above (``self._write``/``self._call`` are the store's)."""

    async def request_turn(self, request: TurnRequest) -> None:
        """Add (or renew) a turn request for a worker."""
        await self._write(_request_tx, request)

    async def turn_requests(
        self, apps: list[str] | None = None, *, limit: int = 200, claimed: bool = False
    ) -> list[TurnRequest]:
        """Requests for ``apps`` (None: every app), oldest first (``claimed``: only claimed ones)."""
        return await self._call(_list_tx, apps, limit, claimed)

    async def get_turn_request(self, session_id: str, invocation_id: str) -> TurnRequest | None:
        return await self._call(_get_tx, session_id, invocation_id)

    async def claim_turn_request(
        self, session_id: str, invocation_id: str, owner: str, ttl: float, *, expected: str | None = None
    ) -> bool:
        """Compare-and-swap: claim a runnable request whose claim is ``expected``
        (None: unclaimed; a dead owner's id: take it over) or expired."""
        return await self._write(_claim_tx, session_id, invocation_id, owner, ttl, expected)

    async def unclaim_turn_request(
        self, session_id: str, invocation_id: str, owner: str, *, held: str | None = None, note: str | None = None
    ) -> None:
        """Hand a claimed request back (``held``: why workers should leave it alone)."""
        await self._write(_unclaim_tx, session_id, invocation_id, owner, held, note)

    async def drop_turn_request(
        self, session_id: str, invocation_id: str, *, owner: str | None = None, requested_at: float | None = None
    ) -> None:
        """Delete a request (only while ``owner`` holds its claim, and only if it was
        not requested again since ``requested_at``, when given)."""
        await self._write(_drop_tx, session_id, invocation_id, owner, requested_at)

    async def invocation_graph(self, session_id: str, invocation_id: str, graph: str) -> str:
        """The graph version the invocation runs under: ``graph`` unless one was recorded before."""
        return await self._write(_graph_tx, session_id, invocation_id, graph)

    async def put_worker(
        self, worker: WorkerRecord, *, renew: list[tuple[str, str]] | None = None, ttl: float = 30.0
    ) -> None:
        await self._write(_put_worker_tx, worker, renew or [], ttl)

    async def list_workers(self) -> list[WorkerRecord]:
        return await self._call(_list_workers_tx)

    async def drop_worker(self, worker_id: str) -> None:
        await self._write(_drop_worker_tx, worker_id)

    async def change_counter(self) -> int:
        """Changes when another connection commits (``PRAGMA data_version``): the
        cheap poll a worker or a console waits on instead of a notification."""
        return await self._call(_data_version)

    # -- the turn requests of a page of sessions (what an operator's page shows): one read
    async def turn_requests_of(self, session_ids: list[str]) -> list[TurnRequest]:
        """Every turn request of these sessions, in one read (what a sessions page,
        ``hitl show`` or the home summary shows as queued or held)."""
        return await self._call(_requests_of_tx, list(dict.fromkeys(session_ids)))


def _requests_of_tx(conn: sqlite3.Connection, session_ids: list[str]) -> list[TurnRequest]:
    # the ids as one JSON parameter (as leases_of does): no bound-parameter limit to chunk under
    rows = conn.execute(
        f"SELECT {_REQ_COLS} FROM turn_requests WHERE session_id IN (SELECT value FROM json_each(?)) ORDER BY requested_at",
        (json.dumps(session_ids),),
    ).fetchall()
    return [_req(r) for r in rows]


# ---------------------------------------------------------------------------
# The worker side's one-transaction steps: an answer queued with its
# request, a claim of the oldest runnable request, interrupted turns found in
# the index. Each is one transaction (or one read).

def _append_queue_tx(
    conn: sqlite3.Connection,
    session_id: str,
    invocation_id: str,
    owner: str,
    ttl: float,
    now: float,
    prepared: list[Any],
    invocation_after: int | None,
    request: TurnRequest | None,
) -> list[int]:
    """Take the lease (as a turn's first write: refused while another owner's is
    live, or when the invocation moved on since ``invocation_after``), append,
    leave ``request``, release the lease: all or nothing."""
    from .leases import _acquire_append_tx

    _lease, seqs, _state = _acquire_append_tx(
        conn, session_id, invocation_id, owner, ttl, now, prepared, None, invocation_after
    )
    if request is not None:
        _request_tx(conn, request)
    conn.execute(
        "DELETE FROM leases WHERE session_id = ? AND invocation_id = ? AND owner = ?", (session_id, invocation_id, owner)
    )
    return seqs


def _runnable_sql(apps: list[str]) -> str:
    marks = ", ".join("?" for _ in apps)
    return (
        f"SELECT {_REQ_COLS} FROM turn_requests WHERE app_name IN ({marks}) AND held IS NULL"
        " AND (claimed_by IS NULL OR claimed_until <= ?) ORDER BY requested_at LIMIT ?"
    )


def _any_runnable(conn: sqlite3.Connection, apps: list[str], now: float, skip: set[tuple[str, str, float]]) -> bool:
    rows = conn.execute(_runnable_sql(apps), (*apps, now, len(skip) + 1)).fetchall()
    return any((r[1], r[2], r[5]) not in skip for r in rows)


def _claim_next_tx(
    conn: sqlite3.Connection,
    apps: list[str],
    owner: str,
    ttl: float,
    now: float,
    skip: set[tuple[str, str, float]],
    versions: dict[str, str] | None = None,
) -> TurnRequest | None:
    for row in conn.execute(_runnable_sql(apps), (*apps, now, len(skip) + 1)).fetchall():
        req = _req(row)
        if (req.session_id, req.invocation_id, req.requested_at) in skip:
            continue
        conn.execute(
            "UPDATE turn_requests SET claimed_by = ?, claimed_until = ? WHERE session_id = ? AND invocation_id = ?",
            (owner, now + ttl, req.session_id, req.invocation_id),
        )
        if versions and req.app_name in versions:  # the graph it runs under, recorded with the claim
            graph: str | None = _graph_tx(conn, req.session_id, req.invocation_id, versions[req.app_name])
        else:
            row = conn.execute(
                "SELECT graph FROM invocation_graphs WHERE session_id = ? AND invocation_id = ?",
                (req.session_id, req.invocation_id),
            ).fetchone()
            graph = None if row is None else str(row[0])
        return req.model_copy(update={"claimed_by": owner, "claimed_until": now + ttl, "graph": graph})
    return None


def _finish_tx(
    conn: sqlite3.Connection, session_id: str, invocation_id: str, owner: str, requested_at: float
) -> bool:
    """Delete the request ``owner`` claimed, unless it was requested again since
    ``requested_at``: then hand it back (unclaimed, runnable at once). True: deleted."""
    cur = conn.execute(
        "DELETE FROM turn_requests WHERE session_id = ? AND invocation_id = ? AND claimed_by = ? AND requested_at = ?",
        (session_id, invocation_id, owner, requested_at),
    )
    if cur.rowcount:
        return True
    conn.execute(
        "UPDATE turn_requests SET claimed_by = NULL, claimed_until = NULL"
        " WHERE session_id = ? AND invocation_id = ? AND claimed_by = ?",
        (session_id, invocation_id, owner),
    )
    return False


_INTERRUPTED_SQL = (
    "SELECT s.app_name, i.session_id, i.invocation_id, l.owner, l.acquired_at, l.renewed_at, l.expires_at"
    " FROM sessions s JOIN invocations i ON i.session_id = s.id AND i.status = 'running'"
    " LEFT JOIN leases l ON l.session_id = i.session_id AND l.invocation_id = i.invocation_id"
    " WHERE s.status = 'running' AND +s.app_name IN ({marks}) AND NOT EXISTS (SELECT 1 FROM turn_requests r"
    " WHERE r.session_id = i.session_id AND r.invocation_id = i.invocation_id) LIMIT ?"
)
"""Running invocations (by the index: sessions by status, then the session's
invocations by status) of some apps that no turn request names, with their lease
rows. Its cost grows with the invocations running now, not with history (the
unary ``+`` keeps the planner on ``sessions_by_status``, not on every session of the app)."""

_SETTLED_HELD_SQL = (
    f"SELECT {', '.join('r.' + c for c in _REQ_COLS.split(', '))} FROM turn_requests r"
    " JOIN invocations i ON i.session_id = r.session_id AND i.invocation_id = r.invocation_id"
    " WHERE r.app_name IN ({marks}) AND r.held IS NOT NULL AND i.status <> 'running' LIMIT ?"
)
"""Held requests whose invocation is no longer mid-run (an operator re-drove it in
its own process): nothing is left for them to wait for."""


def _lease_and_news(conn: sqlite3.Connection, session_id: str, invocation_id: str, after_seq: int) -> tuple[Any, bool]:
    from .leases import _get_lease

    lease = _get_lease(conn, session_id, invocation_id)  # first: as stopped_mid_run reads them
    news = conn.execute(
        "SELECT 1 FROM events WHERE session_id = ? AND invocation_id = ? AND seq > ? LIMIT 1",
        (session_id, invocation_id, after_seq),
    ).fetchone()
    return lease, news is not None


def _append_settle_tx(
    conn: sqlite3.Connection,
    session_id: str,
    invocation_id: str,
    prepared: list[Any],
    expected_seq: int | None,
    owner: str,
    snapshot: tuple[int, str] | None,
    claimer: str,
    requested_at: float,
) -> tuple[list[int], bool]:
    """A worker's turn's last write and the finish of the request it ran: all or nothing."""
    from .leases import _append_release_tx

    seqs = _append_release_tx(conn, session_id, invocation_id, prepared, expected_seq, owner, snapshot)
    return seqs, _finish_tx(conn, session_id, invocation_id, claimer, requested_at)


def _interrupted(conn: sqlite3.Connection, apps: list[str], limit: int) -> list[tuple[str, str, str, Any]]:
    from ..sql.rows import lease_from_row as _lease_from_row

    marks = ", ".join("?" for _ in apps)
    rows = conn.execute(_INTERRUPTED_SQL.format(marks=marks), (*apps, limit)).fetchall()
    return [(r[0], r[1], r[2], None if r[3] is None else _lease_from_row((r[1], r[2], *r[3:]))) for r in rows]


def _settled_held(conn: sqlite3.Connection, apps: list[str], limit: int) -> list[TurnRequest]:
    marks = ", ".join("?" for _ in apps)
    return [_req(r) for r in conn.execute(_SETTLED_HELD_SQL.format(marks=marks), (*apps, limit))]


def _adopt_tx(conn: sqlite3.Connection, r: TurnRequest) -> bool:
    cur = conn.execute(
        f"INSERT INTO turn_requests ({_REQ_COLS}) VALUES (?, ?, ?, ?, ?, ?, NULL, NULL, NULL, NULL)"
        " ON CONFLICT (session_id, invocation_id) DO NOTHING",
        (r.app_name, r.session_id, r.invocation_id, r.kind, json.dumps(r.payload), r.requested_at),
    )
    return cur.rowcount == 1


def _drop_held_tx(conn: sqlite3.Connection, r: TurnRequest) -> None:
    conn.execute(
        "DELETE FROM turn_requests WHERE session_id = ? AND invocation_id = ? AND held IS NOT NULL AND requested_at = ?",
        (r.session_id, r.invocation_id, r.requested_at),
    )


class _WorkerSteps(_StoreCalls):
    """The store calls over the steps above (a mixin of :class:`SQLiteStore`)."""

    async def append_and_queue(
        self,
        session_id: str,
        invocation_id: str,
        events: list[Any],
        *,
        owner: str,
        invocation_after: int | None,
        request: TurnRequest | None,
        ttl: float = 30.0,
    ) -> list[Any]:
        """An answer left to a worker, in ONE transaction: the invocation's lease
        taken as ``owner`` (InvocationBusyError while another owner's is live;
        held by ``owner`` already is fine), ConflictError when the invocation has
        an event after ``invocation_after``, the events appended, ``request``
        added (None: nothing to run) and the lease released. A worker that sees
        the request sees the answer, and finds the lease free."""
        from ...models import Event, StoredEvent
        from ..sql.prepared import prepare as _prepare

        self._check_writable()
        prepared = [_prepare(e) for e in events]
        seqs = await self._write(
            _append_queue_tx, session_id, invocation_id, owner, ttl, time.time(), prepared, invocation_after, request
        )
        return [StoredEvent(seq=q, session_id=session_id, event=Event.from_json(p.json)) for q, p in zip(seqs, prepared, strict=True)]

    async def lease_and_news(self, session_id: str, invocation_id: str, after_seq: int) -> tuple[Any, bool]:
        """The invocation's lease row and whether it has an event after ``after_seq``: one call."""
        return await self._call(_lease_and_news, session_id, invocation_id, after_seq)

    async def append_and_settle(
        self,
        session_id: str,
        invocation_id: str,
        events: list[Any],
        *,
        owner: str,
        settle: Settle,
        expected_seq: int | None = None,
        snapshot: tuple[int, dict[str, Any]] | None = None,
    ) -> list[Any]:
        """``append_and_release`` and ``finish_turn_request`` in one transaction (one
        commit: a worker's turn settles its request with its last write)."""
        from pydantic_core import to_json

        from ...models import Event, StoredEvent
        from ..sql.prepared import prepare as _prepare

        self._check_writable()
        prepared = [_prepare(e) for e in events]
        snap = None if snapshot is None else (snapshot[0], to_json(snapshot[1]).decode())
        seqs, settle.deleted = await self._write(
            _append_settle_tx, session_id, invocation_id, prepared, expected_seq, owner, snap, settle.owner,
            settle.requested_at,
        )
        return [StoredEvent(seq=q, session_id=session_id, event=Event.from_json(p.json)) for q, p in zip(seqs, prepared, strict=True)]

    async def claim_next_turn(
        self,
        apps: list[str],
        owner: str,
        ttl: float,
        *,
        skip: set[tuple[str, str, float]] | None = None,
        versions: dict[str, str] | None = None,
    ) -> TurnRequest | None:
        """Claim the oldest runnable request of ``apps`` (not held; unclaimed or its
        claim expired), skipping ``skip`` ((session, invocation, requested_at) this
        worker refused), and record ``versions[app]`` as its graph version unless one
        was: one read, and one write transaction only when there is one."""
        self._check_writable()
        skip = skip or set()
        now = time.time()
        if not apps or not await self._call(_any_runnable, apps, now, skip):
            return None
        return await self._write(_claim_next_tx, apps, owner, ttl, time.time(), skip, versions)

    async def finish_turn_request(self, session_id: str, invocation_id: str, owner: str, requested_at: float) -> bool:
        """The claimed request's turn is done: delete it, or hand it back when it
        was requested again meanwhile (a new answer). True: deleted."""
        return await self._write(_finish_tx, session_id, invocation_id, owner, requested_at)

    async def interrupted_turns(self, apps: list[str], *, limit: int = 200) -> list[tuple[str, str, str, Any]]:
        """(app, session, invocation, lease row or None) of the running invocations of
        ``apps`` that no request names (:data:`_INTERRUPTED_SQL`)."""
        if not apps:
            return []
        return await self._call(_interrupted, apps, limit)

    async def adopt_turn(self, request: TurnRequest) -> bool:
        """Add ``request`` unless one exists for its invocation (never replacing a
        held or claimed one). True: added."""
        return await self._write(_adopt_tx, request)

    async def settled_held_requests(self, apps: list[str], *, limit: int = 50) -> list[TurnRequest]:
        """Held requests of ``apps`` whose invocation is no longer mid-run (:data:`_SETTLED_HELD_SQL`)."""
        if not apps:
            return []
        return await self._call(_settled_held, apps, limit)

    async def drop_held_request(self, request: TurnRequest) -> None:
        """Delete a held request, unless it was requested again since it was read."""
        await self._write(_drop_held_tx, request)
