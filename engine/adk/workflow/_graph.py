"""``google.adk.workflow._graph`` look-alike (ADK code imports ``Graph`` from here)."""

from .._graph import DEFAULT_ROUTE, Graph
from .._nodes import Edge

__all__ = ["DEFAULT_ROUTE", "Edge", "Graph"]
