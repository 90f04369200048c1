"""Refund approval: fetch the order, ask finance and risk in parallel, then pay.

``fetch_order -> (finance_approval, risk_approval) -> approvals (JoinNode) -> pay``;
the join also takes the order from ``fetch_order`` so ``pay`` knows what it pays.

Both approvals are leaf nodes (``rerun_on_resume=False``): an answer
auto-completes them, and ``pay`` runs once both have answered. ``pay`` has a
side effect -- it appends to ``state["payments"]`` -- and deliberately has no
idempotency guard of its own: the engine's completion records are what keep it
from running twice (DESIGN.md 4.4, OPERATORS.md 8).

Start an invocation with the order id as the message (``"order-1001"``); one
session may hold several orders, each its own invocation with its own ids
(``finance-order-1001``, ``risk-order-1001``).
"""

from __future__ import annotations

import zlib
from typing import Any

from pydantic import BaseModel, Field

from engine import START, JoinNode, RequestInput, Workflow, node

app_name = "refund_approval"


class Approval(BaseModel):
    """An approver's answer."""

    approved: bool
    note: str = Field(default="", max_length=500)


CUSTOMERS = ["Ada Lovelace", "Grace Hopper", "Alan Turing", "Edsger Dijkstra", "Barbara Liskov"]


@node
async def fetch_order(node_input: str) -> dict[str, Any]:
    """A deterministic stand-in for an order service lookup."""
    order_id = (node_input or "").strip() or "order-0"
    h = zlib.crc32(order_id.encode())
    return {
        "order_id": order_id,
        "customer": CUSTOMERS[h % len(CUSTOMERS)],
        "amount": round(20 + (h % 48000) / 100, 2),
        "currency": "EUR",
        "reason": ["damaged in transit", "wrong size", "never arrived", "duplicate charge"][h % 4],
    }


@node
async def finance_approval(node_input: dict[str, Any]):
    yield RequestInput(
        f"Finance: refund {node_input['amount']:.2f} {node_input['currency']} to {node_input['customer']} "
        f"({node_input['reason']})?",
        payload=node_input,
        response_schema=Approval,
        interrupt_id=f"finance-{node_input['order_id']}",
    )


@node
async def risk_approval(node_input: dict[str, Any]):
    yield RequestInput(
        f"Risk: any fraud signal on {node_input['order_id']} ({node_input['customer']})?",
        payload={"order_id": node_input["order_id"], "customer": node_input["customer"]},
        response_schema=Approval,
        interrupt_id=f"risk-{node_input['order_id']}",
    )


approvals = JoinNode("approvals")


@node
async def pay(ctx, node_input: dict[str, Any]) -> dict[str, Any]:
    """Pays when both approvers said yes; the side effect is the payment record.

    ``node_input`` is the join's ``{"fetch_order": order, "finance_approval":
    answer, "risk_approval": answer}``.
    """
    order = node_input["fetch_order"]
    answers = {k: v for k, v in node_input.items() if k != "fetch_order"}
    rejected = {who: a.get("note", "") for who, a in answers.items() if not a.get("approved")}
    if rejected:
        return {"status": "rejected", "order_id": order["order_id"], "rejected_by": rejected}
    payments = list(ctx.state.get("payments", []))
    payments.append({"order_id": order["order_id"], "amount": order["amount"], "currency": order["currency"]})
    ctx.state["payments"] = payments
    return {"status": "paid", "order_id": order["order_id"], "amount": order["amount"], "payment_no": len(payments)}


workflow = Workflow(
    "refund",
    [
        (START, fetch_order, (finance_approval, risk_approval), approvals, pay),
        (fetch_order, approvals),
    ],
)
