"""Session stores: the ``SessionStore`` contract and its backends.

Backends are imported on first use (PEP 562): ``engine.store.base`` does not
pull in aiosqlite or the in-memory store."""

from types import ModuleType
from typing import TYPE_CHECKING, Any

_LAZY = {
    "IndexEffects": "base",
    "InterruptRecord": "base",
    "InvocationSummary": "base",
    "Page": "base",
    "SessionStore": "base",
    "SessionSummary": "base",
    "index_effects": "base",
    "session_status": "base",
    "MemoryStore": "memory",
    "SQLiteStore": "sqlite",
    "open_store": "factory",
    "store_label": "factory",
}

if TYPE_CHECKING:
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


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'engine.store' has no attribute {name!r}")
    value = getattr(_submodule(module), name)
    globals()[name] = value
    return value


def _submodule(module: str) -> ModuleType:
    # Static imports: the product imports code by name only in its app registry.
    if module == "base":
        from . import base
        return base
    elif module == "memory":
        from . import memory
        return memory
    elif module == "factory":
        from . import factory
        return factory
    else:
        from . import sqlite
        return sqlite


def __dir__() -> list[str]:
    return sorted([*globals(), *_LAZY])


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
