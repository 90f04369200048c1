"""The sign-in form of ``hitl serve``: ``GET|POST /login`` and ``POST /logout``.

:class:`SignIn` is mixed into :class:`console.serve.web.ConsoleServer`. A
posted sign-in, in this order, so an attacker's requests cost as little as
possible and store as little as possible:

1. the name is bounded (:func:`~console.serve.config.valid_name`: 1-64
   printable characters) and the secret to 1024 characters; anything else is a
   failure under one fixed key, so no submitted text is ever stored;
2. when the password checks already running and waiting are at
   ``[serve] signin_concurrency + signin_queue``, 503 at once (nothing stored);
3. the attempt is reserved in the limiter (per name and address, and per
   address) in one step before any await: refused with 429 and Retry-After past
   the limit, so requests sent together cannot all be verified;
4. the argon2 check runs on the gate's own threads; a success takes the
   reservation back.

The log names a configured operator; any other submitted name is logged only
by its length (it may be a password typed into the wrong field).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import aiohttp_jinja2
from aiohttp import web

from engine import metrics

from .auth import COOKIE, FailureLimiter, Identity, WorkGate
from .config import valid_name
from .guard import IDENTITY

if TYPE_CHECKING:
    from .auth import SessionBook, Verifier
    from .config import ServeConfig

log = logging.getLogger("hitl.serve")

MAX_SECRET = 1024
INVALID = "\0invalid"
"""The one limiter key every malformed name shares."""


class SignIn:
    """The sign-in handlers (a mixin: the server provides the attributes below)."""

    config: ServeConfig
    sessions: SessionBook
    verifier: Verifier | None
    limiter: FailureLimiter
    gate: WorkGate | None
    favicon: str

    if TYPE_CHECKING:  # Guard's (console/serve/guard.py), mixed into the server beside this

        @property
        def mode(self) -> str: ...

        def client_address(self, request: web.Request) -> str: ...

        def identity(self, request: web.Request) -> tuple[Identity | None, str | None]: ...

        def _secure(self, request: web.Request) -> bool: ...

    def _said(self, name: str) -> str:
        """How the log names a submitted name: a configured one as is, any other by its length only."""
        return repr(name) if name in self.config.operators else f"an unknown name ({len(name)} characters)"

    async def handle_login_page(self, request: web.Request) -> web.StreamResponse:
        if self.mode != "password":
            raise web.HTTPSeeOther("/")
        who, _ = self.identity(request)
        if who is not None:
            raise web.HTTPSeeOther("/")
        return self._login_page(request, "", 200)

    def _login_page(self, request: web.Request, error: str, status: int, name: str = "") -> web.StreamResponse:
        # The store is not named here: a visitor who has not signed in is told nothing about the server.
        response = aiohttp_jinja2.render_template(
            "login.html", request,
            {"title": self.config.title, "favicon": self.favicon, "error": error, "name": name}, status=status,
        )
        response.headers["Cache-Control"] = "no-store"
        return response

    async def handle_login(self, request: web.Request) -> web.StreamResponse:
        if self.mode != "password" or self.verifier is None or self.gate is None:
            raise web.HTTPSeeOther("/")
        form = await request.post()
        raw_name, secret = form.get("name", ""), form.get("secret", "")
        name = raw_name.strip() if isinstance(raw_name, str) else ""
        secret = secret if isinstance(secret, str) else ""
        address = self.client_address(request)
        bounded = valid_name(name) and 0 < len(secret) <= MAX_SECRET
        key = name if bounded else INVALID
        shown = name if bounded else ""
        if self.gate.full:
            log.warning("sign-in turned away (%d password checks running or queued): %s from %s",
                        self.gate.running + self.gate.queued, self._said(name), address)
            metrics.SIGNINS.inc(result="busy")
            response = self._login_page(request, "The server is busy: try again in a moment.", 503, shown)
            response.headers["Retry-After"] = "2"
            return response
        wait, stamp = self.limiter.reserve(key, address)
        if wait > 0:
            log.warning("sign-in refused (rate-limited, %ds left): %s from %s", wait, self._said(name), address)
            metrics.SIGNINS.inc(result="limited")
            response = self._login_page(
                request, f"Too many failed sign-ins: try again in {int(wait) + 1} s.", 429, shown
            )
            response.headers["Retry-After"] = str(int(wait) + 1)
            return response
        entry = await self.gate.run(self.verifier.verify, name, secret) if bounded else None
        if entry is None:
            log.warning(
                "sign-in failed: %s from %s (%d of %d in %ds)", self._said(name), address,
                self.limiter.count(key, address), self.limiter.limit, self.limiter.window,
            )
            metrics.SIGNINS.inc(result="refused")
            return self._login_page(request, "Wrong name or password.", 401, shown)
        self.limiter.succeeded(key, address, stamp)
        token, _session = self.sessions.create(Identity(entry.name, entry.role, "password"))
        log.info("signed in: %r (%s) from %s", entry.name, entry.role, address)
        metrics.SIGNINS.inc(result="ok")
        response = web.Response(status=303, headers={"Location": "/"})
        response.set_cookie(
            COOKIE, token, max_age=int(self.config.session_seconds), path="/", httponly=True,
            samesite="Strict", secure=self._secure(request),
        )
        return response

    async def handle_logout(self, request: web.Request) -> web.StreamResponse:
        who: Identity = request[IDENTITY]
        _, token = self.identity(request)
        if token is not None:
            self.sessions.drop(token)
            log.info("signed out: %r from %s", who.name, self.client_address(request))
        response = web.Response(status=303, headers={"Location": "/login" if self.mode == "password" else "/"})
        response.del_cookie(COOKIE, path="/")
        return response


def make_limiter(config: ServeConfig) -> FailureLimiter:
    return FailureLimiter(config.max_failed_signins, config.signin_window_seconds,
                          address_limit=config.max_failed_signins_per_address)


def make_gate(config: ServeConfig) -> WorkGate | None:
    return WorkGate(config.signin_concurrency, config.signin_queue) if config.has_operators else None
