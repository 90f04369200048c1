"""Turn requests, worker heartbeats and invocation graph versions on SQLite
(:mod:`engine.store.workers` says what they are). A mixin of :class:`SQLiteStore`."""

from __future__ import annotations

import json
import sqlite3
import time
from typing import Any

from ..workers import TurnRequest, WorkerRecord

_REQ_COLS = (
    "app_name, session_id, invocation_id, kind, payload, requested_at, claimed_by, claimed_until, held, note"
)
_WORKER_COLS = "worker_id, host, pid, apps, versions, current, state, started_at, heartbeat_at, stale_after"

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
"""The tables of the workers' migration (issue 18)."""



def migrate(conn: sqlite3.Connection) -> None:
    """Turn requests, worker heartbeats and invocation graph versions (issue 18). Idempotent."""
    for sql in TABLES:
        conn.execute(sql)


def _req(row: Any) -> TurnRequest:
    return TurnRequest(
        app_name=row[0], session_id=row[1], invocation_id=row[2], kind=row[3], payload=json.loads(row[4]),
        requested_at=row[5], claimed_by=row[6], claimed_until=row[7], held=row[8], note=row[9],
    )


def _worker(row: Any) -> WorkerRecord:
    return WorkerRecord(
        worker_id=row[0], host=row[1], pid=row[2], apps=json.loads(row[3]), versions=json.loads(row[4]),
        current=json.loads(row[5]), state=row[6], started_at=row[7], heartbeat_at=row[8], stale_after=row[9],
    )


def _request_tx(conn: sqlite3.Connection, r: TurnRequest) -> None:
    # A newer request for the same invocation replaces the old one (an acknowledged
    # re-drive replaces a continuation held for nodes in doubt); a claim stands.
    conn.execute(
        f"INSERT INTO turn_requests ({_REQ_COLS}) VALUES (?, ?, ?, ?, ?, ?, NULL, NULL, NULL, NULL)"
        " ON CONFLICT (session_id, invocation_id) DO UPDATE SET kind = excluded.kind, payload = excluded.payload,"
        " requested_at = excluded.requested_at, held = NULL, note = NULL",
        (r.app_name, r.session_id, r.invocation_id, r.kind, json.dumps(r.payload), r.requested_at),
    )


def _list_tx(conn: sqlite3.Connection, apps: list[str] | None, limit: int) -> list[TurnRequest]:
    if apps is None:
        rows = conn.execute(
            f"SELECT {_REQ_COLS} FROM turn_requests ORDER BY requested_at LIMIT ?", (limit,)
        ).fetchall()
    else:
        marks = ", ".join("?" for _ in apps)
        rows = conn.execute(
            f"SELECT {_REQ_COLS} FROM turn_requests WHERE app_name IN ({marks}) ORDER BY requested_at LIMIT ?",
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
    conn.execute(
        "INSERT OR IGNORE INTO invocation_graphs (session_id, invocation_id, graph) VALUES (?, ?, ?)",
        (session_id, invocation_id, graph),
    )
    row = conn.execute(
        "SELECT graph FROM invocation_graphs WHERE session_id = ? AND invocation_id = ?", (session_id, invocation_id)
    ).fetchone()
    return str(row[0])


def _put_worker_tx(conn: sqlite3.Connection, w: WorkerRecord) -> None:
    conn.execute(
        f"INSERT OR REPLACE INTO workers ({_WORKER_COLS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (w.worker_id, w.host, w.pid, json.dumps(w.apps), json.dumps(w.versions), json.dumps(w.current), w.state,
         w.started_at, w.heartbeat_at, w.stale_after),
    )


def _list_workers_tx(conn: sqlite3.Connection) -> list[WorkerRecord]:
    return [_worker(r) for r in conn.execute(f"SELECT {_WORKER_COLS} FROM workers ORDER BY started_at, worker_id")]


def _drop_worker_tx(conn: sqlite3.Connection, worker_id: str) -> None:
    conn.execute("DELETE FROM workers WHERE worker_id = ?", (worker_id,))


