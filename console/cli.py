"""``hitl``: the headless console. Every console action, scriptable.

``hitl`` alone opens the Textual console; the subcommands read and write the
same store through the engine's public API (no SQL here) and compute every
node status with :mod:`engine.projection`::

    hitl sessions [--app NAME] [--user U] [--status S] [--older-than 2h] [--text T] [--limit N] [--cursor C]
    hitl show SESSION [--invocation INV] [--all-runs]
    hitl inbox [--app NAME] [--session S] [--limit N] [--cursor C]
    hitl resume SESSION ID=JSON|ID=@file.json ... [--answer ID=JSON] [--invocation INV] [--dry-run]
                [--operator NAME] [--reason TEXT]
    hitl redrive SESSION INVOCATION [--ack-in-doubt] [--operator NAME] [--reason TEXT]
    hitl cancel SESSION INVOCATION [--operator NAME] [--reason TEXT]
    hitl events SESSION [--after SEQ] [--limit N] [--tail]
    hitl replay SESSION|--file export.jsonl [--at N [--diff-from M]] [--ui]
    hitl export SESSION > session.jsonl ; hitl import session.jsonl [--as NEW_ID] [--operator NAME] [--reason TEXT]
    hitl audit [--operator NAME] [--session S] [--action A] [--since WHEN] [--until WHEN] [--limit N]
    hitl demo [--sessions N] [--fresh] [--clock EPOCH]

Options accepted before or after the subcommand: ``--db PATH`` (default
``$HITL_DB`` or ``~/.local/share/hitl-console/hitl.sqlite``), ``--json``,
``--read-only`` (the store is opened read-only: every writing command fails),
``--config hitl.toml``, ``--show-secrets`` and ``--secret-pattern P``
(repeatable; values of keys matching ``password``, ``secret``, ``token``,
``api_key``, the config's ``[secrets] patterns`` and these are shown as ``***``
unless ``--show-secrets``; ``hitl export`` is never masked); ``--app [NAME=]module:attr``
(repeatable) registers workflow code, before the subcommand or on the commands
that run workflows (``resume``, ``redrive``). ``./hitl.toml`` is read when
present and no ``--config`` is given. Invocation ids may be abbreviated to a
unique prefix.

Exit codes: 0 ok; 1 operator error (:class:`~engine.errors.HitlError`: unknown
or answered id, invalid answer, bad JSON, missing session, conflict, read-only
store, failed run...) with a one-line reason on stderr and no traceback; 2 usage.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import re
import sys
import time
from collections.abc import AsyncIterator, Callable, Coroutine, Iterable
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar

import click

from console.inputs import (
    MAX_ANSWER_FILE_BYTES,
    MAX_IMPORT_BYTES,
    CheckedGroup,
    bounded_lines,
    decode,
    loads,
    read_bounded,
)
from console.text import clean
from console.times import age, date_time, use_utc, zone_name
from engine.errors import HitlError, InvocationNotFoundError, ReadOnlyError, require_id
from engine.liveness import INTERRUPTED, InvocationHealth, interrupted_invocations, session_health
from engine.redact import DEFAULT_SECRET_PATTERNS, Redactor, secret_patterns
from engine.status import INTERRUPTED_FILTER, SESSION_FILTERS, DisplayStatus, SessionStatus
from engine.store.base import SessionStore

if TYPE_CHECKING:  # imported where used: `hitl sessions` loads no runner, replay or resume code (issue 15)
    from engine import Event, Projection
    from engine.apps import AppRegistry
    from engine.replay import Replay
    from engine.resume import ResumePlan
    from engine.views import Frame

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
        from engine.store.factory import is_url
        from engine.store.sqlite import default_db_path

        target = self.db or os.environ.get("HITL_DB") or self._store_config().get("url")
        if target:
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
        if self.config is None and Path(CONFIG_NAME).is_file():
            return CONFIG_NAME
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


def _redactor() -> Redactor:
    ctx = click.get_current_context(silent=True)
    if ctx is None or not isinstance(ctx.find_root().obj, Options):
        return _FALLBACK_REDACTOR
    return _opts().redactor()


_FALLBACK_REDACTOR = Redactor()
"""Outside a command (errors before options are parsed): the defaults, masked."""


def safe(value: Any) -> Any:
    """``value`` as the CLI may show it: secrets masked unless --show-secrets."""
    return _redactor().value(value)


def safe_event(event: Event) -> Event:
    return _redactor().event(event)


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


def _global(*decls: str, name: str, **kw: Any) -> Callable[[T], T]:
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
    help=f'Config: [apps] name = "module:attr", [secrets] patterns = [...] (default ./{CONFIG_NAME}).',
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


# ------------------------------------------------------------------- errors
class OperatorError(click.ClickException):
    """A HitlError surfaced as exit code 1 with a one-line reason."""

    exit_code = 1

    def show(self, file: Any = None) -> None:
        # Errors echo values (validation messages, exception texts): masked too, and
        # shown, never obeyed (no terminal control).
        click.echo(clean(f"error: {_redactor().text(self.format_message())}"), err=True)


def fail(message: str) -> NoReturn:
    raise OperatorError(message)


def run(coro: Coroutine[Any, Any, T], *, on_interrupt: str | None = None) -> T:
    """Run a command body; operator errors become exit 1 without a traceback.
    With ``on_interrupt``, Ctrl-C is exit 1 with that line (else click's "Aborted!")."""
    try:
        return asyncio.run(coro)
    except HitlError as exc:
        raise OperatorError(_redactor().text(" ".join(str(exc).split()))) from None
    except KeyboardInterrupt:
        if on_interrupt is None:
            raise
        raise OperatorError(on_interrupt) from None


def stopped_hint(session_id: str) -> str:
    return (
        "stopped by Ctrl-C: nothing more was written; if a turn was running it is now interrupted mid-run "
        f"(see `hitl show {session_id}`: continue it with `hitl redrive`)"
    )


async def page_of(call: Coroutine[Any, Any, T]) -> T:
    """A store listing; a cursor the store does not accept is an operator error."""
    try:
        return await call
    except ValueError as exc:  # the store's "invalid page cursor ..."
        raise HitlError(str(exc)) from None


@asynccontextmanager
async def open_store(*, write: bool) -> AsyncIterator[SessionStore]:
    """The store at ``--db``; read-only unless the command writes (and no --read-only)."""
    from engine.store.factory import open_store as open_target

    opts = _opts()
    # inline: the CLI has no UI to keep responsive, so SQL runs on its loop thread (faster appends)
    timeout = 5.0 if opts.busy_timeout is None else opts.busy_timeout
    target = opts.db_path()
    kw = {"inline": True, "busy_timeout": timeout, **opts.store_options()}
    # A read never writes: a store from an older hitl is refused with a line
    # that says so (SchemaUpgradeNeeded: run `hitl migrate`); a writing command
    # upgrades it on open, before its first write.
    store = await open_target(target, read_only=opts.read_only or not write, **kw)
    try:
        yield store
    finally:
        await store.close()


def interactive() -> bool:
    """Someone at a terminal can answer a question (stdin is a tty)."""
    return sys.stdin.isatty()


def out(text: str = "") -> None:
    """Every line the CLI prints passes the redactor's free-text masking, then
    console.text.clean: data in it is shown, never obeyed (no terminal control,
    no bidi reordering). ``--json`` output is exact."""
    click.echo(clean(_redactor().text(text)))


def out_json(obj: Any) -> None:
    click.echo(_redactor().text(json.dumps(obj, default=str, ensure_ascii=False)))


# ----------------------------------------------------------------- formatting
def id_list(ids: list[str], limit: int = 8) -> str:
    """``a, b, c (+12 more)``: long id lists stay one readable line (--json has them all)."""
    if not ids:
        return "none"
    more = f" (+{len(ids) - limit} more)" if len(ids) > limit else ""
    return ", ".join(ids[:limit]) + more


def short(value: Any, width: int = 60) -> str:
    if value is None:
        return ""
    text = (
        value if isinstance(value, str) else json.dumps(value, default=str, ensure_ascii=False, separators=(",", ":"))
    )
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 3] + "..."


