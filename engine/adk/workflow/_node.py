"""``google.adk.workflow._node`` look-alike (ADK code and tests import from this private path)."""

from .._nodes import node

__all__ = ["node"]
