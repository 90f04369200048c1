"""google/adk-docs docs/workflows/dynamic.md, "Human input".

Changed beyond the imports, because the snippet as printed does not run under
ADK 2.x either (its ``BaseNode`` is a pydantic model):

1. ``rerun_on_resume = False`` -> ``rerun_on_resume: bool = False`` (pydantic
   refuses a field overridden by a non-annotated attribute) and ``request``
   declared as a field;
2. ``__init__`` calls ``super().__init__(...)`` instead of setting attributes
   on an uninitialised model;
3. ``_run_impl(self)`` -> ``_run_impl(self, *, ctx, node_input)``: the
   signature every node body is called with;
4. ``approval_process_node`` is declared ``@node(rerun_on_resume=True)``: a node
   that calls ``ctx.run_node`` must re-execute on resume (the page's own
   "Get started" declares its orchestrator so; here a plain function would be
   refused with a message saying this).
"""

from engine.adk.workflow import BaseNode, node
from engine.adk import Context
from engine.adk.events import RequestInput
from typing import Any, AsyncGenerator

class GetInput(BaseNode):
    """A node that pauses execution and waits for human input."""
    rerun_on_resume: bool = False  # Ensure the response is yielded as output on resume
    request: RequestInput

    def __init__(self, request: RequestInput, name: str):
        super().__init__(request=request, name=name)

    def get_name(self) -> str:
        return self.name

    async def _run_impl(self, *, ctx, node_input) -> AsyncGenerator[Any, None]:
        # Yielding the request tells the workflow to pause and wait for input
        yield self.request

@node(rerun_on_resume=True)
async def approval_process_node(ctx: Context, node_input: Any):
    """A parent node that coordinates a human approval step."""

    # Define the request for the user
    request = RequestInput(message="Please approve this request (Yes/No)")

    # Invoke the HITL node dynamically. The workflow pauses here.
    user_response = await ctx.run_node(GetInput(request, name="approval_step"))

    if user_response.lower() == "yes":
        return "Request Approved"
    else:
        return "Request Denied"
