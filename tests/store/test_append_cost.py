"""The SQLite append path costs the same however long the session's history is
(issue 15): its statements use indexes only, and the work SQLite does for one
append (virtual-machine instructions, counted deterministically with a progress
handler) does not grow with the number of earlier invocations or events.

Counts, not times: they are deterministic, so they can be asserted.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from engine.models import Content, Event, FunctionResponse, NodeStatus, Part, Session, new_id
from engine.store.sqlite import SQLiteStore
from tests.contract.builders import dump, end, interrupt, start, user_msg


def history(n_invocations: int) -> list[Event]:
    """Finished invocations, the way the engine writes them (start message, root start, root end)."""
    out: list[Event] = []
    for _ in range(n_invocations):
        inv = new_id()
        out += [user_msg(inv), start(inv), end(inv, NodeStatus.COMPLETED, output=1)]
    return out


async def session_with_history(tmp_path: Path, n_invocations: int) -> SQLiteStore:
    store = await SQLiteStore.open(tmp_path / f"h{n_invocations}.sqlite", inline=True)
    await store.bulk_load([(Session(id="s", app_name="a", user_id="u"), history(n_invocations))])
    return store


def raw(store: SQLiteStore) -> sqlite3.Connection:
    return store._driver._raw  # type: ignore[union-attr]


@contextmanager
def recording(store: SQLiteStore) -> Iterator[dict[str, Any]]:
    """Statements (expanded SQL) and VM instructions executed on the store's connection."""
    conn = raw(store)
    rec: dict[str, Any] = {"sql": [], "ops": 0}

    def progress() -> int:
        rec["ops"] += 1
        return 0

    conn.set_trace_callback(rec["sql"].append)
    conn.set_progress_handler(progress, 1)
    try:
        yield rec
    finally:
        conn.set_trace_callback(None)
        conn.set_progress_handler(None, 1)


def answer(inv: str, iid: str) -> Event:
    fr = FunctionResponse(id=iid, name="request_input", response={"result": True})
    return Event(invocation_id=inv, author="user", content=Content(role="user", parts=[Part(function_response=fr)]))


async def one_turn(store: SQLiteStore) -> list[dict[str, Any]]:
    """Every kind of append a turn makes, each recorded on its own: a new
    invocation, root start, an interrupt, an answer (with a state delta and a
    lease), a leaf end, the root's end and a cancel of another invocation."""
    inv, other, iid = new_id(), new_id(), f"q-{new_id()}"
    await store.acquire_lease("s", inv, "me", 60)
    steps: list[tuple[Event, str | None]] = [
        (user_msg(inv), None),
        (start(inv), "me"),
        (start(inv, "wf@1/ask@1"), "me"),
        (interrupt(inv, iid), "me"),
        (end(inv, NodeStatus.WAITING), "me"),
        (answer(inv, iid).model_copy(update={"state_delta": {"k": 1}}), "me"),
        (end(inv, NodeStatus.COMPLETED, "wf@1/ask@1", output=True), "me"),
        (end(inv, NodeStatus.COMPLETED, output=True), "me"),
        (user_msg(other), None),
        (Event(invocation_id=other, author="user", custom_metadata={"action": "cancel"}), None),
    ]
    out = []
    for event, owner in steps:
        with recording(store) as rec:
            await store.append_event("s", event, lease_owner=owner)
        out.append(rec)
    return out


async def test_append_path_query_plans_use_indexes_only(tmp_path: Path) -> None:
    store = await session_with_history(tmp_path, 50)
    try:
        recs = await one_turn(store)
        conn = raw(store)
        statements = {sql for rec in recs for sql in rec["sql"]}
        queries = [s for s in statements if s.split()[0].upper() in ("SELECT", "UPDATE", "INSERT", "DELETE")]
        assert any("FROM invocations" in q for q in queries)  # the status probe is among them
        for sql in queries:
            plan = [row[3] for row in conn.execute(f"EXPLAIN QUERY PLAN {sql}")]
            for step in plan:
                # A full scan of a table, or a temporary b-tree (DISTINCT / ORDER BY
                # over a range), costs in proportion to the history. json_each is
                # the answer's own id list; a CONSTANT ROW is a SELECT without FROM.
                assert not (step.startswith("SCAN") and "json_each" not in step and "CONSTANT ROW" not in step), (
                    sql,
                    plan,
                )
                assert "TEMP B-TREE" not in step, (sql, plan)
    finally:
        await store.close()


