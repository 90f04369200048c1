"""Global options (before or after the subcommand), their parsers, and the store opener."""

from __future__ import annotations

import os
import time
from collections.abc import AsyncIterator, Callable, Coroutine
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click
from click.decorators import FC

from console.times import use_utc
from engine.errors import HitlError
from engine.redact import DEFAULT_SECRET_PATTERNS, Redactor, secret_patterns

if TYPE_CHECKING:
    from engine.apps import AppRegistry
    from engine.store.base import SessionStore

from .output import fail

T = TypeVar("T")


CONFIG_NAME = "hitl.toml"


# ------------------------------------------------------------------ options
@dataclass
class Options:
    """Global options, settable before or after the subcommand."""

    db: str | None = None
    json: bool = False
    read_only: bool = False
    config: str | None = None
    apps: list[str] = field(default_factory=list)
    show_secrets: bool = False
    secret_patterns: list[str] = field(default_factory=list)
    busy_timeout: float | None = None
    utc: bool = False
    """``--utc``: every time shown in UTC (else the local zone), in the CLI and the console."""
    _patterns: tuple[str, ...] | None = None
    _redactor: Redactor | None = None

    def db_path(self) -> Path | str:
        """The store: --db, else $HITL_DB, else hitl.toml [store] url, else the
        default file. A path, or a URL string (sqlite:, postgresql://, memory:)."""
        from engine.store.factory import default_db_path, is_url

        target = self.db or os.environ.get("HITL_DB") or self._store_config().get("url")
        if target:
            require_asyncpg(target)
            return target if is_url(target) else Path(target).expanduser()
        return default_db_path()

    def _store_config(self) -> dict[str, Any]:
        from engine.store.factory import store_config

        try:
            return store_config(self.config_path())
        except HitlError as exc:
            fail(str(exc))

    def store_options(self) -> dict[str, Any]:
        """Backend options from hitl.toml [store] (a PostgreSQL password)."""
        cfg = self._store_config()
        return {"password": cfg["password"]} if "password" in cfg else {}

    def config_path(self) -> str | None:
        """``--config``, else the first of ``./hitl.toml`` and the user's
        ``$XDG_CONFIG_HOME/hitl/hitl.toml`` (``~/.config/hitl/hitl.toml``) that exists."""
        if self.config is None:
            from engine.configfile import find_config

            found = find_config()
            return str(found) if found is not None else None
        if not Path(self.config).expanduser().is_file():
            fail(f"--config {self.config}: no such file (leave --config out to use ./hitl.toml or "
                 "~/.config/hitl/hitl.toml when they exist)", "ConfigError")
        return self.config

    def registry(self) -> AppRegistry:
        from engine.apps import AppRegistry

        return AppRegistry.from_options(self.apps, self.config_path())

    def console_config(self) -> Any:
        """The config file and these options as one object, read once, for the console."""
        from console.config import ConsoleConfig

        return ConsoleConfig.load(self.config_path(), apps=self.apps, extra_patterns=self.secret_patterns, utc=self.utc)

    def patterns(self) -> tuple[str, ...]:
        """Secret key patterns: defaults + hitl.toml [secrets] + --secret-pattern."""
        if self._patterns is None:
            self._patterns = secret_patterns(self.config_path(), self.secret_patterns)
        return self._patterns

    def redactor(self) -> Redactor:
        """The command's one Redactor (patterns + --show-secrets); it remembers the
        secret values it has seen, so they are masked wherever they reappear."""
        if self._redactor is None:
            try:
                patterns = self.patterns()
            except HitlError:
                patterns = DEFAULT_SECRET_PATTERNS  # a bad config is reported by the command itself
            self._redactor = Redactor(patterns, show=self.show_secrets)
        return self._redactor


def require_asyncpg(target: str | os.PathLike[str]) -> None:
    """A ``postgresql://`` store needs the ``postgres`` extra: one line that says
    what to install, not the traceback of a failed import."""
    scheme = os.fspath(target).split("://", 1)[0].lower() if "://" in os.fspath(target) else ""
    if scheme not in ("postgresql", "postgres"):
        return
    try:
        import asyncpg  # noqa: F401 -- the store imports it next anyway
    except ModuleNotFoundError:
        fail("a postgresql:// store needs asyncpg, which is not installed: "
             "pip install 'hitl-console[postgres]' (or pip install asyncpg)", "MissingDependency")


