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

import contextlib
import json
import os
import re
import sys
from collections.abc import Iterable, Mapping
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .configfile import read_toml
from .errors import HitlError

if TYPE_CHECKING:  # a listing masks its lines without importing pydantic and the models
    from .models import Event

def _is_model(value: Any) -> bool:
    """A pydantic model? Without importing pydantic: none exists before it is imported."""
    pydantic = sys.modules.get("pydantic")
    return pydantic is not None and isinstance(value, pydantic.BaseModel)


DEFAULT_SECRET_PATTERNS: tuple[str, ...] = (
    "password",
    "passwd",
    "pwd",
    "passphrase",
    "secret",
    "token",
    "api_key",
    "private_key",
    "credential",
    "authorization",
    "auth",
    "bearer",
    "cookie",
)
"""Key patterns masked by default (``auth`` also covers ``oauth``, ``author``:
masking errs on the safe side)."""

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
    return Redactor(patterns).is_secret(key)


def mask(value: Any, patterns: Iterable[str] = DEFAULT_SECRET_PATTERNS) -> Any:
    """``Redactor(patterns).value(value)``: a masked copy, ``value`` unchanged."""
    return Redactor(patterns).value(value)


def mask_event(event: Event, patterns: Iterable[str] = DEFAULT_SECRET_PATTERNS) -> Event:
    """``Redactor(patterns).event(event)``: payloads and free text masked;
    structural fields (ids, paths, statuses) are never touched, so a projection
    of masked events has the same nodes and statuses as the real one."""
    return Redactor(patterns).event(event)


# ------------------------------------------------------------------ Redactor
@lru_cache(maxsize=1)
def _free_text_patterns() -> tuple[re.Pattern[str], re.Pattern[str], re.Pattern[str], re.Pattern[str]]:
    """The patterns that mask secrets in free text, compiled on first use: most text
    never needs them (:func:`_may_need_patterns`), and compiling the four costs about
    a millisecond of every cold command that masks anything. In order:

    * DSN: ``postgresql://user:PASSWORD@host`` -> ``postgresql://user:***@host``;
    * bearer: ``Authorization: Bearer abc.def`` -> ``Bearer ***``;
    * assignment: ``password=hunter2`` / ``api_key:abc`` in free text;
    * spoken: ``rotating password Hunter-22`` / ``the token is abc123`` in what an
      operator types: a word after a secret's name (or its ``is``/``to``/...) that
      looks like a secret -- it has a digit or a symbol -- so that ``password reset`` stays.
    """
    return (
        re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://[^:/\s@'\"]+:)([^@\s'\"]+)(@)"),
        re.compile(r"(?i)\b(bearer|basic|token)(\s+)([A-Za-z0-9._~+/=-]{6,})"),
        re.compile(
            r"(?i)\b(password|passwd|pwd|passphrase|secret|token|api[_-]?key|private[_-]?key)(\s*=\s*|:)([^\s,;&'\"]+)"
        ),
        re.compile(
            r"(?i)\b(password|passwd|passphrase|secret|token|api[_ -]?key|private[_ -]?key)"
            r"((?:\s+(?:is|was|to|now|of))?\s+)"
            r"(?=[^\s,;'\"]*[0-9!@#$%^&*_+=/~-])([^\s,;'\"]{4,})"
        ),
    )


def _may_need_patterns(text: str) -> bool:
    """False when none of the DSN, bearer and assignment patterns
    (:func:`_free_text_patterns`) can match ``text``: ASCII text (where their
    case-insensitive matching is plain ASCII case) without any substring one of
    them needs (``key`` stands for ``api_key``/``private_key``
    and their spellings, ``pass`` for ``password``/``passwd``/``passphrase``). An
    event log is mostly such text: these substring tests cost a fraction of
    running the three patterns. Non-ASCII text always runs them."""
    if not text.isascii():
        return True
    low = text.lower()
    return (
        "://" in low or "token" in low or "pass" in low or "key" in low or "secret" in low
        or "pwd" in low or "bearer" in low or "basic" in low
    )


