"""Stores built to be large: an interrupt whose payload is about 1 MB, a loop of
thousands of runs (the "never block" and bounded-key tests and
``benchmarks/bench_console.py`` share them)."""

from __future__ import annotations

from typing import Any

from engine import START, Content, RequestInput, Runner, Workflow, node
from engine.models import Event, FunctionCall, NodeInfo, NodeStatus, Part, Session
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


# ---------------------------------------------------------------- events written directly (bulk loads)

T0 = 1_767_261_600.0
"""When the generated histories start."""


def node_event(inv: str, path: str, ts: float, **kw: Any) -> Event:
    name, _, run_id = path.rsplit("/", 1)[-1].partition("@")
    return Event(invocation_id=inv, author=name, timestamp=ts, node_info=NodeInfo(path=path, run_id=run_id, **kw))


def ask(inv: str, path: str, iid: str, ts: float) -> Event:
    call = FunctionCall(
        id=iid,
        name="request_input",
        args={"message": "Approve the refund?", "payload": {"amount": 42.5}, "response_schema": {"type": "boolean"}},
    )
    return node_event(inv, path, ts).model_copy(
        update={"content": Content(role="model", parts=[Part(function_call=call)]), "long_running_tool_ids": [iid]}
    )


def loop_session(n_events: int) -> tuple[Session, list[Event], str]:
    """One invocation that looped ~n/2 times through ``step`` and now waits for a review."""
    inv = "inv-loop"
    ts = T0
    evs = [
        Event(invocation_id=inv, author="user", timestamp=ts, content=Content.from_text("crawl everything")),
        node_event(inv, "crawl@1", ts, lifecycle="start", rerun_on_resume=True, is_container=True, input="crawl everything"),
    ]
    i = 0
    while len(evs) < n_events - 5:
        i += 1
        t = ts + i
        evs.append(node_event(inv, f"crawl@1/step@{i}", t, lifecycle="start", input={"page": i}))
        evs.append(node_event(inv, f"crawl@1/step@{i}", t + 0.5, lifecycle="end", status=NodeStatus.COMPLETED).model_copy(
            update={"output": {"page": i, "links": i % 17}, "route": "more"}
        ))
    t = ts + i + 1
    evs += [
        node_event(inv, "crawl@1/review@1", t, lifecycle="start", input={"pages": i}),
        ask(inv, "crawl@1/review@1", "review-1", t + 1),
        node_event(inv, "crawl@1/review@1", t + 2, lifecycle="end", status=NodeStatus.WAITING),
        node_event(inv, "crawl@1", t + 3, lifecycle="end", status=NodeStatus.WAITING),
    ]
    return Session(id="long-loop", app_name="crawler", user_id="ops", created_at=ts), evs, inv
