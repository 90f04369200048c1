"""``hitl claim`` / ``assign`` / ``release``, and ``hitl resume`` refusing an interrupt
someone else owns (without --force) or one the operator may not answer
([[answer]] rules of hitl.toml): one line, exit 1, nothing written."""

from __future__ import annotations

import asyncio
from pathlib import Path

from engine.store.sqlite import SQLiteStore
from tests.cli.conftest import Hitl, json_lines, ok, operator_error
from tests.cli.helpers import session_events

SID, IID = "refund-waiting-1", "finance-order-1001"
ANSWER = f'{IID}={{"approved": true}}'


def owner(db: Path) -> str | None:
    async def go() -> str | None:
        async with SQLiteStore.open(db, read_only=True) as store:
            (row,) = await store.lookup_interrupts(SID, [IID])
            return row.owner

    return asyncio.run(go())


def test_claim_then_another_operators_answer_is_refused_without_force(hitl: Hitl, db: Path) -> None:
    assert ok(hitl("claim", SID, IID, "--operator", "ann", "--reason", "on it")).strip() == (
        f"1 interrupt(s) claimed by ann: {IID}"
    )
    assert owner(db) == "ann"
    n = len(session_events(db, SID)[1])
    operator_error(hitl("resume", SID, ANSWER, "--operator", "bob"), f"interrupt {IID} is claimed by ann",
                   "nothing was written")
    operator_error(hitl("claim", SID, IID, "--operator", "bob"), "claimed by ann", "--force")
    assert len(session_events(db, SID)[1]) == n
    ok(hitl("resume", SID, ANSWER, "--operator", "bob", "--force"))
    _, events = session_events(db, SID)
    assert [e.event.kind for e in events][n] == "response"


def test_assign_release_and_json(hitl: Hitl, db: Path, tmp_path: Path) -> None:
    cfg = tmp_path / "hitl.toml"
    cfg.write_text('[groups]\nfinance = ["ann", "bob"]\n')
    operator_error(hitl("--config", str(cfg), "assign", SID, IID, "--to", "@nope", "--operator", "lead"),
                   "no group 'nope'", "@finance")
    (line,) = json_lines(ok(hitl("--config", str(cfg), "--json", "assign", SID, "--invocation",
                                 _inv(db), "--to", "@finance", "--operator", "lead")))
    both = [IID, "risk-order-1001"]  # every open id of the invocation
    assert line["ids"] == both and line["owner"] == "@finance" and line["previous"] == {i: None for i in both}
    ok(hitl("--config", str(cfg), "claim", SID, IID, "--operator", "bob"))  # a member takes it
    assert owner(db) == "bob"
    operator_error(hitl("release", SID, IID, "--operator", "ann"), "claimed by bob")
    ok(hitl("release", SID, IID, "--operator", "bob"))
    assert owner(db) is None
    usage = hitl("claim", SID, "--operator", "x")
    assert usage.exit_code == 2 and "name interrupt ids, or --invocation INV" in usage.stderr


def test_an_operator_outside_the_allowed_group_is_refused(hitl: Hitl, db: Path, tmp_path: Path) -> None:
    cfg = tmp_path / "hitl.toml"
    cfg.write_text('[groups]\nfinance = ["ann"]\n\n[[answer]]\napp = "refund_approval"\nallow = ["@finance"]\n')
    n = len(session_events(db, SID)[1])
    err = operator_error(hitl("--config", str(cfg), "resume", SID, ANSWER, "--operator", "carol"))
    assert err == (f"error: carol may not answer interrupt {IID}: only @finance may (rule app=refund_approval); "
                   "nothing was written")
    assert len(session_events(db, SID)[1]) == n
    ok(hitl("--config", str(cfg), "resume", SID, ANSWER, "--operator", "ann"))


def _inv(db: Path) -> str:
    from tests.cli.helpers import invocation_ids

    (inv,) = invocation_ids(db, SID)
    return inv


def test_sessions_list_an_owner_column_and_the_owner_filters(hitl: Hitl, db: Path) -> None:
    before = ok(hitl("sessions", "--limit", "100"))
    assert "OWNER" not in before.splitlines()[0]  # nobody owns anything: no column
    ok(hitl("claim", SID, IID, "--operator", "tester"))  # USER=tester: "me"
    ok(hitl("assign", SID, "risk-order-1001", "--to", "bob", "--operator", "tester"))
    head, *lines = ok(hitl("sessions", "--limit", "100")).splitlines()
    assert head.split() == ["SESSION", "APP", "USER", "STATUS", "OWNER", "OPEN", "INV", "EVENTS", "UPDATED"]
    cells = {line.split()[0]: line.split() for line in lines if line and not line.startswith("more")}
    assert cells[SID][4:6] == ["bob,", "tester"] and cells["refund-multi-1"][4] == "-"
    for args in (("--owner", "me"), ("--owner", "tester"), ("--owner", "bob")):
        (page,) = json_lines(ok(hitl("--json", "sessions", *args)))
        assert [(s["id"], s["owners"]) for s in page["sessions"]] == [(SID, ["bob", "tester"])]
    (page,) = json_lines(ok(hitl("--json", "sessions", "--unowned", "--limit", "100")))
    unowned = {s["id"] for s in page["sessions"]}
    assert SID not in unowned and "refund-multi-1" in unowned and all(not s["owners"] for s in page["sessions"])
    usage = hitl("sessions", "--owner", "bob", "--unowned")
    assert usage.exit_code == 2 and "exclude each other" in usage.stderr
