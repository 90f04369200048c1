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
FunctionResponse answers an interrupt that is open at that point of the log,
and the lifecycle as the runner writes it: :mod:`engine.store.import_rules`)
before a store writes anything; a bad file raises :class:`ImportFormatError`
naming the line. This module does no I/O: stores feed it lines and write the
result through their normal append path, so derived rows are rebuilt.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator, Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from ..errors import HitlError
from ..jsonin import JSONInputError, loads, plain_json, where_invalid
from ..models import Event, Session, StoredEvent
from .base import SessionStore
from .capabilities import EventRows, capability
from .import_rules import Replay

if TYPE_CHECKING:
    from ..checkpoints import Builder

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
    async for page in export_pages(store, session_id, page_size=page_size):
        for line in page:
            yield line


async def export_pages(store: SessionStore, session_id: str, *, page_size: int = 1000) -> AsyncIterator[list[str]]:
    """:func:`export_lines` a page at a time: the header line alone, then the
    lines of each page of events (a writer writes each page at once)."""
    session = await store.get_session(session_id)
    yield [header_line(session)]
    after = 0
    stored = capability(store, EventRows)
    if stored is not None:  # the stored JSON as it is: one JSON object per row, checked by its ends
        while after < session.last_seq:
            raw = await stored.event_rows(session_id, after_seq=after, limit=min(page_size, session.last_seq - after))
            if not raw:
                break
            lines = []
            for seq, text in raw:
                if not (text.startswith("{") and text.endswith("}")) or "\n" in text:
                    text = (await store.event_at(session_id, seq)).event.to_json()  # the store says what is wrong
                lines.append(f'{{"seq":{seq},"event":{text}}}\n')
            yield lines
            after = raw[-1][0]
        return
    while after < session.last_seq:
        page = await store.events(session_id, after_seq=after, limit=min(page_size, session.last_seq - after))
        if not page:
            break
        yield [event_line(stored) for stored in page]
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
        obj = loads(text, "it")
    except json.JSONDecodeError as e:
        raise ImportFormatError(line, f"is not valid JSON ({where_invalid(e)})") from None
    except JSONInputError as e:
        raise ImportFormatError(line, str(e).removeprefix("it: ").removeprefix("it ")) from None
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
    works), or the whole text at once. Blank lines are ignored. A store that
    writes an import uses :class:`ExportReader` instead, so that it never holds
    every parsed event at once.
    """
    reader = ExportReader(lines)
    return ParsedExport(session=reader.session, events=list(reader.events()))


class ExportReader:
    """An export read line by line: :attr:`session` (the header, validated when
    the reader is made), then :meth:`events` yields each event once it passed
    every check of :func:`parse_export` (format, seq, model, and that the
    lifecycle can produce it after the events before it), and raises
    :class:`ImportFormatError` naming the line on the first problem, the count
    against the header's ``last_seq`` included, after the last line. A store
    consumes the whole iterator before it writes anything, so a bad file still
    writes nothing; each line is parsed once.

    With ``checkpoints=True`` the same pass folds the session's seek checkpoints
    (:class:`engine.checkpoints.Builder`, as a turn end would write them): a
    store writes :attr:`checkpoints` ``.rows`` with the import, in its
    transaction, instead of reading every event back to compute them."""

    def __init__(self, lines: Iterable[str | bytes] | str | bytes, *, checkpoints: bool = False) -> None:
        if isinstance(lines, str | bytes | bytearray):
            lines = lines.splitlines()
        self._lines = enumerate(lines, start=1)
        self._last_line = 0
        self.session = self._header()
        self.checkpoints: Builder | None = None
        if checkpoints:
            from ..checkpoints import Builder

            self.checkpoints = Builder()

    def _objects(self) -> Iterator[tuple[int, dict[str, Any]]]:
        """(line number, JSON object) of each non-blank line not read yet."""
        for n, raw in self._lines:
            self._last_line = n
            text = _decode(raw, n)
            if text.strip():
                yield n, _json_object(text, n)

    def _header(self) -> Session:
        for n, obj in self._objects():
            if n != 1 or "format" not in obj:
                raise ImportFormatError(n, 'the first line must be the header {"format": "hitl-session", ...}')
            session = _parse_header(obj)
            if not session.id.strip():
                raise ImportFormatError(1, "the header's session id is empty")
            return session
        raise ImportFormatError(max(self._last_line, 1), "the file is empty (no header line)")

    def _event_lines(self) -> Iterator[tuple[int, dict[str, Any] | tuple[Event, str | bytes]]]:
        """(line number, JSON object) of each non-blank line not read yet, or
        (line number, (Event, its JSON)) for a line as an export writes it --
        ``{"seq":N,"event":{...}}`` with N the next seq -- whose event passes the
        model parsed straight from its text (one parse, no dict in between). A
        line that does not is read the general way (:meth:`_objects`), which
        says what is wrong with it, as it always did."""
        validate = Event.__pydantic_validator__.validate_json
        match, match_bytes = _EXPORT_LINE.fullmatch, _EXPORT_LINE_BYTES.fullmatch
        expected = 1
        for n, raw in self._lines:
            self._last_line = n
            # Bytes (a file's lines) are parsed as they are: the parser refuses what
            # is not UTF-8, and such a line is then decoded, which names the byte.
            m = match_bytes(raw) if type(raw) is bytes else match(text := _decode(raw, n))
            if m is not None and int(m[1]) == expected and plain_json(m.string):  # (the whole line: m[0] would copy it)
                body = m[2]  # (each m[2] is a copy of the event's bytes)
                try:
                    yield n, (validate(body), body)
                    expected += 1
                    continue
                except ValueError:  # pydantic's ValidationError too: the general way names the problem
                    pass
            text = _decode(raw, n)
            if text.strip():
                yield n, _json_object(text, n)
                expected += 1

    def events(self) -> Iterator[Event]:
        replay = _Replay(self.checkpoints)  # one fold: the lifecycle checks and the checkpoints
        count = 0
        for n, obj in self._event_lines():
            if isinstance(obj, tuple):  # a line as an export writes it, its seq the next one: checked
                event = obj[0]
                seq = count = count + 1
                replay.check(event, seq, n, obj[1])
                yield event
                continue
            if len(obj) != 2 or "seq" not in obj or "event" not in obj:
                raise ImportFormatError(n, f"an event line has exactly the keys 'seq' and 'event' (got {sorted(obj)})")
            seq = obj["seq"]
            expected = count + 1
            if not isinstance(seq, int) or isinstance(seq, bool) or seq != expected:
                raise ImportFormatError(n, f"events out of order: expected seq {expected}, got {seq!r}")
            try:
                event = Event.model_validate(obj["event"])
            except ValidationError as e:
                raise ImportFormatError(n, f"invalid event {seq}: {_shorten(e)}") from None
            replay.check(event, seq, n)
            count = expected
            yield event
        if count != self.session.last_seq:
            raise ImportFormatError(
                self._last_line,
                f"the header says {self.session.last_seq} events but the file has {count} (truncated or edited file)",
            )


_EXPORT_LINE = re.compile(r'\{"seq":(0|[1-9][0-9]{0,17}),"event":(\{.*\})\}[ \t\n\r]*', re.DOTALL)
"""An event line as :func:`event_line` writes it (JSON's own whitespace after it)."""
_EXPORT_LINE_BYTES = re.compile(_EXPORT_LINE.pattern.encode(), re.DOTALL)


class _Replay:
    """An import is as strict as live writes: the log must be one the lifecycle
    can produce (:mod:`engine.store.import_rules`), and every event id unique,
    every invocation id non-blank. Checked here, event by event, before a store
    writes anything, so a store never half-imports; each refusal names the line."""

    def __init__(self, checkpoints: Builder | None = None) -> None:
        self.rules = Replay(checkpoints)
        self.seen_ids: dict[str, int] = {}

    def check(self, event: Event, seq: int, line: int, text: str | bytes | None = None) -> None:
        seen_ids = self.seen_ids
        if event.id in seen_ids:
            raise ImportFormatError(line, f"event {seq} repeats the event id {event.id!r} of line {seen_ids[event.id]}")
        seen_ids[event.id] = line
        if not event.invocation_id.strip():
            raise ImportFormatError(line, f"event {seq} has an empty invocation id")
        problem = self.rules.check(event, seq, text)
        if problem:
            raise ImportFormatError(line, f"event {seq} cannot follow the events before it: {problem}")
