"""Real receivers started by the tests, on loopback: an HTTP server that records
what it is sent (and can fail, or hold a request), and an SMTP server (aiosmtpd)
with STARTTLS and a login."""

from __future__ import annotations

import asyncio
import ssl
import subprocess
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aiohttp import web


@dataclass
class Received:
    headers: dict[str, str]
    body: bytes


@dataclass
class HttpReceiver:
    """``fail`` first requests answer 500; while ``held``, requests wait for :meth:`release`."""

    fail: int = 0
    held: bool = False
    gate: asyncio.Event = field(default_factory=asyncio.Event)
    got: list[Received] = field(default_factory=list)
    url: str = ""
    _runner: Any = None
    arrived: asyncio.Event = field(default_factory=asyncio.Event)

    async def start(self) -> HttpReceiver:
        async def handle(request: web.Request) -> web.Response:
            self.got.append(Received(dict(request.headers), await request.read()))
            self.arrived.set()
            if self.held:
                await self.gate.wait()
            if self.fail > 0:
                self.fail -= 1
                return web.Response(status=500, text="down")
            return web.Response(text="ok")

        app = web.Application()
        app.router.add_post("/hook", handle)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        self.url = f"http://127.0.0.1:{port}/hook"
        return self

    def release(self) -> None:
        """Answer the held requests, and hold no more."""
        self.held = False
        self.gate.set()

    async def stop(self) -> None:
        self.release()
        await self._runner.cleanup()


def self_signed(directory: Path) -> tuple[Path, Path]:
    cert, key = directory / "cert.pem", directory / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out",
                    str(cert), "-days", "1", "-subj", "/CN=localhost", "-addext", "subjectAltName=IP:127.0.0.1"],
                   check=True, capture_output=True, timeout=60)
    return cert, key


class SmtpSink:
    """aiosmtpd on loopback: STARTTLS required, a login required, messages kept."""

    def __init__(self, directory: Path, user: str, password: str) -> None:
        from aiosmtpd.controller import Controller
        from aiosmtpd.smtp import AuthResult

        cert, key = self_signed(directory)
        self.cert = cert
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(cert, key)
        self.messages: list[Any] = []
        self.lock = threading.Lock()
        sink = self

        class Handler:
            async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
                from email import message_from_bytes, policy

                with sink.lock:
                    sink.messages.append(message_from_bytes(envelope.content, policy=policy.default))
                return "250 OK"

        def authenticator(server: Any, session: Any, envelope: Any, mechanism: str, auth_data: Any) -> Any:
            ok = getattr(auth_data, "login", None) == user.encode() and auth_data.password == password.encode()
            return AuthResult(success=ok)

        import socket

        with socket.socket() as probe:  # a free loopback port (aiosmtpd's controller cannot be told 0)
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        self.controller = Controller(Handler(), hostname="127.0.0.1", port=self.port, tls_context=context,
                                     require_starttls=True, authenticator=authenticator, auth_required=True)

    def start(self) -> SmtpSink:
        self.controller.start()
        return self

    def stop(self) -> None:
        self.controller.stop()
