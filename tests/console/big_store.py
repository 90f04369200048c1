"""Stores built to be large: an interrupt whose payload is about 1 MB (the
"never block" tests and ``benchmarks/bench_console.py`` share it)."""

from __future__ import annotations

from typing import Any

from engine import START, Content, RequestInput, Runner, Workflow, node
from engine.store import MemoryStore

BIG_ROWS = 8000
"""Rows of the big payload: about 1.1 MB of JSON."""


def big_payload(rows: int = BIG_ROWS) -> dict[str, Any]:
    return {"rows": [{"id": i, "sku": f"SKU-{i:06d}", "note": "lorem ipsum dolor sit amet " * 3, "qty": i % 7}
                     for i in range(rows)]}


@node
async def big_order(node_input: Any) -> Any:
    yield RequestInput("Approve the big order?", payload=big_payload(), response_schema=bool, interrupt_id="big-1")


big_wf = Workflow("bigorder", [(START, big_order)])


async def big_store(store: Any | None = None) -> Any:
    """``store`` (a MemoryStore by default) with session ``big``, waiting on ``big-1``."""
    store = store if store is not None else MemoryStore()
    async for _ in Runner("bigorder", big_wf, store).run("u", "big", Content.from_text("go")):
        pass
    return store
