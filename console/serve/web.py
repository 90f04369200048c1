"""The web side of ``hitl serve``: textual-serve's aiohttp app, guarded.

Routes (all but ``/login`` need a signed-in session, checked by one
middleware before any handler runs; a page request without one is sent to
``/login``, anything else gets 401):

- ``GET /`` the console page: title, favicon, "connected to <store>", who is
  signed in and a sign-out button, and the terminal;
- ``GET /ws`` the websocket textual-serve's page opens: one console process per
  connection (:mod:`console.serve.child`) for the signed-in operator and role;
- ``GET /static/...`` textual-serve's scripts and fonts; ``GET /download/{key}``
  its file deliveries;
- ``GET|POST /login`` the sign-in form; ``POST /logout`` sign-out (closes that
  session's consoles).

Cookies are HttpOnly, SameSite=Strict, Secure when the page is served over
TLS (directly, by ``--public-url https://...``, or per ``X-Forwarded-Proto``
from a trusted proxy), and expire with the session. Form posts and websocket
upgrades from another origin are refused. Sign-ins, failures, sign-outs and
console starts are logged to the ``hitl.serve`` logger, never with a secret.
"""

from __future__ import annotations

import asyncio
import base64
import ipaddress
import logging
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import aiohttp_jinja2
import jinja2
import textual_serve
from aiohttp import web
from textual_serve.app_service import AppService
from textual_serve.server import Server, to_int

from .answer_page import PREFIX as ANSWER_PREFIX
from .api import PREFIX as API_PREFIX
from .auth import COOKIE, FailureLimiter, Identity, Session, SessionBook, Verifier
from .child import build_argv
from .config import ServeConfig, valid_name

log = logging.getLogger("hitl.serve")

TEMPLATES = Path(__file__).parent / "templates"
STATIC = Path(textual_serve.__file__).parent / "static"
FAVICON_SVG = (
    '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32">'
    '<rect width="32" height="32" rx="6" fill="#0c181f"/>'
    '<path d="M9 7v18M23 7v18M9 16h14" stroke="#f0a030" stroke-width="4" stroke-linecap="round"/></svg>'
)
FAVICON = "data:image/svg+xml;base64," + base64.b64encode(FAVICON_SVG.encode()).decode()
PUBLIC = {"/login"}
"""The only routes served without a session."""


@dataclass
class ServeOptions:
    """What the command line gave ``hitl serve`` (the store and the console's options)."""

    db: Path
    read_only: bool = False
    config: str | None = None
    apps: list[str] = field(default_factory=list)
    show_secrets: bool = False
    secret_patterns: tuple[str, ...] = ()
    proxy_header: str | None = None
    public_url: str | None = None
    python: str = sys.executable


class ConsoleService(AppService):
    """textual-serve's per-connection process, started from an argv list (no shell)."""

    def __init__(self, argv: list[str], **kw: Any) -> None:
        super().__init__(argv[0], **kw)
        self.argv = argv

    async def _open_app_process(self, width: int = 80, height: int = 24) -> Any:
        self._process = process = await asyncio.create_subprocess_exec(
            *self.argv,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=self._build_environment(width=width, height=height),
        )
        assert process.stdin is not None
        self._stdin = process.stdin
        return process


