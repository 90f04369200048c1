"""ADK 2.x ``Runner``, ``InMemoryRunner``, ``App`` and the session service, over the engine's Runner and store.

``Runner(app_name=..., node=... | agent=... | app=App(...), session_service=...)``
and ``runner.run_async(user_id=, session_id=, new_message=, invocation_id=)``
run a turn with :class:`engine.runner.Runner` on the session service's store
(:class:`InMemorySessionService` keeps a :class:`~engine.store.MemoryStore`;
pass ``store=`` for SQLite or PostgreSQL, so that ``hitl`` shows the sessions).

What ``run_async`` yields is what ADK yields: the nodes' events (outputs,
interrupts with their function calls, errors), not the engine's start and
end records; a node whose output was on no event of the turn (a plain
returned value, an auto-completion, a nested workflow) gets an output event
made from its end record -- except the root workflow, whose output is its
terminal node's (ADK yields no event for it). A failed node's own exception
is raised, after every event.
"""

from __future__ import annotations

import asyncio
import queue
import threading
from collections.abc import AsyncGenerator, Iterator
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from ..errors import SessionNotFoundError, WorkflowFailed
from ..models import NodeStatus
from ..runner import Runner as EngineRunner
from ..store.base import SessionStore
from ..store.factory import open_store
from ..store.memory import MemoryStore
from ._events import Event, from_engine_event
from ._nodes import to_engine
from ._types import to_engine_content


class Session(BaseModel):
    """A session as ADK's session service returns it."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    id: str
    app_name: str
    user_id: str
    state: dict[str, Any] = Field(default_factory=dict)
    events: list[Event] = Field(default_factory=list)
    last_update_time: float = 0.0


class ListSessionsResponse(BaseModel):
    sessions: list[Session] = Field(default_factory=list)


class StoreSessionService:
    """ADK's session service API on any engine store (SQLite, PostgreSQL, memory):
    the sessions a ``Runner`` on it writes are what ``hitl`` shows."""

    def __init__(self, store: SessionStore | None) -> None:
        """``store``: None for a service that opens its store on first use."""
        self._store = store

    @property
    def store(self) -> SessionStore:
        if self._store is None:
            raise RuntimeError(f"{type(self).__name__} opens its store on first use: await one of its methods first")
        return self._store

    async def open(self) -> SessionStore:
        """The store, opened if it is not yet."""
        return self.store

    async def close(self) -> None:
        if self._store is not None:
            await self._store.close()

    async def create_session(
        self, *, app_name: str, user_id: str, state: dict[str, Any] | None = None, session_id: str | None = None
    ) -> Session:
        s = await (await self.open()).create_session(app_name, user_id, session_id, state=state)
        return Session(id=s.id, app_name=s.app_name, user_id=s.user_id, state=dict(s.state), last_update_time=s.updated_at)

    async def get_session(self, *, app_name: str, user_id: str, session_id: str, config: Any = None) -> Session | None:
        store = await self.open()
        try:
            s = await store.get_session(session_id)
        except SessionNotFoundError:
            return None
        if s.app_name != app_name or s.user_id != user_id:
            return None
        events = [from_engine_event(se.event) for se in await store.events(session_id)]
        return Session(
            id=s.id, app_name=s.app_name, user_id=s.user_id, state=dict(s.state), events=events, last_update_time=s.updated_at
        )

    async def list_sessions(self, *, app_name: str, user_id: str | None = None) -> ListSessionsResponse:
        out: list[Session] = []
        cursor: str | None = None
        while True:
            page = await (await self.open()).list_sessions(app_name=app_name, user_id=user_id, limit=200, cursor=cursor)
            out += [Session(id=r.id, app_name=r.app_name, user_id=r.user_id) for r in page.items]
            if page.next_cursor is None:
                return ListSessionsResponse(sessions=out)
            cursor = page.next_cursor


class InMemorySessionService(StoreSessionService):
    """ADK's in-memory session service: a new :class:`MemoryStore` (or the ``store`` given)."""

    def __init__(self, store: SessionStore | None = None) -> None:
        super().__init__(store if store is not None else MemoryStore())


