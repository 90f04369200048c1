"""Console test helpers: a pinned fixture store, an app factory, settle helpers."""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager
from typing import Any, TypeVar

import pytest
from rich.console import Console
from textual.pilot import Pilot
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import DataTable
from textual.worker import WorkerState

from console.app import HitlApp
from console.widgets.details import Details
from engine.errors import CorruptEventError
from engine.models import StoredEvent
from engine.store import MemoryStore

from .scenarios import NOW


@pytest.fixture(autouse=True)
def _utc() -> Iterator[None]:
    """Event times render in local time: pin the zone."""
    old = os.environ.get("TZ")
    os.environ["TZ"] = "UTC"
    time.tzset()
    yield
    if old is None:
        os.environ.pop("TZ", None)
    else:
        os.environ["TZ"] = old
    time.tzset()


def make_app(store: Any, **kwargs: Any) -> HitlApp:
    """An app with a frozen clock and no timers unless asked for."""
    kwargs.setdefault("clock", lambda: NOW)
    kwargs.setdefault("poll_interval", None)
    kwargs.setdefault("refresh_interval", None)
    kwargs.setdefault("cursor_blink", False)
    return HitlApp(store, **kwargs)


def pending(app: Any) -> list[str]:
    """What the console still has to do: a worker running, a one-shot timer of its
    own screens and widgets not fired yet (filter debounce, a delayed page fetch, the
    history fold), a call of theirs waiting for the next refresh, a message not handled yet, a DataTable's column sizing not done
    yet. Toasts' expiry timers are Textual's, not the console's: a notification
    stays on screen."""
    todo = [f"worker {w.name}" for w in app.workers if w.state in (WorkerState.PENDING, WorkerState.RUNNING)]
    nodes = [app, *(n for screen in app.screen_stack for n in screen.walk_children(with_self=True))]
    for node in nodes:
        if node._message_queue.qsize():
            todo.append(f"messages for {node!r}")
        if node._next_callbacks and type(node).__module__.startswith("console."):
            todo.append(f"calls after the next refresh of {node!r}")  # the home's liveness verdict, say
        if isinstance(node, DataTable) and (node._require_update_dimensions or node._updated_cells):
            # A DataTable sizes its columns when idle: until then new rows are drawn
            # in header-wide columns (a snapshot taken then shows 'ref' for 'refunds').
            todo.append(f"column widths of {node!r}")
        if type(node).__module__.startswith("console."):
            todo += [
                f"timer {t.name} of {node!r}"
                for t in list(node._timers)
                if t._repeat == 0 and t._task is not None and not t._task.done()
            ]
    return todo


async def settle(pilot: Pilot[Any], rounds: int = 2, timeout: float = 60.0) -> None:
    """Wait until the console is quiet (``pending`` is empty) ``rounds`` checks in a
    row: its workers done, their messages handled, its own timers fired. A state, not
    a time: as exact on a loaded machine as on a quiet one. The deadline is generous,
    against a hang only."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    quiet = 0
    while quiet < rounds:
        await pilot.pause()
        await pilot.app.workers.wait_for_complete()
        todo = pending(pilot.app)
        if not todo:
            quiet += 1
            continue
        quiet = 0
        if loop.time() > deadline:
            raise AssertionError(f"the console did not settle in {timeout}s: {todo}")
        await pilot.pause(0.02)


S = TypeVar("S", bound=Screen[Any])


async def drive(
    pilot: Pilot[Any],
    *keys: str,
    session: str | None = None,
    path: str | None = None,
    command: str | None = None,
    expect: type[S] | None = None,
    wait: Callable[[Pilot[Any]], Awaitable[None]] | None = None,
) -> S:
    """The steps most console tests begin with: settle, open ``session`` (at ``path``)
    if given, run the command line ``command`` if given, press each key and settle after each; the screen it ends on, which must
    be an ``expect`` when given. ``wait`` replaces ``settle`` for the files whose
    lighter wait (no timers) the test was written against."""
    wait = wait or settle
    await wait(pilot)
    if session is not None:
        pilot.app.open_session(session, path=path)
        await wait(pilot)
    if command is not None:
        pilot.app.run_command(command)
        await wait(pilot)
    return await press_each(pilot, *keys, expect=expect, wait=wait)


@asynccontextmanager
async def running(
    store: Any,
    size: tuple[int, int],
    *keys: str,
    session: str | None = None,
    path: str | None = None,
    command: str | None = None,
    expect: type[S] | None = None,
    **app_kwargs: Any,
) -> AsyncIterator[tuple[HitlApp, Pilot[Any], S]]:
    """``make_app(store, **app_kwargs)`` running at ``size``, driven (``drive``) to
    where the test starts: the app, its pilot and the screen it is on."""
    app = make_app(store, **app_kwargs)
    async with app.run_test(size=size) as pilot:
        yield app, pilot, await drive(pilot, *keys, session=session, path=path, command=command, expect=expect)


async def press_each(
    pilot: Pilot[Any],
    *keys: str,
    expect: type[S] | None = None,
    wait: Callable[[Pilot[Any]], Awaitable[None]] | None = None,
) -> S:
    """Press each key and settle (or ``wait``) after each; the screen it ends on,
    which must be an ``expect`` when given."""
    wait = wait or settle
    for key in keys:
        await pilot.press(key)
        await wait(pilot)
    screen = pilot.app.screen
    if expect is not None:
        assert isinstance(screen, expect), type(screen)
    return screen  # type: ignore[return-value]  # an ``S`` when expected, a Screen otherwise


W = TypeVar("W", bound=Widget)


def focused(app: HitlApp, widget_type: type[W]) -> W:
    """The current screen's one ``widget_type``, given the focus."""
    widget = app.screen.query_one(widget_type)
    widget.focus()
    return widget


