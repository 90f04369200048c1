"""What every command prints through: masked, cleaned lines, exact JSON, one-line errors."""

from __future__ import annotations

import json
import signal
import sys
from collections.abc import Callable, Coroutine, Iterable, Iterator
from contextlib import contextmanager
from functools import partial
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar

import click

from console import text
from console.text import clean
from console.times import date_time
from engine.errors import HitlError
from engine.redact import Redactor

if TYPE_CHECKING:
    from engine import Projection
    from engine.operations import Outcome, Step
    from engine.store.base import SessionStore


T = TypeVar("T")


_ERROR_REDACTOR = Redactor()
"""What every error line also passes at display (click shows it after the
command's context has closed): the default patterns, masked even with
--show-secrets."""


# ------------------------------------------------------------------- errors
def json_requested() -> bool:
    """Whether the running command was given ``--json`` (False outside a command). The
    only read of click's context outside options.py: a flag, never the Redactor."""
    ctx = click.get_current_context(silent=True)
    return bool(ctx is not None and getattr(ctx.find_root().obj, "json", False))


class OperatorError(click.ClickException):
    """A HitlError surfaced as exit code 1 with a one-line reason. Under ``--json``
    the line is JSON on stdout, ``{"error": "...", "code": "..."}`` (``code``: the
    error's class, e.g. ``SessionNotFoundError``; ``error`` for the CLI's own)."""

    exit_code = 1

    def __init__(self, message: str, code: str = "error") -> None:
        super().__init__(message)
        self.code = code
        self.as_json = json_requested()  # now: show() runs after the context closed

    def show(self, file: Any = None) -> None:
        # Errors echo values (validation messages, exception texts): masked too, and
        # shown, never obeyed (no terminal control).
        message = _ERROR_REDACTOR.text(self.format_message())
        if self.as_json:
            click.echo(json_text(_ERROR_REDACTOR, {"error": message, "code": self.code}))
            return
        click.echo(clean(f"error: {message}"), err=True)


def fail(message: str, code: str = "error") -> NoReturn:
    raise OperatorError(message, code)


def run(red: Redactor, coro: Coroutine[Any, Any, T], *, on_interrupt: str | None = None) -> T:
    """Run a command body; operator errors become exit 1 without a traceback,
    their line masked by the command's Redactor ``red`` (it knows the secrets
    the command read). With ``on_interrupt``, Ctrl-C is exit 1 with that line
    (else click's "Aborted!")."""
    import asyncio  # only a command that runs a coroutine pays for it

    try:
        with operator_errors(red):
            return asyncio.run(_interruptible(coro))
    except (KeyboardInterrupt, asyncio.CancelledError):
        if on_interrupt is None:
            raise KeyboardInterrupt from None  # click: "Aborted!"
        raise OperatorError(on_interrupt) from None


@contextmanager
def operator_errors(red: Redactor) -> Iterator[None]:
    """What :func:`run` does with an operator error, for a body that runs without
    asyncio (a fast path): exit 1 without a traceback, its line masked by ``red``."""
    try:
        yield
    except HitlError as exc:
        raise OperatorError(red.text(" ".join(str(exc).split())), type(exc).__name__) from None


async def _interruptible(coro: Coroutine[Any, Any, T]) -> T:
    """``coro``, cancelled by the first Ctrl-C however the signal arrives.

    asyncio.run's own SIGINT handler is a Python-level handler: it runs only when
    the main thread next executes bytecode. The kernel may deliver SIGINT to any
    thread of the process (the store's or the executor's); the main thread, asleep
    in the event loop until its next timer (a node sleeping a minute), then did
    not notice Ctrl-C for that long (a hung CI run's stacks showed it). A loop
    signal handler goes through the loop's wakeup fd, which the C-level handler
    writes whichever thread it runs on. A second Ctrl-C raises KeyboardInterrupt
    at once, as asyncio's does."""
    import asyncio

    loop = asyncio.get_running_loop()
    task = asyncio.current_task()
    hits = 0

    def on_sigint() -> None:
        nonlocal hits
        hits += 1
        if hits > 1 or task is None:
            raise KeyboardInterrupt
        task.cancel()

    try:
        loop.add_signal_handler(signal.SIGINT, on_sigint)
    except (NotImplementedError, RuntimeError, ValueError):  # not the main thread, or no Unix signals
        return await coro
    try:
        return await coro
    finally:
        loop.remove_signal_handler(signal.SIGINT)


