"""Document review: a nested review workflow whose reviewer drafts and asks for sign-off.

``draft -> review [Workflow: annotate -> reviewer] -> publish``

``reviewer`` yields its reviewed draft as output *and* a sign-off request in the
same run (DESIGN.md 3.4, "output and interrupt in the same run"). It is
``rerun_on_resume=True``: after the sign-off it re-executes with the same run
id, finds the answer in ``ctx.resume_inputs`` and its earlier draft in
``ctx.output`` (the prior output), and returns the signed draft. It does not
redo the review work on re-execution.

Start with the document title as the message (``"Q3 security report"``).
"""

from __future__ import annotations

import re
import zlib
from typing import Any, Literal

from pydantic import BaseModel

from engine import START, RequestInput, Workflow, node

app_name = "document_review"


class SignOff(BaseModel):
    decision: Literal["approve", "request_changes"]
    comment: str = ""


def doc_id(title: str) -> str:
    slug = re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-") or "untitled"
    return slug[:40]


@node
async def draft(node_input: str) -> dict[str, Any]:
    title = (node_input or "").strip() or "Untitled"
    words = 400 + zlib.crc32(title.encode()) % 1600
    return {"doc_id": doc_id(title), "title": title, "words": words, "version": 1}


@node
async def annotate(node_input: dict[str, Any]) -> dict[str, Any]:
    h = zlib.crc32(node_input["title"].encode())
    issues = [
        issue
        for i, issue in enumerate(
            ["passive voice in summary", "missing source for figure 2", "long intro", "typo in title"]
        )
        if (h >> i) & 1
    ]
    return {**node_input, "issues": issues}


@node(rerun_on_resume=True)
async def reviewer(ctx, node_input: dict[str, Any]):
    signoff_id = f"signoff-{node_input['doc_id']}"
    if signoff_id in ctx.resume_inputs:
        answer = ctx.resume_inputs[signoff_id]
        reviewed = ctx.output or {}  # the prior output: the draft from the first run
        yield {**reviewed, "signed_off": answer["decision"] == "approve", "comment": answer.get("comment", "")}
        return
    reviewed = {**node_input, "version": node_input["version"] + 1, "fixed": node_input["issues"]}
    yield reviewed  # output first ...
    yield RequestInput(  # ... then the interrupt, in the same run
        f"Sign off '{node_input['title']}' v{reviewed['version']} ({len(reviewed['fixed'])} fixes)?",
        payload={"doc_id": node_input["doc_id"], "version": reviewed["version"], "fixed": reviewed["fixed"]},
        response_schema=SignOff,
        interrupt_id=signoff_id,
    )


review = Workflow("review", [(START, annotate, reviewer)])


@node
async def publish(ctx, node_input: dict[str, Any]) -> dict[str, Any]:
    if not node_input.get("signed_off"):
        return {"published": False, "doc_id": node_input["doc_id"], "reason": node_input.get("comment", "")}
    published = list(ctx.state.get("published", []))
    published.append(f"{node_input['doc_id']}@v{node_input['version']}")
    ctx.state["published"] = published
    return {"published": True, "doc_id": node_input["doc_id"], "version": node_input["version"]}


workflow = Workflow("document", [(START, draft, review, publish)])