clock = date_time
"""Absolute times in the CLI: the console's one format (``--utc`` switches the zone)."""


def table(rows: list[list[str]], headers: list[str]) -> str:
    widths = [max(len(str(r[i])) for r in [headers, *rows]) for i in range(len(headers))]
    lines = ["  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)).rstrip()]
    lines += ["  ".join(str(c).ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]
    return "\n".join(lines)


_DURATION = re.compile(r"(\d+(?:\.\d+)?)([smhdw])")
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


def parse_duration(text: str) -> float:
    """``90s``, ``15m``, ``2h``, ``3d``, ``1w``, ``1h30m`` -> seconds."""
    t = text.strip().lower()
    parts = _DURATION.findall(t)
    if not parts or "".join(n + u for n, u in parts) != t:
        raise click.BadParameter(f"{text!r} is not a duration like 90s, 15m, 2h, 3d or 1h30m")
    return sum(float(n) * _UNITS[u] for n, u in parts)


def _duration(ctx: click.Context, param: click.Parameter, value: str | None) -> float | None:
    return None if value is None else parse_duration(value)


# ---------------------------------------------------------------- tree view
def tree_rows(
    proj: Projection, invocation_id: str, all_runs: bool = False, health: InvocationHealth | None = None
) -> list[dict[str, Any]]:
    """The node tree of one invocation as JSON-ready rows: :func:`engine.views.tree_rows`
    (the console's tree draws the same ones) with each run's output, error and
    interrupts. ``health``: liveness's verdict (interrupted, paths in doubt)."""
    doubt, stopped = (health.in_doubt, health.interrupted) if health is not None else ((), False)
    from engine import views

    return [views.row_json(proj, row) for row in views.tree_rows(proj, invocation_id, all_runs, doubt, stopped)]


def render_tree(rows: list[dict[str, Any]]) -> list[str]:
    """Plain-text lines of :func:`tree_rows`: node, status, output or error, and
    one ``waits on ID: message`` per open interrupt of the node."""
    if not rows:
        return ["  (no node has run yet)"]
    width = min(max(len(r["node"]) + 2 * r["depth"] for r in rows), 48)
    lines = []
    for r in rows:
        label = ("  " * r["depth"] + r["node"]).ljust(width)
        waits = [f"waits on {p['id']}: {short(p['message'], 70)}" for p in r["pending"]]
        if r.get("in_doubt"):
            detail = "IN DOUBT: started, no end record (its side effects may have happened)"
        elif r["error"]:
            detail = r["error"]
        elif r["output"] is not None:
            detail = short(r["output"])
        else:
            detail = waits.pop(0) if waits else ""
        if r["failed_attempts"] and not r["error"]:
            n = r["failed_attempts"]
            detail += f" (after {n} failed attempt{'s' if n > 1 else ''})"
        if r["earlier_runs"]:
            n = r["earlier_runs"]
            detail += f" (+{n} earlier run{'s' if n > 1 else ''})"
        lines.append(f"  {label}  {r['status']:<9}  {detail}".rstrip())
        if r["answered"]:
            waits.append(f"answered {', '.join(r['answered'])}")
        lines += [f"  {' ' * width}  {'':<9}  {w}" for w in waits]
    return lines


async def resolve_invocation(store: SessionStore, session_id: str, text: str) -> str:
    """An invocation id from a unique prefix (never a blank one: BlankIdError)."""
    require_id(text, "the invocation id")
    ids = [i.invocation_id for i in await store.list_invocations(session_id)]
    if text in ids:
        return text
    matches = [i for i in ids if i.startswith(text)]
    if len(matches) == 1:
        return matches[0]
    if not matches:
        raise InvocationNotFoundError(session_id, text)
    raise HitlError(
        f"invocation prefix {text!r} matches {len(matches)} invocations of session {session_id}; give more digits"
    )


async def session_projection(store: SessionStore, session_id: str) -> Projection:
    """The session's whole projection (every loop iteration), folded page by page
    (memory: the projection, not the event list). Values are NOT masked: the
    redactor learns the secrets it holds; render through :func:`safe`."""
    from engine.projection import Projection

    proj, seq = Projection(), 0
    while page := await store.events(session_id, after_seq=seq, limit=EVENTS_PAGE):
        for s in page:
            proj.apply(s.event, s.seq)
        seq = page[-1].seq
    _learn_projection(proj)
    return proj


def _learn_projection(proj: Projection) -> None:
    """Teach the command's redactor the secrets a projection holds (outputs,
    inputs, answers, interrupt arguments, state), so that free text repeating
    them is masked too."""
    red = _redactor()
    red.learn_from([r.output for r in proj.nodes.values()] + [r.input for r in proj.nodes.values()])
    red.learn_from([i.response for i in proj.interrupts.values()] + [i.args for i in proj.interrupts.values()])
    red.learn_from(proj.state)


async def latest_projection(store: SessionStore, session_id: str, invocation_ids: Iterable[str]) -> Projection:
    """The latest runs of some invocations, each loaded as a resume loads it
    (cached snapshot + the events after it: cost independent of how long the
    session ran), side by side in one projection. Values are NOT masked: render
    through :func:`safe` (``hitl show`` does, row by row)."""
    from engine.projection import Projection
    from engine.resume import load_invocation

    merged = Projection()
    for inv in invocation_ids:
        try:
            p = await load_invocation(store, session_id, inv)
        except InvocationNotFoundError:
            continue  # listed but without events yet
        merged.nodes.update(p.nodes)
        merged.interrupts.update(p.interrupts)
        merged.invocations.update(p.invocations)
        merged._latest.update(p._latest)
        merged._max_run.update(p._max_run)
        merged.position = max(merged.position, p.position)
    _learn_projection(merged)
    return merged


def health_line(h: InvocationHealth, session_id: str) -> list[str]:
    """What ``hitl show`` says under an invocation that is running or stopped mid-run."""
    if h.interrupted:
        lines = [f"  {INTERRUPTED}: no process is running it (its last turn stopped before it ended)"]
        if h.in_doubt:
            lines.append(f"  in doubt: {id_list(list(h.in_doubt))} (started, no end record: may have done side effects)")
        ack = " --ack-in-doubt" if h.in_doubt else ""
        lines.append(f"  continue: hitl redrive {session_id} {h.invocation_id}{ack}")
        return lines
    if h.live and h.lease is not None:
        return [f"  running now in {h.lease.holder}"]
    return []


# ---------------------------------------------------------------------- group
@click.group(cls=CheckedGroup, invoke_without_command=True, context_settings={"help_option_names": ["-h", "--help"]})
@common
@app_spec_option
@click.version_option(package_name="hitl-console", prog_name="hitl")
@click.pass_context
def cli(ctx: click.Context) -> None:
    """Operate human-in-the-loop workflows: without a subcommand, open the console."""
    use_utc(_opts().utc)  # --utc before the subcommand (after it, its own callback sets it)
    if ctx.invoked_subcommand is not None:
        return
    opts = _opts()
    try:
        from console.app import run_app
    except ModuleNotFoundError as exc:
        if exc.name not in ("console.app", "console"):
            raise
        fail("the console UI (console/app.py) is not installed in this build; use the subcommands (hitl --help)")
    try:
        config = opts.console_config()
    except HitlError as exc:
        fail(str(exc))
    path = opts.db_path()
    if isinstance(path, Path) and not path.exists() and not opts.db and not os.environ.get("HITL_DB") and not opts.read_only:
        # First run on the embedded default store: seed it with the sample
        # sessions so the console opens on something real to triage.
        from sample_sessions.demo import build_demo_db

        click.echo(f"first run: seeding {path} with the sample sessions ...", err=True)
        run(build_demo_db(path))
    run_app(
        path,
        read_only=opts.read_only,
        store_options=opts.store_options(),
        registry=config.registry,
        show_secrets=opts.show_secrets,
        secret_patterns=config.secret_patterns,
        config=config,
    )


def main() -> None:
    """Console-script entry point."""
    try:
        cli(prog_name="hitl")
    except BrokenPipeError:  # `hitl export X | head`
        sys.stderr.close()
        sys.exit(0)


# ------------------------------------------------------------------- sessions
@cli.command()
@common
@click.option("--app", "app_name", metavar="NAME", help="Only this app.")
@click.option("--user", "user_id", metavar="USER", help="Only this user.")
@click.option(
    "--status",
    type=click.Choice(SESSION_FILTERS),
    help="Only sessions in this status (interrupted: a turn stopped mid-run, no process runs it).",
)
@click.option(
    "--older-than", "older_than", metavar="DURATION", callback=_duration, help="Not updated for this long (2h, 3d)."
)
@click.option("--text", "--search", "search", metavar="TEXT", help="Session id contains TEXT.")
@click.option("--limit", type=click.IntRange(1, 10_000), default=50, show_default=True)
@click.option("--cursor", metavar="CURSOR", help="Continue a listing (printed as next cursor).")
def sessions(
    app_name: str | None,
    user_id: str | None,
    status: str | None,
    older_than: float | None,
    search: str | None,
    limit: int,
    cursor: str | None,
) -> None:
    """List sessions, most recently updated first."""

    async def body() -> None:
        async with open_store(write=False) as store:
            page = await page_of(
                store.list_sessions(
                    app_name=app_name,
                    user_id=user_id,
                    status=SessionStatus.RUNNING if status == INTERRUPTED_FILTER else status,  # running, no live lease
                    text=search,
                    updated_before=time.time() - older_than if older_than is not None else None,
                    limit=limit,
                    cursor=cursor,
                )
            )
            stopped = {s.id: await interrupted_invocations(store, s.id, s.status) for s in page.items}
            if status == INTERRUPTED_FILTER:
                page.items = [s for s in page.items if stopped[s.id]]
        if _opts().json:
            out_json(
                {
                    "sessions": [
                        {**s.model_dump(), "interrupted": [h.invocation_id for h in stopped[s.id]]}
                        for s in page.items
                    ],
                    "next_cursor": page.next_cursor,
                }
            )
            return
        now = time.time()
        rows = [
            [
                s.id,
                s.app_name,
                s.user_id,
                INTERRUPTED if stopped[s.id] else s.status,
                str(s.open_interrupts),
                str(s.invocation_count),
                str(s.event_count),
                age(s.last_event_at or s.updated_at, now),  # an imported session: its events' time, not the import's
            ]
            for s in page.items
        ]
        out(
            table(rows, ["SESSION", "APP", "USER", "STATUS", "OPEN", "INV", "EVENTS", "UPDATED"])
            if rows
            else "no sessions"
        )
        if any(stopped.values()):
            out(f"{INTERRUPTED}: a turn stopped before it ended; `hitl show SESSION` says how to continue it")
        if page.next_cursor:
            out(f"more: --cursor {page.next_cursor}")

    run(body())


# ----------------------------------------------------------------------- show
@cli.command()
@common
@click.argument("session_id", metavar="SESSION")
@click.option("--invocation", "invocation", metavar="INV", help="Only this invocation (id or unique prefix).")
@click.option("--all-runs", is_flag=True, help="Show every loop iteration, not only the latest run of each node.")
def show(session_id: str, invocation: str | None, all_runs: bool) -> None:
    """A session's node tree per invocation: runs, statuses, outputs, open interrupts."""

    async def body() -> None:
        async with open_store(write=False) as store:
            session = await store.get_session(session_id)
            invocations = await store.list_invocations(session_id)
            if invocation is not None:
                inv_id = await resolve_invocation(store, session_id, invocation)
                invocations = [i for i in invocations if i.invocation_id == inv_id]
            if all_runs:  # every loop iteration: the whole log
                proj = await session_projection(store, session_id)
            else:  # the latest runs: each invocation from its snapshot + the events after it
                proj = await latest_projection(store, session_id, [i.invocation_id for i in invocations])
            health = await session_health(store, session_id, proj)
        state = safe(session.state)
        if _opts().json:
            out_json(
                {
                    "session": {**session.model_dump(), "state": state},
                    "invocations": [
                        {
                            **i.model_dump(),
                            "health": health[i.invocation_id].to_dict(),
                            "nodes": safe(tree_rows(proj, i.invocation_id, all_runs, health[i.invocation_id])),
                        }
                        for i in invocations
                    ],
                }
            )
            return
        out(f"session {session.id}  app {session.app_name}  user {session.user_id}  events {session.last_seq}")
        if state:
            out(f"state   {short(state, 100)}")
        for i in invocations:
            out()
            h = health[i.invocation_id]
            status = h.status.value if h.status else DisplayStatus.of(i.status).value
            if h.interrupted:
                status = f"{INTERRUPTED.upper()} (projection: {h.status.value if h.status else 'no run yet'})"
            out(f"invocation {i.invocation_id}  {status}  started {clock(i.started_at)} {zone_name(i.started_at)}  message {short(i.message, 40) or '-'}")
            for line in render_tree(safe(tree_rows(proj, i.invocation_id, all_runs, h))):
                out(line)
            open_ids = [x.id for x in proj.open_interrupts(i.invocation_id)]
            if open_ids:
                out(f"  open: {id_list(open_ids)}")
            for line in health_line(h, session.id):
                out(line)

    run(body())


# ---------------------------------------------------------------------- inbox
@cli.command()
@common
@click.option("--app", "app_name", metavar="NAME", help="Only this app.")
@click.option("--session", "session_id", metavar="SESSION", help="Only this session.")
@click.option("--limit", type=click.IntRange(1, 10_000), default=50, show_default=True)
@click.option("--cursor", metavar="CURSOR", help="Continue a listing (printed as next cursor).")
def inbox(app_name: str | None, session_id: str | None, limit: int, cursor: str | None) -> None:
    """Open interrupts across sessions, oldest first."""

    async def body() -> None:
        async with open_store(write=False) as store:
            page = await page_of(
                store.open_interrupts(app_name=app_name, session_id=session_id, limit=limit, cursor=cursor)
            )
        if _opts().json:
            out_json(
                {
                    "interrupts": [
                        {**r.model_dump(), "args": {k: v if k == "response_schema" else safe(v) for k, v in r.args.items()}}
                        for r in page.items
                    ],
                    "next_cursor": page.next_cursor,
                }
            )
            return
        now = time.time()
        rows = [
            [age(r.raised_at, now), r.session_id, r.invocation_id[:12], r.path, r.interrupt_id, short(r.message, 60)]
            for r in page.items
        ]
        out(table(rows, ["AGE", "SESSION", "INVOCATION", "NODE", "ID", "MESSAGE"]) if rows else "inbox is empty")
        if page.next_cursor:
            out(f"more: --cursor {page.next_cursor}")

    run(body())


# --------------------------------------------------------------------- resume
def parse_answers(pairs: Iterable[str]) -> dict[str, Any]:
    """``ID=JSON`` / ``ID=@file.json`` -> ``{id: value}``; HitlError naming the id."""
    answers: dict[str, Any] = {}
    for pair in pairs:
        iid, eq, raw = pair.partition("=")
        iid = iid.strip()
        if not eq or not iid:
            raise HitlError(f"answer {pair!r} is not ID=JSON (e.g. approve-1=true or approve-1=@answer.json)")
        if iid in answers:
            raise HitlError(f"interrupt {iid} is answered twice on the command line")
        source = "value"
        if raw.startswith("@"):
            source = raw[1:]
            what = f"answer for {iid}"
            raw = decode(read_bounded(source, MAX_ANSWER_FILE_BYTES, what), f"{what}: {source}")
        try:
            answers[iid] = loads(raw, f"answer for {iid} in {source}")
            _redactor().learn_from(answers[iid])  # validation errors may echo it
        except json.JSONDecodeError as exc:
            hint = f" (a string needs JSON quotes: {iid}='\"{raw}\"')" if source == "value" else ""
            raise HitlError(
                f"answer for {iid} is not valid JSON in {source}: {exc.msg} at column {exc.colno}{hint}"
            ) from None
    return answers


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


def render_plan(plan: ResumePlan, session_id: str, next_lines: list[str] | None = None) -> list[str]:
    """``next_lines``: what the auto-completions make runnable (engine.resume.next_runs;
    None when the app's code is not importable)."""
    lines = [f"dry run: session {session_id}, invocation {plan.invocation_id} (nothing was written)"]
    lines.append(f"  answers:    {', '.join(plan.resolves)}")
    width = max([len(c.path) for c in plan.changes] + [10])
    for c in plan.changes:
        detail = f"  output {short(safe(c.output), 50)}" if c.effect == "auto-complete" else ""
        if c.still_open:
            detail += f"  still waiting for {', '.join(c.still_open)}"
        lines.append(f"  {c.path.ljust(width)}  {c.before.value:>9} -> {c.after.value:<9}  {c.effect}{detail}")
    lines.append(f"  still open: {id_list(plan.still_open)}")
    lines.append(
        "  then:       the invocation re-executes (the nodes above marked re-execute run again with their run ids)"
        if plan.runs_anything
        else "  then:       nothing runs: every answered node keeps waiting for its other ids"
    )
    for line in next_lines or []:
        lines.append(f"  next:       {line}")
    for w in plan.side_effect_warnings:
        lines.append(f"  warning:    {w}")
    return lines


def app_refusal(app_name: str) -> str | None:
    """Why a real resume/re-drive of ``app_name`` would be refused here (its code
    is not registered), or None when it would run."""
    try:
        _opts().registry().get(app_name)
    except HitlError as exc:
        return " ".join(str(exc).split())
    return None


def plan_next_runs(plan: ResumePlan, app_name: str) -> list[str] | None:
    """The graph-aware part of a dry run, when the app's code can be imported."""
    try:
        root = _opts().registry().get(app_name)
    except HitlError:
        return None
    from engine.resume import next_runs

    return next_runs(plan, plan.after, root) if plan.after is not None else None


async def stream_run(
    store: SessionStore,
    session_id: str,
    invocation_id: str | None,
    events: AsyncIterator[Event],
    as_json: bool,
    loaded: dict[str, Any] | None = None,
) -> tuple[Projection, int]:
    """Print each persisted event with the status its node has after it and what
    it did (:func:`engine.replay.markers_for`: answers, auto-completions,
    re-executions, failures). The projection is loaded before the first event
    is persisted, then folded one event at a time -- or, with ``loaded``, taken
    from it (``"proj"``, filled by the Runner's ``on_loaded`` before its first
    write: the invocation is not read again)."""
    from engine.projection import Projection
    from engine.replay import markers_for
    from engine.resume import load_invocation

    proj = await load_invocation(store, session_id, invocation_id) if loaded is None else Projection()
    count = 0
    async for event in events:
        if loaded is not None and count == 0:
            proj = loaded["proj"]
        count += 1
        change = proj.apply(event)
        run_ = proj.get(event.invocation_id, event.path) if event.path else None
        status = run_.status.value if run_ else ""
        notes = [m.text for m in markers_for(event, change, proj)]
        if as_json:
            out_json(
                {
                    "kind": event.kind,
                    "path": event.path,
                    "status": status or None,
                    "invocation_id": event.invocation_id,
                    "event_id": event.id,
                    "markers": notes,
                }
            )
        else:
            out(f"{event.kind:<9} {(event.path or '-'):<44} {status:<9}  {'; '.join(notes)}".rstrip())
    return proj, count


def _summary(proj: Projection, inv: str, count: int, as_json: bool) -> None:
    status = proj.invocation_status(inv)
    open_ids = [i.id for i in proj.open_interrupts(inv)]
    if as_json:
        out_json(
            {"kind": "summary", "invocation_id": inv, "status": status.value if status else None, "open": open_ids}
        )
        return
    if count <= 1:
        out(f"answered; nothing ran: invocation {inv} keeps waiting for {id_list(open_ids)}")
        return
    out(f"invocation {inv}: {status.value if status else '?'}" + (f"; open: {id_list(open_ids)}" if open_ids else ""))


@cli.command()
@common
@app_spec_option
@click.argument("session_id", metavar="SESSION")
@click.argument("answers", nargs=-1, metavar="ID=JSON...")
@click.option(
    "--answer", "answer_opts", multiple=True, metavar="ID=JSON", help="An answer (same as a positional ID=JSON)."
)
@click.option("--invocation", metavar="INV", help="The invocation the ids belong to (id or unique prefix).")
@click.option("--dry-run", is_flag=True, help="Show what the answer would resolve and run; write nothing.")
@operator_option
@reason_option
def resume(
    session_id: str,
    answers: tuple[str, ...],
    answer_opts: tuple[str, ...],
    invocation: str | None,
    dry_run: bool,
    operator: str | None,
    reason: str | None,
) -> None:
    """Answer interrupt ids (all or some) and run what they unblock."""
    opts = _opts()
    if not answers and not answer_opts:
        raise click.UsageError("give at least one answer: ID=JSON (or --answer ID=JSON)")

    async def body() -> None:
        from engine.models import Content
        from engine.resume import plan_resume

        values = parse_answers([*answers, *answer_opts])
        async with open_store(write=not dry_run) as store:
            session = await store.get_session(session_id)
            inv = await resolve_invocation(store, session_id, invocation) if invocation is not None else None
            content = Content.from_responses(values)
            if dry_run:
                plan = await plan_resume(store, session_id, content, inv)
                following = plan_next_runs(plan, session.app_name)
                refusal = app_refusal(session.app_name)  # what the real command would say: it needs the app's code
                if opts.json:
                    out_json({**plan.to_dict(), "changes": safe(plan.to_dict()["changes"]), "next": following,
                              "would_run": refusal is None, "refusal": refusal})
                else:
                    for line in render_plan(plan, session_id, following):
                        out(line)
                if refusal is not None:
                    fail(f"the real command would refuse (nothing would be written): {refusal}")
                return
            if store.read_only:
                raise ReadOnlyError("the store is open read-only (--read-only); nothing was written")
            runner = opts.registry().runner(session.app_name, store)
            # The runner validates and loads the invocation once; the stream folds its copy.
            loaded: dict[str, Any] = {}
            events = runner.run(
                session.user_id, session_id, content, inv, operator=_operator(operator), reason=reason,
                on_loaded=lambda inv_id, proj: loaded.update(inv=inv_id, proj=proj),
            )
            proj, count = await stream_run(store, session_id, None, events, opts.json, loaded)
            _summary(proj, loaded["inv"], count, opts.json)

    run(body(), on_interrupt=stopped_hint(session_id))


@cli.command()
@common
@app_spec_option
@click.argument("session_id", metavar="SESSION")
@click.argument("invocation", metavar="INVOCATION")
@click.option(
    "--ack-in-doubt",
    "ack_in_doubt",
    is_flag=True,
    help="Re-execute nodes in doubt (started, no end record: their side effects may have happened).",
)
@operator_option
@reason_option
def redrive(session_id: str, invocation: str, ack_in_doubt: bool, operator: str | None, reason: str | None) -> None:
    """Continue a failed or interrupted invocation: completed nodes are kept, never run again.

    Nodes in doubt (an interrupted run started them but recorded no end) run
    again only with --ack-in-doubt, which the audit log records."""
    opts = _opts()

    async def body() -> None:
        async with open_store(write=True) as store:
            session = await store.get_session(session_id)
            inv = await resolve_invocation(store, session_id, invocation)
            runner = opts.registry().runner(session.app_name, store)
            events = runner.run(
                session.user_id,
                session_id,
                invocation_id=inv,
                operator=_operator(operator),
                reason=reason,
                acknowledge_in_doubt=ack_in_doubt,
            )
            proj, count = await stream_run(store, session_id, inv, events, opts.json)
            _summary(proj, inv, count, opts.json)

    run(body(), on_interrupt=stopped_hint(session_id))


@cli.command()
@common
@click.argument("session_id", metavar="SESSION")
@click.argument("invocation", metavar="INVOCATION")
@operator_option
@click.option("--reason", metavar="TEXT", help="Why (required); recorded on the cancel event.")
@click.option("--yes", "-y", is_flag=True, help="Do not ask for confirmation on a terminal.")
def cancel(session_id: str, invocation: str, operator: str | None, reason: str | None, yes: bool) -> None:
    """Cancel a waiting or failed invocation; its open interrupts close. Final:
    asks first on a terminal (unless --yes), and needs a --reason, like the console."""
    opts = _opts()

    async def body() -> None:
        from engine.models import NodeStatus
        from engine.resume import load_invocation
        from engine.runner import cancel_invocation

        async with open_store(write=True) as store:
            await store.get_session(session_id)
            inv = await resolve_invocation(store, session_id, invocation)
            before = await load_invocation(store, session_id, inv)
            closed = [i.id for i in before.open_interrupts(inv)]
            # A finished invocation or a read-only store: the engine's own refusal says why not.
            finished = opts.read_only or before.invocation_status(inv) in (NodeStatus.COMPLETED, NodeStatus.CANCELLED)
            if not finished and (not reason or not reason.strip()):
                fail("a cancel needs a reason: add --reason TEXT (it is recorded with the cancel); nothing was written")
            if not finished and not yes and interactive():
                what = f"; it closes {len(closed)} open interrupt(s)" if closed else ""
                if not click.confirm(clean(f"Cancel invocation {inv} of session {session_id}{what}? This is final"),
                                     default=False):
                    fail("not cancelled: nothing was written")
            event = await cancel_invocation(store, session_id, inv, operator=_operator(operator), reason=reason)
        if opts.json:
            out_json({"invocation_id": inv, "status": "CANCELLED", "closed": closed, "event_id": event.id})
        else:
            out(f"cancelled invocation {inv}" + (f"; closed {', '.join(closed)}" if closed else ""))

    run(body())


# --------------------------------------------------------------------- replay
# --------------------------------------------------------------------- events
EVENTS_PAGE = 1000
"""Events read per store call by ``hitl events``."""
MAX_SEQ = 2**63 - 1
"""The largest seq a store can hold (SQLite's INTEGER)."""


def _seq(ctx: click.Context, param: click.Parameter, value: int | None) -> int | None:
    if value is not None and value > MAX_SEQ:
        fail(f"{param.opts[0]} {value} is larger than any event seq can be (at most {MAX_SEQ})")
    return value

def event_summary(event: Event) -> str:
    """One line of what an event says (no projection needed)."""
    meta = event.custom_metadata or {}
    who = f" by {meta['operator']}" if meta.get("operator") else ""
    kind = event.kind
    if kind == "message":
        return f"new invocation: {short(event.content.text if event.content else '', 60)}"
    if kind == "response":
        return f"answers {', '.join(fr.id for fr in event.function_responses)}{who}"
    if kind in ("redrive", "cancel"):
        return f"{kind}{who}" + (f" ({short(meta['reason'], 40)})" if meta.get("reason") else "")
    if kind == "interrupt":
        return f"asks {', '.join(event.long_running_tool_ids or [])}"
    if event.error_code:
        return f"{event.error_code}: {short(event.error_message, 60)}"
    if kind == "end" and event.node_info and event.node_info.status:
        return f"{event.node_info.status.value} {short(event.output, 50)}".rstrip()
    return short(event.output, 60)


async def _event_pages(store: Any, session_id: str, after: int, limit: int | None) -> AsyncIterator[Any]:
    """A session's events after ``after`` (at most ``limit``), read a page at a
    time so memory stays constant however long the session is."""
    last, left = after, limit
    while left is None or left > 0:
        want = EVENTS_PAGE if left is None else min(EVENTS_PAGE, left)
        page = await store.events(session_id, after_seq=last, limit=want)
        for stored in page:
            yield stored
        if len(page) < want:
            return
        last = page[-1].seq
        if left is not None:
            left -= len(page)


@cli.command()
@common
@click.argument("session_id", metavar="SESSION")
@click.option("--after", type=click.IntRange(0), callback=_seq, default=0, metavar="SEQ", help="Only events after this seq.")
@click.option("--limit", type=click.IntRange(1), default=None, help="At most this many events.")
@click.option("--tail", is_flag=True, help="Keep printing new events as they are appended (Ctrl-C stops).")
@click.option(
    "--interval", type=click.FloatRange(0.05), default=0.5, show_default=True, help="Polling interval for --tail (a fallback on PostgreSQL, which notifies)."
)
def events(session_id: str, after: int, limit: int | None, tail: bool, interval: float) -> None:
    """A session's event log, one line per event (--tail follows it)."""
    opts = _opts()

    async def body() -> None:
        async with open_store(write=False) as store:
            await store.get_session(session_id)
            printed = 0
            if tail:  # woken by notifications where the store has them (PostgreSQL), else polling
                from engine.store.tail import follow

                source: Any = follow(store, session_id, after_seq=after, interval=interval)
            else:
                source = _event_pages(store, session_id, after, limit)
            async for stored in source:
                _redactor().learn_events([stored.event])
                e = safe_event(stored.event)
                if opts.json:
                    out_json({"seq": stored.seq, **e.model_dump(mode="json", exclude_none=True)})
                else:
                    line = f"{stored.seq:>6}  {clock(e.timestamp)}  {e.kind:<9} {(e.path or '-'):<40} {event_summary(e)}"
                    out(line.rstrip())
                printed += 1
                if limit is not None and printed >= limit:
                    return

    with suppress(KeyboardInterrupt):
        run(body())


@cli.command()
@common
@click.argument("session_id", metavar="SESSION", required=False)
@click.option("--at", "at", type=click.IntRange(0), callback=_seq, metavar="N", help="Show the node tree as of event N.")
@click.option(
    "--file",
    "file",
    type=click.Path(exists=True, dir_okay=False, allow_dash=True),
    help="Replay an exported .jsonl file (no store needed).",
)
@click.option("--all-runs", is_flag=True, help="With --at: show every loop iteration.")
@click.option(
    "--diff-from",
    "diff_from",
    type=click.IntRange(0),
    callback=_seq,
    metavar="M",
    help="With --at N: what changed between event M and event N (statuses, outputs, runs, interrupts, state).",
)
@click.option("--ui", is_flag=True, help="Open the console's Replay screen (read-only) instead of printing.")
def replay(
    session_id: str | None, at: int | None, file: str | None, all_runs: bool, diff_from: int | None, ui: bool
) -> None:
    """Step through a session's history: each event, its markers and what it changed.

    With --json, one object per event: its markers, the statuses it changed and
    the status of every node run of its invocation after it (what the console's
    Replay screen shows at that event)."""
    opts = _opts()
    if (session_id is None) == (file is None):
        raise click.UsageError("give a SESSION or --file EXPORT.jsonl (one of them)")
    if diff_from is not None and at is None:
        raise click.UsageError("--diff-from M needs --at N (the other end of the diff)")
    if ui:
        _replay_ui(session_id, file, at)
        return

    async def body() -> None:
        from engine.replay import Replay
        from engine.views import goto

        if file is not None:
            from engine.store.jsonl import parse_export

            parsed = parse_export(read_bounded(file, MAX_IMPORT_BYTES, "replay --file").splitlines())
            header = parsed.session
            _redactor().learn_events(parsed.events)
            events: list[tuple[int, Event]] = [(n, safe_event(e)) for n, e in enumerate(parsed.events, start=1)]
        else:
            assert session_id is not None
            async with open_store(write=False) as store:
                header = await store.get_session(session_id)
                for n, name in ((at, "--at"), (diff_from, "--diff-from")):
                    if n is not None and n > header.last_seq:
                        raise HitlError(f"session {header.id} has {header.last_seq} events; {name} {n} is past its end")
                if at and diff_from is None:  # one position: seek, page by page, keeping no event list
                    await _replay_at(store, header.id, at, header.last_seq, all_runs, opts.json)
                    return
                # --at N (and --diff-from M) need the events up to there, not the rest.
                upto = max(at or 0, diff_from or 0) if at is not None else None
                stored = await store.events(session_id, limit=upto) if upto != 0 else []
                _redactor().learn_events(s.event for s in stored)
                events = [(s.seq, safe_event(s.event)) for s in stored]
        cursor = Replay(events)
        total = header.last_seq if file is None else len(cursor)
        for n, name in ((at, "--at"), (diff_from, "--diff-from")):
            if n is not None and n > total:
                raise HitlError(f"session {header.id} has {total} events; {name} {n} is past its end")
        if at is not None and diff_from is not None:
            _print_diff(header.id, cursor, diff_from, at, opts.json)
        elif at is not None:
            _print_tree_at(header.id, dataclasses.replace(goto(cursor, at), total=total), all_runs, opts.json)
        else:
            for k in range(1, len(cursor) + 1):
                _print_frame(goto(cursor, k), opts.json)

    run(body())


async def _replay_at(store: SessionStore, session_id: str, at: int, total: int, all_runs: bool, as_json: bool) -> None:
    """``replay SESSION --at N``: the frame from the nearest snapshot (or event 1)
    and the events up to N (:func:`engine.replay_seek.frame_at`)."""
    from engine.replay_seek import frame_at

    frame, _ = await frame_at(store, session_id, at, total, compact_ok=not all_runs)
    # Folded raw (masking every event cost more than the fold): learn the secrets
    # the projection holds, then mask what is printed, like `hitl show`.
    _learn_projection(frame.projection)
    if frame.step is not None:
        _redactor().learn_events([frame.step.event])
    _print_tree_at(session_id, frame, all_runs, as_json, masked=True)


def _replay_ui(session_id: str | None, file: str | None, at: int | None) -> None:
    """The console, read-only, on the Replay screen of a session or a file."""
    from console.app import run_app
    from console.screens.replay import ReplaySource

    if file == "-":
        raise click.UsageError("--ui replays a file, not stdin: save the export first")
    source = ReplaySource(session_id=session_id, file=Path(file) if file else None, at=at)
    opts = _opts()
    run_app(
        opts.db_path(), read_only=True, replay=source, show_secrets=opts.show_secrets, secret_patterns=opts.patterns()
    )


def _print_frame(frame: Frame, as_json: bool) -> None:
    from engine.views import frame_dict, status_changes

    """One replayed event: its markers, then the statuses it changed."""
    if as_json:
        out_json(frame_dict(frame))
        return
    step = frame.step
    assert step is not None
    event = step.event
    notes = [m.text for m in frame.markers]
    out(
        f"{step.seq:>6}  {clock(event.timestamp)}  {event.kind:<9} {(event.path or '-'):<40} {'; '.join(notes)}".rstrip()
    )
    changed = status_changes(frame.effects)
    if event.kind == "start":
        changed.pop(event.path or "", None)  # RUNNING, obviously
    if changed:
        out(f"{'':>6}  {'':19}  {'':<9} -> {', '.join(f'{p}={s}' for p, s in changed.items())}")


def _print_diff(session_id: str, cursor: Replay, first: int, second: int, as_json: bool) -> None:
    """``--at N --diff-from M``: the console's diff (``m``, move, ``d``) as text or JSON."""
    from engine.replay import diff
    from engine.views import diff_dict

    rows = diff(cursor.projection_at(first), cursor.projection_at(second))
    if as_json:
        out_json({"session": session_id, "from": first, "to": second, "changes": [diff_dict(r) for r in rows]})
        return
    out(f"session {session_id}: what changed from event {first} to event {second}")
    if not rows:
        out("  nothing")
    for r in rows:
        before = "-" if r.before is None else short(r.before, 40)  # events were masked before the fold
        after = "-" if r.after is None else short(r.after, 40)
        out(f"  {r.area:<9} {r.key:<48} {before} -> {after}")


def _print_tree_at(session_id: str, frame: Frame, all_runs: bool, as_json: bool, masked: bool = False) -> None:
    """``--at N``: the node tree of every invocation after event N, and that event
    (``masked``: pass the rows through the redactor, the frame holds raw values)."""
    from engine.views import frame_dict

    proj, at, total = frame.projection, frame.position, frame.total
    rows: Callable[[Projection, str, bool], list[dict[str, Any]]] = (
        (lambda p, i, a: safe(tree_rows(p, i, a))) if masked else tree_rows
    )
    if as_json:
        data: dict[str, Any] = {
            "session": session_id,
            "at": at,
            "of": total,
            "invocations": [{"invocation_id": i, "nodes": rows(proj, i, all_runs)} for i in proj.invocations],
            "open": [x.id for x in proj.open_interrupts()],
        }
        if frame.step is not None:
            data["event"] = frame_dict(frame, nodes=False)
        out_json(safe(data) if masked else data)
        return
    out(f"session {session_id} at event {at} of {total}")
    if frame.step is not None:
        event = frame.step.event
        out(f"event {at}: {event.kind} {event.path or event.author}  {'; '.join(m.text for m in frame.markers)}".rstrip())
    for inv_id in proj.invocations:
        status = proj.invocation_status(inv_id)
        out(f"invocation {inv_id}  {status.value if status else '-'}")
        for line in render_tree(rows(proj, inv_id, all_runs)):
            out(line)


# -------------------------------------------------------------- export/import
@cli.command(name="export")
@common
@click.argument("session_id", metavar="SESSION")
def export_cmd(session_id: str) -> None:
    """Write a session as JSON Lines to stdout (hitl import reads it back)."""

    async def body() -> None:
        async with open_store(write=False) as store:
            stream = click.get_text_stream("stdout")
            async for line in store.export_session(session_id):  # type: ignore[attr-defined]
                stream.write(line)
            stream.flush()

    run(body())


@cli.command(name="import")
@common
@click.argument("file", type=click.Path(exists=True, dir_okay=False, allow_dash=True))
@click.option("--as", "as_id", metavar="SESSION", help="Import under a new session id.")
@operator_option
@reason_option
def import_cmd(file: str, as_id: str | None, operator: str | None, reason: str | None) -> None:
    """Create a session from a `hitl export` file (validated before anything is written).

    The import is recorded in the audit log with the operator, the reason and the file."""

    async def body() -> None:
        if as_id is not None:
            require_id(as_id, "--as (the new session id)")
        lines = bounded_lines(file, MAX_IMPORT_BYTES, "import")  # read as the store validates: one line at a time
        source = "stdin" if file == "-" else str(Path(file).resolve())
        async with open_store(write=True) as store:
            session = await store.import_session(
                lines, session_id=as_id, operator=_operator(operator), reason=reason, source=source
            )
        if _opts().json:
            out_json({**session.model_dump(), "state": safe(session.state)})
        else:
            out(
                f"imported session {session.id} ({session.app_name}, user {session.user_id}, {session.last_seq} events)"
            )

    run(body())


# ---------------------------------------------------------------------- audit
AUDIT_ACTIONS = ("answer", "redrive", "cancel", "import")


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


@cli.command()
@common
@click.option("--operator", metavar="NAME", help="Only writes by this operator.")
@click.option("--session", "session_id", metavar="SESSION", help="Only writes to this session.")
@click.option("--action", type=click.Choice(AUDIT_ACTIONS), help="Only this kind of write.")
@click.option("--since", metavar="WHEN", callback=_when, help="At or after WHEN (2h = two hours ago, 2026-01-31, ...).")
@click.option("--until", metavar="WHEN", callback=_when, help="Before WHEN.")
@click.option("--limit", type=click.IntRange(1, 10_000), default=50, show_default=True)
@click.option("--cursor", metavar="CURSOR", help="Continue a listing (printed as next cursor).")
def audit(
    operator: str | None,
    session_id: str | None,
    action: str | None,
    since: float | None,
    until: float | None,
    limit: int,
    cursor: str | None,
) -> None:
    """Operator writes (answers, re-drives, cancels, imports): who, when, why; newest first."""

    async def body() -> None:
        async with open_store(write=False) as store:
            page = await page_of(
                store.audit_log(
                    operator=operator,
                    session_id=session_id,
                    action=action,
                    since=since,
                    until=until,
                    limit=limit,
                    cursor=cursor,
                )
            )
        if _opts().json:
            out_json({"audit": [r.model_dump() for r in page.items], "next_cursor": page.next_cursor})
            return
        rows = []
        for r in page.items:
            d = r.details
            if r.action == "answer":
                what = f"answered {id_list(d.get('ids', []), 4)}"
            elif r.action == "import":
                what = f"imported {d.get('events', '?')} events" + (f" from {d['source']}" if d.get("source") else "")
            elif r.action == "redrive" and d.get("in_doubt"):
                what = f"re-drove, acknowledged in doubt: {id_list(d['in_doubt'], 3)}"
            else:
                what = {"redrive": "re-drove", "cancel": "cancelled"}.get(r.action, r.action)
            rows.append(
                [
                    clock(r.at),
                    r.action,
                    r.operator or "-",
                    r.session_id,
                    (r.invocation_id or "-")[:12],
                    short(what, 60),
                    short(r.reason, 40) or "-",
                ]
            )
        out(
            table(rows, [f"TIME ({zone_name()})", "ACTION", "OPERATOR", "SESSION", "INVOCATION", "WHAT", "REASON"])
            if rows
            else "no operator writes match"
        )
        if page.next_cursor:
            out(f"more: --cursor {page.next_cursor}")

    run(body())


# ----------------------------------------------------------------------- demo
@cli.command()
@common
@click.option("--sessions", "count", type=click.IntRange(0), default=0, help="Add N bulk sessions for scale tests.")
@click.option("--fresh", is_flag=True, help="Delete the database first.")
@click.option(
    "--clock", "epoch", type=float, metavar="EPOCH", help="Start the simulated clock here (reproducible store)."
)
@click.option("--long-iterations", type=click.IntRange(0), default=None, help="Loop iterations of deploy-long-1.")
def demo(count: int, fresh: bool, epoch: float | None, long_iterations: int | None) -> None:
    """Build the demo store: the sample apps run through the real Runner.

    Always with the sample apps' own code (a config or --app entry of the same
    name does not replace it here)."""
    from engine.store.factory import store_label
    from sample_sessions.demo import DEFAULT_LONG_ITERATIONS, build_demo_db, format_report

    opts = _opts()
    if opts.read_only:
        fail("hitl demo writes the store; drop --read-only")
    path = opts.db_path()

    async def body() -> None:
        report = await build_demo_db(
            path,
            sessions=count,
            fresh=fresh,
            epoch=epoch,
            long_iterations=DEFAULT_LONG_ITERATIONS if long_iterations is None else long_iterations,
            progress=lambda what: click.echo(f"  building {what}", err=True),
            store_options=opts.store_options(),
        )
        if opts.json:
            out_json(
                {
                    "db": store_label(path),
                    "created": report.created,
                    "kept": report.skipped,
                    "bulk": report.bulk,
                    "seconds": report.seconds,
                }
            )
        else:
            out(format_report(report, store_label(path)))

    run(body())


# ---------------------------------------------------------------------- more commands
if __name__ == "__main__":
    # `python -m console.cli`: run the one real console.cli module (with every
    # command registered), not this __main__ copy, whose command modules would
    # import console.cli again half-built.
    from console.cli import main as _main

    _main()
else:
    from console.serve.command import serve as _serve  # noqa: E402 -- needs this module's options

    cli.add_command(_serve)

    from . import cli_store  # noqa: E402, F401 -- registers hitl migrate and hitl copy
