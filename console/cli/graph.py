"""``hitl show --graph``: the graph view of :mod:`engine.graph_view`, drawn by
:mod:`console.graph_render` as text (the console's graph screen draws the same)."""

from __future__ import annotations

from typing import Any

from engine.graph_view import invocation_graph
from engine.liveness import InvocationHealth
from engine.projection import Projection

from ..graph_render import LEGEND, notes, plain_lines


def graph_dict(proj: Projection, health: InvocationHealth) -> dict[str, Any]:
    """The graph as JSON: ``{"invocation_id", "nodes", "edges", "groups"}``."""
    return invocation_graph(
        proj, health.invocation_id, interrupted=health.interrupted, in_doubt=health.in_doubt
    ).to_dict()


def graph_lines(proj: Projection, health: InvocationHealth) -> list[str]:
    """The picture, indented like the tree, and the legend under it."""
    graph = invocation_graph(proj, health.invocation_id, interrupted=health.interrupted, in_doubt=health.in_doubt)
    return [f"  {line}" for line in [*plain_lines(graph), LEGEND, *notes(graph)]]
