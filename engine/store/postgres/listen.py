"""LISTEN/NOTIFY: the live feed of appends, on its own connection."""

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

    async def start(self) -> None:
        try:
            conn = await asyncpg.connect(
                self._args["dsn"], password=self._args["password"], server_settings=self._args["server_settings"]
            )
            await conn.add_listener(self._channel, self._on_notify)
        except (TimeoutError, OSError, asyncpg.PostgresError, asyncpg.InterfaceError) as e:
            raise _connect_error(e, self._where) from None
        conn.add_termination_listener(self._on_lost)
        self._conn = conn

    def _on_notify(self, _conn: object, _pid: int, _channel: str, payload: str) -> None:
        try:
            data = json.loads(payload)
            sid, seq = str(data["s"]), int(data["q"])
        except (ValueError, KeyError, TypeError):
            return
        self._callback(sid, seq)

    def _on_lost(self, _conn: object) -> None:
        self._conn = None
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
        if conn is not None:
            try:
                await asyncio.wait_for(conn.close(), timeout=2)
            except (TimeoutError, OSError, asyncpg.PostgresError, asyncpg.InterfaceError):
                conn.terminate()