def _opts() -> Options:
    return click.get_current_context().find_root().ensure_object(Options)


def _setter(name: str) -> Callable[[click.Context, click.Parameter, Any], None]:
    def callback(ctx: click.Context, param: click.Parameter, value: Any) -> None:
        opts = ctx.find_root().ensure_object(Options)
        if name in ("apps", "secret_patterns"):
            getattr(opts, name).extend(value)
        elif value not in (None, False):
            setattr(opts, name, value)

    return callback


def _global(*decls: str, name: str, **kw: Any) -> Callable[[FC], FC]:
    return click.option(*decls, expose_value=False, callback=_setter(name), **kw)


db_option = _global(
    "--db",
    name="db",
    metavar="PATH",
    help="Session store: a file path or a URL, sqlite:///PATH or postgresql://USER@HOST/DB (default: $HITL_DB, "
    "hitl.toml [store] url, or ~/.local/share/hitl-console/hitl.sqlite).",
)
json_option = _global("--json", "json_", name="json", is_flag=True, help="Machine-readable output (JSON).")
read_only_option = _global(
    "--read-only", name="read_only", is_flag=True, help="Open the store read-only: nothing is written."
)
config_option = _global(
    "--config",
    name="config",
    metavar="FILE",
    help=f'Config: [apps] name = "module:attr", [secrets] patterns = [...] (default ./{CONFIG_NAME}, '
    f"else $XDG_CONFIG_HOME/hitl/{CONFIG_NAME}, ~/.config/hitl/{CONFIG_NAME} when unset).",
)
busy_timeout_option = _global(
    "--busy-timeout",
    name="busy_timeout",
    type=click.FloatRange(0),
    metavar="SECONDS",
    help="How long a write waits for another process's lock on the database (default 5).",
)
show_secrets_option = _global(
    "--show-secrets", name="show_secrets", is_flag=True, help="Show values of secret-looking keys (masked by default)."
)
secret_pattern_option = _global(
    "--secret-pattern",
    name="secret_patterns",
    multiple=True,
    metavar="PATTERN",
    help="Also mask values of keys containing PATTERN (repeatable; adds to password, secret, token, api_key).",
)
def _set_utc(ctx: click.Context, param: click.Parameter, value: bool) -> None:
    if value:
        ctx.find_root().ensure_object(Options).utc = True
        use_utc(True)


utc_option = click.option(
    "--utc", is_flag=True, expose_value=False, callback=_set_utc, help="Show times in UTC (default: the local zone)."
)
app_spec_option = _global(
    "--app",
    name="apps",
    multiple=True,
    metavar="[NAME=]MODULE:ATTR",
    help="Register workflow code for an app (repeatable).",
)


