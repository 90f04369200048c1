"""Parsing JSON from outside safely (CLI arguments, files, imports).

:func:`loads` is ``json.loads`` with a nesting limit (:data:`MAX_JSON_DEPTH`)
and a text check: deeper input would exhaust the recursion of the parser and
of the validators after it, and ``"\\udcff"`` is valid JSON syntax but not
text (it cannot be stored or printed). Errors are :class:`JSONInputError`
naming what was read.
"""

from __future__ import annotations

import json
from typing import Any

from .errors import HitlError

MAX_JSON_DEPTH = 100
"""Deepest accepted nesting of arrays and objects in any JSON input."""


class JSONInputError(HitlError):
    """JSON input that cannot be used; nothing was written."""


def json_depth_error(value: Any, limit: int = MAX_JSON_DEPTH) -> str | None:
    """Why a parsed JSON value cannot be used (too deep, a string that is not
    text), or None. Iterative: never recurses however deep ``value`` is."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict | list):
            if depth > limit:
                return f"it is nested more than {limit} levels deep (the limit, see README, Limits)"
            children = list(item.items()) if isinstance(item, dict) else [(None, v) for v in item]
            for k, v in children:
                if isinstance(k, str):
                    stack.append((k, depth))
                stack.append((v, depth + 1))
        elif isinstance(item, str):
            try:
                item.encode("utf-8")
            except UnicodeEncodeError:
                return "it contains a lone surrogate (e.g. \\udcff), which is not text"
    return None


def loads(text: str, what: str) -> Any:
    """``json.loads`` with the nesting limit and text check; InputError naming ``what``.
    ``NaN``/``Infinity`` are left to the answer validation (engine.responses)."""
    if _too_deep(text):
        raise JSONInputError(f"{what} is nested more than {MAX_JSON_DEPTH} levels deep (the limit, see README, Limits)")
    try:
        value = json.loads(text)
    except RecursionError:
        raise JSONInputError(f"{what} is nested too deeply (the limit is {MAX_JSON_DEPTH}, see README, Limits)") from None
    problem = json_depth_error(value)
    if problem:
        raise JSONInputError(f"{what}: {problem}")
    return value


def _too_deep(text: str) -> bool:
    """A cheap pre-check on the raw text (brackets outside strings), so that a
    100,000-deep input is refused without building it."""
    depth = 0
    in_str = esc = False
    for ch in text:
        if in_str:
            if esc:
                esc = False
            elif ch == "\\":
                esc = True
            elif ch == '"':
                in_str = False
        elif ch == '"':
            in_str = True
        elif ch in "[{":
            depth += 1
            if depth > MAX_JSON_DEPTH:
                return True
        elif ch in "]}":
            depth -= 1
    return False
