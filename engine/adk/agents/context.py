"""``google.adk.agents.context`` look-alike."""

from .._context import Context

__all__ = ["Context"]
