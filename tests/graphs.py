"""Small workflows whose stored sessions the graph view's tests draw: a fan-out
with a waiting item, a nested workflow, a loop (shared by the engine, CLI and
console tests of the graph view)."""

from __future__ import annotations

import asyncio
from typing import Any

from engine import START, Content, Event, JoinNode, ParallelWorker, RequestInput, Runner, Workflow, node
from engine.projection import Projection
from engine.store import MemoryStore


@node
async def fetch(order: str) -> list[int]:
    return [1, 2, 3]


@node
async def check(item: int):
    if item == 2:
        yield RequestInput(f"item {item} ok?", response_schema=bool, interrupt_id=f"item-{item}")
    else:
        yield True


@node
async def notify(items: list[int]) -> str:
    return "notified"


@node
async def review_all(items: list[int]):
    yield RequestInput("all fine?", response_schema=bool, interrupt_id="all-fine")


@node
async def pay(joined: dict[str, Any]) -> str:
    return "paid"


joined = JoinNode("joined")
FANOUT = Workflow(
    "fanout",
    [(START, fetch, (ParallelWorker(check, name="items"), notify, review_all), joined, pay)],
)


@node
async def draft(text: str) -> str:
    return text


@node
async def annotate(text: str) -> str:
    return text


@node
async def sign(text: str):
    yield RequestInput("sign off?", response_schema=bool, interrupt_id="sign")


INNER = Workflow("inner", [(START, annotate, sign)])
NESTED = Workflow("outer", [(START, draft, INNER)])


@node
async def build(x: Any) -> int:
    return x + 1 if isinstance(x, int) else 1


@node
async def gate(n: int):
    # the answer is the gate's output (auto-completion): the build number to promote
    yield RequestInput(f"promote build {n}?", payload=n, response_schema=int, interrupt_id=f"gate-{n}")


@node
async def verify(n: int):
    yield Event(output=n, route="retry" if n < LOOP_RUNS else "ok")


@node
async def done(n: int) -> str:
    return "done"


LOOP_RUNS = 5
LOOP = Workflow("loop", [(START, build, gate, verify, {"retry": build, "ok": done})])
"""build -> gate -> verify, and verify's route "retry" back to build: each answer
to the gate (its build number) runs one more iteration (a loop edge)."""
LOOP_ANSWERS = [{"gate-1": 1}, {"gate-2": 2}]
"""Two iterations answered: build@3 and gate@3 (waiting on gate-3)."""


CHECKS = ("fraud", "kyc", "aml", "sanctions", "limits", "address", "device", "velocity", "geo", "email", "phone",
          "history")
"""A 12-way fan-out: kyc asks, the other eleven complete."""


def _one_asks(name: str, asker: str, question: str, interrupt_id: str) -> Any:
    """A node ``name`` that completes, or (the one named ``asker``) asks ``question``."""

    async def body(node_input: Any):
        if name == asker:
            yield RequestInput(question, response_schema=bool, interrupt_id=interrupt_id)
        else:
            yield f"{name} done"

    return node(body, name=name)


WIDE = Workflow("wide", [(START, fetch, tuple(_one_asks(n, "kyc", "identity ok?", "kyc-ok") for n in CHECKS), JoinNode("all_checks"), pay)])
"""fetch -> twelve checks side by side -> all_checks -> pay: drawn box by box, 12 x 17
columns -- wider than 120 columns unless the eleven completed checks fold into one node."""

AGENTS = tuple(f"agent_{i:02d}" for i in range(14))


_AGENT_NODES = [_one_asks(n, "agent_03", "agent 3 stuck: continue?", "agent-3") for n in AGENTS]


@node(rerun_on_resume=True)
async def dispatch(ctx: Any, task: str) -> list[Any]:
    return list(await asyncio.gather(*(ctx.run_node(a, task) for a in _AGENT_NODES)))


FLEET = Workflow("fleet", [(START, dispatch)])
"""An orchestration node calling fourteen dynamic children of different names (agent_03 waits)."""


async def stored(
    workflow: Workflow, app: str, answers: list[dict[str, Any]] = (), *, store: MemoryStore | None = None,
    session_id: str = "s1",
) -> tuple[MemoryStore, str]:
    """The workflow started in ``session_id`` and answered ``answers`` in turn."""
    store = store if store is not None else MemoryStore()
    runner = Runner(app, workflow, store)
    async for _ in runner.run("u", session_id, Content.from_text("go")):
        pass
    for a in answers:
        async for _ in runner.run("u", session_id, Content.from_responses(a)):
            pass
    return store, session_id


async def projection(store: MemoryStore, session_id: str = "s1") -> Projection:
    proj = Projection()
    for se in await store.events(session_id):
        proj.apply(se.event, se.seq)
    return proj


def run(coro: Any) -> Any:
    return asyncio.run(coro)
