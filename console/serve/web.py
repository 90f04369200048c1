"""The web side of ``hitl serve``: textual-serve's aiohttp app, guarded.

Routes (all but ``/login`` need a signed-in session, checked by
:class:`~console.serve.guard.Guard`'s middleware before any handler runs, after
the Host and Origin checks; a page request without one is sent to ``/login``,
anything else gets 401):

- ``GET /`` the console page: title, favicon, "connected to <store>", who is
  signed in and a sign-out button, and the terminal (focused once drawn);
- ``GET /ws`` the websocket textual-serve's page opens: one console process per
  connection (:mod:`console.serve.child`) for the signed-in operator and role,
  within ``[serve] max_consoles`` and ``max_consoles_per_user`` (past either, the
  page says which; the websocket gets 429/503);
- ``GET /static/...`` textual-serve's scripts and fonts, ``GET /hitl.js`` ours;
  ``GET /download/{key}`` its file deliveries;
- ``GET|POST /login`` the sign-in form; ``POST /logout`` sign-out (closes that
  session's consoles) -- :mod:`console.serve.signin`.

Cookies are HttpOnly, SameSite=Strict, Secure when the page is served over
TLS (directly, by ``--public-url https://...``, or per ``X-Forwarded-Proto``
from a trusted proxy), and expire with the session. Request bodies are at most
64 KiB and websocket frames at most 64 KiB; a frame that is not one of the
page's messages (``stdin`` text, ``resize`` within bounds, ``ping``, ``focus``,
``blur``) closes that socket with one log line. On SIGTERM every console gets
``[serve] shutdown_seconds`` to quit, then is killed. Sign-ins, failures,
sign-outs and console starts are logged to the ``hitl.serve`` logger, one line
each, never with a secret.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import ipaddress
import json
import logging
import os
import socket
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp_jinja2
import jinja2
import textual_serve
from aiohttp import WSMsgType, web
from textual_serve.app_service import AppService
from textual_serve.server import Server, to_int

from .auth import Identity, Session, SessionBook, Verifier
from .child import READY, build_argv
from .config import ServeConfig
from .forkserver import ForkServer
from .guard import IDENTITY, Guard
from .signin import SignIn, make_gate, make_limiter
from .starts import START_SECONDS, StartQueue, waiting_text

log = logging.getLogger("hitl.serve")

TEMPLATES = Path(__file__).parent / "templates"
STATIC = Path(textual_serve.__file__).parent / "static"
FAVICON_SVG = (
    '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32">'
    '<rect width="32" height="32" rx="6" fill="#0c181f"/>'
    '<path d="M9 7v18M23 7v18M9 16h14" stroke="#f0a030" stroke-width="4" stroke-linecap="round"/></svg>'
)
FAVICON = "data:image/svg+xml;base64," + base64.b64encode(FAVICON_SVG.encode()).decode()
MAX_BODY = 64 * 1024
"""Bytes of a request body (a sign-in form is a few hundred)."""
MAX_FRAME = 64 * 1024
"""Bytes of one websocket message from the page (a paste is one ``stdin`` frame)."""
MAX_CELLS = (1000, 500)
"""The largest terminal (columns, rows) a page may ask for."""


@dataclass
class ServeOptions:
    """What the command line gave ``hitl serve`` (the store and the console's options)."""

    db: str
    """A SQLite file's absolute path or a PostgreSQL URL (``hitl.toml`` ``[store] password`` stays out of it)."""
    read_only: bool = False
    config: str | None = None
    apps: list[str] = field(default_factory=list)
    show_secrets: bool = False
    secret_patterns: tuple[str, ...] = ()
    proxy_header: str | None = None
    public_url: str | None = None
    python: str = sys.executable


def frame_problem(envelope: Any) -> str | None:
    """Why a decoded websocket message is not one the console page sends (None: it is)."""
    if not isinstance(envelope, list) or not envelope or not isinstance(envelope[0], str):
        return "not a [type, data] list"
    kind, data = envelope[0], envelope[1] if len(envelope) > 1 else None
    if kind == "stdin":
        return None if isinstance(data, str) else "stdin data is not text"
    if kind == "resize":
        if not isinstance(data, dict):
            return "resize data is not an object"
        width, height = data.get("width"), data.get("height")
        for value, most in ((width, MAX_CELLS[0]), (height, MAX_CELLS[1])):
            if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= most:
                return f"resize to {str(width)[:10]}x{str(height)[:10]} is out of bounds"
        return None
    if kind == "ping":
        return None if isinstance(data, str) and len(data) <= 100 else "ping data is not a short text"
    if kind in ("focus", "blur"):
        return None
    return f"unknown type {kind[:20]!r}"


class ConsoleService(AppService):
    """textual-serve's per-connection process, started from an argv list (no shell),
    stopped within a deadline (asked to quit, then terminated, then killed)."""

    def __init__(self, argv: list[str], name: str = "?", forks: ForkServer | None = None, **kw: Any) -> None:
        super().__init__(argv[0], **kw)
        self.argv = argv
        self.name = name
        """Whose console (for the log)."""
        self.forks = forks
        """The pre-imported parent to fork this console from (None: start a fresh interpreter)."""
        self.drawn = asyncio.Event()
        """Set when the console says its first screen is drawn, or its process ended (:mod:`.starts`)."""
        self.size: tuple[int, int] | None = None
        """The page's latest size (a console waiting to start starts at it)."""

    async def on_meta(self, data: bytes) -> None:
        try:
            kind = json.loads(data).get("type")
        except (ValueError, AttributeError):
            kind = None
        if kind == READY:
            self.drawn.set()
            return
        await super().on_meta(data)

    async def send_bytes(self, data: bytes) -> bool:
        if self._stdin is None:  # still waiting to start: keys typed meanwhile are not kept
            return False
        return await super().send_bytes(data)

    async def send_meta(self, data: dict[str, Any]) -> bool:
        if self._stdin is None:
            return False
        return await super().send_meta(data)

    async def set_terminal_size(self, width: int, height: int) -> None:
        self.size = (width, height)  # the latest, also once sent (the start sends it if it came mid-fork)
        if self._stdin is None:
            return
        await super().set_terminal_size(width, height)

    async def _open_app_process(self, width: int = 80, height: int = 24) -> Any:
        if self.forks is not None:
            try:
                forked = await self.forks.start(self.argv[3:], {"COLUMNS": str(width), "ROWS": str(height)})
            except OSError as exc:
                log.warning("console fork server failed (%s): starting consoles afresh", exc)
                self.forks = None
            else:
                # a stand-in offering the asyncio Process calls AppService makes (ForkedProcess)
                self._process = forked  # type: ignore[assignment]
                self._stdin = forked.stdin
                return forked
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

    async def run(self) -> None:
        """Relay the console's output; when it ends (it quit, crashed or was killed), close its socket
        so the page says the console ended instead of waiting on a dead one."""
        try:
            await super().run()
        finally:
            self.drawn.set()
            with contextlib.suppress(Exception):
                await self.remote_close()

    async def stop(self) -> None:
        """textual-serve's stop: :meth:`end` within its default deadline."""
        await self.end()

    async def end(self, timeout: float = 10.0) -> bool:
        """End the console: True when it quit when asked, False when it had to be killed."""
        task, self._task = self._task, None
        if task is None:
            return True
        with contextlib.suppress(Exception):
            await self._download_manager.cancel_app_downloads(app_service_id=self.app_service_id)
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self.send_meta({"type": "quit"}), timeout)
        done, _ = await asyncio.wait({task}, timeout=timeout)
        if done:
            return True
        process = self._process
        for signal_it in ("terminate", "kill"):
            with contextlib.suppress(ProcessLookupError):
                getattr(process, signal_it)()
            done, _ = await asyncio.wait({task}, timeout=2.0)
            if done:
                break
        if not done:
            task.cancel()
        log.warning("console of %r did not quit within %ss: killed", self.name, timeout)
        return False


