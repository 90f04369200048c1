"""Seek checkpoints (engine/checkpoints.py): ``replay --at N`` from the nearest
checkpoint gives exactly what the fold from event 1 gives, at every N, on every
backend -- also mid-turn, across invocations, with checkpoints written a few at
a time between appends (as turn ends write them) and from a compacted fold.

Sessions are random lifecycles built from hand-made events: a loop of node
runs (so compaction drops earlier iterations), nested runs, runs overlapping
(parallel), interrupts raised and answered, failures and re-drives, cancels,
state deltas, two invocations interleaved."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic_core import to_json

from console.cli.render import tree_rows
from engine import checkpoints
from engine.models import Event, NodeStatus
from engine.replay import Replay
from engine.replay_seek import frame_at
from engine.store.base import SessionStore
from engine.views import frame_dict, goto

from .builders import answer, cancel, end, interrupt, open_store, start, user_msg

SEEK_KINDS = ["memory", "sqlite", "postgres"]
"""memory has no checkpoints: the seek folds from event 1 (the fallback)."""

step = st.one_of(
    st.tuples(st.just("iter"), st.sampled_from(["i1", "i2"]), st.sampled_from(list(NodeStatus))),
    st.tuples(st.just("nested"), st.sampled_from(["i1", "i2"])),
    st.tuples(st.just("overlap"), st.sampled_from(["i1", "i2"])),
    st.tuples(st.just("ask"), st.sampled_from(["i1", "i2"]), st.integers(1, 2)),
    st.tuples(st.just("answer"), st.sampled_from(["i1", "i2"])),
    st.tuples(st.just("redrive"), st.sampled_from(["i1", "i2"])),
    st.tuples(st.just("cancel"), st.sampled_from(["i1", "i2"])),
    st.tuples(st.just("state"), st.sampled_from(["i1", "i2"]), st.integers(0, 3)),
    st.tuples(st.just("root_end"), st.sampled_from(["i1", "i2"]), st.sampled_from(list(NodeStatus))),
    st.tuples(st.just("checkpoint"), st.integers(1, 3)),
)


class Script:
    """Turns steps into lifecycle events, run ids counting per invocation."""

    def __init__(self) -> None:
        self.n: dict[str, int] = {}
        self.open: dict[str, list[str]] = {}
        self.started: set[str] = set()
        self.ids = 0

    def _next(self, inv: str) -> int:
        self.n[inv] = self.n.get(inv, 0) + 1
        return self.n[inv]

    def events(self, item: tuple[Any, ...]) -> list[Event]:
        kind, inv, *rest = item
        out: list[Event] = []
        if inv not in self.started:
            self.started.add(inv)
            out += [user_msg(inv, f"go {inv}"), start(inv)]
        k = self._next(inv)
        if kind == "iter":  # one loop iteration: the same child name, a new run id
            out += [start(inv, f"wf@1/step@{k}"), end(inv, rest[0], f"wf@1/step@{k}", output={"k": k})]
        elif kind == "nested":
            out += [
                start(inv, f"wf@1/step@{k}"),
                start(inv, f"wf@1/step@{k}/leaf@1"),
                end(inv, NodeStatus.COMPLETED, f"wf@1/step@{k}/leaf@1", output=k),
                end(inv, NodeStatus.COMPLETED, f"wf@1/step@{k}", output=[k]),
            ]
        elif kind == "overlap":  # the next iteration starts before this one ends
            out += [
                start(inv, f"wf@1/step@{k}"),
                start(inv, f"wf@1/step@{k + 1}"),
                end(inv, NodeStatus.COMPLETED, f"wf@1/step@{k + 1}", output="b"),
                end(inv, NodeStatus.COMPLETED, f"wf@1/step@{k}", output="a"),
            ]
            self._next(inv)
        elif kind == "ask":
            ids = [f"q{self.ids + j}" for j in range(rest[0])]
            self.ids += rest[0]
            self.open.setdefault(inv, []).extend(ids)
            out += [
                start(inv, f"wf@1/ask@{k}"),
                interrupt(inv, *ids, path=f"wf@1/ask@{k}"),
                end(inv, NodeStatus.WAITING, f"wf@1/ask@{k}"),
                end(inv, NodeStatus.WAITING),
            ]
        elif kind == "answer" and self.open.get(inv):
            ids, self.open[inv] = self.open[inv], []
            out += [answer(inv, {i: f"yes {i}" for i in ids}), start(inv)]
        elif kind == "redrive":
            out += [Event(invocation_id=inv, author="user", custom_metadata={"action": "redrive", "operator": "op"})]
        elif kind == "cancel":
            out += [cancel(inv)]
            self.open[inv] = []
        elif kind == "state":
            out += [user_msg(inv, f"note {k}", state_delta={f"k{rest[0]}": k, "temp:x": k})]
        elif kind == "root_end":
            out += [end(inv, rest[0], output={"done": k})]
        return out


async def full_fold(store: SessionStore, sid: str) -> Replay:
    """The from-scratch cursor over every event (``goto(cursor, n)``: the frame
    the fold from event 1 gives; compare it before moving the cursor again)."""
    return Replay([(s.seq, s.event) for s in await store.events(sid)])


def same(got: Any, want: Any) -> None:
    """The latest-runs view and the projection (compacted: earlier loop
    iterations are what a checkpoint leaves out, by design) are equal."""
    assert got.position == want.position
    g, w = got.projection, want.projection
    assert list(g.invocations) == list(w.invocations)
    for i in w.invocations:
        assert tree_rows(g, i) == tree_rows(w, i), i
    assert [x.id for x in g.open_interrupts()] == [x.id for x in w.open_interrupts()]
    assert g.state == w.state
    assert g.compact_all().to_dict() == w.compact_all().to_dict()
    assert frame_dict(got, nodes=False) == frame_dict(want, nodes=False)


@pytest.mark.parametrize("kind", SEEK_KINDS)
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(script=st.lists(step, min_size=1, max_size=30), every=st.integers(2, 7))
def test_seek_from_checkpoints_equals_the_full_fold_at_every_n(
    kind: str, tmp_path_factory: pytest.TempPathFactory, script: list[tuple[Any, ...]], every: int
) -> None:
    async def body() -> None:
        store = await open_store(kind, tmp_path_factory.mktemp("seek"))
        try:
            s = await store.create_session("app", "u")
            maker = Script()
            written = 0
            for item in script:
                if item[0] == "checkpoint":  # a turn end: a few spans at a time
                    written += await checkpoints.catch_up(store, s.id, spans=item[1])
                    continue
                for ev in maker.events(item):
                    await store.append_event(s.id, ev)
            last = (await store.get_session(s.id)).last_seq
            if last == 0:
                return
            if checkpoints.supported(store):
                written += await checkpoints.catch_up(store, s.id, spans=None)
                assert written == len(range(every, last + 1, every))  # one every `every` events, none missing
            else:
                assert written == 0
            want = await full_fold(store, s.id)
            for n in range(1, last + 1):
                got, _ = await frame_at(store, s.id, n, last, compact_ok=True)
                same(got, goto(want, n))
        finally:
            await store.close()

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(checkpoints, "EVERY", every)
        mp.setattr(checkpoints, "BYTES_PER_EVENT", 10**9)  # spacing exactly `every`
        asyncio.run(body())


class Counting:
    """A store that counts the events it hands out."""

    def __init__(self, store: SessionStore) -> None:
        self.store = store
        self.read = 0

    async def events(self, *a: Any, **kw: Any) -> Any:
        page = await self.store.events(*a, **kw)
        self.read += len(page)
        return page

    async def event_at(self, *a: Any, **kw: Any) -> Any:
        self.read += 1
        return await self.store.event_at(*a, **kw)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.store, name)


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_a_seek_folds_at_most_every_events(kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Any position: at most EVERY events read (the checkpoint's span), one checkpoint loaded."""
    monkeypatch.setattr(checkpoints, "EVERY", 50)

    async def body() -> None:
        store = await open_store(kind, tmp_path)
        try:
            s = await store.create_session("app", "u")
            maker = Script()
            for k in range(120):  # one long turn: no invocation snapshot to seek from
                for ev in maker.events(("iter", "i1", NodeStatus.COMPLETED) if k % 7 else ("ask", "i1", 1)):
                    await store.append_event(s.id, ev)
            last = (await store.get_session(s.id)).last_seq
            assert await checkpoints.rebuild(store, s.id) == last // 50
            assert await checkpoints.catch_up(store, s.id) == 0  # nothing due: nothing written
            want = await full_fold(store, s.id)
            for n in sorted({1, 49, 50, 51, 99, 100, 101, last // 2, last - 1, last}):
                counting = Counting(store)
                got, seeked = await frame_at(counting, s.id, n, last, compact_ok=True)  # type: ignore[arg-type]
                assert counting.read <= 50, (n, counting.read)
                assert seeked == (n > 50)
                same(got, goto(want, n))
        finally:
            await store.close()

    asyncio.run(body())


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_the_size_a_large_checkpoint_is_spaced_by_is_its_json_whatever_the_store_keeps(kind: str, tmp_path: Path) -> None:
    """A checkpoint of megabytes (SQLite keeps it deflated) is spaced by the size of
    its JSON in every store: spaced by the deflated bytes, a long session's turn ends
    folded and compacted every invocation 15-20 times as often."""
    from engine.store.sql.packing import PACK_OVER

    data = {"runs": {f"wf@1/n{i}@1": {"status": "COMPLETED", "output": i % 7} for i in range(2000)}}
    raw = to_json(data)
    assert len(raw) > 10 * PACK_OVER

    async def body() -> None:
        store = await open_store(kind, tmp_path)
        try:
            s = await store.create_session("app", "u")
            await store.put_projection_checkpoints(s.id, [(1000, data), (3000, raw)])  # type: ignore[attr-defined]
            assert await store.last_projection_checkpoint(s.id) == (3000, len(raw))  # type: ignore[attr-defined]
            assert await store.get_projection_checkpoint(s.id, 2000) == (1000, data)  # type: ignore[attr-defined]
        finally:
            await store.close()

    asyncio.run(body())


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_a_turn_end_with_no_checkpoint_due_loads_none(kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The store gives the last checkpoint's seq and size without its data, and a
    turn end that crossed a multiple of EVERY but whose next checkpoint is not yet
    due (the spacing stretched by that size) stops there: it loads no checkpoint
    (megabytes on a session of many invocations) and reads no event."""
    monkeypatch.setattr(checkpoints, "EVERY", 10)
    monkeypatch.setattr(checkpoints, "BYTES_PER_EVENT", 4)  # a checkpoint of B bytes: the next B/4 events later

    async def body() -> None:
        store = await open_store(kind, tmp_path)
        try:
            s = await store.create_session("app", "u")
            maker = Script()
            for _k in range(12):
                for ev in maker.events(("iter", "i1", NodeStatus.COMPLETED)):
                    await store.append_event(s.id, ev)
            assert await checkpoints.rebuild(store, s.id) >= 1
            seq, size = await store.last_projection_checkpoint(s.id)  # type: ignore[attr-defined]
            found = await store.get_projection_checkpoint(s.id, seq)  # type: ignore[attr-defined]
            assert found is not None and found[0] == seq
            assert size == len(to_json(found[1])) > 4 * 10  # its UTF-8 JSON, whatever the backend stores
            last = (await store.get_session(s.id)).last_seq
            assert last < seq + size // 4  # the next one is not due yet
            counting = Counting(store)
            loaded: list[int] = []
            get = store.get_projection_checkpoint  # type: ignore[attr-defined]

            async def spy(sid: str, at_most: int) -> Any:
                loaded.append(at_most)
                return await get(sid, at_most)

            counting.get_projection_checkpoint = spy  # type: ignore[attr-defined]
            await checkpoints.after_turn(counting, s.id, 0, last)  # crossed 10, 20, ...  # type: ignore[arg-type]
            assert loaded == [] and counting.read == 0
        finally:
            await store.close()

    asyncio.run(body())


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_a_damaged_checkpoint_is_no_checkpoint(kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(checkpoints, "EVERY", 5)

    async def body() -> None:
        store = await open_store(kind, tmp_path)
        try:
            s = await store.create_session("app", "u")
            maker = Script()
            for _k in range(6):
                for ev in maker.events(("iter", "i1", NodeStatus.COMPLETED)):
                    await store.append_event(s.id, ev)
            await checkpoints.rebuild(store, s.id)
            await store.put_projection_checkpoints(s.id, [(5, {"position": 5})])  # type: ignore[attr-defined]
            last = (await store.get_session(s.id)).last_seq
            want = await full_fold(store, s.id)
            for n in (6, 7, 11, last):
                got, _ = await frame_at(store, s.id, n, last, compact_ok=True)
                same(got, goto(want, n))
        finally:
            await store.close()

    asyncio.run(body())


def test_a_postgres_store_from_before_the_checkpoints_is_upgraded_and_replays() -> None:
    """The version before the checkpoints' migration: a reader refuses it (the
    migrate hint), a writer upgrades it with the data kept; the session replays
    by folding, and the next catch-up writes its checkpoints."""
    from engine.errors import SchemaUpgradeNeeded
    from engine.store.postgres import PostgresStore
    from engine.store.postgres.schema import _MIGRATIONS, SCHEMA_VERSION

    from .builders import pg_fresh_url

    url = pg_fresh_url()
    before_version = next(i for i, m in enumerate(_MIGRATIONS) if any("projection_checkpoints" in x for x in m))

    async def body() -> None:
        async with PostgresStore.open(url) as store:
            s = await store.create_session("app", "u", "old")
            maker = Script()
            for k in range(8):
                for ev in maker.events(("iter", "i1", NodeStatus.COMPLETED) if k % 3 else ("ask", "i1", 1)):
                    await store.append_event(s.id, ev)
            assert store._pool is not None
            async with store._pool.acquire() as conn:
                await conn.execute("DROP TABLE projection_checkpoints")
                await conn.execute("UPDATE hitl_schema SET version = $1", before_version)
        with pytest.raises(SchemaUpgradeNeeded):
            await PostgresStore.open(url, read_only=True)
        async with PostgresStore.open(url) as store:
            assert (store.migrated_from, await store.schema_version()) == (before_version, SCHEMA_VERSION)
            last = (await store.get_session("old")).last_seq
            assert await store.last_projection_checkpoint("old") == (0, 0)  # derived: not computed by the migration
            want = await full_fold(store, "old")
            for n in range(1, last + 1):
                same((await frame_at(store, "old", n, last, compact_ok=True))[0], goto(want, n))
            assert await checkpoints.catch_up(store, "old", spans=None) == last // 5
            for n in range(1, last + 1):
                same((await frame_at(store, "old", n, last, compact_ok=True))[0], goto(want, n))

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(checkpoints, "EVERY", 5)
        mp.setattr(checkpoints, "BYTES_PER_EVENT", 10**9)
        asyncio.run(body())


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
@pytest.mark.parametrize("per_event", [10**9, 12])
def test_an_import_writes_the_checkpoints_in_its_own_pass(
    kind: str, per_event: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``import_session`` writes, with the session, the very checkpoints a
    rebuild from the stored events writes (same seqs, same data; with
    ``per_event`` 12 the spacing is stretched by their size), folded in the
    pass that validates the file: no event is read back from the store."""
    monkeypatch.setattr(checkpoints, "EVERY", 10)
    monkeypatch.setattr(checkpoints, "BYTES_PER_EVENT", per_event)

    async def body() -> None:
        src = await open_store(kind, tmp_path)
        dst = await open_store(kind, tmp_path)
        try:
            s = await src.create_session("app", "u")
            maker = Script()
            for k in range(60):
                items: list[tuple[Any, ...]] = [("iter", "i1", NodeStatus.COMPLETED)]
                if k % 7 == 6:
                    items = [("ask", "i1", 1 + k % 2), ("answer", "i1")]
                elif k % 5 == 4:
                    items = [("state", "i1", k % 3), ("nested", "i1")]
                for item in items:
                    for ev in maker.events(item):
                        await src.append_event(s.id, ev)
            last = (await src.get_session(s.id)).last_seq
            assert await checkpoints.rebuild(src, s.id) >= 2
            lines = [line async for line in src.export_session(s.id)]

            async def no_reads(*a: Any, **kw: Any) -> Any:
                raise AssertionError("the import read events back from the store")

            with pytest.MonkeyPatch.context() as mp:
                mp.setattr(type(dst), "events", no_reads)
                await dst.import_session(lines, session_id="copy", operator="t")
            assert await checkpoints.catch_up(dst, "copy", spans=None) == 0  # none missing
            want = [await src.get_projection_checkpoint(s.id, n) for n in range(1, last + 1)]  # type: ignore[attr-defined]
            got = [await dst.get_projection_checkpoint("copy", n) for n in range(1, last + 1)]  # type: ignore[attr-defined]
            assert got == want
            assert sorted({w[0] for w in want if w}) == sorted({g[0] for g in got if g})
        finally:
            await src.close()
            await dst.close()

    asyncio.run(body())
