"""Reading a session for display: ids from prefixes, projections, event pages."""

from __future__ import annotations

import weakref
from collections.abc import AsyncIterator, Callable, Iterable
from typing import TYPE_CHECKING, Any

from engine.errors import HitlError, InvocationNotFoundError, require_id
from engine.status import DisplayStatus
from engine.store.capabilities import EventRows, capability

if TYPE_CHECKING:
    from engine import Event, Projection
    from engine.redact import Redactor
    from engine.store.base import SessionStore


EVENTS_PAGE = 1000
"""Events read per store call (``hitl events``, ``show --all-runs``)."""


async def resolve_invocation(store: SessionStore, session_id: str, text: str) -> str:
    """An invocation id from a unique prefix (never a blank one: BlankIdError)."""
    require_id(text, "the invocation id")
    ids = [i.invocation_id for i in await store.list_invocations(session_id)]
    if text in ids:
        return text
    matches = [i for i in ids if i.startswith(text)]
    if len(matches) == 1:
        return matches[0]
    if not matches:
        raise InvocationNotFoundError(session_id, text)
    raise HitlError(
        f"invocation prefix {text!r} matches {len(matches)} invocations of session {session_id}; give more digits"
    )


async def session_projection(
    store: SessionStore, session_id: str, red: Redactor, total: int | None = None
) -> Projection:
    """The session's whole projection (every loop iteration), folded page by page
    (memory: the projection, not the event list), with progress on stderr past a
    second (``total``: the session's event count). Values are NOT masked: the
    ``red`` learns the secrets it holds; render through ``red.value``."""
    from engine.projection import Projection

    from .progress import Progress

    progress = Progress(f"reading {session_id}", total)
    proj, seq = Projection(), 0
    apply = proj.apply
    if (rows := capability(store, EventRows)) is not None:  # the stored text, parsed here: no StoredEvent per event
        from engine.models import Event

        validate = Event.__pydantic_validator__.validate_json  # (_event_parser's, called without its partial's layer)
        while page := await rows.event_rows(session_id, after_seq=seq, limit=EVENTS_PAGE):
            for seq, raw in page:  # (a page at a time: no generator step per event)
                try:
                    event = validate(raw, strict=True)
                except ValueError:  # pydantic's ValidationError too: the store says what is wrong
                    event = await reread(store, session_id, seq)
                apply(event, seq)
            progress.tick(len(page))
    else:
        while stored := await store.events(session_id, after_seq=seq, limit=EVENTS_PAGE):
            for s in stored:
                apply(s.event, s.seq)
            seq = stored[-1].seq
            progress.tick(len(stored))
    progress.done()
    learn_projection(red, proj)
    return proj


def learn_projection(red: Redactor, proj: Projection) -> None:
    """Teach the command's redactor the secrets a projection holds (outputs,
    inputs, answers, interrupt arguments, state), so that free text repeating
    them is masked too. A projection in which that, with the run paths, errors
    and interrupt ids its tree rows show too, has nothing to learn or mask
    (:meth:`~engine.redact.Redactor.learns_nothing`: one check of it all
    written out as JSON) is remembered: :func:`shown_rows` of its rows then
    needs no second check."""
    import json

    runs, itrs = proj.nodes.values(), proj.interrupts.values()
    outputs: list[Any] = [r.output for r in runs] + [r.input for r in runs]
    answers: list[Any] = [i.response for i in itrs] + [i.args for i in itrs]
    shown = [[r.path for r in runs], [[r.error_code, r.error_message] for r in runs if r.error_code is not None],
             [i.id for i in itrs], _ROW_WORDS]
    # (check_circular off: values parsed from JSON hold no cycle, and it is a tenth of the dump's time)
    if red.learns_nothing(json.dumps([outputs, answers, proj.state, shown], default=str, check_circular=False)):
        _plain[proj] = proj.position
        return
    _plain.pop(proj, None)
    red.learn_large(outputs)
    red.learn_large(answers)
    red.learn_large(proj.state)