_FREE_TEXT_WORDS = ("token", "pass", "key", "secret", "pwd", "bearer", "basic")
"""What :func:`_may_need_patterns` looks for, but ``://`` (all letters: they
survive dropping the other characters)."""
_NOT_ALNUM_BYTES = bytes(b for b in range(128) if not chr(b).isdigit() and not ("a" <= chr(b) <= "z"))
"""ASCII bytes :func:`_norm` drops (after lowering)."""
_LOWER_BYTES = bytes.maketrans(b"ABCDEFGHIJKLMNOPQRSTUVWXYZ", b"abcdefghijklmnopqrstuvwxyz")
_NOT_ALNUM_ANY_CASE = bytes(b for b in range(128) if not chr(b).isalnum())
"""ASCII bytes :meth:`Redactor.learns_nothing` drops (before lowering, in the same pass)."""
_NOT_LETTER_BYTES = bytes(b for b in range(128) if not chr(b).isalpha())
"""The same and the digits: what it drops when no word it looks for has a digit."""


_RARE = b"zqxjkvbpygfwmucldrhsnioate0123456789"
"""Lower-case letters, rarest first in English text (digits: last): where a word's rarest is."""


_SCALARS = frozenset({int, float, bool, type(None)})
"""Exact types a walk passes as they are (nothing to learn or mask in them)."""
_NOT_SECRET_KEYS = frozenset({"author", "authors", "authorname", "authority", "authored"})
"""Normalised keys that contain ``auth`` but name no credential."""
_MIN_KNOWN = 4
"""Known secret values shorter than this are not searched for in text (too many
false hits); the key-name rule still masks them where they are stored."""


