"""``google.adk.sessions`` look-alike: a session service on an engine store."""

from .._runner import (
    DatabaseSessionService,
    InMemorySessionService,
    ListSessionsResponse,
    Session,
    SqliteSessionService,
    StoreSessionService,
)

__all__ = [
    "DatabaseSessionService",
    "InMemorySessionService",
    "ListSessionsResponse",
    "Session",
    "SqliteSessionService",
    "StoreSessionService",
]
