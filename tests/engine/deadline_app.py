"""Workflows with deadlines, for the deadline tests (importable by worker processes)."""

from __future__ import annotations

from datetime import timedelta

from engine import START, RequestInput, Workflow, node
from engine.deadlines import answer, assign, escalate, fail, notify, remind

APP = "deadline_refunds"
HOURS = 4
SCHEMA = {"type": "object", "properties": {"approved": {"type": "boolean"}}, "required": ["approved"]}


@node
async def approve(order: str):
    yield RequestInput(f"Approve {order}?", payload={"order": order}, response_schema=SCHEMA, interrupt_id="approve",
                       deadline=timedelta(hours=HOURS), on_deadline=answer({"approved": "false"}))


@node
async def settle(decision: dict):
    return "paid" if decision["approved"] else "refused"


workflow = Workflow("refund", [(START, approve, settle)])


@node
async def sign(order: str):
    yield RequestInput(f"Sign {order}?", response_schema=bool, interrupt_id="sign",
                       deadline=timedelta(hours=HOURS), on_deadline=fail("NoSigner", "nobody signed within 4h"))


failing = Workflow("signing", [(START, sign, settle)])


@node
async def review(order: str):
    yield RequestInput(f"Review {order}?", response_schema=bool, interrupt_id="review",
                       deadline=timedelta(hours=HOURS),
                       on_deadline=escalate(remind(after=timedelta(hours=1), channels=["ops"]),
                                            notify("pager"),
                                            assign("finance-leads", after=timedelta(hours=5))))


escalating = Workflow("review", [(START, review)])


@node
async def plain(order: str):
    yield RequestInput(f"Check {order}?", response_schema=bool, interrupt_id="check")


undecided = Workflow("check", [(START, plain)])


single = Workflow("quick", [(START, approve)])
"""One waiting node: its default answer completes the invocation with no other node to run."""