class _OpenedOnFirstUse(StoreSessionService):
    """A service on a store named by a path or URL, opened by its first awaited call."""

    def __init__(self, target: str) -> None:
        super().__init__(None)
        self._target = target
        self._opening: asyncio.Lock | None = None

    async def open(self) -> SessionStore:
        if self._store is None:
            self._opening = self._opening or asyncio.Lock()
            async with self._opening:
                if self._store is None:
                    self._store = await open_store(self._target)
        return self._store


class SqliteSessionService(_OpenedOnFirstUse):
    """``SqliteSessionService(db_path=...)``: this project's SQLite store at ``db_path``
    (its own schema, not ADK's: ``hitl --db db_path`` opens it)."""

    def __init__(self, db_path: str) -> None:
        super().__init__(str(db_path))


class DatabaseSessionService(_OpenedOnFirstUse):
    """``DatabaseSessionService(db_url=...)`` with a SQLAlchemy-style URL:
    ``sqlite:///relative.db``, ``sqlite:////abs/path.db`` (``+aiosqlite`` allowed) or
    ``postgresql[+asyncpg]://...``, opened as this project's store (its own schema, not ADK's)."""

    def __init__(self, db_url: str, **_engine_kwargs: Any) -> None:
        super().__init__(_store_target(db_url))
        self.db_url = db_url


def _store_target(db_url: str) -> str:
    scheme, sep, rest = db_url.partition("://")
    if not sep:
        raise ValueError(f"not a database URL: {db_url!r} (e.g. sqlite:///sessions.db, postgresql://user@host/db)")
    base = scheme.split("+", 1)[0].lower()
    if base == "sqlite":
        if not rest.startswith("/") or rest == "/":
            raise ValueError(f"{db_url!r}: a SQLite URL names a file, as sqlite:///relative.db or sqlite:////abs.db")
        return rest[1:]  # SQLAlchemy: three slashes, a relative path; four, an absolute one
    if base in ("postgresql", "postgres"):
        return f"postgresql://{rest}"
    raise ValueError(f"{db_url!r}: only sqlite and postgresql URLs are supported here")


class ResumabilityConfig(BaseModel):
    """Accepted for ADK code; every invocation here is resumable from the store."""

    is_resumable: bool = True


class App(BaseModel):
    """``App(name=..., root_agent=...)`` (or ``root_node=``)."""

    model_config = ConfigDict(arbitrary_types_allowed=True, extra="allow")

    name: str
    root_agent: Any = None
    root_node: Any = None
    plugins: list[Any] = Field(default_factory=list)
    resumability_config: ResumabilityConfig | None = None

    @property
    def root(self) -> Any:
        return self.root_node if self.root_node is not None else self.root_agent


