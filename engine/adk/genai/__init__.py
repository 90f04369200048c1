"""``google.genai`` look-alike: ``from engine.adk.genai import types``."""

from . import types

__all__ = ["types"]
