"""Masking secrets in what the console and the CLI show.

Values of keys that look secret are replaced by :data:`MASK` wherever they
occur in a JSON-like value (nested dicts and lists, pydantic models):
``mask({"user": "a", "db": {"password": "hunter2"}})`` ->
``{"user": "a", "db": {"password": "***"}}``.

A pattern matches a key when, both lower-cased and stripped of everything but
letters and digits, the pattern is a substring of the key: ``api_key`` matches
``apiKey``, ``X-API-KEY`` and ``stripe_api_key``; ``token`` matches
``access_token`` and ``refreshToken``. Masking errs on the safe side (``token``
also matches ``token_count``). The whole value of a matching key is masked,
whatever its type.

Patterns: :data:`DEFAULT_SECRET_PATTERNS`, plus those of ``hitl.toml``::

    [secrets]
    patterns = ["iban", "ssn"]

plus ``--secret-pattern`` options (:func:`secret_patterns` combines them). The
defaults cannot be switched off by configuration: the only way to see secrets
is to ask for them (``--show-secrets``, or the console's equivalent).

Stored data is never changed: masking applies to output only. ``hitl export``
is a full-fidelity copy and is not masked.
"""

from __future__ import annotations

import os
import re
import tomllib
from collections.abc import Iterable, Mapping
from functools import lru_cache
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from .errors import HitlError
from .models import Event

DEFAULT_SECRET_PATTERNS: tuple[str, ...] = ("password", "secret", "token", "api_key")
"""Key patterns masked by default."""

MASK = "***"
"""What a masked value is shown as."""

_NON_ALNUM = re.compile(r"[^0-9a-z]+")


def _norm(text: str) -> str:
    return _NON_ALNUM.sub("", text.lower())


@lru_cache(maxsize=64)
def _normalised(patterns: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(n for n in (_norm(p) for p in patterns) if n)


def is_secret_key(key: object, patterns: Iterable[str] = DEFAULT_SECRET_PATTERNS) -> bool:
    """Whether values under ``key`` are masked."""
    if not isinstance(key, str):
        return False
    k = _norm(key)
    return any(p in k for p in _normalised(tuple(patterns)))


def mask(value: Any, patterns: Iterable[str] = DEFAULT_SECRET_PATTERNS) -> Any:
    """A copy of ``value`` with the values of secret-looking keys replaced by
    :data:`MASK` at any depth. ``value`` itself is never modified; values
    without a secret key are returned as they are (not copied)."""
    pats = _normalised(tuple(patterns))
    if not pats:
        return value
    return _mask(value, pats)


def _mask(value: Any, pats: tuple[str, ...]) -> Any:
    if isinstance(value, BaseModel):
        value = value.model_dump(mode="json", exclude_none=True)
    if isinstance(value, Mapping):
        out: dict[Any, Any] = {}
        changed = False
        for k, v in value.items():
            if isinstance(k, str) and any(p in _norm(k) for p in pats):
                out[k] = MASK
                changed = True
            else:
                m = _mask(v, pats)
                changed = changed or m is not v
                out[k] = m
        return out if changed or not isinstance(value, dict) else value
    if isinstance(value, list | tuple):
        items = [_mask(v, pats) for v in value]
        if any(m is not v for m, v in zip(items, value, strict=True)):
            return items if isinstance(value, list) else tuple(items)
        return value
    return value


def mask_event(event: Event, patterns: Iterable[str] = DEFAULT_SECRET_PATTERNS) -> Event:
    """A copy of ``event`` with secrets masked in its *payloads* only: node input,
    output, route, state delta, function-call arguments (not their
    ``response_schema``) and function responses. Structural fields (ids, paths,
    statuses) are never touched, so a projection of masked events has the same
    nodes and statuses as the real one -- with masked values."""
    pats = _normalised(tuple(patterns))
    if not pats:
        return event
    update: dict[str, Any] = {}
    info = event.node_info
    if info is not None and info.input is not None:
        masked = _mask(info.input, pats)
        if masked is not info.input:
            update["node_info"] = info.model_copy(update={"input": masked})
    for name in ("output", "route", "state_delta"):
        value = getattr(event, name)
        if value is not None:
            masked = _mask(value, pats)
            if masked is not value:
                update[name] = masked
    if event.content is not None:
        parts = []
        changed = False
        for part in event.content.parts:
            if part.function_call is not None:
                args = part.function_call.args
                new_args = {k: v if k == "response_schema" else _mask(v, pats) for k, v in args.items()}
                new_args = {k: MASK if any(p in _norm(k) for p in pats) else v for k, v in new_args.items()}
                if any(new_args[k] is not args[k] for k in args):
                    part = part.model_copy(update={"function_call": part.function_call.model_copy(update={"args": new_args})})
                    changed = True
            elif part.function_response is not None:
                resp = part.function_response.response
                masked = _mask(resp, pats)
                if masked is not resp:
                    fr = part.function_response.model_copy(update={"response": masked})
                    part = part.model_copy(update={"function_response": fr})
                    changed = True
            parts.append(part)
        if changed:
            update["content"] = event.content.model_copy(update={"parts": parts})
    return event.model_copy(update=update) if update else event


def secret_patterns(
    config: str | os.PathLike[str] | None = None, extra: Iterable[str] = ()
) -> tuple[str, ...]:
    """The defaults, plus ``[secrets] patterns`` of a ``hitl.toml`` (if given),
    plus ``extra`` (e.g. ``--secret-pattern`` options); duplicates removed."""
    found: list[str] = list(DEFAULT_SECRET_PATTERNS)
    if config is not None:
        found += load_patterns(config)
    found += [p for p in extra if p]
    return tuple(dict.fromkeys(found))


def load_patterns(config: str | os.PathLike[str]) -> list[str]:
    """``[secrets] patterns`` of a ``hitl.toml`` ([] when absent); HitlError when malformed."""
    path = Path(config)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise HitlError(f"config file {str(path)!r} does not exist") from None
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise HitlError(f"config file {str(path)!r} cannot be read: {exc}") from None
    section = data.get("secrets", {})
    patterns = section.get("patterns", []) if isinstance(section, dict) else None
    if not isinstance(patterns, list) or not all(isinstance(p, str) for p in patterns):
        raise HitlError(f'config file {str(path)!r}: [secrets] patterns must be a list of strings, e.g. ["iban"]')
    return patterns
