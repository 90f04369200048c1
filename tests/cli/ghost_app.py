"""A user app that is not registered by default (for --app / hitl.toml tests)."""

from engine import START, RequestInput, Workflow, node


@node
async def ask(node_input):
    yield RequestInput("Boo?", response_schema=bool, interrupt_id="boo")


@node
async def after(node_input):
    return {"answered": node_input}


workflow = Workflow("ghost", [(START, ask, after)])
not_a_node = 42