def stopped_hint(session_id: str) -> str:
    return (
        "stopped by Ctrl-C: nothing more was written; if a turn was running it is now interrupted mid-run "
        f"(see `hitl show {session_id}`: continue it with `hitl redrive`)"
    )


def interactive() -> bool:
    """Someone at a terminal can answer a question (stdin is a tty)."""
    return sys.stdin.isatty()


def out(red: Redactor, text: str = "") -> None:
    """Every line the CLI prints passes the command's Redactor's free-text
    masking, then console.text.clean: data in it is shown, never obeyed (no
    terminal control, no bidi reordering). ``--json`` output is exact."""
    click.echo(line_text(red, text))


def out_lines(red: Redactor, lines: Iterable[str], batch: int = 500) -> None:
    """:func:`out` for each of ``lines``, written ``batch`` lines at a time (the
    same bytes; one write per batch instead of per line). Each batch is masked
    with what ``red`` knows when it is written: lines made without teaching it."""
    chunk: list[str] = []
    for line in lines:
        chunk.append(line)
        if len(chunk) >= batch:
            click.echo(masked_lines(red, chunk))
            chunk = []
    if chunk:
        click.echo(masked_lines(red, chunk))


def masked_lines(red: Redactor, lines: list[str]) -> str:
    """``"\\n".join(line_text(red, line) for line in lines)``, masked as one text:
    the lines as they are when that changes nothing (a log's usual case: one
    pass of each pattern instead of one per line). Exact: what masks or cleans
    part of one line changes the joined text too, and then each line is masked
    on its own."""
    joined = "\n".join(lines)
    if line_text(red, joined) == joined:
        return joined
    return "\n".join(line_text(red, line) for line in lines)


def line_text(red: Redactor, text: str) -> str:
    """What :func:`out` prints for ``text`` (without the newline)."""
    return clean(red.text(text))


def json_text(red: Redactor, obj: Any, *, masked: bool = False) -> str:
    """What :func:`out_json` prints for ``obj`` (without the newline): masked by
    ``red`` -- values of secret keys, secret-named schema defaults, known secret
    values and secret-looking free text, wherever they are in ``obj`` (``masked``:
    the caller masked its values already, e.g. an event through ``red.event``) --
    non-ASCII text as is when stdout is UTF-8, else as JSON escapes (``\\u6771``),
    which every ASCII-based encoding carries and every JSON reader decodes back."""
    if not masked:
        obj = red.value(obj)
    return red.text(json.dumps(obj, default=str, ensure_ascii=not utf8_stdout()))


def utf8_stdout() -> bool:
    """Whether stdout encodes UTF-8 (a UTF-8 locale, or PYTHONIOENCODING / -X utf8)."""
    import codecs

    try:
        return codecs.lookup(getattr(sys.stdout, "encoding", None) or "utf-8").name == "utf-8"
    except LookupError:
        return False


def more(red: Redactor, cursor: str | None) -> None:
    """A listing's last line when it has more: the cursor that continues it."""
    if cursor:
        out(red, f"more: --cursor {cursor}")


def out_json(red: Redactor, obj: Any) -> None:
    click.echo(json_text(red, obj))


# ----------------------------------------------------------------- formatting
short = partial(text.short, compact=True, ellipsis="...")
"""``short(value, width)``: :func:`console.text.short` in the CLI's form (compact
JSON, None empty, cut with ``...``); values are masked before they get here."""

id_list = partial(text.id_list, more=" (+{n} more)", empty="none")
"""``id_list(ids, limit)``: ``a, b, c (+12 more)`` (--json has them all)."""


clock = date_time
"""Absolute times in the CLI: the console's one format (``--utc`` switches the zone)."""


