"""``google.adk.runners`` look-alike: ``Runner`` and ``InMemoryRunner`` on the engine's Runner."""

from ._runner import InMemoryRunner, Runner

__all__ = ["InMemoryRunner", "Runner"]
