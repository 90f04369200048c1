"""``google.adk.workflow._node_runner`` look-alike (ADK code and tests import from this private path)."""

from .._node_runner import NodeRunner

__all__ = ["NodeRunner"]
