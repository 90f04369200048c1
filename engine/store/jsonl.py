"""The session export format (JSON Lines), shared by every store.

A file is one header line, then one line per event, in log order::

    {"format": "hitl-session", "version": 1, "session": {"id": ..., "app_name": ..., ..., "last_seq": 3}}
    {"seq": 1, "event": {...}}
    {"seq": 2, "event": {...}}
    {"seq": 3, "event": {...}}

* ``session`` is the :class:`~engine.models.Session` at export time, including
  its *current* state. Importing creates the session with that state and then
  replays every event's ``state_delta`` on top of it, which leaves it unchanged
  (each key ends at the value of the last delta that wrote it), so the imported
  state equals the exported one.
* ``seq`` makes truncation and reordering detectable: it must run 1, 2, 3, ...
  and end at the header's ``last_seq``.

:func:`parse_export` validates a whole file (UTF-8, JSON, header, every event
against the :class:`~engine.models.Event` model, contiguous seqs, and that every
FunctionResponse answers an interrupt that is open at that point of the log)
before a store writes anything; a bad file raises :class:`ImportFormatError`
naming the line. This module does no I/O: stores feed it lines and write the
result through their normal append path, so derived rows are rebuilt.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterable
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from ..errors import HitlError
from ..models import Event, Session, StoredEvent
from .base import SessionStore, index_effects

FORMAT = "hitl-session"
VERSION = 1
"""Version written by :func:`header_line`; :func:`parse_export` reads versions up to this."""


class ImportFormatError(HitlError):
    """A session file that cannot be imported; nothing was written."""

    def __init__(self, line: int, detail: str) -> None:
        super().__init__(f"line {line}: {detail}; nothing was imported")
        self.line = line
        self.detail = detail


@dataclass
class ParsedExport:
    """A validated export: the header's session and its events in order."""

    session: Session
    events: list[Event]


def header_line(session: Session) -> str:
    """The first line of an export (with its trailing newline)."""
    header = {"format": FORMAT, "version": VERSION, "session": session.model_dump(mode="json")}
    return json.dumps(header, separators=(",", ":"), ensure_ascii=False) + "\n"


def event_line(stored: StoredEvent) -> str:
    """One event line (with its trailing newline)."""
    return f'{{"seq":{stored.seq},"event":{stored.event.to_json()}}}\n'


async def export_lines(store: SessionStore, session_id: str, *, page_size: int = 500) -> AsyncIterator[str]:
    """A session's export, line by line, through any store's public API.

    Events are read in pages up to the ``last_seq`` seen when the export began,
    so events appended meanwhile are not included and the header stays true.
    """
    session = await store.get_session(session_id)
    yield header_line(session)
    after = 0
    while after < session.last_seq:
        page = await store.events(session_id, after_seq=after, limit=min(page_size, session.last_seq - after))
        if not page:
            break
        for stored in page:
            yield event_line(stored)
        after = page[-1].seq


def _shorten(exc: ValidationError) -> str:
    errs = exc.errors()
    first = errs[0]
    loc = ".".join(str(p) for p in first.get("loc", ())) or "(root)"
    more = f" (and {len(errs) - 1} more)" if len(errs) > 1 else ""
    return f"{loc}: {first.get('msg', 'invalid')}{more}"


def _decode(raw: str | bytes, line: int) -> str:
    if isinstance(raw, bytes | bytearray):
        try:
            text = bytes(raw).decode("utf-8")
        except UnicodeDecodeError as e:
            raise ImportFormatError(line, f"is not valid UTF-8 (bad byte at offset {e.start})") from None
    elif isinstance(raw, str):
        text = raw
    else:
        raise ImportFormatError(line, f"expected text, got {type(raw).__name__}")
    if line == 1:
        text = text.removeprefix("\ufeff")
    return text


def _json_object(text: str, line: int) -> dict[str, Any]:
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as e:
        raise ImportFormatError(line, f"is not valid JSON ({e.msg} at column {e.colno})") from None
    if not isinstance(obj, dict):
        raise ImportFormatError(line, f"expected a JSON object, got {type(obj).__name__}")
    return obj


def _parse_header(obj: dict[str, Any]) -> Session:
    fmt = obj.get("format")
    if fmt != FORMAT:
        raise ImportFormatError(1, f"not a hitl session export (format is {fmt!r}, expected {FORMAT!r})")
    version = obj.get("version")
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise ImportFormatError(1, f"header has no valid version (got {version!r})")
    if version > VERSION:
        raise ImportFormatError(
            1, f"the file uses export format version {version}; this hitl reads up to {VERSION} (upgrade hitl)"
        )
    if "session" not in obj:
        raise ImportFormatError(1, "header has no 'session'")
    try:
        return Session.model_validate(obj["session"])
    except ValidationError as e:
        raise ImportFormatError(1, f"invalid session in header: {_shorten(e)}") from None


def parse_export(lines: Iterable[str | bytes] | str | bytes) -> ParsedExport:
    """Validate a whole export and return its contents; raise
    :class:`ImportFormatError` (naming the line) on the first problem.

    ``lines`` is any iterable of lines, ``str`` or ``bytes`` (a file object
    works), or the whole text at once. Blank lines are ignored.
    """
    if isinstance(lines, str | bytes | bytearray):
        lines = lines.splitlines()
    session: Session | None = None
    events: list[Event] = []
    event_lines: list[int] = []
    last_line = 0
    for n, raw in enumerate(lines, start=1):
        last_line = n
        text = _decode(raw, n)
        if not text.strip():
            continue
        obj = _json_object(text, n)
        if session is None:
            if n != 1 or "format" not in obj:
                raise ImportFormatError(n, 'the first line must be the header {"format": "hitl-session", ...}')
            session = _parse_header(obj)
            continue
        if set(obj) != {"seq", "event"}:
            raise ImportFormatError(n, f"an event line has exactly the keys 'seq' and 'event' (got {sorted(obj)})")
        seq = obj["seq"]
        expected = len(events) + 1
        if not isinstance(seq, int) or isinstance(seq, bool) or seq != expected:
            raise ImportFormatError(n, f"events out of order: expected seq {expected}, got {seq!r}")
        try:
            events.append(Event.model_validate(obj["event"]))
            event_lines.append(n)
        except ValidationError as e:
            raise ImportFormatError(n, f"invalid event {seq}: {_shorten(e)}") from None
    if session is None:
        raise ImportFormatError(max(last_line, 1), "the file is empty (no header line)")
    if len(events) != session.last_seq:
        raise ImportFormatError(
            last_line,
            f"the header says {session.last_seq} events but the file has {len(events)} (truncated or edited file)",
        )
    _check_replayable(events, event_lines)
    return ParsedExport(session=session, events=events)


def _check_replayable(events: list[Event], lines: list[int]) -> None:
    """Every FunctionResponse must answer an interrupt open at that point, as
    ``append_event`` requires; checked here so a store never half-imports.
    Uses :func:`~engine.store.base.index_effects`, like the stores do."""
    open_: set[tuple[str, str]] = set()
    for seq, event in enumerate(events, start=1):
        eff = index_effects(event)
        inv = event.invocation_id
        bad = sorted(i for i in eff.resolved if (inv, i) not in open_)
        if bad:
            raise ImportFormatError(
                lines[seq - 1], f"event {seq} answers interrupt {', '.join(bad)}, which is not open at that point"
            )
        for iid, *_ in eff.opened:
            open_.add((inv, iid))
        for iid in eff.resolved:
            open_.discard((inv, iid))
        if eff.cancel_invocation:
            open_ = {k for k in open_ if k[0] != inv}