def common(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Options every subcommand accepts after its name too."""
    for opt in (
        busy_timeout_option,
        utc_option,
        secret_pattern_option,
        show_secrets_option,
        config_option,
        read_only_option,
        json_option,
        db_option,
    ):
        fn = opt(fn)
    return fn


def watch_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``--metrics-port``, ``--metrics-host`` and ``--log-format`` of the long-running
    commands (``hitl worker``, ``hitl notify``; :mod:`console.metrics_http`, :mod:`console.logs`)."""
    for opt in (
        click.option("--log-format", type=click.Choice(("text", "json")), default="text", show_default=True,
                     help="json: one JSON object a line (time, level, event, ids, trace id), secrets masked."),
        click.option("--metrics-host", default="127.0.0.1", show_default=True,
                     help="Address the metrics port listens on (loopback unless you say otherwise)."),
        click.option("--metrics-port", type=click.IntRange(0, 65535), default=None,
                     help="Serve Prometheus metrics at http://HOST:PORT/metrics (0: any free port, printed)."),
    ):
        fn = opt(fn)
    return fn


def _operator(given: str | None) -> str | None:
    """--operator, else ``[console] operator`` of the config (as the console), else $USER."""
    from engine.apps import default_operator

    return given or default_operator(_opts().config_path()) or None


operator_option = click.option(
    "--operator",
    metavar="NAME",
    default=None,
    help="Recorded on the event (default: [console] operator in hitl.toml, else $USER).",
)
reason_option = click.option("--reason", metavar="TEXT", help="Why; recorded on the event.")


def via_options(what: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """``--via``, ``--no-wait`` and ``--wait-timeout`` of a write that a worker
    can run (:mod:`console.cli.workers`); ``what`` names what gets queued."""

    def deco(f: Callable[..., Any]) -> Callable[..., Any]:
        f = click.option("--wait-timeout", type=click.FloatRange(0), default=60.0, show_default=True,
                         metavar="SECONDS", help="With a worker: how long to follow its turn.")(f)
        f = click.option("--no-wait", is_flag=True, help=f"With a worker: return once the {what} is queued.")(f)
        return click.option(
            "--via", type=click.Choice(["auto", "local", "worker"]), default="auto", show_default=True,
            help="Run the turn here (local), leave it to a worker, or auto: a worker when no code is registered "
            "for the app.",
        )(f)

    return deco




def parse_duration(text: str) -> float:
    """``90s``, ``15m``, ``2h``, ``3d``, ``1w``, ``1h30m`` -> seconds (:func:`engine.bulk_filter.parse_age`)."""
    from engine.bulk_filter import parse_age  # the filter alone: not the answering machinery

    try:
        return parse_age(text)
    except HitlError as exc:
        raise click.BadParameter(str(exc)) from None


def _duration(ctx: click.Context, param: click.Parameter, value: str | None) -> float | None:
    return None if value is None else parse_duration(value)


MAX_SEQ = 2**63 - 1
"""The largest seq a store can hold (SQLite's INTEGER)."""


def _seq(ctx: click.Context, param: click.Parameter, value: int | None) -> int | None:
    if value is not None and value > MAX_SEQ:
        fail(f"{param.opts[0]} {value} is larger than any event seq can be (at most {MAX_SEQ})")
    return value


def parse_when(text: str, now: float | None = None) -> float:
    """A point in time: a duration ago (``2h``, ``3d``, ``1h30m``), an ISO date or
    date-time (``2026-01-31``, ``2026-01-31T14:00``, local time unless it has an
    offset) or epoch seconds."""
    from datetime import datetime

    t = text.strip()
    try:
        return (now if now is not None else time.time()) - parse_duration(t)
    except click.BadParameter:
        pass
    try:
        return float(t)
    except ValueError:
        pass
    try:
        return datetime.fromisoformat(t).timestamp()
    except ValueError:
        raise click.BadParameter(
            f"{text!r} is not a time: give a duration ago (2h, 3d), an ISO date (2026-01-31), "
            "a date-time (2026-01-31T14:00) or epoch seconds"
        ) from None


def _when(ctx: click.Context, param: click.Parameter, value: str | None) -> float | None:
    return None if value is None else parse_when(value)


async def page_of(call: Coroutine[Any, Any, T]) -> T:
    """A store listing; a cursor the store does not accept is an operator error."""
    try:
        return await call
    except ValueError as exc:  # the store's "invalid page cursor ..."
        raise HitlError(str(exc)) from None


@asynccontextmanager
async def open_store(*, write: bool, turn: bool = False, validates: bool | None = None) -> AsyncIterator[SessionStore]:
    """The store at ``--db``; read-only unless the command writes (and no --read-only).
    ``turn``: the command runs a turn, whose first read carries a PostgreSQL store's
    schema check (no round trip of its own; a store that is not current is judged
    there, with the same lines). ``validates`` (by default: it writes or runs a
    turn): the command builds the models' validators, whose plugin lookup is
    spared when no pydantic plugin is installed (:mod:`console.cli.plugin_lookup`);
    a read builds none and does not import that module."""
    from engine.store.factory import open_store as open_target

    if (write or turn) if validates is None else validates:
        from .plugin_lookup import skip_empty_plugin_scan

        skip_empty_plugin_scan()

    opts = _opts()
    # inline: the CLI has no UI to keep responsive, so SQL runs on its loop thread (faster appends)
    timeout = 5.0 if opts.busy_timeout is None else opts.busy_timeout
    target = opts.db_path()
    kw = {"inline": True, "busy_timeout": timeout, "defer_schema_check": turn, **opts.store_options()}
    # A read never writes: a store from an older hitl is refused with a line
    # that says so (SchemaUpgradeNeeded: run `hitl migrate`); a writing command
    # upgrades it on open, before its first write.
    store = await open_target(target, read_only=opts.read_only or not write, **kw)
    if write:  # who may answer what: the --config file's rules, read when a write needs them
        from engine.permissions import use_policy

        use_policy(opts.config_path())
    try:
        yield store
    finally:
        await store.close()
