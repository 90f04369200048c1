"""The HTTP API of ``hitl serve``: ``/api/v1/...``, in the server's process.

The same sign-in, roles and operations as the console and the CLI: reads go
through the engine's views and the CLI's JSON shapes, every write through
:mod:`engine.operations` (and :mod:`engine.handoff` when a worker runs the
turn), with the caller's name as the operator. The routes are
:data:`console.serve.api_models.ROUTES`; the handlers live in
:mod:`console.serve.api_reads`, :mod:`console.serve.api_writes` and
:mod:`console.serve.api_stream`; the OpenAPI document is
:func:`console.serve.api_models.openapi`.

One middleware runs before every handler: who is calling (a service token in
``Authorization``, else the browser's cookie, the proxy header or loopback's
no-sign-in, as the console is told), whether they may write (viewers and a
``--read-only`` server may not), and every error as JSON --
``{"error": {"code", "message"}}`` with a stable code (the engine error's
class, snake-cased: ``already_resolved``, ``session_not_found``) and the one
line the CLI prints for it, masked by the server's secret patterns. Nothing
else reaches a client: an unexpected exception is a logged 500 ``internal``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from aiohttp import web

from engine.errors import (
    HitlError,
)

from . import api_models
from .api_auth import KeyInUse, KeyReused, TokenBook, TokenRefused, fingerprint
from .api_core import (
    CONTEXT,
    IDENTITY,
    MAX_BODY,
    PREFIX,
    REDACTOR,
    ROUTE_TABLE,
    ApiContext,
    ApiError,
    _json,
    error_body,
    hitl_error,
    log,
)
from .auth import Identity

# ------------------------------------------------------------------ the app
Handler = Callable[[ApiContext, web.Request], Awaitable[web.StreamResponse]]


def _handlers() -> dict[str, Handler]:
    from . import api_reads, api_stream, api_writes

    found: dict[str, Handler] = {}
    for route in api_models.ROUTES:
        for module in (api_reads, api_writes, api_stream):
            fn = getattr(module, route.handler, None)
            if fn is not None:
                found[route.handler] = fn
                break
        else:
            raise AssertionError(f"no handler {route.handler} for {route.method} {route.path}")
    return found


def build_api(ctx: ApiContext) -> web.Application:
    """The ``/api/v1`` sub-application (mount with ``app.add_subapp(PREFIX, ...)``)."""
    app = web.Application(middlewares=[_middleware], client_max_size=MAX_BODY)
    app[CONTEXT] = ctx
    handlers = _handlers()
    for route in api_models.ROUTES:
        handler = handlers[route.handler]

        async def serve(request: web.Request, handler: Handler = handler) -> web.StreamResponse:
            return await handler(request.app[CONTEXT], request)

        app.router.add_route(route.method, route.path, serve, name=route.handler)
    app[ROUTE_TABLE] = {(r.method, r.path): r for r in api_models.ROUTES}
    app.cleanup_ctx.append(_store_ctx)
    app.on_shutdown.append(_end_streams)
    return app


async def _end_streams(app: web.Application) -> None:
    ctx = app[CONTEXT]
    ctx.closing = True
    for waker in list(ctx.wakers):
        waker.poke()


async def _store_ctx(app: web.Application) -> AsyncIterator[None]:
    ctx = app[CONTEXT]
    if ctx.store is not None:  # given by the caller (tests): theirs to close
        yield
        return
    from engine.store.factory import open_store

    ctx.store = await open_store(ctx.target, read_only=ctx.read_only, busy_timeout=5.0, **ctx.store_options)
    try:
        yield
    finally:
        await ctx.store.close()
        ctx.store = None


def _route_of(request: web.Request) -> api_models.Route | None:
    info = request.match_info
    resource = info.route.resource if info.route is not None else None
    canonical = resource.canonical if resource is not None else None
    if canonical is None:
        return None
    return request.app[ROUTE_TABLE].get((request.method, canonical.removeprefix(PREFIX)))


async def _who(ctx: ApiContext, request: web.Request) -> Identity:
    header = request.headers.get("Authorization")
    if header is not None:
        if ctx.tokens is None or not ctx.tokens.configured:
            raise ApiError(401, "unauthorized", "this server has no service tokens: add [serve.operators.NAME] "
                                                "with a token_hash to hitl.toml")
        try:
            return await ctx.tokens.identify(header, request.remote or "?")
        except TokenRefused as exc:
            headers = {"Retry-After": str(int(exc.retry_after) + 1)} if exc.status == 429 else {}
            if exc.status == 401:
                headers["WWW-Authenticate"] = 'Bearer realm="hitl"'
            code = "rate_limited" if exc.status == 429 else "unauthorized"
            log.warning("API token refused (%s) from %s", code, request.remote)
            raise ApiError(exc.status, code, str(exc), headers) from None
    who = ctx.identify(request) if ctx.identify is not None else None
    if who is None:
        raise ApiError(401, "unauthorized", "sign in first: send Authorization: Bearer NAME:TOKEN, or the "
                                            "console's sign-in cookie", {"WWW-Authenticate": 'Bearer realm="hitl"'})
    return who


@web.middleware
async def _middleware(request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]):
    ctx = request.app[CONTEXT]
    try:
        route = _route_of(request)
        if route is None:  # no such path or method: the router's own 404/405, as JSON
            await handler(request)
            raise ApiError(404, "not_found", f"no such endpoint: {request.method} {request.path}")
        if not route.public:
            who = await _who(ctx, request)
            request[IDENTITY] = who
            if route.write:
                _may_write(ctx, who)
                try:
                    key = request.headers.get("Idempotency-Key")
                    if key is not None:
                        return await _idempotent(ctx, request, handler, who, key)
                    return await handler(request)
                finally:
                    for waker in list(ctx.wakers):
                        waker.poke()
        return await handler(request)
    except ApiError as exc:
        return _json(exc.status, error_body(exc.code, exc.message), exc.headers)
    except HitlError as exc:
        err = hitl_error(exc, request.get(REDACTOR))
        return _json(err.status, error_body(err.code, err.message))
    except web.HTTPRequestEntityTooLarge:
        return _json(413, error_body("too_large", f"the request body is larger than {MAX_BODY} bytes"))
    except web.HTTPMethodNotAllowed as exc:
        return _json(405, error_body("method_not_allowed", f"{request.method} is not allowed here: "
                                                          f"use {', '.join(sorted(exc.allowed_methods))}"),
                     {"Allow": ", ".join(sorted(exc.allowed_methods))})
    except web.HTTPException as exc:
        if exc.status < 400:
            raise
        return _json(exc.status, error_body("not_found" if exc.status == 404 else "bad_request", exc.reason))
    except Exception:  # noqa: BLE001 -- logged here; the client gets one line, never a traceback
        log.exception("API %s %s failed", request.method, request.path)
        return _json(500, error_body("internal", "the server failed on this request; its log says why"))


def _may_write(ctx: ApiContext, who: Identity) -> None:
    if who.read_only:
        raise ApiError(403, "forbidden", f"{who.name} is signed in as a viewer (viewers cannot write); "
                                         "nothing was written")
    if ctx.read_only:
        raise ApiError(403, "read_only", "the server runs --read-only; nothing was written")


async def _idempotent(
    ctx: ApiContext, request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]],
    who: Identity, key: str,
) -> web.StreamResponse:
    if not key or len(key) > 200 or not key.isprintable():
        raise ApiError(400, "bad_request", "Idempotency-Key must be 1-200 printable characters")
    body = await request.read()

    async def write() -> tuple[int, bytes]:
        try:
            response = await handler(request)
        except ApiError as exc:
            response = _json(exc.status, error_body(exc.code, exc.message), exc.headers)
        except HitlError as exc:
            err = hitl_error(exc, request.get(REDACTOR))
            response = _json(err.status, error_body(err.code, err.message))
        assert isinstance(response, web.Response)
        return response.status, response.body if isinstance(response.body, bytes) else b""  # _json's: bytes

    from engine.store.idempotency import keys_of

    try:
        status, data, replayed = await ctx.idempotency.run(
            who.name, key, fingerprint(request.method, request.path, body), write, keys_of(ctx.db)
        )
    except KeyInUse:
        raise ApiError(409, "idempotency_key_in_use", f"Idempotency-Key {key!r}: its first request is still "
                                                      "running (or its server stopped mid-write); check the "
                                                      "session before using a new key") from None
    except KeyReused:
        raise ApiError(422, "idempotency_key_reused", f"Idempotency-Key {key!r} was used for another request; "
                                                      "use a new key for a new request") from None
    headers = {"Idempotent-Replayed": "true"} if replayed else {}
    return web.Response(status=status, body=data, content_type="application/json", headers=headers)


def mount_api(server: Any, app: web.Application) -> None:
    """Hook the API into the console server's app: its store and options, its
    identities for callers without a token, its sign-in limiter for tokens."""
    options, config = server.options, server.config
    ctx = ApiContext(
        target=options.db, apps=list(options.apps), config=options.config, read_only=options.read_only,
        show_secrets=options.show_secrets, secret_patterns=tuple(options.secret_patterns),
        identify=lambda request: server.identity(request)[0],
        tokens=TokenBook(config, server.limiter) if config.has_operators else None,
    )
    app.add_subapp(PREFIX + "/", build_api(ctx))
    server.api_context = ctx  # /metrics reads the same store
    from engine.notify.config import NotifyConfigError, load_notify_config

    from .answer_page import AnswerPages

    try:
        notify = load_notify_config(options.config)
    except NotifyConfigError as exc:
        log.warning("answer links are off: %s", exc)
        notify = None
    app.add_routes(AnswerPages(ctx, notify).routes())  # /answer/{token}: signed links, no sign-in
