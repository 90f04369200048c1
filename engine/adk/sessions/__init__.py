"""``google.adk.sessions`` look-alike: a session service on an engine store."""

from .._runner import InMemorySessionService, ListSessionsResponse, Session, StoreSessionService

__all__ = ["InMemorySessionService", "ListSessionsResponse", "Session", "StoreSessionService"]
