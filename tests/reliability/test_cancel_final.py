"""A cancel is final (DESIGN 3.11), refusals write nothing, blank ids never act.

* Cancelling a failed or waiting invocation makes every unfinished run
  CANCELLED and closes its interrupts; a later re-drive, answer or cancel is
  refused with a line naming the cancel (operator, time, reason).
* A refused re-drive or cancel is checked before the lease is taken: the store
  file (and its -wal) is byte-identical afterwards.
* An empty or blank invocation id is an error everywhere, never "the only one".
* Cancel racing re-drive never leaves a half state: no node runs after a cancel.
"""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path

import pytest

from engine import Runner, cancel_invocation
from engine.errors import HitlError, InvocationCancelledError
from engine.models import NodeStatus
from engine.projection import Projection
from engine.store.sqlite import SQLiteStore
from sample_sessions import incident
from tests.cli.conftest import ok, operator_error

from .conftest import Hitl


def store_bytes(db: Path) -> dict[str, bytes]:
    """The store file and the content of its journals (-wal, -journal), by name.
    (An empty -wal and the -shm index come and go with connections; they hold
    no data.)"""
    found = {db.name: db.read_bytes()}
    for suffix in ("-wal", "-journal"):
        p = db.with_name(db.name + suffix)
        if p.exists() and p.stat().st_size:
            found[p.name] = p.read_bytes()
    return found


def inv_of(hitl: Hitl, session: str) -> str:
    data = json.loads(ok(hitl("--json", "show", session)))
    return data["invocations"][0]["invocation_id"]


def projection_of(db: Path, session: str) -> Projection:
    async def go() -> Projection:
        async with SQLiteStore.open(db, read_only=True) as store:
            proj = Projection()
            for stored in await store.events(session):
                proj.apply(stored.event, stored.seq)
            return proj

    return asyncio.run(go())


def test_cancel_of_a_failed_invocation_is_final(hitl: Hitl, db: Path) -> None:
    inv = inv_of(hitl, "incident-failed-1")
    ok(hitl("cancel", "incident-failed-1", inv, "--reason", "do not page"))
    proj = projection_of(db, "incident-failed-1")
    assert proj.invocation_status(inv) is NodeStatus.CANCELLED
    statuses = {r.name: r.status for r in proj.runs(inv)}
    assert statuses["mitigate"] is NodeStatus.CANCELLED  # was FAILED
    assert statuses["triage"] is NodeStatus.COMPLETED  # completions stand
    listed = json.loads(ok(hitl("--json", "sessions", "--status", "cancelled")))
    assert "incident-failed-1" in [s["id"] for s in listed["sessions"]]
    failed = json.loads(ok(hitl("--json", "sessions", "--status", "failed")))
    assert "incident-failed-1" not in [s["id"] for s in failed["sessions"]]

    before = store_bytes(db)
    err = operator_error(hitl("redrive", "incident-failed-1", inv), "re-drive refused", "cancelled by tester")
    assert "reason: do not page" in err and "final" in err
    operator_error(hitl("cancel", "incident-failed-1", inv), "cancel refused", "do not page")
    assert store_bytes(db) == before  # refused before any lease: byte-identical
    assert projection_of(db, "incident-failed-1").invocation_status(inv) is NodeStatus.CANCELLED


def test_answer_after_cancel_names_the_cancel(hitl: Hitl, db: Path) -> None:
    inv = inv_of(hitl, "refund-waiting-1")
    ok(hitl("cancel", "refund-waiting-1", inv, "--reason", "duplicate order", "--operator", "ann"))
    before = store_bytes(db)
    err = operator_error(
        hitl("resume", "refund-waiting-1", 'finance-order-1001={"approved": true}'), "cancelled by ann", "duplicate order"
    )
    assert "finance-order-1001" in err
    assert store_bytes(db) == before


