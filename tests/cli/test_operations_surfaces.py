"""The CLI's resume / redrive / cancel and the console's write worker are the
same writes: both call engine.operations (one place for the orchestration),
and a CLI write loads the invocation once (the Runner's copy is the outcome's
`before`; the stream folds it instead of reading the invocation again)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

import engine.operations as operations
from tests.cli.conftest import Hitl, ok
from tests.cli.helpers import count_loads, invocation_ids


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    seen: list[str] = []
    for name in ("answer", "dry_run", "redrive", "cancel"):
        real = getattr(operations, name)

        def spy(*a: Any, _real: Any = real, _name: str = name, **kw: Any) -> Any:
            seen.append(_name)
            return _real(*a, **kw)

        monkeypatch.setattr(operations, name, spy)
    return seen


@pytest.fixture
def loads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every load of an invocation."""
    return count_loads(monkeypatch)


def test_cli_writes_go_through_engine_operations(hitl: Hitl, db: Path, calls: list[str]) -> None:
    ok(hitl("resume", "refund-waiting-1", 'finance-order-1001={"approved": true}', "--dry-run"))
    ok(hitl("resume", "refund-waiting-1", 'finance-order-1001={"approved": true}'))
    (failed,) = invocation_ids(db, "incident-failed-1")
    ok(hitl("redrive", "incident-failed-1", failed, "--reason", "pager back"))
    (waiting,) = invocation_ids(db, "refund-waiting-1")
    ok(hitl("cancel", "refund-waiting-1", waiting, "--reason", "dup", "--yes"))
    assert calls == ["dry_run", "answer", "redrive", "cancel"]


def test_a_cli_redrive_loads_the_invocation_once(hitl: Hitl, db: Path, loads: list[str]) -> None:
    (failed,) = invocation_ids(db, "incident-failed-1")
    loads.clear()
    ok(hitl("redrive", "incident-failed-1", failed, "--reason", "pager back"))
    assert loads == [failed]  # the Runner's load; the printed stream folds that copy


def test_a_cli_resume_loads_the_invocation_once(hitl: Hitl, db: Path, loads: list[str]) -> None:
    loads.clear()
    ok(hitl("resume", "refund-waiting-1", 'finance-order-1001={"approved": true}'))
    assert len(loads) == 1


def test_console_writes_go_through_engine_operations(calls: list[str]) -> None:
    from console.answering.jobs import WriteJob, execute
    from tests.console.answer_store import demo_store, invocation, registry

    async def go() -> list[Any]:
        store = await demo_store()
        inv, _ = await invocation(store, "refund-waiting-1")
        job = WriteJob(kind="answer", session_id="refund-waiting-1", invocation_id=inv, app_name="refund_approval",
                       user_id="alice", operator="tester", reason=None, answers={"finance-order-1001": {"approved": True}})
        seen: list[Any] = []
        answered = await execute(store, registry(), job, lambda event, seq: seen.append((event, seq)))
        cancelled = await execute(store, registry(), WriteJob(
            kind="cancel", session_id="refund-waiting-1", invocation_id=inv, app_name="refund_approval", user_id="alice",
            operator="tester", reason="dup"))
        return [answered, cancelled, seen]

    answered, cancelled, seen = asyncio.run(go())
    assert calls == ["answer", "cancel"]
    assert len(answered.written) == len(seen) and answered.written and answered.error is None
    seqs = [seq for _, seq in seen]  # each event with its position, in order, contiguous (one writer)
    assert seqs == list(range(seqs[0], seqs[0] + len(seqs)))
    assert cancelled.written and cancelled.status_after is not None and cancelled.status_after.value == "CANCELLED"