async def test_append_work_does_not_grow_with_history(tmp_path: Path) -> None:
    small = await session_with_history(tmp_path, 5)
    big = await session_with_history(tmp_path, 2_000)
    try:
        few, many = await one_turn(small), await one_turn(big)
    finally:
        await small.close()
        await big.close()
    for a, b in zip(few, many, strict=True):
        assert len(a["sql"]) == len(b["sql"]), (a["sql"], b["sql"])
        # B-tree depth may add a few instructions; reading the 2,000 invocations would add thousands.
        assert b["ops"] <= a["ops"] * 1.2 + 20, (a["sql"], a["ops"], b["ops"])


async def test_append_statement_counts(tmp_path: Path) -> None:
    """BEGIN, one read of the session (lease owner and state folded in), the
    writes the event needs, the summary update, COMMIT."""
    store = await session_with_history(tmp_path, 3)
    try:
        recs = await one_turn(store)
    finally:
        await store.close()
    counts = [len(r["sql"]) for r in recs]
    # BEGIN, the head read, INSERT events, UPDATE invocations, UPDATE sessions, COMMIT: 6 --
    # a start or end record, also the root's (its status probe is folded into the head read);
    # new invocation: + INSERT invocations, and no UPDATE tried first (the head read says
    # there is no row; running: no probe, it outranks every other status); interrupt:
    # + INSERT interrupts + open count; answer: + UPDATE interrupts (its row count is the open
    # check) + audit (the session's last open id: no open count);
    # cancel: + UPDATE interrupts + open count + audit;
    # an interrupt's INSERT also runs the deadline timers' trigger program, which SQLite's
    # trace reports as that INSERT once more (it writes a row only for an id with a deadline)
    assert counts == [6, 6, 6, 9, 6, 8, 6, 6, 6, 9], str(counts)
    for r in recs:
        assert sum(1 for s in r["sql"] if s.upper().startswith("COMMIT")) == 1
        assert not any("DISTINCT" in s.upper() for s in r["sql"]), r["sql"]


async def test_bulk_load_one_long_session_does_linear_work(tmp_path: Path) -> None:
    """Loading one long session is linear (it was quadratic through the
    session-status scan): the last 3,000 events of a 30,000-event session cost
    SQLite the same work as the same 3,000 events on an empty session."""
    store = await SQLiteStore.open(tmp_path / "bulk.sqlite", inline=True)
    try:
        events = history(10_000)
        tail = events[-3_000:]
        await store.bulk_load([(Session(id="long", app_name="a", user_id="u"), events[:-3_000])])
        with recording(store) as on_long:
            for event in tail:
                await store.append_event("long", event)
        await store.create_session("a", "u", "short")
        with recording(store) as on_short:
            for event in tail:
                await store.append_event("short", event)
        assert len(on_long["sql"]) == len(on_short["sql"])
        assert on_long["ops"] <= on_short["ops"] * 1.2, (on_long["ops"], on_short["ops"])
        assert (await store.get_session("long")).last_seq == len(events)
    finally:
        await store.close()


async def test_a_new_sessions_first_write_reads_nothing_back(tmp_path: Path) -> None:
    """A new session's first turn creates it in its first write (``create=``): the
    row that transaction just inserted is not read back (no head SELECT), and
    every row comes out as when the session was created on its own first."""
    inv, iid = new_id(), f"q-{new_id()}"
    events = [user_msg(inv), start(inv), interrupt(inv, iid), end(inv, NodeStatus.WAITING)]
    dumps = []
    for created_first in (False, True):
        store = await SQLiteStore.open(tmp_path / f"first-{created_first}.sqlite", inline=True)
        try:
            if created_first:
                await store.create_session("a", "u", "s")
            with recording(store) as rec:
                await store.acquire_and_append(
                    "s", inv, events, owner="me", ttl=60, create=None if created_first else ("a", "u")
                )
            reads_of_the_session = [sql for sql in rec["sql"] if sql.startswith("SELECT") and "FROM sessions" in sql]
            assert len(reads_of_the_session) == (1 if created_first else 0), rec["sql"]
            d = await dump(store, "s")
            for key in ("created_at", "updated_at"):
                d["session"].pop(key)
                d["summary"][0].pop(key)
            dumps.append(d)
        finally:
            await store.close()
    assert dumps[0] == dumps[1]
    assert dumps[1]["summary"][0]["status"] == "waiting" and dumps[1]["summary"][0]["open_interrupts"] == 1
