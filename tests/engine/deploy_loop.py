"""The deploy -> gate -> verify loop the engine's resume and replay tests both run:
``verify`` routes ``retry`` back to ``deploy`` (a new run of each) until the gate's
answer is ``good``; and ``review``, which asks once and re-runs on resume."""

from __future__ import annotations

from engine import RequestInput, node


@node
async def deploy(ctx, node_input):
    n = ctx.state.get("n", 0) + 1
    ctx.state["n"] = n
    return n


@node
async def gate(node_input):
    yield RequestInput(f"ship #{node_input}?", interrupt_id=f"gate-{node_input}")


@node
async def verify(ctx, node_input):
    ctx.route = "ok" if node_input == "good" else "retry"
    return node_input


@node(rerun_on_resume=True)
async def review(ctx, node_input):
    if "r" not in ctx.resume_inputs:
        yield RequestInput("review", interrupt_id="r")
    else:
        yield "reviewed"
