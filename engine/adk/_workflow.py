"""ADK 2.x ``Workflow(name=..., edges=[...])`` as the engine's :class:`engine.workflow.Workflow`.

Edges are written as in ADK: chains ``("START", a, b)`` (``START`` or the
string ``"START"``), ``Edge(from_node=a, to_node=b, route=...)`` objects, route
maps ``(router, {"ok": done, "retry": a})``, functions in place of nodes (the
same function is the same node). The engine's graph is built from them once,
on first use; it is the engine that runs it.
"""

from __future__ import annotations

from typing import Any

from pydantic import ConfigDict, Field

from .. import nodes as en
from ..workflow import Workflow as EngineWorkflow
from ._nodes import BaseNode, Edge, engine_retry, to_engine


class Workflow(BaseNode):
    """A graph of nodes, itself a node (workflows nest). Re-executes on resume."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    edges: list[Any] = Field(default_factory=list)
    rerun_on_resume: bool = True

    def _build_engine(self) -> en.BaseNode:
        chains: list[Any] = []
        for edge in self.edges:
            if isinstance(edge, Edge):
                target = to_engine(edge.to_node)
                chains.append((to_engine(edge.from_node), target if edge.route is None else _routes(edge.route, target)))
            else:
                chains.append(_chain(edge))
        return EngineWorkflow(self.name, chains, retry=engine_retry(self.retry_config), timeout=self.timeout)


def _routes(route: Any, target: Any) -> dict[Any, Any]:
    routes = route if isinstance(route, (list, tuple, set)) else [route]
    return {r: target for r in routes}


def _chain(element: Any) -> Any:
    if isinstance(element, (tuple, list)):
        return tuple(_chain(e) for e in element)
    if isinstance(element, dict):
        return {route: _chain(target) for route, target in element.items()}
    return to_engine(element)