def shown_rows(red: Redactor, proj: Projection, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``red.large_value(rows)``: tree rows of ``proj`` (:func:`console.cli.render.tree_rows`)
    masked. They are returned as they are, unchecked, when :func:`learn_projection`
    found nothing to learn or mask in ``proj`` -- every string of a row is a key
    named in :data:`_ROW_WORDS` or stands in what it checked, its status words
    too; an error joins its code and message with ": ", where no free-text
    pattern starts or ends -- and ``red`` has learned no secret since, nor
    ``proj`` folded another event."""
    if _plain.get(proj) == proj.position and not red.knows_secrets():
        return rows
    value: list[dict[str, Any]] = red.large_value(rows)
    return value


_plain: weakref.WeakKeyDictionary[Projection, int] = weakref.WeakKeyDictionary()
"""Projections :func:`learn_projection` found nothing to learn or mask in, and
their position then."""

_ROW_WORDS = (
    *(s.value for s in DisplayStatus),  # (every NodeStatus is one)
    "path", "node", "depth", "status", "display", "output", "error", "failed_attempts", "pending", "answered",
    "earlier_runs", "resumed", "in_doubt", "id", "message", "due_at",
)
"""The keys of a tree row (engine.views.row_json) and of its pending interrupts,
and its status words: checked with a projection's values (tests/cli/test_read_scale_shortcuts.py
holds them to what a row has)."""


async def latest_projection(
    store: SessionStore, session_id: str, invocation_ids: Iterable[str], red: Redactor
) -> Projection:
    """The latest runs of some invocations, each loaded as a resume loads it
    (cached snapshot + the events after it: cost independent of how long the
    session ran), side by side in one projection. Values are NOT masked: render
    through ``red.value`` (``hitl show`` does, row by row); ``red`` learns their secrets."""
    from engine.projection import Projection
    from engine.resume import load_invocation

    merged = Projection()
    for inv in invocation_ids:
        try:
            p = await load_invocation(store, session_id, inv)
        except InvocationNotFoundError:
            continue  # listed but without events yet
        merged.nodes.update(p.nodes)
        merged.interrupts.update(p.interrupts)
        merged.invocations.update(p.invocations)
        merged._latest.update(p._latest)
        merged._max_run.update(p._max_run)
        merged.position = max(merged.position, p.position)
    learn_projection(red, merged)
    return merged


async def _event_pages(store: Any, session_id: str, after: int, limit: int | None) -> AsyncIterator[Any]:
    """A session's events after ``after`` (at most ``limit``), read a page at a
    time so memory stays constant however long the session is."""
    last, left = after, limit
    while left is None or left > 0:
        want = EVENTS_PAGE if left is None else min(EVENTS_PAGE, left)
        page = await store.events(session_id, after_seq=last, limit=want)
        for stored in page:
            yield stored
        if len(page) < want:
            return
        last = page[-1].seq
        if left is not None:
            left -= len(page)


async def event_rows(store: Any, session_id: str, upto: int | None, after: int = 0) -> AsyncIterator[tuple[int, str]]:
    """``(seq, stored JSON)`` of a session's events after ``after`` up to ``upto``
    (all: None), unparsed, a page at a time: a read that can tell from the text
    that an event needs no masking (:meth:`engine.redact.Redactor.inert`) skips
    walking it."""
    last = after
    while upto is None or last < upto:
        want = EVENTS_PAGE if upto is None else min(EVENTS_PAGE, upto - last)
        page = await store.event_rows(session_id, after_seq=last, limit=want)
        for row in page:
            yield row
        if len(page) < want:
            return
        last = page[-1][0]


def parse_row(raw: str) -> Event | None:
    """The event stored as the JSON text ``raw``; None when it does not parse
    (:func:`reread` then says what is wrong with it)."""
    try:
        return _event_parser()(raw)
    except ValueError:  # pydantic's ValidationError too
        return None


def _event_parser() -> Callable[[str], Event]:
    """Event.from_json without its Python layers, strict: raises ValueError
    (pydantic's ValidationError too) for a text that is not an event as the
    store writes it -- the caller then reads it through the store (:func:`reread`),
    which parses the lenient way or names what is wrong. Strict parsing tries no
    coercion: a tenth cheaper on a long log, the same events."""
    from functools import partial

    from engine.models import Event

    return partial(Event.__pydantic_validator__.validate_json, strict=True)


async def reread(store: SessionStore, session_id: str, seq: int) -> Event:
    """The event at ``seq`` read through the store, which raises CorruptEventError
    naming what is wrong with a row that does not parse."""
    return (await store.event_at(session_id, seq)).event
