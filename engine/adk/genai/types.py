"""``google.genai.types`` look-alike: ``Content``, ``Part``, ``FunctionCall``, ``FunctionResponse``.

Real google-genai objects are accepted wherever these are (see :mod:`engine.adk._types`)."""

from .._types import Content, FunctionCall, FunctionResponse, ModelContent, Part, UserContent

__all__ = ["Content", "FunctionCall", "FunctionResponse", "ModelContent", "Part", "UserContent"]
