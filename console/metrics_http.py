"""``GET /metrics`` on a port of its own: ``hitl worker --metrics-port`` and
``hitl notify --metrics-port`` (``hitl serve`` has the route on its own server).

A minimal HTTP/1.1 responder on asyncio streams, so that a worker needs no web
framework: one request per connection, the request line and headers bounded
(8 KiB, 10 s), ``GET``/``HEAD`` of ``/metrics`` only (404 / 405 otherwise, 400 for
what is not HTTP), and the body from :func:`engine.metrics.render`. Loopback by
default: pass another host to expose it (behind whatever guards your network).
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from engine import metrics

_LIMIT = 8192
_TIMEOUT = 10.0


async def start(store: Any, host: str = "127.0.0.1", port: int = 0) -> tuple[asyncio.base_events.Server, int]:
    """Start serving; returns the server and the port it listens on (``port`` 0: any free one)."""

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            status, body, send = await asyncio.wait_for(_answer(reader, store), _TIMEOUT)
        except (TimeoutError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, ValueError, ConnectionError):
            status, body, send = "400 Bad Request", b"bad request\n", True
        kind = metrics.CONTENT_TYPE if status.startswith("200") else "text/plain; charset=utf-8"
        head = f"HTTP/1.1 {status}\r\nContent-Type: {kind}\r\nContent-Length: {len(body)}\r\nConnection: close\r\n\r\n"
        with contextlib.suppress(ConnectionError):
            writer.write(head.encode() + (body if send else b""))
            await writer.drain()
        writer.close()
        with contextlib.suppress(ConnectionError):
            await writer.wait_closed()

    server = await asyncio.start_server(handle, host, port, limit=_LIMIT)
    bound = server.sockets[0].getsockname()[1] if server.sockets else port
    return server, bound


async def _answer(reader: asyncio.StreamReader, store: Any) -> tuple[str, bytes, bool]:
    """(status, body, whether to send the body) for one request."""
    line = (await reader.readuntil(b"\r\n")).decode("latin-1").rstrip("\r\n")
    parts = line.split(" ")
    if len(parts) != 3 or not parts[2].startswith("HTTP/"):
        return "400 Bad Request", b"bad request\n", True
    for _ in range(100):  # the headers, up to the blank line
        if (await reader.readuntil(b"\r\n")) == b"\r\n":
            break
    else:
        return "400 Bad Request", b"too many headers\n", True
    method, target = parts[0], parts[1].split("?", 1)[0]
    if target != "/metrics":
        return "404 Not Found", b"not found: only /metrics is served here\n", True
    if method not in ("GET", "HEAD"):
        return "405 Method Not Allowed", b"GET /metrics\n", True
    return "200 OK", (await metrics.render(store)).encode(), method == "GET"
