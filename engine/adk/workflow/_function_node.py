"""``google.adk.workflow._function_node`` look-alike (ADK code and tests import from this private path)."""

from .._nodes import FunctionNode

__all__ = ["FunctionNode"]
