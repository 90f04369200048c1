"""On every sample app, `hitl resume --dry-run` predicts what the real `hitl resume` does.

For each node the dry run names: ``auto-complete`` => COMPLETED afterwards with
the predicted output and no new start record; ``re-execute`` => started again
with the same path (same run id); ``keep waiting`` => still WAITING and not
started. Ids it says stay open are still open; it says whether anything runs.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from console.cli import cli
from engine.models import NodeStatus
from engine.projection import project
from engine.store.sqlite import SQLiteStore
from sample_sessions import (
    APPS,
    contract_review,
    deploy_pipeline,
    document_review,
    incident,
    labelling_batch,
    refund_approval,
)
from tests.cli.helpers import start_session

YES = {"approved": True, "note": ""}
ALERT = "error rate 5% on checkout"
INC = incident.incident_id(ALERT)

CASES: dict[str, tuple[Any, str, list[dict[str, Any]]]] = {
    "refund-one-of-two": (refund_approval, "order-7", [{"finance-order-7": YES}]),
    "refund-both-at-once": (refund_approval, "order-7", [{"finance-order-7": YES, "risk-order-7": YES}]),
    "refund-second-answer": (refund_approval, "order-7", [{"risk-order-7": YES}, {"finance-order-7": YES}]),
    "review-signoff": (document_review, "Design doc", [{"signoff-design-doc": {"decision": "request_changes"}}]),
    "deploy-redeploy": (deploy_pipeline, "v9", [{"gate-1": {"decision": "redeploy"}}]),
    "deploy-promote-second": (
        deploy_pipeline,
        "v9",
        [{"gate-1": {"decision": "redeploy"}}, {"gate-2": {"decision": "promote"}}],
    ),
    "labels-some": (labelling_batch, "cats 5", [{"label-cats-001": "cat", "label-cats-004": "dog"}]),
    "labels-last": (
        labelling_batch,
        "cats 3",
        [{"label-cats-002": "fish"}, {"label-cats-001": "cat", "label-cats-003": "bird"}],
    ),
    "contracts-one-flagged": (contract_review, "acme 6", [{"legal-acme-03": {"approve": "true"}}]),
    "contracts-all-flagged": (
        contract_review,
        "acme 6",
        [{"legal-acme-06": {"approve": False}}, {"legal-acme-03": {"approve": "yes", "note": "ok"}}],
    ),
    "incident-keep-waiting": (incident, ALERT, [{f"statuspage-{INC}": {"publish": True}}]),
    "incident-then-fails": (
        incident,
        ALERT,
        [{f"statuspage-{INC}": {"publish": True}}, {f"mitigate-{INC}": {"action": "restart"}}],
    ),
}


def test_every_sample_app_is_covered() -> None:
    assert {m.app_name for m, _, _ in CASES.values()} == set(APPS)


def _events(db: Path, sid: str) -> list[Any]:
    async def go() -> list[Any]:
        async with SQLiteStore.open(db, read_only=True) as store:
            return await store.events(sid)

    return asyncio.run(go())


def _answers(answers: dict[str, Any]) -> list[str]:
    return [f"{i}={json.dumps(v)}" for i, v in answers.items()]


@pytest.mark.parametrize("case", sorted(CASES))
def test_dry_run_matches_real_resume(case: str, tmp_path: Path) -> None:
    module, text, rounds = CASES[case]
    db = tmp_path / "s.sqlite"
    sid = f"s-{case}"
    start_session(db, module.app_name, module.workflow, sid, text)
    runner = CliRunner()

    def hitl(*args: str) -> Any:
        return runner.invoke(cli, ["--db", str(db), *args])

    for answers in rounds[:-1]:
        assert hitl("resume", sid, *_answers(answers)).exit_code == 0
    last = _answers(rounds[-1])
    before = _events(db, sid)
    proj_before = project([(s.seq, s.event) for s in before])
    dry = hitl("resume", sid, *last, "--dry-run", "--json")
    assert dry.exit_code == 0, dry.output
    plan = json.loads(dry.stdout)
    assert len(_events(db, sid)) == len(before), "the dry run wrote something"

    real = hitl("resume", sid, *last)
    assert real.exit_code in (0, 1), real.output  # 1: the incident's node fails after the answer (by design)
    after = _events(db, sid)
    new = [s.event for s in after[len(before) :]]
    assert new[0].kind == "response"
    started = {e.path for e in new if e.kind == "start"}
    proj = project([(s.seq, s.event) for s in after])
    inv = plan["invocation_id"]

    assert set(plan["resolves"]) == set(rounds[-1])
    for iid in plan["resolves"]:
        assert proj.interrupts[(inv, iid)].resolved
    assert plan["changes"], "the dry run must name the nodes an answer touches"
    for change in plan["changes"]:
        path = change["path"]
        run_before = proj_before.get(inv, path)
        assert run_before is not None and change["before"] == run_before.status.value, path
        run = proj.get(inv, path)
        assert run is not None, path
        if change["effect"] == "auto-complete":
            assert run.status is NodeStatus.COMPLETED and run.auto_completed, path
            assert run.output == change["output"], path
            assert path not in started, f"{path} was predicted to auto-complete but re-executed"
        elif change["effect"] == "re-execute":
            assert path in started, f"{path} was predicted to re-execute but did not start"
            assert run.run_id == run_before.run_id and run.starts == run_before.starts + 1, path
        elif change["effect"] == "keep waiting":
            assert run.status is NodeStatus.WAITING, path
            assert path not in started, path
            assert set(change["still_open"]) <= set(run.own_pending), path
        else:
            pytest.fail(f"unknown effect {change['effect']!r}")
    open_after = {i.id for i in proj.open_interrupts(inv)}
    assert set(plan["still_open"]) <= open_after
    assert plan["runs_anything"] == bool(started)