class Redactor:
    """The one masking policy of a process: key patterns + the show flag, and
    the secret *values* it has seen.

    * :meth:`value` masks values of secret-looking keys at any depth (after
      unwrapping ``{"result": "<JSON>"}``), ``["password", value]`` pairs, and
      the ``default``/``examples``/``const``/``enum`` of secret-named properties
      in JSON Schemas; every string is also passed through :meth:`text`.
    * :meth:`text` masks free text: passwords in DSNs, bearer tokens,
      ``password=...`` assignments, a secret-looking word after a secret's
      name (``rotating password Hunter-22``), and every secret value this
      redactor has seen under a secret key (also a truncated one: ``hunter2h…``)
      -- :func:`learn_written` teaches it those of the events an audit
      listing names, :meth:`learn_answers` those of an invocation's answers.
    * :meth:`event` masks an event's payloads and free text (messages,
      error messages, reasons); structural fields are never touched.

    With ``show=True`` everything is returned as it is. One instance is made
    per CLI command or console app and passed to every renderer.
    """

    def __init__(self, patterns: Iterable[str] = DEFAULT_SECRET_PATTERNS, *, show: bool = False) -> None:
        self.patterns = tuple(patterns)
        self.show = show
        self._pats = _normalised(self.patterns)
        self._known: set[str] = set()
        self._known_re: re.Pattern[str] | None = None
        self._keys: dict[str, bool] = {}
        """key -> is_secret (keys repeat across events: decide each once)."""
        self._learned: set[str] = set()
        """Ids of events already learned from."""
        self._gate_words: tuple[bytes, ...] | None = None
        self._gate_author: tuple[bytes, ...] = ()
        """The words :meth:`learns_nothing` looks for that the ``author`` key contains."""
        self._gate_letters: tuple[tuple[bytes, tuple[bytes, ...]], ...] = ()
        """The other words, grouped under a letter each contains (tested first)."""
        self._gate_drop = _NOT_ALNUM_ANY_CASE

    def fork(self) -> Redactor:
        """An independent copy (same policy, the secrets learned so far) for a
        worker thread: what it learns stays in the copy, so the two never race."""
        other = Redactor(self.patterns, show=self.show)
        other._known = set(self._known)
        other._keys = dict(self._keys)
        return other

    # ---------------------------------------------------------------- learning
    def is_secret(self, key: object) -> bool:
        if not isinstance(key, str):
            return False
        hit = self._keys.get(key)
        if hit is None:
            k = _norm(key)
            hit = self._keys[key] = k not in _NOT_SECRET_KEYS and any(p in k for p in self._pats)
        return hit

    def learn(self, value: Any) -> None:
        """Remember the strings (and scalars) of a secret value."""
        stack = [value]
        while stack:
            v = stack.pop()
            if isinstance(v, Mapping):
                stack.extend(v.values())
            elif isinstance(v, list | tuple):
                stack.extend(v)
            elif isinstance(v, str | int | float) and not isinstance(v, bool):
                text = str(v)
                if len(text) >= _MIN_KNOWN and text not in self._known and text != MASK:
                    self._known.add(text)
                    self._known_re = None

    def learn_from(self, value: Any) -> None:
        """Walk ``value`` and learn the values of its secret keys (masking nothing)."""
        stack = [value]
        pop, push, is_secret = stack.pop, stack.append, self.is_secret
        while stack:
            v = pop()
            t = type(v)
            if t is str:  # the common cases first, without the ABC and model checks below
                if v[:1] in ("{", "["):
                    with contextlib.suppress(ValueError):
                        push(json.loads(v))
                continue
            if t in _SCALARS:
                continue
            if t is not dict and t is not list and _is_model(v):
                v = v.model_dump(mode="json", exclude_none=True)
            if t is dict or isinstance(v, Mapping):
                props = v.get("properties")
                schema = isinstance(props, dict)
                if schema:  # a JSON Schema: a secret property's values, not its type
                    for name, sub in props.items():
                        if is_secret(name) and isinstance(sub, dict):
                            self.learn([sub.get(x) for x in ("default", "examples", "const", "enum")])
                        else:
                            push(sub)
                for k, x in v.items():
                    if schema and k == "properties":
                        continue
                    if is_secret(k):
                        self.learn(x)
                        continue
                    tx = type(x)  # what the loop would pop and skip is not pushed
                    if tx in _SCALARS or (tx is str and x[:1] not in ("{", "[")):
                        continue
                    push(x)
            elif t is list or isinstance(v, list | tuple):
                if len(v) == 2 and is_secret(v[0]):
                    self.learn(v[1])
                stack.extend(v)
            elif isinstance(v, str) and v[:1] in ("{", "["):
                with contextlib.suppress(ValueError):
                    push(json.loads(v))

    def learn_answers(self, interrupts: Iterable[Any], state: Any = None) -> None:
        """Learn the secrets of interrupts' questions and answers (what operators
        type), and of a session state: a renderer showing one run (its error
        message may echo an answer) learns them first."""
        for itr in interrupts:
            self.learn_from([itr.args, itr.response])
        if state is not None:
            self.learn_from(state)

    def learn_events(self, events: Iterable[Event]) -> None:
        """Learn the secrets in events' payloads (never from structural fields
        such as ``author``, ids or paths)."""
        for e in events:
            if e.id in self._learned:
                continue
            if len(self._learned) > 4096:  # bounded: a long stream keeps constant memory
                self._learned.clear()
            self._learned.add(e.id)
            info = e.node_info
            self.learn_from([e.output, e.route, e.state_delta, info.input if info else None])
            if e.content is not None:
                for part in e.content.parts:
                    if part.function_call is not None:
                        self.learn_from(part.function_call.args)
                    if part.function_response is not None:
                        self.learn_from(part.function_response.response)

    def learns_nothing(self, raw: str) -> bool:
        """Whether the event stored as the JSON text ``raw`` holds nothing to learn
        and nothing the patterns mask: ASCII without escapes (each key and string
        stands in the text as it is) and, with every character but letters and
        digits dropped, none of the secret key patterns nor the words free-text
        masking looks for (:func:`_may_need_patterns`; ``://`` tested as it is).
        Then :meth:`learn_events` learns nothing from it and :meth:`event`
        changes nothing but known values (:meth:`inert`). A long read tests the
        text instead of walking the event: most events of a log pass, and a
        false "no" only costs the walk."""
        if self.show:
            return True
        if not raw.isascii() or "\\" in raw or "://" in raw:
            return False
        words = self._gate_words
        if words is None:  # the shortest suffice ("pass" stands for "password" too)
            every = {*self._pats, *_FREE_TEXT_WORDS}
            found = sorted(w.encode() for w in every if not any(o != w and o in w for o in every))
            # Dropping the digits too (when no word has one) keeps every match a word
            # had -- its letters stay side by side -- and leaves a third less text to
            # search (ids, times): a long read tests tens of megabytes.
            self._gate_drop = _NOT_LETTER_BYTES if not any(c in b"0123456789" for w in found for c in w) else _NOT_ALNUM_ANY_CASE
            self._gate_author = tuple(w for w in found if w in b"author")
            words = self._gate_words = tuple(w for w in found if w not in b"author")
            by_letter: dict[bytes, list[bytes]] = {}
            for w in words:  # each word under its rarest letter (English letter frequencies)
                by_letter.setdefault(bytes((min(w, key=_RARE.find),)), []).append(w)
            self._gate_letters = tuple((k, tuple(v)) for k, v in by_letter.items())
        # (lowered and dropped in one pass; a substring test per word: several times
        # faster than one alternation's search on a long text -- and none for the words
        # whose rarest letter is not in it at all, a memchr: "k" for key, token, cookie)
        normed = raw.encode().translate(_LOWER_BYTES, self._gate_drop)
        for letter, group in self._gate_letters:
            if letter in normed and any(w in normed for w in group):
                return False
        if not self._gate_author:
            return True
        # The author key names no secret (_NOT_SECRET_KEYS): a word it contains
        # ("auth") may stand in the text only as often as the key does -- one more is
        # somewhere else. (Counted, not removed first: a copy of the text less.)
        keys = raw.count('"author":')
        return all(normed.count(w) == keys for w in self._gate_author)

    def inert(self, raw: str) -> bool:
        """:meth:`learns_nothing`, and no secret learned so far is in ``raw``:
        :meth:`event` of the event stored as ``raw`` is that event itself."""
        return self.learns_nothing(raw) and not self.knows_some_of(raw)

    def knows_secrets(self) -> bool:
        """Whether a secret value was learned (:meth:`text` masks known values too)."""
        return bool(self._known) and not self.show

    def knows_some_of(self, raw: str) -> bool:
        """Whether a secret learned so far is in the text ``raw`` (as it is or
        JSON-escaped: how a stored event holds it)."""
        known = None if self.show else self._known_pattern()
        return known is not None and known.search(raw) is not None

    # ----------------------------------------------------------------- masking
    def text(self, text: str) -> str:
        if self.show or not text:
            return text
        out = text
        if _may_need_patterns(text):
            dsn, bearer, assign, spoken = _free_text_patterns()
            out = dsn.sub(lambda m: m.group(1) + MASK + m.group(3), out)
            out = bearer.sub(lambda m: m.group(1) + m.group(2) + MASK, out)
            out = assign.sub(lambda m: m.group(1) + m.group(2) + MASK, out)
            out = spoken.sub(lambda m: m.group(1) + m.group(2) + MASK, out)
        known = self._known_pattern()
        if known is not None:
            out = known.sub(MASK, out)
        return out

    def _known_pattern(self) -> re.Pattern[str] | None:
        if not self._known:
            return None
        if self._known_re is None:
            alts = []
            for s in sorted(self._known, key=len, reverse=True):
                forms = {s, json.dumps(s)[1:-1]}
                for f in forms:
                    alts.append(re.escape(f))
                    if len(f) >= 8:  # a truncated echo: "hunter2h…"
                        alts.append(re.escape(f[:6]) + r"[^\s'\",}\]]*(?:…|\.\.\.)")
            self._known_re = re.compile("|".join(sorted(set(alts), key=len, reverse=True)))
        return self._known_re

    def value(self, value: Any) -> Any:
        """A masked copy of ``value`` (``value`` itself is never modified)."""
        if self.show:
            return value
        self.learn_from(value)
        return self._value(value)

    def large_value(self, value: Any) -> Any:
        """:meth:`value` of a large JSON-able structure (a whole session's node
        rows): written out as JSON once, and returned as it is when that text
        shows nothing to learn or mask (:meth:`learns_nothing`,
        :meth:`knows_some_of`: every key and string stands in it as it is, so
        none is a secret's or needs masking), instead of walking it in Python."""
        if self.show:
            return value
        text = json.dumps(value, default=str)  # ASCII: anything else is escaped, and then walked
        if self.learns_nothing(text) and not self.knows_some_of(text):
            return value
        return self.value(value)

    def learn_large(self, value: Any) -> None:
        """:meth:`learn_from` of a large JSON-able structure: nothing to do when its
        JSON text shows nothing to learn (:meth:`learns_nothing`)."""
        if not self.learns_nothing(json.dumps(value, default=str)):
            self.learn_from(value)

    def _value(self, value: Any) -> Any:
        """Masked ``value``; the very same object when nothing in it changed."""
        t = type(value)
        if t is str:
            masked = self.text(value)
            return value if masked == value else masked
        if t in _SCALARS:
            return value
        if t is dict:  # the common cases without the model and ABC checks below
            return self._mapping(value)
        if t is list:
            return self._items(value)
        if _is_model(value):
            value = value.model_dump(mode="json", exclude_none=True)
        if isinstance(value, str):
            masked = self.text(value)
            return value if masked == value else masked
        if isinstance(value, Mapping):
            return self._mapping(value)
        if isinstance(value, list | tuple):
            return self._items(value)
        return value

    def _mapping(self, value: Mapping[Any, Any]) -> Any:
        if len(value) == 1 and "result" in value and isinstance(value["result"], str):
            inner = self._wrapped(value["result"])
            if inner is not None:
                return value if inner == value["result"] else {"result": inner}
        out: dict[Any, Any] = {}
        is_secret, text = self.is_secret, self.text
        for k, v in value.items():
            if is_secret(k):
                out[k] = MASK
                continue
            tv = type(v)
            if tv in _SCALARS:
                out[k] = v
            elif tv is str:
                masked = text(v)
                out[k] = v if masked == v else masked
            else:
                out[k] = self._value(v)
        props = value.get("properties")
        if isinstance(props, dict) and not is_secret("properties"):
            # A JSON Schema: the defaults of secret properties are secrets too.
            out["properties"] = {k: self._schema_prop(k, v) for k, v in props.items()}
        same = isinstance(value, dict) and all(out[k] is value[k] for k in value)
        return value if same else out

    def _items(self, value: list[Any] | tuple[Any, ...]) -> Any:
        items = [self._value(v) for v in value]
        if len(items) == 2 and self.is_secret(value[0]):
            items[1] = MASK
        if all(m is v for m, v in zip(items, value, strict=True)):
            return value
        return items if isinstance(value, list) else tuple(items)

    def _schema_prop(self, name: str, sub: Any) -> Any:
        if self.is_secret(name) and isinstance(sub, dict):
            masked = _mask_schema_values(sub)
            return sub if masked == sub else masked
        return self._value(sub)

    def _wrapped(self, text: str) -> str | None:
        """``{"result": "<JSON>"}``: mask inside the JSON, keep the wrapping."""
        try:
            inner = json.loads(text)
        except ValueError:
            return None
        if not isinstance(inner, dict | list):
            return None
        return json.dumps(self._value(inner), ensure_ascii=False, separators=(",", ":"))

    def event(self, event: Event) -> Event:
        """A copy of ``event`` with payloads and free text masked (the event
        itself when nothing in it needed masking: no copy)."""
        if self.show:
            return event
        self.learn_events([event])
        update: dict[str, Any] = {}
        for name in ("output", "route", "state_delta"):
            value = getattr(event, name)
            if value is not None:
                masked = self._value(value)
                if masked is not value:
                    update[name] = masked
        if event.error_message:
            text = self.text(event.error_message)
            if text != event.error_message:
                update["error_message"] = text
        info = event.node_info
        if info is not None and info.input is not None:
            masked = self._value(info.input)
            if masked is not info.input:
                update["node_info"] = info.model_copy(update={"input": masked})
        meta = event.custom_metadata
        if meta:
            new_meta = {k: v if k == "action" else self._value(v) for k, v in meta.items()}
            if any(new_meta[k] is not meta[k] for k in meta):
                update["custom_metadata"] = new_meta
        if event.content is not None:
            parts = []
            changed = False
            for part in event.content.parts:
                new = part
                if part.text:
                    text = self.text(part.text)
                    if text != part.text:
                        new = new.model_copy(update={"text": text})
                if part.function_call is not None:
                    args = part.function_call.args
                    new_args = {
                        k: MASK if self.is_secret(k) else (self._schema(v) if k == "response_schema" else self._value(v))
                        for k, v in args.items()
                    }
                    if any(new_args[k] is not args[k] and new_args[k] != args[k] for k in args):
                        call = part.function_call.model_copy(update={"args": new_args})
                        new = new.model_copy(update={"function_call": call})
                if part.function_response is not None:
                    resp = part.function_response.response
                    masked = self._value(resp)
                    if masked is not resp:
                        fr = part.function_response.model_copy(update={"response": masked})
                        new = new.model_copy(update={"function_response": fr})
                changed = changed or new is not part
                parts.append(new)
            if changed:
                update["content"] = event.content.model_copy(update={"parts": parts})
        return event.model_copy(update=update) if update else event

    def _schema(self, schema: Any) -> Any:
        """A response schema: only secret properties' defaults/examples are masked."""
        if not isinstance(schema, dict):
            return schema
        out = dict(schema)
        props = schema.get("properties")
        if isinstance(props, dict):
            out["properties"] = {
                k: _mask_schema_values(v) if self.is_secret(k) and isinstance(v, dict) else self._schema(v)
                for k, v in props.items()
            }
        for key in ("$defs", "definitions"):
            if isinstance(schema.get(key), dict):
                out[key] = {k: self._schema(v) for k, v in schema[key].items()}
        for key in ("items", "additionalProperties"):
            if isinstance(schema.get(key), dict):
                out[key] = self._schema(schema[key])
        for key in ("anyOf", "oneOf", "allOf"):
            if isinstance(schema.get(key), list):
                out[key] = [self._schema(v) for v in schema[key]]
        if "default" in schema:
            out["default"] = self._value(schema["default"])
        return out


