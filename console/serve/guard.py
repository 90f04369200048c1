"""Who may reach ``hitl serve``, and what every answer carries.

:class:`Guard` is mixed into :class:`console.serve.web.ConsoleServer`; its
middleware runs before every handler:

- **Host** must be one this server is served as (DNS rebinding: a page on
  ``evil.example`` whose name resolves to 127.0.0.1 must not reach the console):
  ``localhost``, an IP literal, the bind name, ``--public-url``'s host, or
  ``[serve] allowed_hosts``. Anything else gets 421 and one log line.
- **Origin**, when a browser sends one, must be this server's on every form post
  and every websocket upgrade, in every mode (sign-in, proxy, loopback).
- The **client address** is the peer's, or behind a trusted proxy the rightmost
  ``X-Forwarded-For`` entry that is not itself a trusted proxy (a client can
  prepend anything; only what the proxies appended is believed). The proxy's
  identity header and ``X-Forwarded-Proto`` are likewise read from the last value.
- Every response gets a Content-Security-Policy with ``frame-ancestors 'none'``,
  ``X-Frame-Options: DENY``, ``nosniff``, no referrer to other sites, and ``Server: hitl`` (no
  software or version).
- A malformed request (a form that is not UTF-8, multipart without its boundary)
  gets 400 and one log line, never a 500 with a traceback.
"""

from __future__ import annotations

import ipaddress
import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from aiohttp import web

from .answer_page import PREFIX as ANSWER_PREFIX
from .api_core import PREFIX as API_PREFIX
from .auth import COOKIE, Identity
from .config import valid_name

if TYPE_CHECKING:
    from .auth import SessionBook
    from .config import ServeConfig
    from .web import ServeOptions

log = logging.getLogger("hitl.serve")

CLIENT = web.RequestKey("client", str)
"""The client's address, once worked out for a request."""
IDENTITY = web.RequestKey("identity", Identity)
"""Who is signed in, set by the guard before the handler runs."""
PUBLIC = {"/login"}
"""The only routes served without a session."""

SECURITY_HEADERS = {
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",  # (no-referrer makes Chromium send "Origin: null" on form posts)
    "Cross-Origin-Opener-Policy": "same-origin",
    "Server": "hitl",
}


def _host_name(host: str) -> str:
    """``example.com`` of ``Example.COM:8000``; ``::1`` of ``[::1]:8000``."""
    host = host.strip().lower()
    if host.startswith("["):
        return host[1:].split("]", 1)[0]
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


def _is_ip(name: str) -> bool:
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


