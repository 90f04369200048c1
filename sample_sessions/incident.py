"""Incident response: triage, ask for a mitigation, page the on-call, close.

``triage -> choose_mitigation -> mitigate -> close``

``choose_mitigation`` is a leaf that raises two interrupts in one run (the
mitigation and the status-page notice): a partial answer leaves it WAITING and
runs nothing; once both are answered it auto-completes with
``{interrupt_id: answer}``.

``mitigate`` fails the first time it runs in a session (the paging API answers
503 on a cold start; it counts its calls in ``state["pager_calls"]``, and that
count rides on the error event). The invocation is then FAILED; an operator
re-drive (``hitl redrive``) runs ``mitigate`` again with the same run id and it
succeeds; ``triage`` and the answered question are not re-executed.

Start with the alert as the message (``"api-latency p99 > 2s"``).
"""

from __future__ import annotations

import zlib
from typing import Any, Literal

from pydantic import BaseModel

from engine import START, RequestInput, Workflow, node

app_name = "incident"


class Mitigation(BaseModel):
    action: Literal["restart", "rollback", "scale_up", "ignore"]
    page_oncall: bool = True


class StatusPage(BaseModel):
    publish: bool
    text: str = ""


class PagerUnavailable(Exception):
    status = "PAGER_503"


def incident_id(alert: str) -> str:
    """The incident id triage gives an alert (deterministic)."""
    return f"INC-{1000 + zlib.crc32(alert.strip().encode()) % 9000}"


@node
async def triage(node_input: str) -> dict[str, Any]:
    alert = (node_input or "unknown alert").strip()
    severity = ["sev1", "sev2", "sev3"][zlib.crc32(alert.encode()) % 3]
    return {"incident_id": incident_id(alert), "alert": alert, "severity": severity}


@node
async def choose_mitigation(node_input: dict[str, Any]):
    inc = node_input["incident_id"]
    yield RequestInput(
        f"{inc} ({node_input['severity']}): {node_input['alert']} -- how do we mitigate?",
        payload=node_input,
        response_schema=Mitigation,
        interrupt_id=f"mitigate-{inc}",
    )
    yield RequestInput(
        f"{inc}: publish a status page notice?",
        payload={"incident_id": inc, "severity": node_input["severity"]},
        response_schema=StatusPage,
        interrupt_id=f"statuspage-{inc}",
    )


@node
async def mitigate(ctx, node_input: dict[str, Any]) -> dict[str, Any]:
    """``node_input``: ``{"mitigate-INC-..": Mitigation, "statuspage-INC-..": StatusPage}``."""
    choice = next(v for k, v in node_input.items() if k.startswith("mitigate-"))
    notice = next(v for k, v in node_input.items() if k.startswith("statuspage-"))
    calls = int(ctx.state.get("pager_calls", 0)) + 1
    ctx.state["pager_calls"] = calls
    if calls == 1:
        raise PagerUnavailable("paging API answered 503 Service Unavailable (cold start); re-drive to retry")
    return {
        "action": choice["action"],
        "paged": choice.get("page_oncall", True),
        "status_page": notice["publish"],
        "pager_calls": calls,
    }


@node
async def close(node_input: dict[str, Any]) -> dict[str, Any]:
    return {"closed": True, "resolution": node_input["action"]}


workflow = Workflow("incident", [(START, triage, choose_mitigation, mitigate, close)])