async def learn_written(red: Redactor, store: Any, records: Iterable[Any]) -> None:
    """Teach ``red`` the secrets of the events audit ``records`` name (an answer's
    values), so that an operator's reason shown beside them is masked of what
    they answered. One read per record with an event; a record whose event
    cannot be read is skipped (its reason still gets the free-text rules)."""
    if red.show:
        return
    for rec in records:
        if rec.seq is None:
            continue
        with contextlib.suppress(Exception):
            red.learn_events(s.event for s in await store.events(rec.session_id, after_seq=rec.seq - 1, limit=1))


def _mask_schema_values(sub: dict[str, Any]) -> dict[str, Any]:
    return {k: (MASK if k in ("default", "examples", "const", "enum") else v) for k, v in sub.items()}


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
        data = read_toml(path)
    except FileNotFoundError:
        raise HitlError(f"config file {str(path)!r} does not exist") from None
    except (OSError, UnicodeDecodeError, ValueError) as exc:  # ValueError: tomllib.TOMLDecodeError
        raise HitlError(f"config file {str(path)!r} cannot be read: {exc}") from None
    section = data.get("secrets", {})
    patterns = section.get("patterns", []) if isinstance(section, dict) else None
    if not isinstance(patterns, list) or not all(isinstance(p, str) for p in patterns):
        raise HitlError(f'config file {str(path)!r}: [secrets] patterns must be a list of strings, e.g. ["iban"]')
    return patterns
