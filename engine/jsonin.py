"""Parsing JSON from outside safely (CLI arguments, files, imports).

:func:`loads` is ``json.loads`` with a nesting limit (:data:`MAX_JSON_DEPTH`)
and a text check: deeper input would exhaust the recursion of the parser and
of the validators after it, and ``"\\udcff"`` is valid JSON syntax but not
text (it cannot be stored or printed). Errors are :class:`JSONInputError`
naming what was read.
"""

from __future__ import annotations

import json
import re
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


def syntax_problem(exc: json.JSONDecodeError) -> str:
    """What a JSON syntax error says is wrong, without the parser's dangling
    "at" (``Invalid control character at``): callers say where themselves."""
    return exc.msg.removesuffix(" at")


def where_invalid(exc: json.JSONDecodeError) -> str:
    """A JSON syntax error as an operator reads it: what is wrong and where --
    ``Expecting value at line 3, column 12``, or ``at column 12`` when the
    input is one line (a command-line value, a line of an import)."""
    several = "\n" in exc.doc.rstrip("\r\n")  # (a line's own end does not make it two)
    place = f"line {exc.lineno}, column {exc.colno}" if several else f"column {exc.colno}"
    return f"{syntax_problem(exc)} at {place}"


def loads(text: str, what: str) -> Any:
    """``json.loads`` with the nesting limit and text check; InputError naming ``what``.
    ``NaN``/``Infinity`` are left to the answer validation (engine.responses).

    Cheap for ordinary input (an import calls it per line): the nesting is scanned
    only when the text has more brackets than the limit (fewer cannot nest deeper),
    and the parsed value is walked only when the text could hold a lone surrogate
    (a ``\\uD800``-``\\uDFFF`` escape, or one in ``text`` itself)."""
    if text.count("[") + text.count("{") > MAX_JSON_DEPTH and _too_deep(text):
        raise JSONInputError(f"{what} is nested more than {MAX_JSON_DEPTH} levels deep (the limit, see README, Limits)")
    try:
        value = json.loads(text)
    except RecursionError:
        raise JSONInputError(f"{what} is nested too deeply (the limit is {MAX_JSON_DEPTH}, see README, Limits)") from None
    if _SURROGATE_ESCAPE.search(text) or not _is_text(text):
        problem = json_depth_error(value)
        if problem:
            raise JSONInputError(f"{what}: {problem}")
    return value


_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89abcdefABCDEF]")
_SURROGATE_ESCAPE_BYTES = re.compile(_SURROGATE_ESCAPE.pattern.encode())


def plain_json(text: str | bytes) -> bool:
    """Whether :func:`loads` of ``text`` needs none of its checks beyond the
    parse: too few brackets to nest past the limit, no lone surrogate possible.
    A fast reader (an import's event lines) parses such text directly; bytes
    only with a parser that refuses what is not UTF-8 (pydantic's does)."""
    if isinstance(text, bytes):
        return text.count(b"[") + text.count(b"{") <= MAX_JSON_DEPTH and _SURROGATE_ESCAPE_BYTES.search(text) is None
    return (
        text.count("[") + text.count("{") <= MAX_JSON_DEPTH and _SURROGATE_ESCAPE.search(text) is None and _is_text(text)
    )
_TOKENS = re.compile(r'"(?:[^"\\]|\\.)*"?|[\[\]{}]')


def _is_text(text: str) -> bool:
    if text.isascii():
        return True
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _too_deep(text: str) -> bool:
    """A pre-check on the raw text (brackets outside strings), so that a
    100,000-deep input is refused without building it. Exact: the deepest
    nesting of the text is the deepest nesting of its value."""
    depth = 0
    for m in _TOKENS.finditer(text):
        ch = m.group()
        if ch in "[{":
            depth += 1
            if depth > MAX_JSON_DEPTH:
                return True
        elif ch in "]}":
            depth -= 1
    return False
