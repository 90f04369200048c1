"""ADK 2.x ``Graph``: a workflow's edges as ``Edge`` objects, and their validation.

``Graph.from_edge_items([...])`` expands what ``Workflow(edges=[...])`` takes --
chains ``(START, a, b)``, fan-out tuples ``(a, (b, c))``, fan-in sources
``((a, b), c)``, route maps ``(a, {"x": b})``, ``Edge`` objects, functions (one
node per function) -- into ``Edge(from_node, to_node, route)`` objects.
``validate_graph()`` refuses what ADK refuses, with ADK's messages: no START,
an edge into START, nodes unreachable from START, duplicate edges, two
distinct nodes with one name, a cycle of unconditional edges, two
``DEFAULT_ROUTE`` edges from one node.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from ._nodes import START, BaseNode, Edge, build_node


class _DefaultRoute(str):
    def __repr__(self) -> str:
        return "DEFAULT_ROUTE"


DEFAULT_ROUTE: Any = _DefaultRoute("__DEFAULT__")
"""The route of an edge taken when the node's route matches none of its other edges."""

_ROUTE_TYPES = (str, int, bool)


def _node(item: Any) -> BaseNode:
    if item == "START" or item is START:
        return START
    return build_node(item)


class Graph(BaseModel):
    """A workflow graph: its ``edges`` (``Edge`` objects) and the ``nodes`` they join."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    edges: list[Edge] = Field(default_factory=list)

    @property
    def nodes(self) -> list[BaseNode]:
        seen: dict[int, BaseNode] = {}
        for e in self.edges:
            for n in (e.from_node, e.to_node):
                seen.setdefault(id(n), n)
        return list(seen.values())

    @classmethod
    def from_edge_items(cls, items: list[Any]) -> Graph:
        edges: list[Edge] = []
        for item in items:
            if isinstance(item, Edge):
                edges.append(Edge(from_node=_node(item.from_node), to_node=_node(item.to_node), route=item.route))
            else:
                _expand(item if isinstance(item, (tuple, list)) else (item,), edges)
        return cls(edges=edges)

    def validate_graph(self) -> None:
        """Raise ``ValueError("Graph validation failed. ...")`` for a graph ADK refuses."""
        nodes = self.nodes
        if not any(n is START for n in nodes):
            _fail(f"START node (name: '{START.name}') not found in graph nodes.")
        if any(e.to_node is START for e in self.edges):
            _fail("START node must not have incoming edges.")
        by_name: dict[str, list[BaseNode]] = {}
        for n in nodes:
            by_name.setdefault(n.name, []).append(n)
        dupes = sorted(name for name, ns in by_name.items() if len(ns) > 1)
        if dupes:
            _fail(
                f"Duplicate node names found: {dupes}. This means multiple distinct node objects have the same name. "
                "If you intended to reuse the same node, ensure you pass the exact same object instance. If you "
                "intended to have distinct nodes, ensure they have unique names."
            )
        pairs: set[tuple[int, int]] = set()
        for e in self.edges:
            key = (id(e.from_node), id(e.to_node))
            if key in pairs:
                _fail(f"Duplicate edge found: from={e.from_node.name}, to={e.to_node.name}")
            pairs.add(key)
        reach = {id(START)}
        frontier = [START]
        while frontier:
            cur = frontier.pop()
            for e in self.edges:
                if e.from_node is cur and id(e.to_node) not in reach:
                    reach.add(id(e.to_node))
                    frontier.append(e.to_node)
        lost = [n.name for n in nodes if id(n) not in reach]
        if lost:
            _fail(f"The following nodes are unreachable from START: {lost}")
        for n in nodes:
            defaults = [e.to_node.name for e in self.edges if e.from_node is n and e.route is DEFAULT_ROUTE]
            if len(defaults) > 1:
                _fail(f"Multiple DEFAULT_ROUTE edges found from node {n.name} to {' and '.join(defaults)}")
        cycle = self._unconditional_cycle()
        if cycle:
            _fail(f"Unconditional cycle detected: {' -> '.join(cycle)}")

    def _unconditional_cycle(self) -> list[str] | None:
        succ: dict[int, list[BaseNode]] = {}
        for e in self.edges:
            if e.route is None:
                succ.setdefault(id(e.from_node), []).append(e.to_node)
        state: dict[int, int] = {}  # 1: on the path, 2: done
        path: list[BaseNode] = []

        def visit(n: BaseNode) -> list[str] | None:
            state[id(n)] = 1
            path.append(n)
            for m in succ.get(id(n), []):
                if state.get(id(m)) == 1:
                    start = next(i for i, p in enumerate(path) if p is m)
                    return [p.name for p in path[start:]] + [m.name]
                if state.get(id(m)) is None and (found := visit(m)):
                    return found
            path.pop()
            state[id(n)] = 2
            return None

        for n in self.nodes:
            if state.get(id(n)) is None and (found := visit(n)):
                return found
        return None


def _fail(reason: str) -> None:
    raise ValueError(f"Graph validation failed. {reason}")


def _targets(item: Any) -> list[BaseNode]:
    if isinstance(item, (tuple, list)):
        return [n for sub in item for n in _targets(sub)]
    return [_node(item)]


def _expand(chain: tuple[Any, ...] | list[Any], edges: list[Edge]) -> None:
    prev: list[BaseNode] = []
    for element in chain:
        if isinstance(element, dict):
            if not element:
                raise ValueError("Routing map must not be empty")
            targets: list[BaseNode] = []
            for route, target in element.items():
                if not isinstance(route, _ROUTE_TYPES):
                    raise ValueError(f"Invalid routing map key {route!r}: a route is a str, int or bool")
                if not (isinstance(target, (BaseNode, tuple, list, str)) or callable(target)):
                    raise ValueError(f"Invalid routing map value {target!r}: a node, a function or a tuple of them")
                names = _targets(target)
                edges.extend(Edge(from_node=p, to_node=t, route=route) for p in prev for t in names)
                targets.extend(names)
            prev = targets
        else:
            names = _targets(element)
            edges.extend(Edge(from_node=p, to_node=t) for p in prev for t in names)
            prev = names
