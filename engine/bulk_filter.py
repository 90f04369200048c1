"""The bulk-answer filter language (:mod:`engine.bulk`): ``app=``, ``node=``,
``session=``, ``age>2h``, message text and payload field tests such as
``amount<50`` or ``currency=EUR``. :class:`Where` is a parsed filter,
:func:`parse_where` parses terms, :func:`parse_age` / :func:`format_age` read and
write ``2h30m``. Standard library only: the CLI's option parsing and the
console's inbox filter use it without importing the answering machinery."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .deadlines import due_at
from .errors import HitlError

if TYPE_CHECKING:
    from .store.base import InterruptRecord

_OPS = ("<=", ">=", "!=", "=", "<", ">", "~")
_TERM = re.compile(r"^(?P<field>[A-Za-z_][\w.\-]*)\s*(?P<op><=|>=|!=|=|<|>|~)\s*(?P<value>.*)$", re.S)
_AGE = re.compile(r"(\d+(?:\.\d+)?)([smhdw])")
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
KEYWORDS = ("app", "node", "session", "age", "text", "owner", "due")
"""Filter terms that are not payload fields (a payload field of one of these
names is ``payload.NAME``)."""


def parse_age(text: str) -> float:
    """``90s``, ``15m``, ``2h``, ``3d``, ``1w``, ``1h30m`` -> seconds; HitlError otherwise
    (also what the CLI's ``--older-than`` reads)."""
    t = text.strip().lower()
    parts = _AGE.findall(t)
    if not parts or "".join(n + u for n, u in parts) != t:
        raise HitlError(f"{text!r} is not a duration like 90s, 15m, 2h, 3d or 1h30m")
    return sum(float(n) * _UNITS[u] for n, u in parts)


def format_age(seconds: float) -> str:
    """The shortest exact spelling of :func:`parse_age`'s input (``7200`` -> ``2h``)."""
    for unit in ("w", "d", "h", "m"):
        n = seconds / _UNITS[unit]
        if n >= 1 and n == int(n):
            return f"{int(n)}{unit}"
    return f"{seconds:g}s"


def _value(raw: str) -> Any:
    """A filter value: JSON when it parses (``50``, ``true``, ``"a b"``), else the text."""
    raw = raw.strip()
    try:
        value = json.loads(raw)
    except ValueError:
        return raw
    return value if not isinstance(value, (dict, list)) else raw


def _number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


@dataclass(frozen=True)
class FieldTest:
    """One payload test: ``amount<50``, ``currency=EUR``, ``customer~grace``.

    ``field`` is a dotted path into the interrupt's ``payload`` (``order.amount``).
    Numbers compare as numbers, strings as strings (``~``: contains, ignoring
    case); a field that is missing, or of another type than the value, matches
    no test -- not even ``!=``."""

    field: str
    op: str
    value: Any

    def __str__(self) -> str:
        shown = self.value if isinstance(self.value, str) else json.dumps(self.value)
        name = f"payload.{self.field}" if self.field.split(".")[0] in KEYWORDS else self.field
        return f"{name}{self.op}{shown}"

    def matches(self, payload: Any) -> bool:
        found, got = _lookup(payload, self.field)
        if not found:
            return False
        want = self.value
        if self.op == "~":
            return isinstance(got, str) and str(want).lower() in got.lower()
        if not _comparable(got, want, self.op):
            return False
        if self.op == "=":
            return bool(got == want)
        if self.op == "!=":
            return bool(got != want)
        if isinstance(got, bool) or got is None:
            return False
        return bool(
            {"<": got < want, "<=": got <= want, ">": got > want, ">=": got >= want}[self.op]
        )


def _comparable(got: Any, want: Any, op: str) -> bool:
    """Numbers with numbers, strings with strings; booleans and null only for = and !=."""
    if (_number(got) and _number(want)) or (isinstance(got, str) and isinstance(want, str)):
        return True
    same = (isinstance(got, bool) and isinstance(want, bool)) or (got is None and want is None)
    return same and op in ("=", "!=")


def _lookup(payload: Any, dotted: str) -> tuple[bool, Any]:
    cur = payload
    for part in dotted.split("."):
        if isinstance(cur, dict) and part in cur:
            cur = cur[part]
        elif isinstance(cur, list) and part.isdigit() and int(part) < len(cur):
            cur = cur[int(part)]
        else:
            return False, None
    return True, cur


@dataclass(frozen=True)
class Where:
    """Which open interrupts a bulk answer is for (every given condition holds)."""

    app: str | None = None
    """The session's app, exactly."""
    node: str | None = None
    """A node of this name is on the interrupt's path (it raised it, or runs the node that did)."""
    older_than: float | None = None
    """Raised at least this many seconds ago."""
    text: str | None = None
    """The interrupt's message contains this, ignoring case."""
    session: str | None = None
    """Only this session."""
    fields: tuple[FieldTest, ...] = ()
    """Payload tests (:class:`FieldTest`)."""
    due_within: float | None = None
    """Its deadline (:mod:`engine.deadlines`) passes within this many seconds, or has passed."""
    owner: str | None = None
    """Who owns it (``owner=NAME``, ``owner=@group``, ``owner=me`` read as the
    operator's name); ``""``: nobody (``unowned``). None: anyone or nobody."""

    @property
    def empty(self) -> bool:
        return self == Where()

    def __str__(self) -> str:
        """The filter as :func:`parse_where` reads it back (``app=refunds age>2h amount<50``)."""
        terms = []
        for key in ("app", "node", "session"):
            v = getattr(self, key)
            if v is not None:
                terms.append(f"{key}={_quoted(v)}")
        if self.older_than is not None:
            terms.append(f"age>{format_age(self.older_than)}")
        if self.due_within is not None:
            terms.append(f"due<{format_age(self.due_within)}")
        if self.text:
            terms.append(f"text={_quoted(self.text)}")
        terms += [str(f) for f in self.fields]
        if self.owner is not None:
            terms.append(f"owner={_quoted(self.owner)}" if self.owner else "unowned")
        return " ".join(terms)

    def matches(self, rec: InterruptRecord, now: float) -> bool:
        """Every condition, on one row (the store already applied all but ``fields``;
        this is the reference the store's query agrees with)."""
        if self.app is not None and rec.app_name != self.app:
            return False
        if self.session is not None and rec.session_id != self.session:
            return False
        if self.node and f"/{self.node}@" not in f"/{rec.path}":
            return False
        if self.older_than is not None and not rec.raised_at < now - self.older_than:
            return False
        if self.text and self.text.lower() not in rec.message.lower():
            return False
        if self.due_within is not None:
            due = due_at(rec.args, rec.raised_at)
            if due is None or due > now + self.due_within:
                return False
        if self.owner is not None and (rec.owner or "") != self.owner:
            return False
        payload = rec.args.get("payload")
        return all(f.matches(payload) for f in self.fields)


def _quoted(v: str) -> str:
    return json.dumps(v) if (not v or any(c.isspace() for c in v) or v != v.strip('"')) else v


def split_terms(text: str) -> list[str]:
    """Split a filter line on blanks, keeping ``"quoted words"`` together
    (``text="never arrived" amount<50`` -> two terms)."""
    terms, cur, quote = [], "", False
    for ch in text:
        if ch == '"':
            quote = not quote
            cur += ch
        elif ch.isspace() and not quote:
            if cur:
                terms.append(cur)
            cur = ""
        else:
            cur += ch
    if quote:
        raise HitlError(f"filter {text!r} has an unclosed quote")
    if cur:
        terms.append(cur)
    return terms


def parse_where(terms: Iterable[str] | str, base: Where | None = None, *, me: str | None = None) -> Where:
    """Read filter terms (a list, or one line split by :func:`split_terms`):
    ``app=NAME``, ``node=NAME``, ``session=ID``, ``age>2h`` (older than), ``due<1h`` (deadline within),
    ``text=WORDS``, ``FIELD OP VALUE`` on the payload (``OP``: ``= != < <= > >= ~``;
    ``payload.FIELD`` for a field named like a keyword); ``owner=NAME`` /
    ``owner=@group`` / ``owner=me`` (``me``: the operator's name) and ``unowned``;
    a bare word is message text. ``base``: conditions given otherwise (CLI options) that the terms add to.
    HitlError naming the term that is not understood."""
    if isinstance(terms, str):
        terms = split_terms(terms)
    base = base or Where()
    got: dict[str, Any] = {
        "app": base.app, "node": base.node, "session": base.session, "older_than": base.older_than, "text": base.text,
        "due_within": base.due_within,
        "owner": base.owner,
    }
    fields = list(base.fields)
    words: list[str] = []
    for term in terms:
        term = term.strip()
        if not term:
            continue
        if term == "unowned":
            got["owner"] = ""
            continue
        m = _TERM.match(term)
        if m is None:
            if any(op in term for op in _OPS):
                raise HitlError(f"filter term {term!r} is not FIELD OP VALUE (e.g. amount<50, currency=EUR, age>2h)")
            words.append(term.strip('"'))
            continue
        name, op, raw = m.group("field"), m.group("op"), m.group("value").strip()
        if raw == "":
            raise HitlError(f"filter term {term!r} has no value after {op!r}")
        if name == "age":
            if op not in (">", ">="):
                raise HitlError(f"filter term {term!r}: only age>DURATION (older than) is supported, e.g. age>2h")
            got["older_than"] = parse_age(raw)
        elif name == "due":
            if op not in ("<", "<="):
                raise HitlError(f"filter term {term!r}: only due<DURATION (due within, overdue included) is supported,"
                                " e.g. due<1h")
            got["due_within"] = parse_age(raw)
        elif name in ("app", "node", "session", "text", "owner"):
            if op != "=":
                raise HitlError(f"filter term {term!r}: {name} takes =, e.g. {name}=NAME")
            value = raw[1:-1] if len(raw) >= 2 and raw[0] == raw[-1] == '"' else raw
            if name == "owner" and value == "me":
                if not me:
                    raise HitlError("filter term 'owner=me' needs your operator name (--operator, or "
                                    "[console] operator in hitl.toml)")
                value = me
            if name == "text":
                words.append(value)
            else:
                got[name] = value
        else:
            path = name[len("payload."):] if name.startswith("payload.") else name
            if not path:
                raise HitlError(f"filter term {term!r} names no payload field")
            value = _value(raw)
            if op in ("<", "<=", ">", ">=") and isinstance(value, str) and not raw.startswith('"') \
                    and not raw[:1].isdigit():
                # amount<abc matched nothing, silently: an ordering needs a number, a date
                # (2026-02-01) or text the operator quoted on purpose
                raise HitlError(f"filter term {term!r}: {op} compares numbers or dates, and {raw!r} is neither "
                                f"(quote it to compare text: {name}{op}\"{raw}\")")
            fields.append(FieldTest(path, op, value))
    if words:
        got["text"] = " ".join(([got["text"]] if got["text"] else []) + words)
    return Where(fields=tuple(fields), **got)
