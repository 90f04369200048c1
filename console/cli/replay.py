"""``hitl replay``: a session's history, event by event, at a position, or as a diff."""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from console.inputs import (
    MAX_IMPORT_BYTES,
    read_bounded,
)
from engine.errors import HitlError

if TYPE_CHECKING:
    from engine import Event, Projection
    from engine.redact import Redactor
    from engine.store.base import SessionStore
    from engine.views import Frame

from .loads import _event_pages, learn_projection, reread
from .options import _opts, _seq, common, open_store
from .output import clock, out, out_json, out_lines, run, short
from .progress import Progress, bulk_read
from .render import render_tree, tree_rows


@click.command()
@common
@click.argument("session_id", metavar="SESSION", required=False)
@click.option("--at", "at", type=click.IntRange(0), callback=_seq, metavar="N", help="Show the node tree as of event N.")
@click.option(
    "--file",
    "file",
    type=click.Path(exists=True, dir_okay=False, allow_dash=True),
    help="Replay an exported .jsonl file (no store needed).",
)
@click.option("--all-runs", is_flag=True, help="With --at: show every loop iteration.")
@click.option(
    "--diff-from",
    "diff_from",
    type=click.IntRange(0),
    callback=_seq,
    metavar="M",
    help="With --at N: what changed between event M and event N (statuses, outputs, runs, interrupts, state).",
)
@click.option("--ui", is_flag=True, help="Open the console's Replay screen (read-only) instead of printing.")
def replay(
    session_id: str | None, at: int | None, file: str | None, all_runs: bool, diff_from: int | None, ui: bool
) -> None:
    """Step through a session's history: each event, its markers and what it changed.

    With --json, one object per event: its markers, the statuses it changed and
    the status of every node run of its invocation after it (what the console's
    Replay screen shows at that event)."""
    red = _opts().redactor()  # the command's one Redactor, handed to what renders
    opts = _opts()
    if (session_id is None) == (file is None):
        raise click.UsageError("give a SESSION or --file EXPORT.jsonl (one of them)")
    if diff_from is not None and at is None:
        raise click.UsageError("--diff-from M needs --at N (the other end of the diff)")
    if ui:
        _replay_ui(session_id, file, at)
        return

    async def body() -> None:
        from engine.replay import Replay
        from engine.views import goto

        if file is not None:
            from engine.store.jsonl import parse_export

            parsed = parse_export(read_bounded(file, MAX_IMPORT_BYTES, "replay --file").splitlines())
            header = parsed.session
            red.learn_events(parsed.events)
            events: list[tuple[int, Event]] = [(n, red.event(e)) for n, e in enumerate(parsed.events, start=1)]
        else:
            assert session_id is not None
            from engine.store.capabilities import EventRows, capability

            async with open_store(write=False) as store:
                header = await store.get_session(session_id)
                for n, name in ((at, "--at"), (diff_from, "--diff-from")):
                    if n is not None and n > header.last_seq:
                        raise HitlError(f"session {header.id} has {header.last_seq} events; {name} {n} is past its end")
                if at and diff_from is None:  # one position: seek, page by page, keeping no event list
                    await _replay_at(red, store, header.id, at, header.last_seq, all_runs, opts.json)
                    return
                if at is not None and diff_from is not None and capability(store, EventRows) is not None:
                    first, second = await _diff_ends(red, store, header.id, diff_from, at)
                    _print_diff(red, header.id, first, second, diff_from, at, opts.json)
                    return
                # --at N (and --diff-from M) need the events up to there, not the rest.
                upto = max(at or 0, diff_from or 0) if at is not None else None
                stored = []
                if upto != 0:  # page by page, saying how far it got past a second
                    progress = Progress(f"replay {session_id}", upto or header.last_seq)
                    async for item in _event_pages(store, session_id, 0, upto):
                        stored.append(item)
                        progress.tick()
                    progress.done()
                red.learn_events(s.event for s in stored)
                events = [(s.seq, red.event(s.event)) for s in stored]
        cursor = Replay(events)
        total = header.last_seq if file is None else len(cursor)
        for n, name in ((at, "--at"), (diff_from, "--diff-from")):
            if n is not None and n > total:
                raise HitlError(f"session {header.id} has {total} events; {name} {n} is past its end")
        if at is not None and diff_from is not None:
            _print_diff(red, header.id, cursor.projection_at(diff_from), cursor.projection_at(at), diff_from, at, opts.json)
        elif at is not None:
            _print_tree_at(red, header.id, dataclasses.replace(goto(cursor, at), total=total), all_runs, opts.json)
        else:
            for k in range(1, len(cursor) + 1):
                _print_frame(red, goto(cursor, k), opts.json)

    with bulk_read():
        run(red, body())


