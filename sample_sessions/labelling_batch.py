"""Labelling batch: one dynamic child per item, each asking a human for a label.

``load_batch -> label_all (orchestration) -> summarize``

``label_all`` is an orchestration node (``rerun_on_resume=True``) that runs one
``label_item`` child per item with ``ctx.run_node(..., key=item_id)`` and awaits
them together with ``asyncio.gather``: dozens of interrupt ids in one session.
Each answer re-executes ``label_all``; answered children complete from their
recorded answers without running, unanswered ones keep waiting.

Start with ``"<batch name> <size>"`` as the message (``"birds-07 24"``).
"""

from __future__ import annotations

import asyncio
import zlib
from typing import Any

from engine import START, RequestInput, Workflow, node

app_name = "labelling_batch"

LABELS = ["cat", "dog", "bird", "fish", "other"]
LABEL_SCHEMA = {"type": "string", "enum": LABELS, "description": "What the image shows"}


@node
async def load_batch(node_input: str) -> list[dict[str, Any]]:
    name, _, size = (node_input or "batch 5").strip().partition(" ")
    n = int(size) if size.strip().isdigit() else 5
    return [
        {
            "id": f"{name}-{k:03d}",
            "url": f"https://images.example/{name}/{k:03d}.jpg",
            "hint": LABELS[zlib.crc32(f"{name}{k}".encode()) % len(LABELS)],
        }
        for k in range(1, n + 1)
    ]


@node
async def label_item(node_input: dict[str, Any]):
    yield RequestInput(
        f"Label image {node_input['id']} (model guess: {node_input['hint']})",
        payload=node_input,
        response_schema=LABEL_SCHEMA,
        interrupt_id=f"label-{node_input['id']}",
    )


@node(rerun_on_resume=True)
async def label_all(ctx, node_input: list[dict[str, Any]]) -> dict[str, str]:
    labels = await asyncio.gather(*(ctx.run_node(label_item, item, key=item["id"]) for item in node_input))
    return {item["id"]: label for item, label in zip(node_input, labels, strict=True)}


@node
async def summarize(node_input: dict[str, str]) -> dict[str, Any]:
    counts: dict[str, int] = {}
    for label in node_input.values():
        counts[label] = counts.get(label, 0) + 1
    return {"items": len(node_input), "counts": dict(sorted(counts.items()))}


workflow = Workflow("labelling", [(START, load_batch, label_all, summarize)])