class ConsoleServer(Server):
    """textual-serve's server with sign-in, roles and one console per signed-in connection."""

    def __init__(self, options: ServeOptions, config: ServeConfig, *, host: str, port: int) -> None:
        super().__init__("hitl", host=host, port=port, title=config.title, public_url=options.public_url)
        self.options = options
        self.config = config
        self.statics_path = STATIC
        self.templates_path = TEMPLATES
        self.sessions = SessionBook(config.session_seconds)
        self.limiter = FailureLimiter(config.max_failed_signins, config.signin_window_seconds)
        self.verifier = Verifier(config) if config.has_operators else None
        self.services: set[AppService] = set()

    # ------------------------------------------------------------ app
    @property
    def mode(self) -> str:
        """``proxy`` (trusted header), ``password`` (operators configured) or ``local`` (no sign-in)."""
        if self.options.proxy_header:
            return "proxy"
        return "password" if self.verifier is not None else "local"

    async def _make_app(self) -> web.Application:
        app = web.Application(middlewares=[self.guard])
        aiohttp_jinja2.setup(app, loader=jinja2.FileSystemLoader(self.templates_path), autoescape=True)
        app.add_routes(
            [
                web.get("/", self.handle_index, name="index"),
                web.get("/ws", self.handle_websocket, name="websocket"),
                web.get("/download/{key}", self.handle_download, name="download"),
                web.static("/static", self.statics_path, show_index=False, name="static"),
                web.get("/login", self.handle_login_page, name="login"),
                web.post("/login", self.handle_login, name="login_post"),
                web.post("/logout", self.handle_logout, name="logout"),
            ]
        )
        app.on_shutdown.append(self.on_shutdown)
        from .api import mount_api

        mount_api(self, app)  # /api/v1: the HTTP API (tokens or this server's identity; JSON errors)
        return app

    async def on_shutdown(self, app: web.Application) -> None:
        await asyncio.gather(*(s.stop() for s in list(self.services)), return_exceptions=True)

    # ------------------------------------------------------------ who is this
    def _peer(self, request: web.Request) -> str:
        return request.remote or "?"

    def _trusted_peer(self, request: web.Request) -> bool:
        try:
            peer = ipaddress.ip_address(self._peer(request))
        except ValueError:
            return False
        return any(peer == ipaddress.ip_address(p) for p in self.config.trusted_proxies)

    def _proxy_identity(self, request: web.Request) -> Identity | None:
        header = self.options.proxy_header
        assert header is not None
        name = request.headers.get(header)
        if name is None:
            return None
        if not self._trusted_peer(request):
            log.warning("refused %s header from untrusted peer %s", header, self._peer(request))
            return None
        if not valid_name(name):
            log.warning("refused %s header with an invalid name %r from %s", header, name[:80], self._peer(request))
            return None
        entry = self.config.operators.get(name)
        return Identity(name, entry.role if entry else self.config.proxy_role, "proxy")

    def identity(self, request: web.Request) -> tuple[Identity | None, str | None]:
        """(who, their cookie token) for ``request``; (None, None) when nobody is signed in."""
        if self.mode == "proxy":
            return self._proxy_identity(request), None
        if self.mode == "local":
            from engine.apps import default_operator

            role = "viewer" if self.options.read_only else "operator"
            return Identity(default_operator(self.options.config) or "operator", role, "local"), None
        token = request.cookies.get(COOKIE)
        session = self.sessions.get(token)
        return (session.identity, token) if session else (None, None)

    def _secure(self, request: web.Request) -> bool:
        if request.secure or (self.options.public_url or "").startswith("https:"):
            return True
        return request.headers.get("X-Forwarded-Proto") == "https" and self._trusted_peer(request)

    def _same_origin(self, request: web.Request) -> bool:
        origin = request.headers.get("Origin")
        if origin is None:
            return True  # not a browser's cross-site request (browsers always send Origin there)
        expected = {request.host}
        if self.options.public_url:
            expected.add(urlsplit(self.options.public_url).netloc)
        return urlsplit(origin).netloc in expected

    @web.middleware
    async def guard(self, request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]):
        """Every route but /login needs a signed-in identity; cross-origin posts and upgrades are refused."""
        if (request.method == "POST" or request.path == "/ws") and not self._same_origin(request):
            log.warning("refused a %s %s from origin %r", request.method, request.path, request.headers.get("Origin"))
            raise web.HTTPForbidden(text="cross-origin request refused\n")
        if request.path in PUBLIC or request.path.startswith((API_PREFIX, ANSWER_PREFIX)):
            return await handler(request)  # the API signs its callers in itself (console.serve.api)
        who, _token = self.identity(request)
        if who is None:
            if self.mode == "proxy":
                raise web.HTTPUnauthorized(text=f"no operator: the proxy did not send {self.options.proxy_header}\n")
            if request.method == "GET" and request.path == "/":
                raise web.HTTPSeeOther("/login")
            raise web.HTTPUnauthorized(text="sign in first: /login\n")
        request["identity"] = who
        return await handler(request)

    # ------------------------------------------------------------ sign-in
    async def handle_login_page(self, request: web.Request) -> web.StreamResponse:
        if self.mode != "password":
            raise web.HTTPSeeOther("/")
        who, _ = self.identity(request)
        if who is not None:
            raise web.HTTPSeeOther("/")
        return self._login_page(request, "", 200)

    def _login_page(self, request: web.Request, error: str, status: int, name: str = "") -> web.StreamResponse:
        response = aiohttp_jinja2.render_template(
            "login.html",
            request,
            {"title": self.config.title, "store": str(self.options.db), "favicon": FAVICON, "error": error,
             "name": name},
            status=status,
        )
        response.headers["Cache-Control"] = "no-store"
        return response

    async def handle_login(self, request: web.Request) -> web.StreamResponse:
        if self.mode != "password" or self.verifier is None:
            raise web.HTTPSeeOther("/")
        form = await request.post()
        name = str(form.get("name", "")).strip()
        secret = str(form.get("secret", ""))
        peer = self._peer(request)
        keys = (f"addr:{peer}", f"name:{name}")
        wait = self.limiter.retry_after(*keys)
        if wait > 0:
            log.warning("sign-in refused (rate-limited, %ds left): %r from %s", wait, name[:64], peer)
            response = self._login_page(
                request, f"Too many failed sign-ins: try again in {int(wait) + 1} s.", 429, name[:64]
            )
            response.headers["Retry-After"] = str(int(wait) + 1)
            return response
        entry = await asyncio.to_thread(self.verifier.verify, name, secret) if name and secret else None
        if entry is None:
            count = self.limiter.failed(*keys)
            log.warning(
                "sign-in failed: %r from %s (%d of %d in %ds)", name[:64], peer, count,
                self.limiter.limit, self.limiter.window,
            )
            return self._login_page(request, "Wrong name or password.", 401, name[:64])
        self.limiter.succeeded(f"name:{name}")
        token, session = self.sessions.create(Identity(entry.name, entry.role, "password"))
        log.info("signed in: %r (%s) from %s", entry.name, entry.role, peer)
        response = web.Response(status=303, headers={"Location": "/"})
        response.set_cookie(
            COOKIE, token, max_age=int(self.config.session_seconds), path="/", httponly=True,
            samesite="Strict", secure=self._secure(request),
        )
        return response

    async def handle_logout(self, request: web.Request) -> web.StreamResponse:
        who: Identity = request["identity"]
        _, token = self.identity(request)
        if token is not None:
            self.sessions.drop(token)
            log.info("signed out: %r from %s", who.name, self._peer(request))
        response = web.Response(status=303, headers={"Location": "/login" if self.mode == "password" else "/"})
        response.del_cookie(COOKIE, path="/")
        return response

    # ------------------------------------------------------------ console
    def _ws_url(self, request: web.Request) -> str:
        if self.options.public_url:
            base = self.options.public_url.rstrip("/")
            return ("wss:" if base.startswith("https:") else "ws:") + base.split(":", 1)[1] + "/ws"
        return f"{'wss' if request.secure else 'ws'}://{request.host}/ws"

    async def handle_index(self, request: web.Request) -> web.StreamResponse:
        who: Identity = request["identity"]
        response = aiohttp_jinja2.render_template(
            "console.html",
            request,
            {
                "title": self.config.title,
                "store": str(self.options.db),
                "favicon": FAVICON,
                "font_size": to_int(request.query.get("fontsize", "16"), 16),
                "websocket_url": self._ws_url(request),
                "static_url": "/static/",
                "who": who,
                "read_only": who.read_only or self.options.read_only,
                "can_sign_out": who.via == "password",
            },
        )
        response.headers["Cache-Control"] = "no-store"
        return response

    def argv_for(self, who: Identity) -> list[str]:
        read_only = self.options.read_only or who.read_only
        reason = None
        if who.read_only:
            reason = f"{who.name} is signed in as a viewer (viewers cannot write)"
        elif self.options.read_only:
            reason = "the server runs --read-only"
        return build_argv(
            self.options.python,
            db=self.options.db,
            read_only=read_only,
            config=self.options.config,
            apps=self.options.apps,
            show_secrets=self.options.show_secrets,
            secret_patterns=self.options.secret_patterns,
            operator=None if who.via == "local" else who.name,
            read_only_reason=reason,
        )

    async def handle_websocket(self, request: web.Request) -> web.WebSocketResponse:
        who: Identity = request["identity"]
        _, token = self.identity(request)
        session: Session | None = self.sessions.get(token) if token else None
        websocket = web.WebSocketResponse(heartbeat=15)
        width = to_int(request.query.get("width", "80"), 80)
        height = to_int(request.query.get("height", "24"), 24)
        service: ConsoleService | None = None
        closer: Callable[[], object] | None = None
        expiry: asyncio.TimerHandle | None = None
        try:
            await websocket.prepare(request)
            service = ConsoleService(
                self.argv_for(who),
                write_bytes=websocket.send_bytes,
                write_str=websocket.send_str,
                close=websocket.close,
                download_manager=self.download_manager,
                debug=self.debug,
            )
            self.services.add(service)
            if session is not None:
                def closer() -> object:
                    return asyncio.ensure_future(websocket.close())

                session.closers.add(closer)
                expiry = asyncio.get_running_loop().call_later(self.sessions.remaining(session), closer)
            log.info("console opened for %r (%s) from %s, %dx%d", who.name, who.role, self._peer(request), width, height)
            await service.start(width, height)
            try:
                await self._process_messages(websocket, service)
            finally:
                await service.stop()
        except asyncio.CancelledError:
            await websocket.close()
        except Exception as error:  # noqa: BLE001 -- logged; the browser sees the session end
            log.exception(error)
        finally:
            if expiry is not None:
                expiry.cancel()
            if session is not None and closer is not None:
                session.closers.discard(closer)
            if service is not None:
                self.services.discard(service)
                await service.stop()
            log.info("console closed for %r", who.name)
        return websocket


async def start(server: ConsoleServer, host: str, port: int) -> tuple[web.AppRunner, int]:
    """Start serving; returns the runner and the bound port (``port=0`` picks a free one)."""
    app = await server._make_app()
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, host, port)
    await site.start()
    sockets = getattr(site._server, "sockets", None) or []
    bound = sockets[0].getsockname()[1] if sockets else port
    return runner, bound


def run(server: ConsoleServer, host: str, port: int, announce: Callable[[str], None]) -> None:
    """Serve until Ctrl-C / SIGTERM; ``announce`` gets the URL once listening."""

    if not log.handlers:  # sign-ins, failures, consoles: one line each on stderr, never a secret
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter("%(asctime)s %(name)s %(levelname)s %(message)s"))
        log.addHandler(handler)
        log.setLevel(logging.INFO)

    async def main() -> None:
        runner, bound = await start(server, host, port)
        shown = host if ":" not in host else f"[{host}]"
        announce(f"http://{shown}:{bound}/")
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        import signal

        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        try:
            await stop.wait()
        finally:
            await runner.cleanup()

    asyncio.run(main())
