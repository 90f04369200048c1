"""``google.adk.workflow._join_node`` look-alike (ADK code and tests import from this private path)."""

from .._nodes import JoinNode

__all__ = ["JoinNode"]
