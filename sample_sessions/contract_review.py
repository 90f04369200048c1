"""Contract review: a parallel worker over N documents, some of which need a human.

``intake -> review (ParallelWorker of check_document, 3 at a time) -> decide``

``check_document`` clears a document automatically unless it contains a risky
clause; then it asks a lawyer (``response_schema``: :class:`Verdict`, so an
answer ``{"approve": "true"}`` is coerced to ``{"approve": true, "note": null}``).
The flagged documents wait independently while the others complete; answering
one resumes only that document; the worker completes with the verdicts in the
order of the documents once every flagged one is answered.

Start with ``"<batch> <count>"`` as the message (``"acme-q3 8"``): every third
document carries a risky clause.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from engine import START, ParallelWorker, RequestInput, Workflow, node

app_name = "contract_review"

RISKY = ("unlimited liability", "auto-renewal", "exclusive jurisdiction")


class Verdict(BaseModel):
    """A lawyer's answer for one flagged document."""

    approve: bool
    note: str | None = None


@node
def intake(node_input: str) -> list[dict[str, Any]]:
    batch, _, count = (node_input or "batch 6").strip().partition(" ")
    n = int(count) if count.strip().isdigit() else 6
    docs = []
    for k in range(1, n + 1):
        clause = RISKY[(k // 3 - 1) % len(RISKY)] if k % 3 == 0 else None
        docs.append({"id": f"{batch}-{k:02d}", "title": f"Contract {k} of {batch}", "clause": clause})
    return docs


@node
async def check_document(node_input: dict[str, Any]):
    if node_input["clause"] is None:
        yield {"id": node_input["id"], "approve": True, "by": "auto"}
        return
    yield RequestInput(
        f"{node_input['title']} contains '{node_input['clause']}': approve?",
        payload=node_input,
        response_schema=Verdict,
        interrupt_id=f"legal-{node_input['id']}",
    )


review = ParallelWorker(check_document, name="review", max_concurrency=3)


@node
def decide(node_input: list[Any]) -> dict[str, Any]:
    verdicts = []
    for v in node_input:
        # An auto-cleared document's output is its verdict; a flagged one's is the lawyer's answer.
        verdicts.append(v if "by" in v else {**v, "by": "legal"})
    rejected = [i for i, v in enumerate(verdicts) if not v["approve"]]
    return {"documents": len(verdicts), "rejected": rejected, "signed": not rejected}


workflow = Workflow("contracts", [(START, intake, review, decide)])
