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
from .factory import open_store, store_label
from .memory import MemoryStore
from .sqlite import SQLiteStore

__all__ = [
    "IndexEffects",
    "InterruptRecord",
    "InvocationSummary",
    "MemoryStore",
    "SQLiteStore",
    "Page",
    "SessionStore",
    "SessionSummary",
    "index_effects",
    "open_store",
    "store_label",
    "session_status",
]
