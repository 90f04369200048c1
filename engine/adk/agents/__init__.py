"""``google.adk.agents`` look-alike: only the workflow ``Context`` (no LLM agents here)."""

from .._context import Context

__all__ = ["Context"]
