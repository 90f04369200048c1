"""PostgreSQL-only safety: read-only really is read-only (down to the server),
schema versions and ``hitl migrate``, credentials never shown, ``hitl copy``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import asyncpg
import pytest
from click.testing import CliRunner

from console.cli import cli
from engine.errors import StoreError
from engine.models import Content, Event
from engine.store import open_store
from engine.store.postgres import SCHEMA_VERSION, PostgresStore, mask_url
from engine.store.sqlite import SQLiteStore
from tests.cli.conftest import ok, operator_error
from tests.contract.builders import dump, pg_fresh_url, pg_url

from . import test_safety
from .pg import copy_demo, pg_dump, run


@pytest.fixture(scope="module")
def pg_demo_template(demo_template: Path) -> str:
    """The demo store copied once into PostgreSQL (tests that write copy it again)."""
    import asyncio

    return asyncio.run(copy_demo(demo_template))


def hitl(*args: str, input: str | None = None) -> Any:
    return CliRunner().invoke(cli, list(args), input=input, catch_exceptions=True)


# The SQLite tripwire's classification, with PostgreSQL's own extras.
# warm_turns writes nothing (a worker's warm-up, rolled back; a read-only store skips it).
READS = (test_safety.READS - {"integrity_check", "change_counter"}) | {
    "schema_version", "notifications", "turn_notifications", "snapshot_and_events", "answer_reads", "warm_turns"
}


def _write_calls(store: PostgresStore, lines: list[str]) -> dict[str, Any]:
    calls = {
        **test_safety._write_calls(store, lines),  # type: ignore[arg-type]
        "migrate": lambda: store.migrate(),
        "claim_and_read": lambda: store.claim_and_read(["a"], "me", 60),  # a worker's claim (PostgreSQL's)
    }
    # optional capabilities SQLite has and this store may not (the Runner falls back without them)
    return {name: call for name, call in calls.items() if hasattr(PostgresStore, name)}


async def test_no_write_path_of_a_read_only_postgres_store_is_reachable(pg_demo_template: str) -> None:
    url = pg_demo_template
    before = await pg_dump(url)
    async with PostgresStore.open(url, read_only=True) as store:
        await test_safety.refuses_every_write(store, PostgresStore, READS, _write_calls)
        # Below the Python checks, the server refuses: every connection of the pool
        # runs with default_transaction_read_only, the append function included.
        assert store._pool is not None
        async with store._pool.acquire() as conn:
            for sql in ("DELETE FROM events", "UPDATE sessions SET last_seq = 0", "CREATE TABLE x (a int)"):
                with pytest.raises(asyncpg.ReadOnlySQLTransactionError):
                    await conn.execute(sql)
            with pytest.raises(asyncpg.ReadOnlySQLTransactionError):
                await conn.fetchval(
                    "SELECT hitl_append($1, NULL, NULL, 0, '{}', 'e', 'i', 0, NULL, 'message', NULL,"
                    " '{}', '{}', '{}', '{}', '{}', false, NULL, NULL, NULL, NULL, NULL, NULL)",
                    "refund-waiting-1",
                )
        assert (await store.get_session("refund-waiting-1")).last_seq > 0  # reads work
    assert await pg_dump(url) == before


def test_every_writing_cli_command_fails_read_only_on_postgres(pg_demo_template: str, tmp_path: Path) -> None:
    url = pg_demo_template
    export = tmp_path / "e.jsonl"
    export.write_text(ok(hitl("--db", url, "export", "refund-partial-1")))
    before = pg_dump_sync(url)
    for argv in (
        ["resume", "refund-waiting-1", 'finance-order-1001={"approved": true}'],
        ["import", str(export), "--as", "copy"],
        ["migrate"],
        ["copy", "--from", url, "--to", str(tmp_path / "x.sqlite")],
    ):
        operator_error(hitl("--db", url, "--read-only", *argv), "read-only")
    for argv in (["sessions"], ["inbox"], ["show", "refund-partial-1"], ["audit"], ["events", "refund-partial-1"]):
        ok(hitl("--db", url, "--read-only", *argv))
    assert pg_dump_sync(url) == before


def pg_dump_sync(url: str) -> dict[str, Any]:
    import asyncio

    return asyncio.run(pg_dump(url))


# ------------------------------------------------------------------ schema versions


def test_a_newer_schema_is_refused_and_left_untouched() -> None:
    url = pg_fresh_url()

    async def setup() -> list[Any]:
        async with PostgresStore.open(url) as store:
            await store.create_session("app", "u", "s1")
            assert store._pool is not None
            async with store._pool.acquire() as conn:
                await conn.execute("UPDATE hitl_schema SET version = $1", SCHEMA_VERSION + 1)
        for read_only in (False, True):
            with pytest.raises(StoreError, match=f"schema version {SCHEMA_VERSION + 1}, newer.*left untouched"):
                await PostgresStore.open(url, read_only=read_only)
        return await _raw_dump(url)

    before = run(setup())
    operator_error(hitl("--db", url, "sessions"), f"schema version {SCHEMA_VERSION + 1}", "upgrade hitl-console")
    operator_error(hitl("--db", url, "migrate"), "newer")
    assert run(_raw_dump(url)) == before


def test_a_version_2_store_is_upgraded_by_a_writer_and_then_resumes() -> None:
    """Schema v3 adds the turn's one-statement first and last writes. A store left
    at v2 (without them) is refused by a reader, upgraded by a writer with its
    data kept, and a turn then goes through the new functions."""
    from engine import START, Runner, Workflow
    from engine.errors import SchemaUpgradeNeeded
    from tests.engine.test_turn_cost import after, ask, prep

    assert SCHEMA_VERSION >= 3  # later migrations (e.g. seek checkpoints) are run by the upgrade too
    url = pg_fresh_url()
    runner_wf = Workflow("wf", [(START, prep, ask, after)])

    async def as_v2() -> list[Any]:
        async with PostgresStore.open(url) as store:
            async for _ in Runner("app", runner_wf, store).run("u", "s", Content.from_text("go")):
                pass
            assert store._pool is not None
            async with store._pool.acquire() as conn:
                await conn.execute("DROP FUNCTION hitl_acquire_append")
                await conn.execute("DROP FUNCTION hitl_append_release")
                await conn.execute("UPDATE hitl_schema SET version = 2")
        return await _raw_dump(url)

    before = run(as_v2())

    async def read() -> None:
        await PostgresStore.open(url, read_only=True)

    with pytest.raises(SchemaUpgradeNeeded, match="schema version 2"):
        run(read())
    assert run(_raw_dump(url)) == before  # a reader leaves it untouched

    async def upgrade() -> None:
        async with PostgresStore.open(url) as store:
            assert (store.migrated_from, await store.schema_version()) == (2, SCHEMA_VERSION)
            rows = await _raw_dump(url)
            assert rows[1:] == before[1:]  # sessions and events kept
            iid = (await store.open_interrupts(session_id="s", limit=1)).items[0].interrupt_id
            async for _ in Runner("app", runner_wf, store).run("u", "s", Content.from_responses({iid: True})):
                pass
            assert [i.status for i in await store.list_invocations("s")] == ["completed"]
            assert await store.list_leases("s") == []

    run(upgrade())


async def _raw_dump(url: str) -> list[Any]:
    dsn, schema = url.rsplit("&schema=", 1)
    conn = await asyncpg.connect(dsn, server_settings={"search_path": schema})
    try:
        rows = []
        for t in ("hitl_schema", "sessions", "events"):
            rows.append(sorted(map(tuple, await conn.fetch(f"SELECT * FROM {t}")), key=repr))
        return rows
    finally:
        await conn.close()


def test_hitl_migrate_creates_then_reports_up_to_date() -> None:
    url = pg_fresh_url()
    operator_error(hitl("--db", url, "--read-only", "sessions"), "no hitl-console store yet")
    assert ok(hitl("--db", url, "migrate")).strip().endswith(f"schema version 0 -> {SCHEMA_VERSION}")
    assert ok(hitl("--db", url, "migrate")).strip().endswith(f"schema version {SCHEMA_VERSION}, up to date")
    assert json.loads(ok(hitl("--db", url, "--json", "migrate")))["changed"] is False
    ok(hitl("--db", url, "--read-only", "sessions"))


def test_hitl_migrate_on_sqlite_goes_through_the_same_command(tmp_path: Path) -> None:
    db = str(tmp_path / "m.sqlite")
    operator_error(hitl("--db", db, "migrate"), "no session database")  # never creates a store
    ok(hitl("--db", db, "demo"))
    out = ok(hitl("--db", db, "migrate"))
    assert "up to date" in out


# ------------------------------------------------------------------ credentials


def test_mask_url_hides_every_password() -> None:
    assert mask_url("postgresql://ann:s3cr%40t@db:5432/hitl?sslmode=require") == (
        "postgresql://ann:***@db:5432/hitl?sslmode=require"
    )
    assert "s3cret" not in mask_url("postgresql://ann@db/hitl?password=s3cret&sslmode=verify-full")
    assert mask_url("postgresql://ann@db/hitl") == "postgresql://ann@db/hitl"


@pytest.mark.parametrize("json_flag", [[], ["--json"]])
def test_a_password_is_never_printed(json_flag: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    host = pg_url().split("host=", 1)[1]
    cases = [
        "postgresql://hitl:s3cret@127.0.0.1:1/hitl_test",  # nothing listens there
        f"postgresql://hitl:s3cret@/no_such_db?host={host}",  # the server says the database is missing
        f"postgresql://hitl@/no_such_db?host={host}&password=s3cret",
    ]
    for url in cases:
        result = hitl(*json_flag, "--db", url, "sessions")
        assert result.exit_code == 1
        assert "s3cret" not in result.output and "***" in result.output, result.output
        assert "Traceback" not in result.output
    # a working store named with a password: listed, its name masked wherever shown
    url = pg_fresh_url().replace("postgresql://hitl@", "postgresql://hitl:s3cret@")
    out = ok(hitl(*json_flag, "--db", url, "migrate"))
    assert "s3cret" not in out and "***" in out
    # hitl.toml [store] url + password: used, never shown
    cfg = tmp_path / "hitl.toml"
    cfg.write_text(f'[store]\nurl = "{pg_fresh_url()}"\npassword = "s3cret"\n')
    monkeypatch.delenv("HITL_DB", raising=False)
    out = ok(hitl(*json_flag, "--config", str(cfg), "migrate"))
    assert "s3cret" not in out and ("0 -> " in out or '"from": 0' in out)


def test_hitl_db_env_names_a_postgres_store(monkeypatch: pytest.MonkeyPatch) -> None:
    url = pg_fresh_url()
    monkeypatch.setenv("HITL_DB", url)
    assert "0 -> " in ok(hitl("migrate"))
    assert json.loads(ok(hitl("--json", "sessions")))["sessions"] == []


# ------------------------------------------------------------------ hitl copy


def test_hitl_copy_moves_a_whole_store_and_resumes(demo_template: Path, tmp_path: Path) -> None:
    url = pg_fresh_url()
    src = str(demo_template)
    # A copy stopped after a few sessions (the process died): the target holds only
    # complete sessions, and the same command finishes the job.
    from engine.store import copy as copy_mod

    async def stopped() -> None:
        async with SQLiteStore.open(demo_template, read_only=True) as s, PostgresStore.open(url) as d:
            n = 0

            def stop_after_three(_sid: str, _outcome: str) -> None:
                nonlocal n
                n += 1
                if n == 3:
                    raise KeyboardInterrupt

            with pytest.raises(KeyboardInterrupt):
                await copy_mod.copy_store(s, d, source_label=src, progress=stop_after_three)
            assert len((await d.list_sessions(limit=100)).items) == 3

    run(stopped())
    out = json.loads(ok(hitl("--json", "copy", "--from", src, "--to", url)))
    assert (out["skipped"], out["copied"], out["diverged"]) == (3, out["sessions"] - 3, [])

    async def compare() -> list[str]:
        async with SQLiteStore.open(demo_template, read_only=True) as s, PostgresStore.open(url) as d:
            ids = [x.id for x in (await s.list_sessions(limit=1000)).items]
            assert sorted(x.id for x in (await d.list_sessions(limit=1000)).items) == sorted(ids)
            for sid in ids:
                a, b = await dump(s, sid), await dump(d, sid)
                for side in (a, b):
                    side["session"].pop("updated_at")
                    for row in side["summary"]:
                        row.pop("updated_at")
                assert a == b, sid
            # answer/re-drive/cancel audit rows are rebuilt by the append path
            src_audit = {(r.action, r.session_id, r.seq) for r in (await s.audit_log(limit=1000)).items if r.seq}
            dst_audit = {(r.action, r.session_id, r.seq) for r in (await d.audit_log(limit=1000)).items if r.seq}
            assert src_audit == dst_audit
            # a session changed in the target meanwhile: reported, left alone, exit 1
            await d.append_event(ids[0], Event(invocation_id="x", author="user", content=Content.from_text("later")))
            return ids

    ids = run(compare())
    result = hitl("copy", "--from", src, "--to", url)
    assert result.exit_code == 1 and f"not copied: {ids[0]}" in result.output
    # and back, PostgreSQL -> SQLite
    back = tmp_path / "back.sqlite"
    ok(hitl("copy", "--from", url, "--to", str(back)))

    async def check_back() -> None:
        b = await open_store(back, read_only=True)
        d = await open_store(url, read_only=True)
        try:
            for sid in ids:
                assert (await dump(b, sid))["events"] == (await dump(d, sid))["events"], sid
        finally:
            await b.close()
            await d.close()

    run(check_back())


def test_resume_against_postgres(pg_demo_template: str) -> None:
    url = pg_fresh_url()
    ok(hitl("copy", "--from", pg_demo_template, "--to", url))
    before = json.loads(ok(hitl("--db", url, "--json", "inbox", "--session", "refund-waiting-1")))["interrupts"]
    assert sorted(r["interrupt_id"] for r in before) == ["finance-order-1001", "risk-order-1001"]
    ok(hitl("--db", url, "resume", "refund-waiting-1", 'finance-order-1001={"approved": true}', "--operator", "ann"))
    after = json.loads(ok(hitl("--db", url, "--json", "inbox", "--session", "refund-waiting-1")))["interrupts"]
    assert [r["interrupt_id"] for r in after] == ["risk-order-1001"]
    audit = json.loads(ok(hitl("--db", url, "--json", "audit", "--operator", "ann")))["audit"]
    assert [(r["action"], r["session_id"]) for r in audit] == [("answer", "refund-waiting-1")]
    # the same answer again: rejected, nothing written
    operator_error(
        hitl("--db", url, "resume", "refund-waiting-1", 'finance-order-1001={"approved": true}'), "finance-order-1001"
    )