class Runner:
    """ADK's ``Runner`` on the engine. Keyword-only, as ADK's: ``app=`` or
    ``app_name=`` with ``node=``/``agent=``, and ``session_service=``. Other
    services (artifacts, memory, credentials, plugins) are accepted and unused."""

    def __init__(
        self,
        *,
        app: App | None = None,
        app_name: str | None = None,
        node: Any = None,
        agent: Any = None,
        session_service: StoreSessionService,
        auto_create_session: bool = False,
        **_services: Any,
    ) -> None:
        given = [k for k, v in (("app", app), ("agent", agent), ("node", node)) if v is not None]
        if len(given) != 1:
            raise ValueError(
                f"pass exactly one of app, agent or node to Runner(), not {', '.join(given) or 'none'}"
            )
        if agent is not None and not app_name:
            raise ValueError("app_name is required when agent is provided without app")
        if app is not None:
            root = app.root
            app_name = app_name or app.name
        else:
            root = node if node is not None else agent
            app_name = app_name or getattr(root, "name", None)
        if root is None:
            raise ValueError("App root_agent must be provided")
        if not app_name:
            raise ValueError("app_name is required: the node has no name to take it from")
        self.app = app
        self.app_name = app_name
        self.node = root
        self.agent = root
        self.session_service = session_service
        self.auto_create_session = auto_create_session
        self._root = to_engine(root)
        self._engine: EngineRunner | None = None

    async def run_async(
        self,
        *,
        user_id: str,
        session_id: str,
        invocation_id: str | None = None,
        new_message: Any = None,
        state_delta: dict[str, Any] | None = None,
        run_config: Any = None,
        yield_user_message: bool = False,
        **_: Any,
    ) -> AsyncGenerator[Event, None]:
        """Run one turn: a text message starts an invocation, function responses
        resume the one that asked. Yields the nodes' events (and first the
        stored user message, with ``yield_user_message=True``)."""
        store = await self.session_service.open()
        if self._engine is None:
            self._engine = EngineRunner(self.app_name, self._root, store)
        try:
            session = await store.get_session(session_id)
        except SessionNotFoundError:
            if not self.auto_create_session:
                raise ValueError(f"Session not found: {session_id}") from None
            await self.session_service.create_session(app_name=self.app_name, user_id=user_id, session_id=session_id)
        else:
            if session.app_name != self.app_name:
                raise ValueError(f"session {session_id} belongs to app {session.app_name!r}, not {self.app_name!r}")
        message = to_engine_content(new_message)
        with_output: set[str] = set()
        try:
            async for e in self._engine.run(user_id, session_id, message, invocation_id, state_delta=state_delta):
                out = _visible(e, with_output, yield_user_message)
                if out is not None:
                    yield out
        except WorkflowFailed as exc:
            if exc.exception is not None:
                raise exc.exception from exc
            raise

    def run(
        self, *, user_id: str, session_id: str, new_message: Any = None, run_config: Any = None, **kw: Any
    ) -> Iterator[Event]:
        """``run_async`` for synchronous callers (runs it on a thread of its own)."""
        q: queue.Queue[tuple[str, Any]] = queue.Queue()

        async def drive() -> None:
            async for event in self.run_async(user_id=user_id, session_id=session_id, new_message=new_message, **kw):
                q.put(("event", event))

        def thread() -> None:
            try:
                asyncio.run(drive())
                q.put(("done", None))
            except BaseException as exc:  # handed to the caller's thread
                q.put(("error", exc))

        threading.Thread(target=thread, daemon=True).start()
        while True:
            kind, value = q.get()
            if kind == "event":
                yield value
            elif kind == "error":
                raise value
            else:
                return

    async def close(self) -> None:
        return None


class InMemoryRunner(Runner):
    """``InMemoryRunner(agent=... | node=... | app=..., app_name=...)`` with its own in-memory session service."""

    def __init__(self, agent: Any = None, *, app_name: str | None = None, app: App | None = None, node: Any = None, **kw: Any) -> None:
        super().__init__(
            app=app,
            app_name=app_name or (None if app is not None else "InMemoryRunner"),
            node=node,
            agent=agent,
            session_service=kw.pop("session_service", None) or InMemorySessionService(),
            **kw,
        )


def _visible(e: Any, with_output: set[str], user: bool = False) -> Event | None:
    """What ADK would yield for the engine's event ``e`` (None: nothing)."""
    info = e.node_info
    if info is None:
        # the user's message or answer: ADK echoes it only when asked to
        return from_engine_event(e) if user and e.author == "user" else None
    if info.lifecycle == "start":
        return None
    if info.lifecycle == "end":
        if info.status is not NodeStatus.COMPLETED or e.output is None or info.path in with_output:
            return None
        if "/" not in info.path:
            return None  # the root's output is its terminal node's, already yielded (ADK yields no root output event)
        with_output.add(info.path)
        return from_engine_event(e.model_copy(update={"node_info": info.model_copy(update={"lifecycle": None, "status": None})}))
    if e.output is not None:
        with_output.add(info.path)
    return from_engine_event(e)
