"""``google.adk.apps.app`` look-alike."""

from .._runner import App, ResumabilityConfig

__all__ = ["App", "ResumabilityConfig"]
