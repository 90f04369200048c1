"""``google.adk.workflow._retry_config`` look-alike (ADK code and tests import from this private path)."""

from .._nodes import RetryConfig

__all__ = ["RetryConfig"]
