"""``hitl claim`` / ``assign`` / ``release`` and the inbox's owner filters
(``owner=me``, ``owner=NAME``, ``owner=@group``, ``unowned``) on PostgreSQL: the
demo store copied into a fresh schema, the CLI run against its URL, the owner
read back from the store after each step."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from click.testing import Result

from engine.store.postgres import PostgresStore
from tests.cli.conftest import Hitl, json_lines, ok, operator_error

pytestmark = pytest.mark.postgres

SID, IID, RISK = "refund-waiting-1", "finance-order-1001", "risk-order-1001"


@pytest.fixture
def pg(db: Path) -> str:
    from tests.reliability.pg import copy_demo

    return asyncio.run(copy_demo(db))


def owners(url: str) -> dict[str, str | None]:
    async def go() -> dict[str, str | None]:
        async with PostgresStore.open(url, read_only=True) as store:
            return {r.interrupt_id: r.owner for r in await store.lookup_interrupts(SID, [IID, RISK])}

    return asyncio.run(go())


def owner_events(url: str) -> list[tuple[str, str, str | None]]:
    """(action, operator, new owner) of the session's ownership events, in log order."""
    async def go() -> list[tuple[str, str, str | None]]:
        async with PostgresStore.open(url, read_only=True) as store:
            return [(s.event.kind, s.event.custom_metadata["operator"], s.event.custom_metadata.get("owner"))
                    for s in await store.events(SID) if s.event.kind in ("claim", "assign", "release")]

    return asyncio.run(go())


def test_claim_assign_release_and_owner_filters_on_postgres(hitl: Hitl, pg: str, tmp_path: Path) -> None:
    def run(*args: str) -> Result:
        return hitl(*args, db_path=pg)

    def inbox(*terms: str) -> list[tuple[str, str, str | None]]:
        (page,) = json_lines(ok(run("--json", "inbox", *terms)))
        return sorted((i["session_id"], i["interrupt_id"], i.get("owner")) for i in page["interrupts"])

    cfg = tmp_path / "hitl.toml"
    cfg.write_text('[groups]\nfinance = ["ann", "bob"]\n')
    assert ok(run("claim", SID, IID, "--operator", "tester", "--reason", "on it")).strip() == (
        f"1 interrupt(s) claimed by tester: {IID}"
    )
    assert owners(pg) == {IID: "tester", RISK: None}
    # USER=tester (the fixture): owner=me lists tester's rows, as owner=tester does
    assert inbox("owner=me") == [(SID, IID, "tester")] == inbox("owner=tester")
    unowned = inbox("unowned")
    assert (SID, RISK, None) in unowned and all(o is None for _, _, o in unowned)
    # someone else's claim is refused without --force, and nothing changes
    operator_error(run("claim", SID, IID, "--operator", "bob"), "claimed by tester", "--force")
    assert owners(pg) == {IID: "tester", RISK: None}
    # assign every open id of the invocation to a group (forced over tester's claim)
    (page,) = json_lines(ok(run("--json", "inbox", "owner=me")))
    (inv,) = {i["invocation_id"] for i in page["interrupts"]}
    (line,) = json_lines(ok(run("--config", str(cfg), "--json", "assign", SID, "--invocation", inv,
                                "--to", "@finance", "--operator", "lead", "--force")))
    assert line["owner"] == "@finance" and line["previous"] == {IID: "tester", RISK: None}
    assert owners(pg) == {IID: "@finance", RISK: "@finance"}
    assert inbox("owner=@finance") == [(SID, IID, "@finance"), (SID, RISK, "@finance")]
    assert inbox("owner=me") == []
    # the sessions list: the session's owners, and its owner filters (PostgreSQL's own statement)
    (listing,) = json_lines(ok(run("--json", "sessions", "--owner", "@finance")))
    assert [(s["id"], s["owners"]) for s in listing["sessions"]] == [(SID, ["@finance"])]
    (listing,) = json_lines(ok(run("--json", "sessions", "--unowned", "--limit", "100")))
    assert SID not in {s["id"] for s in listing["sessions"]} and listing["sessions"]
    # a member of the group takes one; only its owner releases it
    ok(run("--config", str(cfg), "claim", SID, RISK, "--operator", "bob"))
    assert owners(pg) == {IID: "@finance", RISK: "bob"}
    operator_error(run("release", SID, RISK, "--operator", "ann"), "claimed by bob")
    ok(run("release", SID, RISK, "--operator", "bob"))
    assert owners(pg) == {IID: "@finance", RISK: None}
    assert (SID, RISK, None) in inbox("unowned")
    # each step is one audited event in the session's log (the refused ones left none)
    assert owner_events(pg) == [("claim", "tester", "tester"), ("assign", "lead", "@finance"),
                                ("claim", "bob", "bob"), ("release", "bob", None)]
