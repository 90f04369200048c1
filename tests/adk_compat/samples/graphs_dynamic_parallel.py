"""google/adk-docs docs/graphs/dynamic.md, "Parallel execution routes" (no human
input: a control for ``ctx.run_node`` under ``asyncio.gather``).

Changed: the imports only.
"""

import asyncio
from typing import Any
from engine.adk import Context
from engine.adk.workflow import node


@node
def worker_node(node_input: Any):
    """Processes a single item."""
    return f"done {node_input}"


@node(rerun_on_resume=True)
async def parallel_supervisor(ctx: Context, node_input: list[Any]):
    """Runs worker_node in parallel for each item in the input list."""
    tasks = []
    for item in node_input:
        # ctx.run_node returns a coroutine. Append instead of awaiting
        # immediately, and use a sub-branch to isolate each run's events.
        tasks.append(ctx.run_node(worker_node, item, use_sub_branch=True))

    # Collect all results in parallel
    results = await asyncio.gather(*tasks)
    return results
