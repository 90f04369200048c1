"""google/adk-docs docs/graphs/dynamic.md, "Human input" (the page's current version
of the dynamic human-input example).

Changed: the imports only. The snippet defines the two nodes; the test puts
the orchestrator in a one-node workflow.
"""

from typing import Any
from engine.adk import Context
from engine.adk.events import RequestInput
from engine.adk.workflow import node


@node(rerun_on_resume=False)
async def get_user_approval(ctx: Context, node_input: Any):
    """Yields a RequestInput to pause the workflow and wait for user input."""
    yield RequestInput(message="Please approve this request (Yes/No)")


@node(rerun_on_resume=True)
async def handle_process(ctx: Context, node_input: Any):
    """The orchestrator calling the interactive step."""
    user_response = await ctx.run_node(get_user_approval)

    if user_response.lower() == "yes":
        return "Approved"
    return "Denied"