def _data_version(conn: sqlite3.Connection) -> int:
    return int(conn.execute("PRAGMA data_version").fetchone()[0])


class _WorkerTables:
    """The store calls over the tables above (``self._write``/``self._call`` are the store's)."""

    async def request_turn(self, request: TurnRequest) -> None:
        """Add (or renew) a turn request for a worker."""
        await self._write(_request_tx, request)  # type: ignore[attr-defined]

    async def turn_requests(self, apps: list[str] | None = None, *, limit: int = 200) -> list[TurnRequest]:
        """Requests for ``apps`` (None: every app), oldest first."""
        return await self._call(_list_tx, apps, limit)  # type: ignore[attr-defined]

    async def get_turn_request(self, session_id: str, invocation_id: str) -> TurnRequest | None:
        return await self._call(_get_tx, session_id, invocation_id)  # type: ignore[attr-defined]

    async def claim_turn_request(
        self, session_id: str, invocation_id: str, owner: str, ttl: float, *, expected: str | None = None
    ) -> bool:
        """Compare-and-swap: claim a runnable request whose claim is ``expected``
        (None: unclaimed; a dead owner's id: take it over) or expired."""
        return await self._write(_claim_tx, session_id, invocation_id, owner, ttl, expected)  # type: ignore[attr-defined]

    async def unclaim_turn_request(
        self, session_id: str, invocation_id: str, owner: str, *, held: str | None = None, note: str | None = None
    ) -> None:
        """Hand a claimed request back (``held``: why workers should leave it alone)."""
        await self._write(_unclaim_tx, session_id, invocation_id, owner, held, note)  # type: ignore[attr-defined]

    async def drop_turn_request(
        self, session_id: str, invocation_id: str, *, owner: str | None = None, requested_at: float | None = None
    ) -> None:
        """Delete a request (only while ``owner`` holds its claim, and only if it was
        not requested again since ``requested_at``, when given)."""
        await self._write(_drop_tx, session_id, invocation_id, owner, requested_at)  # type: ignore[attr-defined]

    async def invocation_graph(self, session_id: str, invocation_id: str, graph: str) -> str:
        """The graph version the invocation runs under: ``graph`` unless one was recorded before."""
        return await self._write(_graph_tx, session_id, invocation_id, graph)  # type: ignore[attr-defined]

    async def put_worker(self, worker: WorkerRecord) -> None:
        await self._write(_put_worker_tx, worker)  # type: ignore[attr-defined]

    async def list_workers(self) -> list[WorkerRecord]:
        return await self._call(_list_workers_tx)  # type: ignore[attr-defined]

    async def drop_worker(self, worker_id: str) -> None:
        await self._write(_drop_worker_tx, worker_id)  # type: ignore[attr-defined]

    async def change_counter(self) -> int:
        """Changes when another connection commits (``PRAGMA data_version``): the
        cheap poll a worker or a console waits on instead of a notification."""
        return await self._call(_data_version)  # type: ignore[attr-defined]

    # -- the turn requests of a page of sessions (issue 18, operator side): one read
    async def turn_requests_of(self, session_ids: list[str]) -> list[TurnRequest]:
        """Every turn request of these sessions, in one read (what a sessions page,
        ``hitl show`` or the home summary shows as queued or held)."""
        return await self._call(_requests_of_tx, list(dict.fromkeys(session_ids)))  # type: ignore[attr-defined]


def _requests_of_tx(conn: sqlite3.Connection, session_ids: list[str]) -> list[TurnRequest]:
    out: list[TurnRequest] = []
    for start in range(0, len(session_ids), 500):  # below SQLite's bound-parameter limit
        chunk = session_ids[start : start + 500]
        marks = ", ".join("?" for _ in chunk)
        rows = conn.execute(
            f"SELECT {_REQ_COLS} FROM turn_requests WHERE session_id IN ({marks}) ORDER BY requested_at", chunk
        ).fetchall()
        out += [_req(r) for r in rows]
    return out