class Guard:
    """The checks in front of every route (a mixin: the server provides the attributes below)."""

    options: ServeOptions
    config: ServeConfig
    sessions: SessionBook
    host: str

    @property
    def mode(self) -> str:
        """``proxy`` (trusted header), ``password`` (operators configured) or ``local`` (no sign-in)."""
        if self.options.proxy_header:
            return "proxy"
        return "password" if self.config.has_operators else "local"

    # ------------------------------------------------------------ addresses
    def _trusted(self, address: str) -> bool:
        try:
            peer = ipaddress.ip_address(address.strip().strip("[]"))
        except ValueError:
            return False
        return any(peer == ipaddress.ip_address(p) for p in self.config.trusted_proxies)

    def _peer(self, request: web.Request) -> str:
        return request.remote or "?"

    def _trusted_peer(self, request: web.Request) -> bool:
        return self._trusted(self._peer(request))

    def client_address(self, request: web.Request) -> str:
        """The browser's address: the peer, or behind trusted proxies the rightmost untrusted hop."""
        if CLIENT in request:
            return request[CLIENT]
        address = self._peer(request)
        if self._trusted(address):
            hops = [h.strip() for v in request.headers.getall("X-Forwarded-For", []) for h in v.split(",")]
            for hop in reversed([h for h in hops if h]):
                address = hop
                if not self._trusted(hop):
                    break
            if not _is_ip(address.strip("[]")):
                address = self._peer(request)  # a hop that is not an address: believe nothing
        request[CLIENT] = address
        return address

    def _last(self, request: web.Request, header: str) -> str | None:
        values = request.headers.getall(header, [])
        return values[-1] if values else None

    # ------------------------------------------------------------ identity
    def _proxy_identity(self, request: web.Request) -> Identity | None:
        header = self.options.proxy_header
        assert header is not None
        name = self._last(request, header)
        if name is None:
            return None
        if not self._trusted_peer(request):
            log.warning("refused %s header from untrusted peer %s", header, self._peer(request))
            return None
        if not valid_name(name):
            log.warning("refused %s header with an invalid name (%d characters) from %s", header, len(name),
                        self.client_address(request))
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
        return self._last(request, "X-Forwarded-Proto") == "https" and self._trusted_peer(request)

    # ------------------------------------------------------------ host and origin
    def allowed_host(self, host: str) -> bool:
        """Whether a request naming ``host`` is for this server (not a rebound name)."""
        name = _host_name(host)
        if not name:
            return False
        if name == "localhost" or _is_ip(name):
            return True
        names = {h.lower() for h in self.config.allowed_hosts}
        if not _is_ip(self.host.strip("[]")):
            names.add(self.host.lower())
        if self.options.public_url:
            names.add((urlsplit(self.options.public_url).hostname or "").lower())
        return name in names

    def _same_origin(self, request: web.Request) -> bool:
        origin = request.headers.get("Origin")
        if origin is None:
            return True  # not a browser's cross-site request (browsers always send Origin there)
        expected = {request.host.lower()}
        if self.options.public_url:
            expected.add(urlsplit(self.options.public_url).netloc.lower())
        return urlsplit(origin).netloc.lower() in expected

    @web.middleware
    async def guard(self, request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]):
        """Host and Origin first; then every route but /login needs a signed-in identity."""
        if not self.allowed_host(request.host):
            log.warning("refused a request for host %r from %s (not a name this server is served as; "
                        "[serve] allowed_hosts)", request.host[:80], self.client_address(request))
            raise web.HTTPMisdirectedRequest(
                text="this server is not served under that name: add it to [serve] allowed_hosts\n"
            )
        if (request.method == "POST" or request.path == "/ws") and not self._same_origin(request):
            log.warning("refused a %s %s from origin %r", request.method, request.path,
                        request.headers.get("Origin", "")[:80])
            raise web.HTTPForbidden(text="cross-origin request refused\n")
        if request.path in PUBLIC or request.path == "/metrics" or request.path.startswith((API_PREFIX, ANSWER_PREFIX)):
            # the API and the signed answer links sign their callers in themselves (console.serve.api)
            return await self._bounded(handler, request)
        who, _token = self.identity(request)
        if who is None:
            if self.mode == "proxy":
                raise web.HTTPUnauthorized(text=f"no operator: the proxy did not send {self.options.proxy_header}\n")
            if request.method == "GET" and request.path == "/":
                raise web.HTTPSeeOther("/login")
            raise web.HTTPUnauthorized(text="sign in first: /login\n")
        request[IDENTITY] = who
        return await self._bounded(handler, request)

    async def _bounded(self, handler: Callable[[web.Request], Awaitable[web.StreamResponse]],
                       request: web.Request) -> web.StreamResponse:
        try:
            return await handler(request)
        except (UnicodeDecodeError, LookupError, ValueError) as exc:
            log.warning("malformed %s %s from %s: %s", request.method, request.path, self.client_address(request),
                        str(exc).splitlines()[0][:120] if str(exc) else type(exc).__name__)
            raise web.HTTPBadRequest(text="malformed request\n") from None

    # ------------------------------------------------------------ headers
    def content_security_policy(self) -> str:
        connect = "'self'"
        if self.options.public_url:
            split = urlsplit(self.options.public_url)
            ws = "wss" if split.scheme == "https" else "ws"
            connect += f" {ws}://{split.netloc}"
        return (
            "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
            "img-src 'self' data: blob:; font-src 'self' data:; "
            f"connect-src {connect}; worker-src 'self' blob:; "
            "form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
        )

    async def on_response_prepare(self, request: web.Request, response: web.StreamResponse) -> None:
        for key, value in SECURITY_HEADERS.items():
            response.headers[key] = value
        if not isinstance(response, web.WebSocketResponse):
            response.headers["Content-Security-Policy"] = self.content_security_policy()