class ConsoleServer(Guard, SignIn, Server):
    """textual-serve's server with sign-in, roles and one console per signed-in connection."""

    def __init__(self, options: ServeOptions, config: ServeConfig, *, host: str, port: int) -> None:
        super().__init__("hitl", host=host, port=port, title=config.title, public_url=options.public_url)
        from engine.store.factory import store_label

        self.options = options
        from engine.permissions import use_policy

        use_policy(options.config)  # who may answer: the served config's rules, on every write of this process
        self.config = config
        self.statics_path = STATIC
        self.templates_path = TEMPLATES
        self.favicon = FAVICON
        self.sessions = SessionBook(config.session_seconds)
        self.limiter = make_limiter(config)
        self.gate = make_gate(config)
        self.verifier = Verifier(config) if config.has_operators else None
        self.services: set[ConsoleService] = set()
        self.sockets: set[web.WebSocketResponse] = set()
        self.consoles: dict[str, int] = {}
        """Open consoles per signed-in name (``[serve] max_consoles_per_user``)."""
        self.store_label = store_label(options.db)
        """How the pages and the log name the store (a URL's password masked)."""
        self.forks: ForkServer | None = None
        """Where consoles are forked from (:mod:`console.serve.forkserver`), once started."""
        self.starts = StartQueue(config.console_starts)
        """Consoles starting at once, the others in turn (:mod:`console.serve.starts`)."""

    def start_fork_server(self) -> None:
        """Start the pre-imported console parent ([serve] fork_consoles; Linux). Failing, consoles start afresh."""
        if not self.config.fork_consoles or not hasattr(os, "fork") or not hasattr(socket, "send_fds"):
            return
        from types import SimpleNamespace

        # textual-serve's environment of a console (it reads only self.debug), before any service exists
        env = AppService._build_environment(SimpleNamespace(debug=self.debug))  # type: ignore[arg-type]
        warm = build_argv(self.options.python, db=self.options.db, read_only=True, config=self.options.config,
                          apps=self.options.apps, show_secrets=False, secret_patterns=self.options.secret_patterns,
                          operator=None, read_only_reason=None)[3:]
        try:
            self.forks = ForkServer(env, self.options.python, warm)
        except OSError as exc:
            log.warning("console fork server did not start (%s): consoles start afresh", exc)

    # ------------------------------------------------------------ app
    async def _make_app(self) -> web.Application:
        app = web.Application(middlewares=[self.guard], client_max_size=MAX_BODY)
        aiohttp_jinja2.setup(app, loader=jinja2.FileSystemLoader(self.templates_path), autoescape=True)
        app.add_routes(
            [
                web.get("/", self.handle_index, name="index"),
                web.get("/ws", self.handle_websocket, name="websocket"),
                web.get("/download/{key}", self.handle_download, name="download"),
                web.static("/static", self.statics_path, show_index=False, name="static"),
                web.get("/hitl.js", self.handle_script, name="script"),
                web.get("/login", self.handle_login_page, name="login"),
                web.post("/login", self.handle_login, name="login_post"),
                web.post("/logout", self.handle_logout, name="logout"),
            ]
        )
        app.on_response_prepare.append(self.on_response_prepare)
        app.on_shutdown.append(self.on_shutdown)
        from .api import mount_api

        app.router.add_get("/metrics", self.handle_metrics, name="metrics")
        mount_api(self, app)  # /api/v1: the HTTP API (tokens or this server's identity; JSON errors)
        return app

    async def on_shutdown(self, app: web.Application) -> None:
        """Every console gets ``shutdown_seconds`` to quit (then is killed); every socket is closed."""
        drain = self.config.shutdown_seconds
        await asyncio.gather(*(s.end(drain) for s in list(self.services)), return_exceptions=True)
        await asyncio.gather(*(ws.close(code=1001, message=b"server shutting down") for ws in list(self.sockets)),
                             return_exceptions=True)
        if self.gate is not None:
            self.gate.close()
        if self.forks is not None:
            self.forks.close()

    async def handle_metrics(self, request: web.Request) -> web.StreamResponse:
        """``GET /metrics`` (:mod:`engine.metrics`): this server's counters and the
        store's gauges, for direct connections from ``[serve] metrics_from``
        (loopback by default) only -- never through a proxy, which would hand
        them to whoever it serves. No sign-in: a scraper has none."""
        from engine import metrics

        peer = self._peer(request)
        try:
            allowed = any(ipaddress.ip_address(peer) in ipaddress.ip_network(n, strict=False)
                          for n in self.config.metrics_from)
        except ValueError:
            allowed = False
        if not allowed or "X-Forwarded-For" in request.headers or "Forwarded" in request.headers:
            log.warning("refused /metrics to %s (not in [serve] metrics_from, or proxied)", peer)
            raise web.HTTPNotFound(text="not found\n")
        ctx = getattr(self, "api_context", None)
        body = await metrics.render(ctx.store if ctx is not None else None)
        return web.Response(body=body.encode(), headers={"Content-Type": metrics.CONTENT_TYPE})

    async def handle_script(self, request: web.Request) -> web.StreamResponse:
        return web.FileResponse(TEMPLATES / "hitl.js", headers={"Content-Type": "text/javascript"})

    # ------------------------------------------------------------ limits
    def console_refusal(self, who: Identity) -> tuple[int, str] | None:
        """(status, why) when ``who`` may not open another console now; None when they may."""
        mine, total = self.consoles.get(who.name, 0), sum(self.consoles.values())
        if mine >= self.config.max_consoles_per_user:
            return 429, (f"{who.name} already has {mine} consoles open, the most one name may have on this server "
                         f"([serve] max_consoles_per_user = {self.config.max_consoles_per_user}). "
                         "Close one (its tab or window), then open this page again.")
        if total >= self.config.max_consoles:
            return 503, (f"This server already runs {total} consoles, the most it allows "
                         f"([serve] max_consoles = {self.config.max_consoles}). Try again when someone closes one.")
        return None

    # ------------------------------------------------------------ console
    def _ws_url(self, request: web.Request) -> str:
        if self.options.public_url:
            base = self.options.public_url.rstrip("/")
            return ("wss:" if base.startswith("https:") else "ws:") + base.split(":", 1)[1] + "/ws"
        return f"{'wss' if request.secure else 'ws'}://{request.host}/ws"

    async def handle_index(self, request: web.Request) -> web.StreamResponse:
        who: Identity = request[IDENTITY]
        context = {"title": self.config.title, "store": self.store_label, "favicon": FAVICON, "who": who,
                   "read_only": who.read_only or self.options.read_only, "can_sign_out": who.via == "password"}
        refused = self.console_refusal(who)
        if refused is not None:
            status, why = refused
            log.warning("console refused for %r from %s: %s", who.name, self.client_address(request), why)
            response = aiohttp_jinja2.render_template("limit.html", request, {**context, "why": why}, status=status)
        else:
            response = aiohttp_jinja2.render_template(
                "console.html", request,
                {**context, "font_size": to_int(request.query.get("fontsize", "16"), 16),
                 "websocket_url": self._ws_url(request), "static_url": "/static/"},
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

    async def _process_messages(self, websocket: web.WebSocketResponse, app_service: AppService,
                                who: Identity | None = None, client: str = "?") -> None:
        """The page's messages to its console; anything else closes the socket with one log line."""
        name = who.name if who else "?"
        async for message in websocket:
            if message.type == WSMsgType.ERROR:
                log.warning("closed the console of %r from %s: %s", name, client, str(message.data)[:120])
                return
            if message.type != WSMsgType.TEXT:
                problem: str | None = "a binary frame"
            else:
                try:
                    envelope = json.loads(message.data)
                except ValueError:
                    envelope = None
                problem = frame_problem(envelope)
            if problem is not None:
                log.warning("closed the console of %r from %s: bad websocket frame (%s)", name, client, problem)
                await websocket.close(code=1003, message=b"bad frame")
                return
            kind, data = envelope[0], envelope[1] if len(envelope) > 1 else None
            if kind == "stdin" and isinstance(data, str):  # (as frame_problem checked)
                await app_service.send_bytes(data.encode("utf-8"))
            elif kind == "resize" and isinstance(data, dict):
                await app_service.set_terminal_size(data["width"], data["height"])
            elif kind == "ping":
                await websocket.send_json(["pong", data])
            elif kind == "blur":
                await app_service.blur()
            elif kind == "focus":
                await app_service.focus()

    async def _start_in_turn(self, service: ConsoleService, websocket: web.WebSocketResponse,
                             width: int, height: int) -> None:
        """Start ``service`` when the start queue lets it (meanwhile the page says how many start
        before it); the slot is held until its first screen is drawn, it ends, or START_SECONDS pass."""
        await self.starts.take(lambda ahead: websocket.send_bytes(waiting_text(ahead)))
        try:
            width, height = service.size or (width, height)
            starting = asyncio.ensure_future(service.start(width, height))
            try:
                await asyncio.shield(starting)
            except asyncio.CancelledError:
                with contextlib.suppress(Exception):
                    await starting  # a fork in flight completes, so the caller's stop() ends it
                raise
            if service.size is not None and service.size != (width, height):
                # the page was resized while its console was being forked: that size was kept, not sent
                await service.set_terminal_size(*service.size)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(service.drawn.wait(), START_SECONDS)
        finally:
            self.starts.release()

    async def handle_websocket(self, request: web.Request) -> web.WebSocketResponse:
        who: Identity = request[IDENTITY]
        client = self.client_address(request)
        _, token = self.identity(request)
        session: Session | None = self.sessions.get(token) if token else None
        websocket = web.WebSocketResponse(heartbeat=15, max_msg_size=MAX_FRAME)
        if not websocket.can_prepare(request).ok:
            log.warning("refused a bad websocket handshake from %s", client)
            raise web.HTTPBadRequest(text="not a websocket handshake this server accepts\n")
        refused = self.console_refusal(who)
        if refused is not None:
            log.warning("console refused for %r from %s: %s", who.name, client, refused[1])
            error = web.HTTPTooManyRequests if refused[0] == 429 else web.HTTPServiceUnavailable
            raise error(text=refused[1] + "\n")
        width = min(max(to_int(request.query.get("width", "80"), 80), 1), MAX_CELLS[0])
        height = min(max(to_int(request.query.get("height", "24"), 24), 1), MAX_CELLS[1])
        service: ConsoleService | None = None
        closer: Callable[[], object] | None = None
        expiry: asyncio.TimerHandle | None = None
        self.consoles[who.name] = self.consoles.get(who.name, 0) + 1
        try:
            await websocket.prepare(request)
            self.sockets.add(websocket)
            service = ConsoleService(
                self.argv_for(who),
                who.name,
                self.forks,
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
            log.info("console opened for %r (%s) from %s, %dx%d", who.name, who.role, client, width, height)
            starter = asyncio.create_task(self._start_in_turn(service, websocket, width, height))

            def failed(task: asyncio.Task[None]) -> None:  # the page must not wait on a console that never came
                error = None if task.cancelled() else task.exception()
                if error is not None:
                    log.warning("console of %r from %s did not start: %s", who.name, client,
                                str(error).splitlines()[0][:160] if str(error) else type(error).__name__)
                    asyncio.ensure_future(websocket.close())

            starter.add_done_callback(failed)
            try:
                await self._process_messages(websocket, service, who, client)
            finally:
                if not starter.done():
                    starter.cancel()
                await asyncio.wait({starter})  # a fork in flight completes first, so stop() below ends it
        except asyncio.CancelledError:
            await websocket.close()
        except Exception as error:  # noqa: BLE001 -- one line; the browser sees the session end
            log.warning("console of %r from %s ended: %s", who.name, client, str(error).splitlines()[0][:160]
                        if str(error) else type(error).__name__)
        finally:
            self.consoles[who.name] -= 1
            if not self.consoles[who.name]:
                del self.consoles[who.name]
            self.sockets.discard(websocket)
            if expiry is not None:
                expiry.cancel()
            if session is not None and closer is not None:
                session.closers.discard(closer)
            if service is not None:
                self.services.discard(service)
                await service.end(self.config.shutdown_seconds)
            log.info("console closed for %r", who.name)
        return websocket


async def start(server: ConsoleServer, host: str, port: int) -> tuple[web.AppRunner, int]:
    """Start serving; returns the runner and the bound port (``port=0`` picks a free one)."""
    import aiohttp.web_response

    # aiohttp names itself and Python's version on every answer, its own error pages included
    # (which no response hook sees): this process answers as "hitl", nothing more.
    aiohttp.web_response.SERVER_SOFTWARE = "hitl"
    app = await server._make_app()
    await asyncio.to_thread(server.start_fork_server)
    # The handlers are ended by on_shutdown (consoles stopped, sockets closed); what is left gets 2 s.
    runner = web.AppRunner(app, access_log=None, shutdown_timeout=2.0)
    await runner.setup()
    site = web.TCPSite(runner, host, port)
    await site.start()
    sockets = getattr(site._server, "sockets", None) or []
    bound = sockets[0].getsockname()[1] if sockets else port
    return runner, bound


class OneLine(logging.Filter):
    """aiohttp's own complaints (a request it could not parse, a handshake it refused) as one
    line each: the exception's first line, never its traceback."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.exc_info and record.exc_info[1] is not None:
            exc = record.exc_info[1]
            text = str(exc).splitlines()[0][:160] if str(exc) else ""
            record.msg, record.args = f"{record.getMessage()}: {type(exc).__name__} {text}".rstrip(), None
            record.exc_info = record.exc_text = None
        return True


def setup_logging() -> None:
    """One line per event on stderr, for hitl's log and aiohttp's; never a secret, never a traceback."""
    handler = logging.StreamHandler()
    handler.setFormatter(logging.Formatter("%(asctime)s %(name)s %(levelname)s %(message)s"))
    handler.addFilter(OneLine())
    if not log.handlers and not logging.getLogger("hitl").handlers:  # --log-format json installed its own
        log.addHandler(handler)
        log.setLevel(logging.INFO)
    for name in ("aiohttp.server", "aiohttp.web", "aiohttp.websocket", "aiohttp.access", "textual_serve"):
        other = logging.getLogger(name)
        if not other.handlers:
            other.addHandler(handler)
            other.propagate = False


def run(server: ConsoleServer, host: str, port: int, announce: Callable[[str], None]) -> None:
    """Serve until Ctrl-C / SIGTERM; ``announce`` gets the URL once listening."""
    setup_logging()

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
