"""PostgreSQL's batch paths and round trips: an import or bulk load computes the
derived rows in one pass and writes them in one statement -- they must be exactly
what appending the same events one by one writes, with the same validation --
and every store call a resume makes is one round trip to the server."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from engine import Runner
from engine.errors import AlreadyResolvedError, ConflictError, SessionNotFoundError
from engine.models import Content, Event, NodeStatus, Session, StoredEvent, new_id
from engine.store.jsonl import ImportFormatError, event_line, header_line
from engine.store.postgres import PostgresStore
from engine.store.sqlite import SQLiteStore
from tests.contract.builders import answer, dump, end, interrupt, pg_fresh_url, start, user_msg
from tests.engine.test_turn_cost import SIMPLE

from .pg import count_sent, pg_dump

_SESSION_TIMES = ("created_at", "updated_at")


def _comparable(d: dict[str, Any]) -> dict[str, Any]:
    """A dump without what differs by construction (when the session was created)."""
    d = dict(d)
    d["session"] = {k: v for k, v in d["session"].items() if k not in (*_SESSION_TIMES, "id")}
    d["summary"] = [{k: v for k, v in s.items() if k not in (*_SESSION_TIMES, "id")} for s in d["summary"]]
    d["invocations"] = [{k: v for k, v in i.items() if k != "session_id"} for i in d["invocations"]]
    d["interrupts"] = [{k: v for k, v in i.items() if k != "session_id"} for i in d["interrupts"]]
    return d


async def _audit(store: PostgresStore, session_id: str) -> list[tuple[Any, ...]]:
    page = await store.audit_log(session_id=session_id, limit=1000)
    return sorted(
        (r.action, r.operator, r.reason, r.invocation_id, r.seq, r.event_id, repr(r.details))
        for r in page.items
        if r.action != "import"
    )


async def test_import_writes_exactly_what_appending_one_by_one_writes(demo_template: Path) -> None:
    """Every demo session (answers, cancels, re-drives, failures, waiting ones) is
    imported through the batch path into one schema and appended event by event
    through hitl_append into another: the derived rows are the same."""
    async with (
        SQLiteStore.open(demo_template, read_only=True) as src,
        PostgresStore.open(pg_fresh_url()) as batch,
        PostgresStore.open(pg_fresh_url()) as one_by_one,
    ):
        sessions = (await src.list_sessions(limit=1000)).items
        assert len(sessions) >= 5
        statuses = set()
        for summary in sessions:
            sid = summary.id
            lines = [line async for line in src.export_session(sid)]
            await batch.import_session(lines)
            original = await src.get_session(sid)
            await one_by_one.create_session(original.app_name, original.user_id, sid, state=original.state)
            for stored in await src.events(sid):
                await one_by_one.append_event(sid, stored.event)
            got, want = _comparable(await dump(batch, sid)), _comparable(await dump(one_by_one, sid))
            assert got == want, sid
            assert await _audit(batch, sid) == await _audit(one_by_one, sid)
            assert (await batch.get_session(sid)).state == original.state
            statuses.add(got["summary"][0]["status"])
        assert {"waiting", "completed"} <= statuses, statuses  # the fixture exercises the interesting cases
        # The open-interrupt index and its triage order agree as a whole, too.
        assert [(r.session_id, r.interrupt_id) for r in (await batch.open_interrupts(limit=1000)).items] == [
            (r.session_id, r.interrupt_id) for r in (await one_by_one.open_interrupts(limit=1000)).items
        ]


def _ask(inv: str, iid: str) -> Event:
    return interrupt(inv, iid)


def _answer(inv: str, iid: str) -> Event:
    return answer(inv, {iid: True})


async def test_an_answer_to_an_interrupt_that_is_not_open_is_refused_and_nothing_is_written() -> None:
    """Import validates answers itself (engine.store.jsonl); bulk load relies on the
    batch's own check, the one hitl_append makes."""
    url = pg_fresh_url()
    async with PostgresStore.open(url) as store:
        await store.create_session("app", "u", "src")
        for ev in (user_msg("i1"), start("i1"), _ask("i1", "q1"), end("i1", NodeStatus.WAITING), _answer("i1", "q1")):
            await store.append_event("src", ev)
        lines = [line async for line in store.export_session("src")]
        before = await pg_dump(url)
        for events in (
            [start("i1"), _ask("i1", "q1"), _answer("i1", "q1"), _answer("i1", "q1")],  # answered twice
            [start("i1"), _ask("i1", "q1"), _answer("i2", "q1")],  # in another invocation
            [_answer("i1", "q9")],  # never asked
        ):
            with pytest.raises(AlreadyResolvedError):
                await store.bulk_load([(Session(id="fresh", app_name="app", user_id="u"), events)])
            assert await pg_dump(url) == before
        twice = [header_line((await store.get_session("src")).model_copy(update={"last_seq": 6})), *lines[1:]]
        twice.append(event_line(StoredEvent(seq=6, session_id="src", event=_answer("i1", "q1"))))
        with pytest.raises(ImportFormatError):
            await store.import_session(twice, session_id="copy")
        assert await pg_dump(url) == before
        copied = await store.import_session(lines, session_id="copy")
        assert copied.last_seq == 5
        [rec] = await store.lookup_interrupts("copy", ["q1"])
        assert (rec.status, rec.resolved_seq) == ("resolved", 5)
        with pytest.raises(ConflictError, match="already exists"):
            await store.import_session(lines, session_id="copy")


