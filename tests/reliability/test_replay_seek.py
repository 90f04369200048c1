"""``hitl replay S --at N`` seeks: it reads the store page by page from the
nearest snapshot (or event 1) and gives exactly what the from-scratch fold of
the whole history gives (engine/replay_seek.py)."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import sqlite3
from pathlib import Path
from typing import Any

from console.cli import tree_rows
from engine.models import StoredEvent
from engine.projection import project
from engine.redact import Redactor
from engine.replay import Replay
from engine.replay_seek import frame_at
from engine.store.sqlite import SQLiteStore
from engine.views import frame_dict, goto
from tests.cli.conftest import ok

from .conftest import Hitl


def from_scratch(db: Path, session: str, at: int, all_runs: bool) -> dict[str, Any]:
    """What ``replay --json --at`` printed before it could seek: every event, folded."""

    async def go() -> dict[str, Any]:
        async with SQLiteStore.open(db, read_only=True) as store:
            header = await store.get_session(session)
            stored = await store.events(session)
        red = Redactor()
        red.learn_events(s.event for s in stored)
        frame = goto(Replay([(s.seq, red.event(s.event)) for s in stored]), at)
        frame = dataclasses.replace(frame, total=header.last_seq)
        proj = frame.projection
        return {
            "session": session,
            "at": at,
            "of": header.last_seq,
            "invocations": [{"invocation_id": i, "nodes": tree_rows(proj, i, all_runs)} for i in proj.invocations],
            "open": [x.id for x in proj.open_interrupts()],
            "event": frame_dict(frame, nodes=False),
        }

    return json.loads(json.dumps(asyncio.run(go()), default=str, ensure_ascii=False))


def test_replay_at_equals_the_fold_from_event_1(hitl: Hitl, db: Path) -> None:
    sessions = json.loads(ok(hitl("--json", "sessions", "--limit", "100")))
    rows = sessions["sessions"] if isinstance(sessions, dict) else sessions
    checked = 0
    for s in rows:
        sid, last = s["id"], s["event_count"]
        for at in sorted({1, 2, last // 3, last // 2, last - 1, last} - {0}):
            for all_runs in (False, True):
                argv = ["--json", "replay", sid, "--at", str(at)] + (["--all-runs"] if all_runs else [])
                got = json.loads(ok(hitl(*argv)))
                assert got == from_scratch(db, sid, at, all_runs), (sid, at, all_runs)
                checked += 1
    assert checked >= 50
    # Text: the same lines as the tree of the fold (spot check on the long session).
    text = ok(hitl("replay", "deploy-long-1", "--at", "20"))
    assert text.startswith("session deploy-long-1 at event 20 of ") and "invocation " in text
    # With a snapshot that trails the log: every position after it, through the seek, still equal.
    last = json.loads(ok(hitl("--json", "show", "deploy-long-1")))["session"]["last_seq"]
    snap = trail_snapshot(db, "deploy-long-1", keep=6)
    for at in range(snap - 1, last + 1):
        got = json.loads(ok(hitl("--json", "replay", "deploy-long-1", "--at", str(at))))
        assert got == from_scratch(db, "deploy-long-1", at, False), at


class CountingStore:
    """A store that counts the events it hands out."""

    def __init__(self, store: SQLiteStore) -> None:
        self.store = store
        self.read: list[int] = []

    def _count(self, events: list[StoredEvent]) -> list[StoredEvent]:
        self.read += [e.seq for e in events]
        return events

    async def events(self, *a: Any, **kw: Any) -> list[StoredEvent]:
        return self._count(await self.store.events(*a, **kw))

    async def invocation_events(self, *a: Any, **kw: Any) -> list[StoredEvent]:
        return self._count(await self.store.invocation_events(*a, **kw))

    async def event_at(self, *a: Any, **kw: Any) -> StoredEvent:
        return self._count([await self.store.event_at(*a, **kw)])[0]

    def __getattr__(self, name: str) -> Any:
        return getattr(self.store, name)


def trail_snapshot(db: Path, session: str, keep: int) -> int:
    """Make the session's snapshot the one a resume would have cached ``keep``
    events before the end (a live session's snapshot trails its log); its seq."""

    async def go() -> int:
        async with SQLiteStore.open(db) as store:
            (inv,) = await store.list_invocations(session)
            events = [(s.seq, s.event) for s in await store.events(session)]
            seq = events[-keep - 1][0]
            compact = project(events[:seq]).compact(inv.invocation_id)
            conn = sqlite3.connect(db)  # the store never moves a snapshot back: drop it first
            with conn:
                conn.execute("DELETE FROM snapshots WHERE session_id = ?", (session,))
            conn.close()
            await store.put_snapshot(session, inv.invocation_id, seq, compact.to_dict())
            return seq

    return asyncio.run(go())


def test_the_seek_reads_only_the_events_after_the_snapshot(db: Path) -> None:
    session = "deploy-long-1"
    trail_snapshot(db, session, keep=15)

    async def go() -> None:
        async with SQLiteStore.open(db, read_only=True) as raw:
            header = await raw.get_session(session)
            (inv,) = await raw.list_invocations(session)
            snap = await raw.get_snapshot(session, inv.invocation_id)
            assert snap is not None and snap[0] == header.last_seq - 15
            snap_seq, last = snap[0], header.last_seq
            everything = [(s.seq, s.event) for s in await raw.events(session)]
            for at in (last, snap_seq + 1):
                store = CountingStore(raw)
                frame, seeked = await frame_at(store, session, at, last, compact_ok=True)  # type: ignore[arg-type]
                assert seeked
                assert store.read == list(range(snap_seq + 1, at + 1))  # after the snapshot, once each
                scratch = goto(Replay(everything), at)
                for i in scratch.projection.invocations:
                    assert tree_rows(frame.projection, i) == tree_rows(scratch.projection, i)
                assert frame_dict(frame, nodes=False) == frame_dict(scratch, nodes=False)
            # Before the snapshot, or every run asked for: from event 1, page by page, never past N.
            for at, compact in ((snap_seq - 1, True), (last, False)):
                store = CountingStore(raw)
                frame, seeked = await frame_at(store, session, at, last, compact_ok=compact)  # type: ignore[arg-type]
                assert not seeked and store.read == list(range(1, at + 1))
                scratch = goto(Replay(everything), at)
                assert tree_rows(frame.projection, inv.invocation_id, True) == tree_rows(
                    scratch.projection, inv.invocation_id, True
                )

    asyncio.run(go())
