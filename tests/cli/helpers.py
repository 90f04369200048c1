"""Direct store reads for CLI tests (the store is the oracle, not the CLI output)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from engine import Content, Runner
from engine.nodes import BaseNode
from engine.projection import Projection, project
from engine.store.sqlite import SQLiteStore


async def _read(db: Path, session_id: str) -> tuple[Any, list[Any]]:
    async with SQLiteStore.open(db, read_only=True) as store:
        session = await store.get_session(session_id)
        events = await store.events(session_id)
    return session, events


def session_events(db: Path, session_id: str) -> tuple[Any, list[Any]]:
    return asyncio.run(_read(db, session_id))


def projection(db: Path, session_id: str) -> Projection:
    _, events = session_events(db, session_id)
    return project([(s.seq, s.event) for s in events])


def invocation_ids(db: Path, session_id: str) -> list[str]:
    return list(projection(db, session_id).invocations)


def start_session(db: Path, app_name: str, workflow: BaseNode, session_id: str, text: str, user: str = "u") -> str:
    """Start an invocation with the real Runner; returns its id."""

    async def go() -> str:
        async with SQLiteStore.open(db) as store:
            first = None
            async for event in Runner(app_name, workflow, store).run(user, session_id, Content.from_text(text)):
                first = first or event
        assert first is not None
        return first.invocation_id

    return asyncio.run(go())


def count_loads(monkeypatch: Any) -> list[str]:
    """Record every load of an invocation (engine.loading.load_invocation's one
    read, ``snapshot_and_events``) from now on: the invocation ids, in order."""
    import engine.loading as loading

    seen: list[str] = []
    real = loading.snapshot_and_events

    async def counting(store: Any, session_id: str, invocation_id: str) -> Any:
        seen.append(invocation_id)
        return await real(store, session_id, invocation_id)

    monkeypatch.setattr(loading, "snapshot_and_events", counting)
    return seen