async def test_bulk_load_is_all_or_nothing_per_batch_and_refuses_an_existing_session() -> None:
    url = pg_fresh_url()
    async with PostgresStore.open(url) as store:
        await store.create_session("app", "u", "taken")
        before = await pg_dump(url)
        batch = [
            (Session(id="fresh", app_name="app", user_id="u"), [_ask("i", "q")]),
            (Session(id="taken", app_name="app", user_id="u"), [_ask("i", "q")]),
        ]
        with pytest.raises(ConflictError, match="already exists"):
            await store.bulk_load(batch)
        assert await pg_dump(url) == before
        n = await store.bulk_load(
            [(Session(id=f"s{k}", app_name="app", user_id="u"), [_ask("i", "q")]) for k in range(5)]
        )
        assert n == 5
        page = await store.open_interrupts(limit=10)
        assert sorted(r.session_id for r in page.items) == [f"s{k}" for k in range(5)]
        assert {s.status for s in (await store.list_sessions(limit=10)).items} == {"running", "new"}


# ---------------------------------------------------------------- round trips


@pytest.fixture
def sent(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """``sent[0]``: how many messages this process has sent over socket transports
    so far (asyncpg writes once per round trip: a statement and its Sync)."""
    return count_sent(monkeypatch)


@pytest.fixture
def round_trips(sent: list[int]) -> Callable[[Callable[[], Awaitable[Any]]], Awaitable[int]]:
    """``await round_trips(call)``: the messages the client sent the server during
    ``call``, the third time it runs (a connection's first use of a turn's
    statement sends it with its values as literals, the second prepares it)."""

    async def measure(call: Callable[[], Awaitable[Any]]) -> int:
        await call()
        await call()  # the connection has prepared its statements now
        before = sent[0]
        await call()
        return sent[0] - before

    return measure


async def test_every_store_call_of_a_resume_is_one_round_trip(round_trips: Any) -> None:
    async with PostgresStore.open(pg_fresh_url(), max_size=1) as store:
        await store.create_session("app", "u", "s")
        await store.append_event("s", _ask("i", "q"))
        snap = (1, {"nodes": {}})
        calls: dict[str, Callable[[], Awaitable[Any]]] = {
            "get_session": lambda: store.get_session("s"),
            "lookup_interrupts (none found)": lambda: store.lookup_interrupts("s", ["nope"]),
            "get_snapshot (none)": lambda: store.get_snapshot("s", "i"),
            "invocation_events (none after)": lambda: store.invocation_events("s", "i", after_seq=99),
            "get_lease (none)": lambda: store.get_lease("s", "i"),
            "acquire_lease": lambda: store.acquire_lease("s", "i", "me", 30),
            "append_event (fenced)": lambda: store.append_event(
                "s", Event(invocation_id="i", author="wf", content=Content.from_text("x")), lease_owner="me"
            ),
            "append_events (two, fenced)": lambda: store.append_events(
                "s",
                [Event(invocation_id="i", author="wf", content=Content.from_text(t)) for t in ("a", "b")],
                lease_owner="me",
            ),
            "release_lease (with a snapshot)": lambda: store.release_lease("s", "i", "me", snapshot=snap),
            "list_leases (none)": lambda: store.list_leases("s"),
            "list_invocations": lambda: store.list_invocations("s"),
        }
        counts = {}
        for name, call in calls.items():
            if name.startswith("release_lease"):  # measured with the acquire that makes it release something
                counts[name] = await round_trips(_acquire_then(store, call)) - 1
            else:
                counts[name] = await round_trips(call)
        assert counts == dict.fromkeys(calls, 1), counts
        assert await store.get_snapshot("s", "i") == snap


def _acquire_then(store: PostgresStore, call: Callable[[], Awaitable[Any]]) -> Callable[[], Awaitable[Any]]:
    async def both() -> None:
        await store.acquire_lease("s", "i", "me", 30)
        assert await call() is True

    return both


async def test_snapshot_and_events_reads_the_snapshot_and_the_events_after_it_in_one_round_trip(
    round_trips: Any,
) -> None:
    async with PostgresStore.open(pg_fresh_url(), max_size=1) as store:
        await store.create_session("app", "u", "s")
        for ev in (start("i"), _ask("i", "q"), start("other", path="wf@2")):
            await store.append_event("s", ev)
        assert await round_trips(lambda: store.snapshot_and_events("s", "i")) == 1
        snap, events = await store.snapshot_and_events("s", "i")
        assert snap is None and [e.seq for e in events] == [1, 2]
        await store.put_snapshot("s", "i", 1, {"k": 1})
        await store.append_event("s", answer("i", {"q": True}))
        snap, events = await store.snapshot_and_events("s", "i")
        assert snap == (1, {"k": 1}) and [e.seq for e in events] == [2, 4]
        assert (snap, events) == (
            await store.get_snapshot("s", "i"),
            await store.invocation_events("s", "i", after_seq=1),
        )
        # An unreadable snapshot is no snapshot: then every event of the invocation.
        await store.put_snapshot("s", "i", 2, {"k": 2})
        assert store._pool is not None
        async with store._pool.acquire() as conn:
            await conn.execute("UPDATE snapshots SET data = 'not json' WHERE session_id = 's'")
        snap, events = await store.snapshot_and_events("s", "i")
        assert snap is None and [e.seq for e in events] == [1, 2, 4]
        assert await store.snapshot_and_events("s", "nothing") == (None, [])
        with pytest.raises(SessionNotFoundError):
            await store.snapshot_and_events("missing", "i")


async def test_a_turns_first_and_last_writes_are_one_round_trip_each(round_trips: Any) -> None:
    async with PostgresStore.open(pg_fresh_url(), max_size=1) as store:
        await store.create_session("app", "u", "s")

        async def first() -> None:
            await store.acquire_and_append("s", "i", [start("i"), _ask("i", new_id())], owner="me", ttl=30)

        async def last() -> None:
            await store.acquire_lease("s", "i", "me", 30)
            seq = (await store.get_session("s")).last_seq
            await store.append_and_release(
                "s",
                "i",
                [start("i")],
                owner="me",
                expected_seq=seq,
                snapshot=(seq + 1, {"k": seq}),
            )

        assert await round_trips(first) == 1
        assert await round_trips(last) - 2 == 1  # less the acquire and the read that set it up
        assert await store.get_lease("s", "i") is None
        snap = await store.get_snapshot("s", "i")
        assert snap is not None and snap[0] == (await store.get_session("s")).last_seq


async def test_a_resume_that_runs_one_node_takes_at_most_three_round_trips(sent: list[int]) -> None:
    """Issue 38's budget: answer, lease, the node's run and the turn's end on
    PostgreSQL in at most 3 round trips on a warm connection (each store call is
    one; the interrupts are read with the invocation; the turn's first and last
    writes fold the lease into the appends). A fresh run to its first
    interrupt (two nodes here) is counted too: at most 4, the session's creation
    folded into its first write."""
    async with PostgresStore.open(pg_fresh_url(), max_size=1) as store:
        runner = Runner("app", SIMPLE, store)  # prep, ask, after

        async def fresh(sid: str) -> int:
            before = sent[0]
            async for _ in runner.run("u", sid, Content.from_text("go")):
                pass
            return sent[0] - before

        async def resume(sid: str) -> tuple[int, list[Event]]:
            iid = (await store.open_interrupts(session_id=sid, limit=1)).items[0].interrupt_id
            before = sent[0]
            events = [e async for e in runner.run("u", sid, Content.from_responses({iid: True}))]
            return sent[0] - before, events

        for warm in ("warm", "warm2"):  # the second turn on the connection prepares its statements
            await fresh(warm)
            await resume(warm)
        fresh_trips = await fresh("s")
        trips, events = await resume("s")
        ran = {e.node_info.path for e in events if e.node_info and e.node_info.lifecycle == "start"}
        assert any("/after@" in p for p in ran), ran  # it did run a node
        assert trips <= 3, trips  # the interrupts with the invocation, the first write, the last
        # read the session (none), the first write creating it, prep's end with
        # ask's start, the last write
        assert fresh_trips <= 4, fresh_trips
        assert [i.status for i in await store.list_invocations("s")] == ["completed"]
        assert await store.list_leases("s") == []  # the lease went with the last write


async def test_a_new_processs_first_turn_prepares_each_statement_once_and_introspects_no_type(
    sent: list[int],
) -> None:
    """What every ``hitl resume`` / ``hitl start`` against PostgreSQL pays: a new
    connection, whose statements are not prepared yet. Opening an existing store
    is the connection and one simple query (no second connection for the schema,
    no statement to prepare); each store call of the turn is ONE round trip
    (issue 38's budget: 3 for a resume running one node, 4 for a fresh run) --
    no prepare before the execution (asyncpg's Parse/Describe would double
    them) and no type introspection (six more for ``boolean[]``, ``double
    precision[]`` and ``jsonb[]`` parameters)."""
    url = pg_fresh_url()
    async with PostgresStore.open(url) as setup:
        runner = Runner("app", SIMPLE, setup)
        async for _ in runner.run("u", "s", Content.from_text("go")):
            pass
        iid = (await setup.open_interrupts(session_id="s", limit=1)).items[0].interrupt_id
    before = sent[0]
    async with PostgresStore.open(url) as store:
        opened = sent[0] - before
        runner = Runner("app", SIMPLE, store)
        before = sent[0]
        events = [e async for e in runner.run("u", "s", Content.from_responses({iid: True}))]
        resume = sent[0] - before
        assert any(e.node_info and e.node_info.path.endswith("/after@1") for e in events)
    async with PostgresStore.open(url) as store:
        runner = Runner("app", SIMPLE, store)
        before = sent[0]
        async for _ in runner.run("u", "fresh", Content.from_text("go")):
            pass
        fresh = sent[0] - before
    assert opened == 2, opened
    # the interrupts read with the invocation, the first and the last write
    assert resume == 3, resume
    # read the session (none), the first write creating it (with the start and
    # prep's run), prep's end with ask's start, the last write
    assert fresh == 4, fresh


async def test_answer_reads_is_lookup_interrupts_and_snapshot_and_events_in_one_round_trip(round_trips: Any) -> None:
    async with PostgresStore.open(pg_fresh_url(), max_size=1) as store:
        await store.create_session("app", "u", "s")
        for ev in (start("i"), _ask("i", "q"), start("j", path="wf@2"), _ask("j", "r")):
            await store.append_event("s", ev)
        await store.put_snapshot("s", "i", 1, {"k": 1})

        async def both(ids: list[str], inv: str | None = None) -> Any:
            records = await store.lookup_interrupts("s", ids)
            target = inv or next((r.invocation_id for r in records if r.status == "open"), None)
            return records, None if target is None else (target, *await store.snapshot_and_events("s", target))

        for ids, inv in ((["q"], None), (["r", "q"], None), (["q"], "j"), (["nope"], None), ([], None)):
            records, loaded = await store.answer_reads("s", ids, inv)
            want_records, want_loaded = await both(ids, inv)
            assert records == want_records, ids
            got = None if loaded is None else (loaded.invocation_id, loaded.snapshot, loaded.events)
            assert got == want_loaded, (ids, inv)
        assert await round_trips(lambda: store.answer_reads("s", ["q"])) == 1
        with pytest.raises(SessionNotFoundError):
            await store.answer_reads("missing", ["q"])
