"""ADK 2.x ``Workflow(name=..., edges=[...])`` as the engine's :class:`engine.workflow.Workflow`.

Edges are written as in ADK: chains ``("START", a, b)`` (``START`` or the
string ``"START"``), ``Edge(from_node=a, to_node=b, route=...)`` objects, route
maps ``(router, {"ok": done, "retry": a})``, functions in place of nodes (the
same function is the same node), or a ``Graph``. The graph is validated when
the workflow is built (:meth:`Graph.validate_graph`, ADK's checks and
messages); the engine's graph is built from its edges on first use, and it is
the engine that runs it.

``DEFAULT_ROUTE``: the edge a node takes when its route matches none of its
other edges' routes. The engine follows routes by equality, so the node's
route is rewritten to ``DEFAULT_ROUTE`` at the end of its run when it matches
none of them (only ADK nodes can be rewritten so; a JoinNode, parallel worker
or nested workflow with a DEFAULT_ROUTE edge is refused when the workflow is built).
"""

from __future__ import annotations

from typing import Any

from pydantic import ConfigDict, Field

from .. import nodes as en
from ..workflow import Workflow as EngineWorkflow
from ._graph import DEFAULT_ROUTE, Graph
from ._nodes import START, AdaptedNode, BaseNode, engine_retry, to_engine


class Workflow(BaseNode):
    """A graph of nodes, itself a node (workflows nest). Re-executes on resume."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    edges: list[Any] = Field(default_factory=list)
    graph: Graph | None = None
    rerun_on_resume: bool = True

    def model_post_init(self, context: Any, /) -> None:
        if self.graph is None:
            self.graph = Graph.from_edge_items(self.edges)
        self.graph.validate_graph()

    def _build_engine(self) -> en.BaseNode:
        assert self.graph is not None
        chains: list[Any] = []
        for edge in self.graph.edges:
            src = START if edge.from_node is START else edge.from_node
            target = to_engine(edge.to_node)
            chains.append((to_engine(src), target if edge.route is None else {edge.route: target}))
        for node in self.graph.nodes:
            routes = [e.route for e in self.graph.edges if e.from_node is node and e.route is not None]
            if DEFAULT_ROUTE in routes:
                engine_node = to_engine(node)
                if not isinstance(engine_node, AdaptedNode):
                    raise ValueError(
                        f"workflow {self.name}: a DEFAULT_ROUTE edge from {node.name} ({type(node).__name__}) is not "
                        "supported; route from a function or BaseNode"
                    )
                engine_node.default_route = (DEFAULT_ROUTE, frozenset(r for r in routes if r is not DEFAULT_ROUTE))
        return EngineWorkflow(self.name, chains, retry=engine_retry(self.retry_config), timeout=self.timeout)
