"""ADK 2.x ``NodeRunner(node=, parent_ctx=, run_id=None, prior_output=, prior_interrupt_ids=)``
over the engine's :class:`engine.context.NodeRunner`.

``parent_ctx`` is the ADK :class:`~engine.adk._context.Context` a node body
received; ``run_id`` is optional (the next run id of the node under that
parent). ``await runner.run(node_input=..., resume_inputs=...)`` returns the
child's context: ``.output``, ``.route``, ``.interrupt_ids`` (a set).
"""

from __future__ import annotations

from typing import Any

from ..context import NodeRunner as EngineNodeRunner
from ._context import Context
from ._nodes import to_engine


class NodeRunner:
    """Runs one run of ``node`` under ``parent_ctx`` (see the module docstring)."""

    def __init__(
        self,
        *,
        node: Any,
        parent_ctx: Context,
        run_id: str | None = None,
        prior_output: Any = None,
        prior_interrupt_ids: set[str] | list[str] | None = None,
        **_: Any,
    ) -> None:
        if not isinstance(parent_ctx, Context):
            raise TypeError("NodeRunner's parent_ctx is the Context a node body received")
        engine_node = to_engine(node)
        parent = parent_ctx._ctx
        if run_id is None:
            run_id = parent.invocation.reserve_run_id(parent.path, engine_node.name)
        self._runner = EngineNodeRunner(
            engine_node, parent, run_id, prior_output=prior_output, prior_interrupt_ids=sorted(prior_interrupt_ids or [])
        )
        self.run_id = run_id

    async def run(self, node_input: Any = None, resume_inputs: dict[str, Any] | None = None) -> Context:
        return Context(await self._runner.run(node_input, resume_inputs=resume_inputs), to_engine)
