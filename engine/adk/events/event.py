"""``google.adk.events.event`` look-alike."""

from .._events import Event, EventActions

__all__ = ["Event", "EventActions"]
