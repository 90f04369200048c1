"""``hitl bulk-answer``: the CLI mirror of the inbox's bulk answer.

The store of tests/bulk_store.py, raised 5 h before the real now (the command
measures age against the clock): 40 small old refunds across 30 sessions, 5
big ones, 3 young ones. The store is the oracle."""

from __future__ import annotations

import asyncio
import hashlib
import json
import time
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from console.cli import cli
from engine.store.sqlite import SQLiteStore
from tests import bulk_store

from .conftest import ok

APPROVE = json.dumps(bulk_store.APPROVE)
FILTER = bulk_store.FILTER.split()


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("bulk") / "bulk.sqlite"

    async def go() -> None:
        async with SQLiteStore.open(path) as store:
            await bulk_store.build(store, time.time() - 5 * 3600)

    asyncio.run(go())
    return path


@pytest.fixture
def db(template: Path, tmp_path: Path) -> Path:
    target = tmp_path / "bulk.sqlite"
    target.write_bytes(template.read_bytes())
    return target


def hitl(db: Path, *args: str) -> Result:
    return CliRunner().invoke(cli, ["--db", str(db), *args], catch_exceptions=True)


def digest(db: Path) -> str:
    """The database file's bytes and its write-ahead log's (a reader leaves an empty one)."""
    wal = db.with_name(db.name + "-wal")
    return hashlib.sha256(db.read_bytes() + (wal.read_bytes() if wal.exists() else b"")).hexdigest()


def audit_rows(db: Path) -> list:
    async def go() -> list:
        async with SQLiteStore.open(db, read_only=True) as store:
            return [r for r in (await store.audit_log(action="answer", limit=500)).items]

    return asyncio.run(go())


def open_ids(db: Path) -> set[str]:
    async def go() -> set[str]:
        async with SQLiteStore.open(db, read_only=True) as store:
            return {r.interrupt_id for r in (await store.open_interrupts(limit=1000)).items}

    return asyncio.run(go())


def test_dry_run_prints_the_summary_and_every_item_and_writes_nothing(db: Path) -> None:
    before = digest(db)
    text = ok(hitl(db, "bulk-answer", *FILTER, "--answer", APPROVE, "--dry-run"))
    lines = text.splitlines()
    assert lines[0] == (
        "dry run: 40 interrupts in 40 invocations: 40 auto-complete, 0 re-execute, 0 refused (nothing was written)"
    )
    assert lines[1] == f"  filter: {bulk_store.FILTER}"
    items = [line for line in lines if line.startswith("  auto-complete ")]
    assert len(items) == 40
    assert {f"finance-{o}" for o in bulk_store.SMALL} == {line.split()[4] for line in items}
    doc = json.loads(ok(hitl(db, "--json", "bulk-answer", *FILTER, "--answer", APPROVE, "--dry-run")))
    assert doc["counts"] == {"auto-complete": 40, "re-execute": 0, "keep waiting": 0, "refused": 0}
    assert len(doc["items"]) == 40 and len({i["session_id"] for i in doc["items"]}) == 30
    assert digest(db) == before  # byte-identical


def test_the_answer_writes_one_audited_batch(db: Path) -> None:
    text = ok(hitl(db, "bulk-answer", *FILTER, "--answer", APPROVE, "--operator", "ann", "--reason", "under 50"))
    assert text.splitlines()[-1].endswith(": 40 applied, 0 refused of 40 invocations")
    rows = audit_rows(db)
    assert len(rows) == 40 and len({r.details["batch"] for r in rows}) == 1
    assert {(r.operator, r.reason) for r in rows} == {("ann", "under 50")}
    still = open_ids(db)
    assert not any(f"finance-{o}" in still for o in bulk_store.SMALL)
    assert all(f"finance-{o}" in still for o in bulk_store.BIG + bulk_store.YOUNG)


def test_exit_1_when_an_item_is_refused_and_the_others_are_applied(db: Path) -> None:
    """Without app=, the filter also selects the legacy app's refund, whose code is not here
    (--via local: refused; the default leaves it to a worker, tests/cli/test_queued_cli.py)."""
    res = hitl(db, "bulk-answer", *[t for t in FILTER if not t.startswith("app=")], "--answer", APPROVE,
               "--via", "local")
    assert res.exit_code == 1, res.stdout
    assert res.stderr == (
        "error: 1 of 41 invocations were not applied (listed above); the other 40 were "
        f"(batch {audit_rows(db)[0].details['batch']}: hitl audit)\n"
    )
    refused = [line for line in res.stdout.splitlines() if line.startswith("  refused ")]
    assert len(refused) == 1 and "legacy-1" in refused[0] and bulk_store.LEGACY_APP in refused[0]
    assert res.stdout.splitlines()[-1].endswith(": 40 applied, 1 refused of 41 invocations")
    still = open_ids(db)
    assert f"finance-{bulk_store.LEGACY[0]}" in still
    assert not any(f"finance-{o}" in still for o in bulk_store.SMALL)


