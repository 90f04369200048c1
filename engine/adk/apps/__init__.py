"""``google.adk.apps`` look-alike: ``App`` and ``ResumabilityConfig``."""

from .._runner import App, ResumabilityConfig

__all__ = ["App", "ResumabilityConfig"]
