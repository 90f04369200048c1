"""google/adk-docs docs/workflows/dynamic.md, "Get started" (no human input: the
smallest dynamic workflow, run as a control).

Changed: the imports only.
"""

from engine.adk import Context
from engine.adk import Workflow
from engine.adk.workflow import node
from typing import Any

@node(name="hello_node")
def my_node(node_input: Any):
    return "Hello World"

# define a dynamic workflow node
@node(rerun_on_resume=True)
async def my_workflow(ctx: Context, node_input: str) -> str:
    # run_node executes a node and returns its output
    result = await ctx.run_node(my_node, node_input="hello")
    return result

# Run the workflow
root_agent = Workflow(
    name="root_agent",
    edges=[("START", my_workflow)],
)
