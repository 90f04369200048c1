"""Session stores: the ``SessionStore`` contract and its backends."""

from .base import (
    IndexEffects,
    InterruptRecord,
    InvocationSummary,
    Page,
    SessionStore,
    SessionSummary,
    index_effects,
    session_status,
)
from .memory import MemoryStore

__all__ = [
    "IndexEffects",
    "InterruptRecord",
    "InvocationSummary",
    "MemoryStore",
    "Page",
    "SessionStore",
    "SessionSummary",
    "index_effects",
    "session_status",
]
