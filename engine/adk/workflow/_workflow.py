"""``google.adk.workflow._workflow`` look-alike (ADK code and tests import from this private path)."""

from .._workflow import Workflow

__all__ = ["Workflow"]
