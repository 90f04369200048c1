"""Hand-built events and store fixtures shared by the store test suites.

Events are built directly with ``engine.models`` (no workflow code), so the
store suites test the store alone.
"""

from __future__ import annotations

import itertools
import os
import uuid
from pathlib import Path
from typing import Any
from unittest.mock import patch

import engine.store.sqlite as sqlite_mod
from engine.models import Content, Event, FunctionCall, NodeInfo, NodeStatus, Part
from engine.store import MemoryStore, SQLiteStore
from engine.store.base import SessionStore

KINDS = ["memory", "sqlite", "sqlite-thread", "sqlite-inline", "postgres"]
"""Store kinds: the reference, SQLite on aiosqlite's thread, SQLite on the
fallback driver used when aiosqlite's internals are not available, SQLite
run inline on the event loop (for workflow-only processes), and PostgreSQL
(the server at ``$HITL_TEST_PG_URL``, a fresh schema per store)."""


def pg_url() -> str:
    """The test server's URL. Without one: a failure under CI=true (the
    PostgreSQL suites must run there), else a skip that says how to get one."""
    import pytest

    url = os.environ.get("HITL_TEST_PG_URL")
    if url:
        return url
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail("CI=true but no PostgreSQL test server: HITL_TEST_PG_URL is unset (run the tests via scripts/test)")
    pytest.skip("no PostgreSQL test server: run the tests via scripts/test, or set HITL_TEST_PG_URL")


def pg_fresh_url() -> str:
    """A URL of a new, empty schema on the test server."""
    url = pg_url()
    return f"{url}{'&' if '?' in url else '?'}schema=t_{uuid.uuid4().hex[:16]}"


def location(store: SessionStore) -> Any:
    """What ``open_store(kind, ..., path=)`` takes to reopen ``store``."""
    return getattr(store, "path", None) or store._url  # type: ignore[attr-defined]

_files = itertools.count()


async def open_store(kind: str, directory: Path, *, path: Path | None = None, **kwargs: Any) -> SessionStore:
    """A fresh, empty store of ``kind`` (a new SQLite file under ``directory``,
    or the existing file ``path``)."""
    if kind == "memory":
        return MemoryStore(**kwargs)
    if kind == "postgres":
        from engine.store.postgres import PostgresStore

        return await PostgresStore.open(str(path) if path else pg_fresh_url(), **kwargs)
    path = path or directory / f"store-{next(_files)}.sqlite"
    if kind == "sqlite-thread":
        with patch.object(sqlite_mod._AiosqliteDriver, "available", staticmethod(lambda: False)):
            store = await SQLiteStore.open(path, **kwargs)
        assert isinstance(store._driver, sqlite_mod._ThreadDriver)
        return store
    if kind == "sqlite-inline":
        return await SQLiteStore.open(path, inline=True, **kwargs)
    return await SQLiteStore.open(path, **kwargs)


def user_msg(inv: str, text: str = "go", **kw: Any) -> Event:
    return Event(invocation_id=inv, author="user", content=Content.from_text(text), **kw)


def start(inv: str, path: str = "wf@1", **kw: Any) -> Event:
    run_id = path.rsplit("@", 1)[1]
    name = path.rsplit("/", 1)[-1].split("@")[0]
    return Event(invocation_id=inv, author=name, node_info=NodeInfo(path=path, run_id=run_id, lifecycle="start"), **kw)


def end(inv: str, status: NodeStatus, path: str = "wf@1", output: Any = None, **kw: Any) -> Event:
    run_id = path.rsplit("@", 1)[1]
    name = path.rsplit("/", 1)[-1].split("@")[0]
    return Event(
        invocation_id=inv,
        author=name,
        node_info=NodeInfo(path=path, run_id=run_id, lifecycle="end", status=status),
        output=output,
        **kw,
    )


def interrupt(inv: str, *ids: str, path: str = "wf@1/ask@1", ts: float | None = None, **kw: Any) -> Event:
    """A leaf event raising long-running calls ``ids`` (RequestInput-style)."""
    run_id = path.rsplit("@", 1)[1]
    parts = [
        Part(function_call=FunctionCall(id=i, name="request_input", args={"message": f"approve {i}?"})) for i in ids
    ]
    if ts is not None:
        kw["timestamp"] = ts
    return Event(
        invocation_id=inv,
        author=path.rsplit("/", 1)[-1].split("@")[0],
        node_info=NodeInfo(path=path, run_id=run_id),
        content=Content(role="model", parts=parts),
        long_running_tool_ids=list(ids),
        **kw,
    )


def answer(inv: str, answers: dict[str, Any], **kw: Any) -> Event:
    return Event(invocation_id=inv, author="user", content=Content.from_responses(answers), **kw)


def cancel(inv: str) -> Event:
    return Event(invocation_id=inv, author="user", custom_metadata={"action": "cancel", "operator": "op"})


async def waiting_session(
    store: SessionStore,
    *ids: str,
    inv: str = "inv1",
    app: str = "app",
    user: str = "u",
    session_id: str | None = None,
    ts: float | None = None,
) -> str:
    """A session whose invocation ``inv`` is WAITING on ``ids``; returns its id."""
    s = await store.create_session(app, user, session_id)
    for ev in (user_msg(inv), start(inv), interrupt(inv, *ids, ts=ts), end(inv, NodeStatus.WAITING)):
        await store.append_event(s.id, ev)
    return s.id


async def dump(store: SessionStore, session_id: str) -> dict[str, Any]:
    """Everything observable about one session, for 'nothing changed' checks."""
    session = await store.get_session(session_id)
    events = await store.events(session_id)
    ids = sorted({c.id for e in events for c in e.event.interrupt_calls})
    interrupts = await store.lookup_interrupts(session_id, ids)
    page = await store.list_sessions(limit=1000)
    return {
        "session": session.model_dump(),
        "events": [(e.seq, e.event.to_json()) for e in events],
        "invocations": [i.model_dump() for i in await store.list_invocations(session_id)],
        "interrupts": sorted(
            (r.model_dump() for r in interrupts), key=lambda r: (r["invocation_id"], r["interrupt_id"])
        ),
        "summary": [s.model_dump() for s in page.items if s.id == session_id],
    }


def kind_of(store: SessionStore) -> str:
    """The ``open_store`` kind that made ``store``."""
    if isinstance(store, MemoryStore):
        return "memory"
    if type(store).__name__ == "PostgresStore":
        return "postgres"
    assert isinstance(store, SQLiteStore)
    if isinstance(store._driver, sqlite_mod._InlineDriver):
        return "sqlite-inline"
    return "sqlite-thread" if isinstance(store._driver, sqlite_mod._ThreadDriver) else "sqlite"