@pytest.mark.parametrize(
    ("session", "command"),
    [
        ("refund-completed-1", "redrive"),
        ("refund-waiting-1", "redrive"),
        ("refund-completed-1", "cancel"),
        ("refund-cancelled-1", "cancel"),
        ("refund-cancelled-1", "redrive"),
    ],
)
def test_refused_redrive_or_cancel_leaves_the_file_byte_identical(
    hitl: Hitl, db: Path, session: str, command: str
) -> None:
    inv = inv_of(hitl, session)
    ok(hitl("sessions"))  # any first-open effects happen before the baseline
    before = store_bytes(db)
    operator_error(hitl(command, session, inv), inv, "nothing was written")
    assert store_bytes(db) == before


@pytest.mark.parametrize(
    "args",
    [
        ["cancel", "refund-waiting-1", "", "--reason", "x"],
        ["cancel", "refund-waiting-1", "   "],
        ["redrive", "incident-failed-1", ""],
        ["redrive", "incident-failed-1", "\t"],
        ["show", "refund-waiting-1", "--invocation", ""],
        ["resume", "refund-waiting-1", "--invocation", "", 'finance-order-1001={"approved": true}'],
        ["resume", "refund-waiting-1", "--invocation", " ", "--dry-run", 'finance-order-1001={"approved": true}'],
    ],
)
def test_blank_invocation_ids_are_errors(hitl: Hitl, db: Path, args: list[str]) -> None:
    ok(hitl("sessions"))
    before = store_bytes(db)
    operator_error(hitl(*args), "invocation id is empty")
    assert store_bytes(db) == before


async def test_engine_refuses_blank_invocation_ids(db: Path) -> None:
    async with SQLiteStore.open(db) as store:
        runner = Runner(incident.APP if hasattr(incident, "APP") else "incident", incident.workflow, store)
        with pytest.raises(HitlError, match="invocation id is empty"):
            await cancel_invocation(store, "incident-failed-1", "")
        with pytest.raises(HitlError, match="invocation id is empty"):
            async for _ in runner.run("oncall", "incident-failed-1", invocation_id=" "):
                pass


@pytest.mark.parametrize("round_", range(9))
async def test_cancel_racing_redrive_never_runs_after_the_cancel(db: Path, tmp_path: Path, round_: int) -> None:
    """Round after round, cancel and re-drive of one failed invocation run at
    once on two connections. Whoever wins, the log is one of the two orders:
    a cancel and then nothing (the re-drive refused, naming it), or a
    re-drive's turn and then the cancel refused (completed). Never a node
    event after a cancel, never a CANCELLED cancel that a re-drive undid."""
    path = tmp_path / f"race-{round_}.sqlite"
    shutil.copy(db, path)
    async with SQLiteStore.open(path) as s1, SQLiteStore.open(path) as s2:
        inv = (await s1.list_invocations("incident-failed-1"))[0].invocation_id
        runner = Runner("incident", incident.workflow, s2, lease_wait=5.0)

        async def redrive() -> object:
            await asyncio.sleep(0.001 * (round_ % 3))
            async for _ in runner.run("oncall", "incident-failed-1", invocation_id=inv):
                pass
            return "redriven"

        async def cancel() -> object:
            await asyncio.sleep(0.001 * (round_ // 3))
            await cancel_invocation(s1, "incident-failed-1", inv, operator="ann", reason="race", lease_wait=5.0)
            return "cancelled"

        outcomes = await asyncio.gather(redrive(), cancel(), return_exceptions=True)
        events = await s1.events("incident-failed-1")
    for o in outcomes:
        assert o in ("redriven", "cancelled") or isinstance(o, HitlError), repr(o)
    cancels = [s.seq for s in events if s.event.action == "cancel"]
    proj = Projection()
    for s in events:
        proj.apply(s.event, s.seq)
    if cancels:
        assert outcomes[1] == "cancelled"
        assert len(cancels) == 1
        after = [s for s in events if s.seq > cancels[0]]
        assert after == [], [s.event.kind for s in after]
        assert proj.invocation_status(inv) is NodeStatus.CANCELLED
        if outcomes[0] != "redriven":
            assert isinstance(outcomes[0], InvocationCancelledError), repr(outcomes[0])
    else:
        assert outcomes[0] == "redriven"
        assert proj.invocation_status(inv) is NodeStatus.COMPLETED
        assert isinstance(outcomes[1], HitlError)