def table(rows: list[list[str]], headers: list[str]) -> str:
    widths = [max(len(str(r[i])) for r in [headers, *rows]) for i in range(len(headers))]
    lines = ["  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)).rstrip()]
    lines += ["  ".join(str(c).ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]
    return "\n".join(lines)


# ------------------------------------------------------- long-running commands
def log_lines(red: Redactor, log_format: str) -> Callable[..., None]:
    """``say(event, line, **ids)`` for ``hitl worker`` / ``hitl notify``: the line as
    it is (``text``), or one JSON object (``json``: :func:`console.logs.json_line`)."""
    from console import logs

    def say(event: str, line: str, **ids: Any) -> None:
        if log_format == "json":
            click.echo(logs.json_line(red, event, line, **ids))
        else:
            out(red, line)

    return say


async def serve_metrics(store: Any, host: str, port: int | None, say: Callable[..., None], event: str) -> Any:
    """``--metrics-port``: start :mod:`console.metrics_http` and say where (None: no port asked)."""
    if port is None:
        return None
    from console import metrics_http

    try:
        server, bound = await metrics_http.start(store, host, port)
    except OSError as exc:
        fail(f"cannot listen on {host}:{port} for metrics: {exc.strerror or exc}")
    shown = host if ":" not in host else f"[{host}]"
    say(event, f"metrics at http://{shown}:{bound}/metrics", port=bound)
    return server


# ------------------------------------------------------------- a write's lines
def step_dict(step: Step) -> dict[str, Any]:
    """One persisted event with the status its node has after it and what it
    did (:func:`engine.markers.markers_for`: answers, auto-completions,
    re-executions, failures): ``--json``'s line, and the API's ``events`` item."""
    from engine.markers import markers_for

    event, proj = step.event, step.projection
    run_ = proj.get(event.invocation_id, event.path) if event.path else None
    return {
        "kind": event.kind,
        "path": event.path,
        "status": run_.status.value if run_ else None,
        "invocation_id": event.invocation_id,
        "event_id": event.id,
        "markers": [m.text for m in markers_for(event, step.change, proj)],
    }


def print_step(red: Redactor, step: Step, as_json: bool) -> None:
    """One persisted event (:func:`step_dict`), as a line or as JSON."""
    d = step_dict(step)
    if as_json:
        out_json(red, d)
    elif step.event.kind == "message":  # the operator's message, not the '-' of a row without a node
        content = step.event.content
        out(red, f"{d['kind']:<9} {json.dumps(short((content.text if content is not None else '') or '', 70), ensure_ascii=False)}")
    else:
        out(red, f"{d['kind']:<9} {(d['path'] or '-'):<44} {d['status'] or '':<9}  {'; '.join(d['markers'])}".rstrip())


async def finish(red: Redactor, store: SessionStore, done: Outcome, as_json: bool) -> None:
    """After an answer or a re-drive: its error (exit 1), else the summary line."""
    done.raise_error()
    assert done.invocation_id is not None
    if done.approval is not None:  # a multi-approver rule: this answer is one approval
        ids = ", ".join(done.answered)
        if as_json:
            out_json(red, {"kind": "approval", "invocation_id": done.invocation_id, "ids": done.answered,
                           "progress": done.approval})
        else:
            out(red, f"approval recorded for {ids}: {done.approval}; the answer is applied when the rule is met")
        return
    proj = done.after or done.before
    if proj is None:  # the turn wrote nothing and loaded nothing
        from engine.resume import load_invocation

        proj = await load_invocation(store, done.session_id, done.invocation_id)
    _summary(red, proj, done.invocation_id, len(done.written), as_json)


def _summary(red: Redactor, proj: Projection, inv: str, count: int, as_json: bool) -> None:
    status = proj.invocation_status(inv)
    open_ids = [i.id for i in proj.open_interrupts(inv)]
    if as_json:
        out_json(red,
            {"kind": "summary", "invocation_id": inv, "status": status.value if status else None, "open": open_ids}
        )
        return
    out(red, summary_line(proj, inv, count))


def summary_line(proj: Projection, inv: str, count: int) -> str:
    """What an answer or a re-drive says at its end, after writing ``count`` events."""
    status = proj.invocation_status(inv)
    open_ids = [i.id for i in proj.open_interrupts(inv)]
    if count <= 1:
        return f"answered; nothing ran: invocation {inv} keeps waiting for {id_list(open_ids, 8)}"
    return f"invocation {inv}: {status.value if status else '?'}" + (f"; open: {id_list(open_ids, 8)}" if open_ids else "")