async def _replay_at(red: Redactor, store: SessionStore, session_id: str, at: int, total: int, all_runs: bool, as_json: bool) -> None:
    """``replay SESSION --at N``: the frame from the nearest snapshot (or event 1)
    and the events up to N (:func:`engine.replay_seek.frame_at`)."""
    from engine.replay_seek import frame_at

    frame, _ = await frame_at(store, session_id, at, total, compact_ok=not all_runs)
    # Folded raw (masking every event cost more than the fold): learn the secrets
    # the projection holds, then mask what is printed, like `hitl show`.
    learn_projection(red, frame.projection)
    if frame.step is not None:
        red.learn_events([frame.step.event])
    _print_tree_at(red, session_id, frame, all_runs, as_json, masked=True)


def _replay_ui(session_id: str | None, file: str | None, at: int | None) -> None:
    """The console, read-only, on the Replay screen of a session or a file."""
    from console.app import run_app
    from console.screens.replay import ReplaySource

    if file == "-":
        raise click.UsageError("--ui replays a file, not stdin: save the export first")
    source = ReplaySource(session_id=session_id, file=Path(file) if file else None, at=at)
    opts = _opts()
    run_app(
        opts.db_path(), read_only=True, replay=source, show_secrets=opts.show_secrets, secret_patterns=opts.patterns()
    )


def _print_frame(red: Redactor, frame: Frame, as_json: bool) -> None:
    from engine.views import frame_dict, status_changes

    """One replayed event: its markers, then the statuses it changed."""
    if as_json:
        out_json(red, frame_dict(frame))
        return
    step = frame.step
    assert step is not None
    event = step.event
    notes = [m.text for m in frame.markers]
    out(red,
        f"{step.seq:>6}  {clock(event.timestamp)}  {event.kind:<9} {(event.path or '-'):<40} {'; '.join(notes)}".rstrip()
    )
    changed = status_changes(frame.effects)
    if event.kind == "start":
        changed.pop(event.path or "", None)  # RUNNING, obviously
    if changed:
        out(red, f"{'':>6}  {'':19}  {'':<9} -> {', '.join(f'{p}={s}' for p, s in changed.items())}")