@pytest.fixture
def operator(monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> None:
    """The operator is $USER: no hitl.toml in the working directory to name another."""
    monkeypatch.setenv("USER", "tester")
    monkeypatch.chdir(tmp_path)


def keys_then_settle(*keys: str) -> Callable[[Pilot[Any]], Awaitable[None]]:
    """A ``run_before`` for snapshots: settle, then press each key and settle again."""

    async def run_before(pilot: Pilot[Any]) -> None:
        await settle(pilot)
        for key in keys:
            await pilot.press(key)
            await settle(pilot)

    return run_before


def details_text(app: HitlApp, width: int = 100) -> str:
    """The details pane's current content as plain text."""
    details = app.screen.query_one(Details)
    console = Console(width=width, record=True, file=open(os.devnull, "w"))  # noqa: SIM115
    console.print(details.shown)
    return console.export_text()


class CorruptingStore(MemoryStore):
    """A MemoryStore whose rows ``corrupt[(session, seq)]`` cannot be parsed, like a
    damaged SQLite row: every read that reaches one raises CorruptEventError.
    It has no ``skip_corrupt``, so the console's generic fallback is exercised."""

    def __init__(self, corrupt: set[tuple[str, int]]) -> None:
        super().__init__()
        self.corrupt = corrupt

    def _check(self, session_id: str, events: list[StoredEvent]) -> list[StoredEvent]:
        for se in events:
            if (session_id, se.seq) in self.corrupt:
                raise CorruptEventError(session_id, se.seq, "Expecting value: line 1 column 1 (char 0)")
        return events

    async def events(self, session_id: str, *, after_seq: int = 0, limit: int | None = None) -> list[StoredEvent]:
        return self._check(session_id, await super().events(session_id, after_seq=after_seq, limit=limit))

    async def event_at(self, session_id: str, seq: int) -> StoredEvent:
        return self._check(session_id, [await super().event_at(session_id, seq)])[0]

    async def invocation_events(self, session_id: str, invocation_id: str, *, after_seq: int = 0) -> list[StoredEvent]:
        return self._check(session_id, await super().invocation_events(session_id, invocation_id, after_seq=after_seq))


async def copy_into(src: MemoryStore, dst: MemoryStore) -> MemoryStore:
    """Copy every session (events, snapshots) of ``src`` into ``dst``."""
    from unittest import mock

    return await _copy(src, dst, lambda now: mock.patch("engine.store.memory.time", _FixedTime(now)))


class _FixedTime:
    def __init__(self, now: float) -> None:
        self.now = now

    def time(self) -> float:
        return self.now


async def copy_into_store(src: MemoryStore, dst: Any) -> Any:
    """Copy every session of ``src`` into any store through its public API."""
    return await _copy(src, dst, lambda now: contextlib.nullcontext())


async def _copy(src: MemoryStore, dst: Any, at: Callable[[float], contextlib.AbstractContextManager[Any]]) -> Any:
    """Every session of ``src`` into ``dst``, each write made under ``at(its original time)``."""
    page = await src.list_sessions(limit=10_000)
    for s in sorted(page.items, key=lambda s: s.created_at):
        session = await src.get_session(s.id)
        with at(session.created_at):
            await dst.create_session(session.app_name, session.user_id, session.id)
        for se in await src.events(s.id):
            with at(se.event.timestamp):
                await dst.append_event(s.id, se.event)
        for inv in await src.list_invocations(s.id):
            snap = await src.get_snapshot(s.id, inv.invocation_id)
            if snap is not None:
                await dst.put_snapshot(s.id, inv.invocation_id, snap[0], snap[1])
    return dst