def test_an_explicit_item_already_answered_is_refused_exit_1_others_applied(db: Path) -> None:
    doc = json.loads(ok(hitl(db, "--json", "bulk-answer", *FILTER, "--answer", APPROVE, "--dry-run")))
    items = doc["items"]
    taken = items[5]
    ok(hitl(db, "resume", taken["session_id"], f'{taken["interrupt_ids"][0]}={{"approved": false}}'))
    previewed = db.parent / "previewed.json"
    previewed.write_text(json.dumps(doc))
    res = hitl(db, "bulk-answer", "--items", str(previewed), "--answer", APPROVE)
    assert res.exit_code == 1, res.stdout
    assert res.stderr.startswith("error: 1 of 40 invocations were not applied (listed above); the other 39 were")
    refused = [line for line in res.stdout.splitlines() if line.startswith("  refused ")]
    assert len(refused) == 1 and taken["interrupt_ids"][0] in refused[0] and "nothing was written" in refused[0]
    assert sum(line.startswith("  applied ") for line in res.stdout.splitlines()) == 39
    rows = [r for r in audit_rows(db) if r.details.get("batch")]
    assert len(rows) == 39


def test_dry_run_exit_1_when_an_item_would_be_refused_and_still_writes_nothing(db: Path) -> None:
    before = digest(db)
    res = hitl(db, "bulk-answer", *FILTER, "--answer", '{"approved": "perhaps"}', "--dry-run")
    assert res.exit_code == 1
    assert res.stdout.splitlines()[0].startswith("dry run: 40 interrupts in 40 invocations: 0 auto-complete")
    assert "40 of 40 invocations would be refused" in res.stderr
    assert digest(db) == before


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--answer", "{nope"], "the answer is not valid JSON"),
        (["amount<<", "--answer", "true"], "filter term 'amount<<'"),  # refused, named (was: matches nothing)
        (["age<2h", "--answer", "true"], "only age>DURATION"),
        (["node=nobody", "--answer", "true"], "no open interrupt matches node=nobody"),
    ],
)
def test_bad_input_is_one_line_exit_1_and_writes_nothing(db: Path, args: list[str], says: str) -> None:
    before = digest(db)
    res = hitl(db, "bulk-answer", *(FILTER[:1] if args[0] == "--answer" else []), *args)
    assert res.exit_code == 1, res.stdout
    assert res.stderr.startswith("error: ") and says in res.stderr and res.stderr.count("\n") == 1
    assert digest(db) == before


def test_an_empty_filter_is_a_usage_error(db: Path) -> None:
    res = hitl(db, "bulk-answer", "--answer", "true")
    assert res.exit_code == 2 and "an empty filter would answer every open interrupt" in res.stderr


def test_read_only_refuses_the_answer_but_allows_the_dry_run(db: Path) -> None:
    ok(hitl(db, "--read-only", "bulk-answer", *FILTER, "--answer", APPROVE, "--dry-run"))
    res = hitl(db, "--read-only", "bulk-answer", *FILTER, "--answer", APPROVE)
    assert res.exit_code == 1 and "read-only" in res.stderr


def test_hitl_inbox_takes_the_same_filter_and_hitl_audit_names_the_batch(db: Path) -> None:
    listed = ok(hitl(db, "inbox", *FILTER)).splitlines()
    assert len(listed) == 41 and listed[0].split()[:2] == ["AGE", "SESSION"]  # header + the 40
    assert {line.split()[4] for line in listed[1:]} == {f"finance-{o}" for o in bulk_store.SMALL}
    doc = json.loads(ok(hitl(db, "--json", "inbox", "node=risk_approval", "customer~grace", "age>2h")))
    assert doc["interrupts"] and all(r["args"]["payload"]["customer"] == "Grace Hopper" for r in doc["interrupts"])
    ok(hitl(db, "bulk-answer", *FILTER, "--answer", APPROVE))
    batch = audit_rows(db)[0].details["batch"]
    assert f"({batch})" in ok(hitl(db, "audit", "--limit", "1"))