async def _diff_ends(
    red: Redactor, store: SessionStore, session_id: str, first: int, second: int
) -> tuple[Projection, Projection]:
    """The projections after events ``first`` and ``second``, as the Replay cursor
    gives them (its events masked by ``red``, which knows every secret up to the
    later one first), in one fold page by page: no event list, no checkpoint
    copies. One read when every page's text is inert (nothing to learn or mask:
    then the masked events are the events); else, from the first page that is
    not, two: the first learns the secrets (parsing only the events whose text
    shows something to learn), the second masks what needs it and folds."""
    from engine.projection import Projection
    from engine.store.capabilities import EventRows, capability

    from .loads import EVENTS_PAGE, _event_parser

    rows = capability(store, EventRows)
    assert rows is not None
    parse = _event_parser()
    upto = max(first, second)

    async def pages() -> AsyncIterator[list[tuple[int, str]]]:
        last = 0
        while last < upto and (page := await rows.event_rows(session_id, after_seq=last, limit=min(EVENTS_PAGE, upto - last))):
            yield page
            last = page[-1][0]

    async def event_of(seq: int, raw: str) -> Event:
        try:
            return parse(raw)
        except ValueError:  # pydantic's ValidationError too: the store says what is wrong
            return await reread(store, session_id, seq)

    async def fold(telling: set[int] | None) -> tuple[Projection, Projection] | None:
        """The two ends; ``telling`` None: the one read, None when a page is not inert."""
        progress = Progress(f"replay {session_id}", upto)
        proj = Projection()
        ends = {0: Projection()} if 0 in (first, second) else {}
        async for page in pages():
            text = "\n".join(raw for _, raw in page)
            if telling is None and not red.inert(text):
                return None
            knows = telling is not None and red.knows_some_of(text)  # else none of its rows has a known secret
            for seq, raw in page:
                try:
                    event = parse(raw)
                except ValueError:
                    event = await event_of(seq, raw)
                if telling is not None and (seq in telling or (knows and red.knows_some_of(raw))):
                    event = red.event(event)  # (else masking changes nothing)
                proj.apply(event, seq)
                if seq in (first, second):
                    ends[seq] = proj.fork()
            progress.tick(len(page))
        progress.done()
        return ends.get(first, proj), ends.get(second, proj)

    if (found := await fold(None)) is not None:
        return found
    telling: set[int] = set()  # the seqs of the events with something to learn (few)
    async for page in pages():  # a page whose joined text learns nothing: none of its rows does
        if not red.learns_nothing("\n".join(raw for _, raw in page)):
            for seq, raw in page:
                if not red.learns_nothing(raw):
                    telling.add(seq)
                    red.learn_events([await event_of(seq, raw)])
    found = await fold(telling)
    assert found is not None
    return found


def _print_diff(
    red: Redactor, session_id: str, before: Projection, after: Projection, first: int, second: int, as_json: bool
) -> None:
    """``--at N --diff-from M``: the console's diff (``m``, move, ``d``) as text or JSON."""
    from engine.replay import diff
    from engine.views import diff_dict

    rows = diff(before, after)
    if as_json:
        out_json(red, {"session": session_id, "from": first, "to": second, "changes": [diff_dict(r) for r in rows]})
        return
    out(red, f"session {session_id}: what changed from event {first} to event {second}")
    if not rows:
        out(red, "  nothing")
    out_lines(red, (  # events were masked before the fold
        f"  {r.area:<9} {r.key:<48} {'-' if r.before is None else short(r.before, 40)} -> "
        f"{'-' if r.after is None else short(r.after, 40)}"
        for r in rows
    ))


def _print_tree_at(red: Redactor, session_id: str, frame: Frame, all_runs: bool, as_json: bool, masked: bool = False) -> None:
    """``--at N``: the node tree of every invocation after event N, and that event
    (``masked``: pass the rows through the redactor, the frame holds raw values)."""
    from engine.views import frame_dict

    proj, at, total = frame.projection, frame.position, frame.total
    rows: Callable[[Projection, str, bool], list[dict[str, Any]]] = (
        (lambda p, i, a: red.value(tree_rows(p, i, a))) if masked else tree_rows
    )
    if as_json:
        data: dict[str, Any] = {
            "session": session_id,
            "at": at,
            "of": total,
            "invocations": [{"invocation_id": i, "nodes": rows(proj, i, all_runs)} for i in proj.invocations],
            "open": [x.id for x in proj.open_interrupts()],
        }
        if frame.step is not None:
            data["event"] = frame_dict(frame, nodes=False)
        out_json(red, red.value(data) if masked else data)
        return
    out(red, f"session {session_id} at event {at} of {total}")
    if frame.step is not None:
        event = frame.step.event
        out(red, f"event {at}: {event.kind} {event.path or event.author}  {'; '.join(m.text for m in frame.markers)}".rstrip())
    for inv_id in proj.invocations:
        status = proj.invocation_status(inv_id)
        out(red, f"invocation {inv_id}  {status.value if status else '-'}")
        for line in render_tree(rows(proj, inv_id, all_runs)):
            out(red, line)
