"""``google.adk.sessions.in_memory_session_service`` look-alike."""

from .._runner import InMemorySessionService

__all__ = ["InMemorySessionService"]
