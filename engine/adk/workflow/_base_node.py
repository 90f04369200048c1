"""``google.adk.workflow._base_node`` look-alike (ADK code and tests import from this private path)."""

from .._nodes import START, BaseNode

__all__ = ["BaseNode", "START"]
