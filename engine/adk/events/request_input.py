"""``google.adk.events.request_input`` look-alike."""

from .._events import RequestInput

__all__ = ["RequestInput"]
