"""``hitl serve``: the console in a browser (click command; the web stack is imported lazily)."""

from __future__ import annotations

import sys

import click

from ..cli.options import Options, _opts, app_spec_option, common
from ..cli.output import fail


@click.command()
@common
@app_spec_option
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Address to bind. Anything but loopback needs sign-in configured ([serve.operators] or a proxy).")
@click.option("--port", type=click.IntRange(0, 65535), default=8000, show_default=True, help="Port (0: any free one).")
@click.option("--trust-proxy-header", "proxy_header", metavar="HEADER",
              help="Take the operator's name from this header, set by an authenticating reverse proxy "
                   "(believed only from [serve] trusted_proxies, default loopback).")
@click.option("--public-url", metavar="URL",
              help="The URL operators open, when a proxy serves it elsewhere (https: makes cookies Secure).")
@click.option("--hash-password", is_flag=True,
              help="Read a password or token (prompt, or stdin) and print its argon2 hash for hitl.toml; serve nothing.")
@click.option("--log-format", type=click.Choice(("text", "json")), default="text", show_default=True,
              help="json: one JSON object a line (time, level, event, ids, trace id), secrets masked.")
def serve(
    host: str, port: int, proxy_header: str | None, public_url: str | None, hash_password: bool, log_format: str
) -> None:
    """Serve the console in a browser: one console per connection, with sign-in and roles.

    Operators and their roles come from [serve.operators.NAME] in hitl.toml
    (role = "operator" or "viewer", password_hash or token_hash); a viewer's
    console is read-only. The signed-in name is recorded on every write."""
    try:
        from .config import ServeConfigError, check_bind, hash_secret, load_serve_config
        from .web import ConsoleServer, ServeOptions, run
    except ModuleNotFoundError as exc:
        fail(f"hitl serve needs its extra ({exc.name} is missing): pip install 'hitl-console[serve]'")
    if hash_password:
        if sys.stdin.isatty():
            secret = click.prompt("password or token", hide_input=True, confirmation_prompt=True)
        else:
            secret = sys.stdin.readline().rstrip("\n")
        if not secret:
            fail("nothing to hash: the password or token is empty")
        click.echo(hash_secret(secret))
        return
    from engine.permissions import PolicyError, load_policy, use_policy

    opts = _opts()
    try:
        config = load_serve_config(opts.config_path())
        for warning in config.warnings:
            click.echo(warning, err=True)
        check_bind(host, config, proxy_header)
        patterns = opts.patterns()
        use_policy(load_policy(opts.config_path()))  # who may answer: checked once here, then on every write
    except (ServeConfigError, PolicyError) as exc:
        fail(str(exc))
    db = _served_store(opts)
    if public_url is not None and not public_url.startswith(("http://", "https://")):
        fail(f"--public-url must start with http:// or https://, not {public_url!r}")
    options = ServeOptions(
        db=db,
        read_only=opts.read_only,
        config=opts.config_path(),
        apps=list(opts.apps),
        show_secrets=opts.show_secrets,
        secret_patterns=patterns,
        proxy_header=proxy_header,
        public_url=public_url.rstrip("/") if public_url else None,
    )
    from console import logs
    from engine.telemetry import set_surface

    set_surface("api")  # this process's own writes are the API's (consoles are processes of their own)
    logs.install(opts.redactor(), log_format)
    server = ConsoleServer(options, config, host=host, port=port)
    how = {"password": "sign-in required", "proxy": f"identity from the {proxy_header} header",
           "local": "no sign-in (loopback only)"}[server.mode]
    try:
        red = opts.redactor()

        def announce(url: str) -> None:
            line = f"serving {server.store_label} on {url} ({how}); Ctrl-C stops"
            click.echo(logs.json_line(red, "serve.started", line, url=url) if log_format == "json" else line, err=True)

        run(server, host, port, announce)
    except OSError as exc:
        fail(f"cannot listen on {host}:{port}: {exc.strerror or exc}")


def _served_store(opts: Options) -> str:
    """The store every console opens, checked once before serving: an existing SQLite file
    (its absolute path) or a PostgreSQL URL that opens. ``memory:`` is refused (nothing to share)."""
    import asyncio

    from engine.errors import HitlError
    from engine.operations import one_line
    from engine.store.factory import open_store, sqlite_path, store_kind, store_label

    target = opts.db_path()
    try:
        kind = store_kind(target)
    except HitlError as exc:
        fail(str(exc))
    if kind == "memory":
        fail("hitl serve needs a store the consoles share: give --db PATH or --db postgresql://...")
    if kind == "sqlite":
        path = sqlite_path(target)
        if not path.is_file():
            fail(f"no session store at {path}: give --db PATH (hitl demo --db PATH builds a demo store)")
        return str(path.resolve())

    async def probe() -> None:
        store = await open_store(target, read_only=True, **opts.store_options())
        await store.close()

    try:
        asyncio.run(probe())
    except Exception as exc:  # noqa: BLE001 -- one line, never a traceback
        fail(f"cannot open the session store {store_label(target)}: {one_line(exc)}")
    return str(target)
