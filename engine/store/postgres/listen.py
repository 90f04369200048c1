"""LISTEN/NOTIFY: the live feed of appends, on its own connection; and, for
workers, a LISTEN that only one idle worker of a pool holds at a time.

A worker pool must not wake every idle worker for a request that only one can
claim (each woken worker pays a claim round trip that finds nothing: with 16
workers the CPU per turn more than doubled). So a worker's listener
(:meth:`Listener.lead`) first takes a session-level advisory lock, the pool's
(one per set of apps served), and LISTENs only while it holds it: the one leader
hears a new request and claims it; the others wait on the lock, on the server,
using nothing. A leader with no free slot resigns (UNLISTEN, unlock) and the
next waiter takes over at once and claims what is runnable; a leader that dies
loses the lock with its connection. Workers that are busy still claim when one
of their turns ends, and every worker claims at its heartbeat, so nothing waits
on a missed notification.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

import asyncpg

from ...errors import StoreError
from .errors import _connect_error
from .schema import NOTIFY_CHANNEL


class Listener:
    """A LISTEN connection on :data:`NOTIFY_CHANNEL` that reconnects when it is lost."""

    def __init__(
        self,
        connect_args: dict[str, Any],
        callback: Callable[[str | None, int | None], None],
        where: str,
        channel: str = NOTIFY_CHANNEL,
    ):
        self._channel = channel
        self._args = connect_args
        self._callback = callback
        self._where = where
        self._conn: asyncpg.Connection | None = None
        self._closed = False
        self._reconnect: asyncio.Task[None] | None = None
        self.reconnects = 0
        self._lock_key: int | None = None
        self._room = asyncio.Event()
        self._full = asyncio.Event()
        self._leading: asyncio.Task[None] | None = None
        self.leader = False
        """Whether this listener holds its pool's lock and LISTENs now (:meth:`lead`)."""
        self.terms = 0
        """How many times it became the leader (tests, benchmarks)."""

    def lead(self, lock_key: int) -> None:
        """Listen only while holding the advisory lock ``lock_key`` (a worker pool's),
        competing for it only while :meth:`set_room` says there is room. Call before
        :meth:`start`. Becoming the leader calls back ``(None, None)``: claim now."""
        self._lock_key = lock_key
        self._room.set()

    def set_room(self, room: bool) -> None:
        """Whether the worker has a free slot: without one it resigns the lead."""
        if room:
            self._full.clear()
            self._room.set()
        else:
            self._room.clear()
            self._full.set()

    async def start(self) -> None:
        try:
            conn = await asyncpg.connect(
                self._args["dsn"], password=self._args["password"], server_settings=self._args["server_settings"]
            )
            if self._lock_key is None:
                await conn.add_listener(self._channel, self._on_notify)
        except (TimeoutError, OSError, asyncpg.PostgresError, asyncpg.InterfaceError) as e:
            raise _connect_error(e, self._where) from None
        conn.add_termination_listener(self._on_lost)
        self._conn = conn
        if self._lock_key is not None:
            self._leading = asyncio.get_running_loop().create_task(self._lead_loop(conn, self._lock_key))

    async def _lead_loop(self, conn: asyncpg.Connection, key: int) -> None:
        """Wait for room, take the lock (the server queues the waiters), LISTEN
        while there is room, then UNLISTEN and unlock; again, until closed."""
        try:
            while not self._closed:
                await self._room.wait()
                await conn.execute("SELECT pg_advisory_lock($1)", key)
                await conn.add_listener(self._channel, self._on_notify)
                self.leader = True
                self.terms += 1
                self._callback(None, None)  # claim what became runnable while we were not listening
                await self._full.wait()
                self.leader = False
                await conn.remove_listener(self._channel, self._on_notify)
                await conn.execute("SELECT pg_advisory_unlock($1)", key)
        except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError):
            self.leader = False  # the connection is gone (and the lock with it): _on_lost reconnects

    def _on_notify(self, _conn: object, _pid: int, _channel: str, payload: str) -> None:
        try:
            data = json.loads(payload)
            sid, seq = str(data["s"]), int(data["q"])
        except (ValueError, KeyError, TypeError):
            return
        self._callback(sid, seq)

    def _on_lost(self, _conn: object) -> None:
        self._conn = None
        self.leader = False
        if not self._closed and self._reconnect is None:
            self._reconnect = asyncio.get_running_loop().create_task(self._reconnect_loop())

    async def _reconnect_loop(self) -> None:
        delay = 0.1
        try:
            while not self._closed:
                try:
                    await self.start()
                except StoreError:
                    await asyncio.sleep(delay)
                    delay = min(delay * 2, 5.0)
                    continue
                self.reconnects += 1
                self._callback(None, None)
                return
        finally:
            self._reconnect = None

    async def close(self) -> None:
        self._closed = True
        if self._reconnect is not None:
            self._reconnect.cancel()
        conn, self._conn = self._conn, None
        leading, self._leading = self._leading, None
        if leading is not None:
            leading.cancel()
            if conn is not None and not self.leader:
                conn.terminate()  # it may be waiting for the lock: no goodbye to wait for
                return
        if conn is not None:
            try:
                await asyncio.wait_for(conn.close(), timeout=2)
            except (TimeoutError, OSError, asyncpg.PostgresError, asyncpg.InterfaceError):
                conn.terminate()
