"""Read commands: ``hitl sessions``, ``show``, ``inbox``, ``events``."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Generator
from contextlib import nullcontext, suppress
from typing import TYPE_CHECKING, Any

import click

from console.text import clean
from console.times import age, zone_name
from engine.owners import INTERRUPTED, QUEUED
from engine.status import (
    INTERRUPTED_FILTER,
    QUEUED_FILTER,
    SESSION_FILTERS,
    DisplayStatus,
    stored_filter,
)

from .loads import (
    EVENTS_PAGE,
    _event_pages,
    event_rows,
    latest_projection,
    parse_row,
    reread,
    resolve_invocation,
    session_projection,
    shown_rows,
)
from .options import _duration, _opts, _seq, common, open_store, page_of
from .output import (
    clock,
    id_list,
    json_text,
    masked_lines,
    more,
    operator_errors,
    out,
    out_json,
    out_lines,
    run,
    short,
    table,
)
from .progress import Progress, bulk_read
from .render import event_summary, health_line, render_tree, schema_blocks, tree_rows

if TYPE_CHECKING:
    from engine.models import Event
    from engine.redact import Redactor
    from engine.store.capabilities import EventRows as EventRowsStore
    from engine.store.factory import EventLog


# ------------------------------------------------------------------- sessions
@click.command()
@common
@click.option("--app", "app_name", metavar="NAME", help="Only this app.")
@click.option("--user", "user_id", metavar="USER", help="Only this user.")
@click.option(
    "--status",
    type=click.Choice(SESSION_FILTERS),
    help="Only sessions in this status (interrupted: a turn stopped mid-run, no process runs it; "
    "queued: a turn waits for a worker of its app).",
)
@click.option(
    "--older-than", "older_than", metavar="DURATION", callback=_duration, help="Not updated for this long (2h, 3d)."
)
@click.option("--text", "--search", "search", metavar="TEXT", help="Session id, user, app or an interrupt id contains TEXT.")
@click.option("--owner", metavar="NAME", help="Only sessions with an open interrupt owned by NAME (me: you, @group).")
@click.option("--unowned", is_flag=True, help="Only sessions with an open interrupt nobody owns.")
@click.option("--limit", type=click.IntRange(1, 10_000), default=50, show_default=True)
@click.option("--cursor", metavar="CURSOR", help="Continue a listing (printed as next cursor).")
def sessions(
    app_name: str | None,
    user_id: str | None,
    status: str | None,
    older_than: float | None,
    search: str | None,
    owner: str | None,
    unowned: bool,
    limit: int,
    cursor: str | None,
) -> None:
    """List sessions, most recently updated first (an OWNER column once an open interrupt has an owner)."""
    red = _opts().redactor()  # the command's one Redactor, handed to what renders
    if owner is not None and unowned:
        raise click.UsageError("--owner and --unowned exclude each other: give one")
    if owner == "me":
        from .options import _operator

        owner = _operator(None)
        if not owner:
            raise click.UsageError("--owner me: no operator name is known (set $USER, or [console] operator in hitl.toml)")
    stored_status = stored_filter(status)  # interrupted: running, no live lease; queued: liveness keeps them
    filters: dict[str, Any] = {
        "app_name": app_name,
        "user_id": user_id,
        "status": stored_status,
        "text": search,
        "owner": "" if unowned else owner,
        "updated_before": time.time() - older_than if older_than is not None else None,
        "limit": limit,
        "cursor": cursor,
    }
    # (summary as SessionSummary.model_dump(), its interrupted invocation ids, its queued ones) per listed session
    items: list[tuple[dict[str, Any], list[str], list[str]]] = []
    next_cursor: str | None = None

    async def body() -> None:
        from engine.liveness import page_health

        nonlocal next_cursor
        async with open_store(write=False) as store:
            page = await page_of(store.list_sessions(**filters))
            health = await page_health(store, [(s.id, s.status) for s in page.items])  # the page's turn requests: one read
            for s in page.items:
                found = health.get(s.id, [])
                items.append((s.model_dump(), [h.invocation_id for h in found if h.interrupted],
                              [h.invocation_id for h in found if h.queued]))
            next_cursor = page.next_cursor

    # The fast path (a short start-up for a read): a SQLite file read with plain sqlite3, no pydantic or
    # asyncio. None when it cannot answer (a URL, no such file, an older or newer
    # schema, a bad cursor): the store path then answers, or refuses the usual way.
    # (``--db sqlite:///PATH`` names the same file and takes the store path.)
    from engine.store.factory import session_rows

    fast = session_rows(_opts().db_path(), **filters)
    if fast is not None:
        items = [(r.summary_dict(), list(r.interrupted), list(r.queued)) for r in fast.items]
        next_cursor = fast.next_cursor
    else:
        run(red, body())
    if status == INTERRUPTED_FILTER:
        items = [i for i in items if i[1]]
    elif status == QUEUED_FILTER:
        items = [i for i in items if i[2] and not i[1]]
    if _opts().json:
        out_json(red, {"sessions": [{**d, "interrupted": inv, "queued": q} for d, inv, q in items],
                       "next_cursor": next_cursor})
        return
    now = time.time()
    rows = [
        [
            d["id"],
            d["app_name"],
            d["user_id"],
            INTERRUPTED if inv else QUEUED if q else d["status"],
            str(d["open_interrupts"]),
            str(d["invocation_count"]),
            str(d["event_count"]),
            age(d["last_event_at"] or d["updated_at"], now),  # an imported session: its events' time, not the import's
        ]
        for d, inv, q in items
    ]
    heads = ["SESSION", "APP", "USER", "STATUS", "OPEN", "INV", "EVENTS", "UPDATED"]
    if any(d.get("owners") for d, _inv, _q in items):  # the column once somebody owns an open interrupt
        rows = [[*row[:4], ", ".join(d["owners"]) or "-", *row[4:]] for row, (d, _inv, _q) in zip(rows, items, strict=True)]
        heads.insert(4, "OWNER")
    out(red, table(rows, heads) if rows else "no sessions")
    if any(inv for _, inv, _q in items):
        out(red, f"{INTERRUPTED}: a turn stopped before it ended; `hitl show SESSION` says how to continue it")
    if any(q and not inv for _, inv, q in items):
        out(red, f"{QUEUED}: an answer is stored and its turn waits for a worker of the app (`hitl workers`)")
    more(red, next_cursor)


# ----------------------------------------------------------------------- show
@click.command()
@common
@click.argument("session_id", metavar="SESSION")
@click.option("--invocation", "invocation", metavar="INV", help="Only this invocation (id or unique prefix).")
@click.option("--all-runs", is_flag=True, help="Show every loop iteration, not only the latest run of each node.")
@click.option("--graph", is_flag=True, help="Draw each invocation as a graph (nodes, edges, groups, what an answer "
              "would run); with --json a nodes/edges structure.")
@click.option("--schemas", is_flag=True, help="Also print each open interrupt's answer schema, readable.")
def show(session_id: str, invocation: str | None, all_runs: bool, graph: bool, schemas: bool = False) -> None:
    """A session's node tree per invocation: runs, statuses, outputs, open interrupts."""
    if graph:
        from .graph import graph_dict, graph_lines

    red = _opts().redactor()  # the command's one Redactor, handed to what renders

    async def body() -> None:
        from engine.handoff import worker_notice
        from engine.liveness import session_health

        async with open_store(write=False) as store:
            session = await store.get_session(session_id)
            invocations = await store.list_invocations(session_id)
            if invocation is not None:
                inv_id = await resolve_invocation(store, session_id, invocation)
                invocations = [i for i in invocations if i.invocation_id == inv_id]
            if all_runs or graph:  # every loop iteration (the graph's loop edges too): the whole log
                proj = await session_projection(store, session_id, red, session.last_seq)
            else:  # the latest runs: each invocation from its snapshot + the events after it
                proj = await latest_projection(store, session_id, [i.invocation_id for i in invocations], red)
            health = await session_health(store, session_id, proj)
            queued_apps = {h.queued_for for h in health.values() if h.queued_for is not None}
            notices = {app: await worker_notice(store, app) for app in sorted(queued_apps)}
        state = red.value(session.state)
        if _opts().json:
            out_json(red,
                {
                    "session": {**session.model_dump(), "state": state},
                    "invocations": [
                        {
                            **i.model_dump(),
                            "health": {**health[i.invocation_id].to_dict(),
                                       "worker_notice": notices.get(health[i.invocation_id].queued_for or "")},
                            "nodes": shown_rows(red, proj, tree_rows(proj, i.invocation_id, all_runs, health[i.invocation_id])),
                            **({"graph": red.value(graph_dict(proj, health[i.invocation_id]))} if graph else {}),
                        }
                        for i in invocations
                    ],
                }
            )
            return
        out(red, f"session {session.id}  app {session.app_name}  user {session.user_id}  events {session.last_seq}")
        if state:
            out(red, f"state   {short(state, 100)}")
        for i in invocations:
            out(red)
            h = health[i.invocation_id]
            status = h.status.value if h.status else DisplayStatus.of(i.status).value
            projected = f"(projection: {h.status.value if h.status else 'no run yet'})"
            if h.interrupted:
                status = f"{INTERRUPTED.upper()} {projected}"
            elif h.queued_for is not None:
                status = f"{DisplayStatus.QUEUED.value} for a worker of {h.queued_for} {projected}"
            out(red, f"invocation {i.invocation_id}  {status}  started {clock(i.started_at)} {zone_name(i.started_at)}  message {short(i.message, 40) or '-'}")
            lines = graph_lines(proj, h) if graph else render_tree(shown_rows(red, proj, tree_rows(proj, i.invocation_id, all_runs, h)))
            out_lines(red, lines)
            open_ids = [x.id for x in proj.open_interrupts(i.invocation_id)]
            if open_ids:
                out(red, f"  open: {id_list(open_ids, 8)}")
            if schemas:
                itrs = proj.open_interrupts(i.invocation_id)
                for line in schema_blocks(red, [(x.id, x.response_schema) for x in itrs], "    "):
                    out(red, line)
            for line in health_line(h, session.id, notices.get(h.queued_for or "")):
                out(red, line)

    with bulk_read() if all_runs or graph else nullcontext():
        run(red, body())


# ---------------------------------------------------------------------- inbox
@click.command()
@common
@click.option("--app", "app_name", metavar="NAME", help="Only this app.")
@click.option("--session", "session_id", metavar="SESSION", help="Only this session.")
@click.option("--limit", type=click.IntRange(1, 10_000), default=50, show_default=True)
@click.option("--cursor", metavar="CURSOR", help="Continue a listing (printed as next cursor).")
@click.option("--schemas", is_flag=True, help="Also print the answer schemas of the listed interrupts, readable.")
@click.option("--due-within", "due_within", metavar="DURATION", callback=_duration,
              help="Only interrupts whose deadline passes within DURATION (1h, 30m; overdue ones too), due first.")
@click.argument("terms", nargs=-1, metavar="[FILTER]...")
def inbox(
    app_name: str | None, session_id: str | None, limit: int, cursor: str | None, terms: tuple[str, ...],
    schemas: bool = False, due_within: float | None = None,
) -> None:
    """Open interrupts across sessions, oldest first (with --due-within or due<1h: due first).

    FILTER terms, as `hitl bulk-answer` and the console's inbox filter read them:
    app=NAME node=NAME age>2h due<1h text=WORDS, payload fields (amount<50 currency=EUR) and
    owners (owner=me owner=NAME owner=@group unowned);
    with a filter every match is listed (no --limit/--cursor paging). A DUE column shows
    the time left of the interrupts that have a deadline."""
    from engine.deadlines import due_at, time_left

    red = _opts().redactor()  # the command's one Redactor, handed to what renders
    if due_within is not None:
        from engine.bulk_filter import format_age

        terms = (*terms, f"due<{format_age(due_within)}")

    async def body() -> None:
        from engine import bulk
        from engine.store.base import Page

        from .options import _operator

        async with open_store(write=False) as store:
            if terms:
                where = bulk.parse_where(terms, bulk.Where(app=app_name, session=session_id), me=_operator(None))
                items = await bulk.select(store, where)
                if where.due_within is not None:  # due first
                    items.sort(key=lambda r: (due_at(r.args, r.raised_at) or 0.0, r.raised_at))
                page = Page(items=items)
            else:
                page = await page_of(
                    store.open_interrupts(app_name=app_name, session_id=session_id, limit=limit, cursor=cursor)
                )
        show(page)

    def show(page: Any) -> None:
        if _opts().json:
            out_json(red,
                {
                    "interrupts": [
                        {**r.model_dump(), "args": {k: v if k == "response_schema" else red.value(v) for k, v in r.args.items()},
                         "due_at": due_at(r.args, r.raised_at)}
                        for r in page.items
                    ],
                    "next_cursor": page.next_cursor,
                }
            )
            return
        from engine.permissions import load_policy  # the stale-claim age is the config's

        policy = load_policy(_opts().config_path())
        now = time.time()
        rows = [
            [age(r.raised_at, now), r.session_id, r.invocation_id[:12], r.path, r.interrupt_id,
             policy.owner_label(r.owner, r.owned_at, now) or "-", short(r.message, 60)]
            for r in page.items
        ]
        heads = ["AGE", "SESSION", "INVOCATION", "NODE", "ID", "OWNER", "MESSAGE"]
        dues = [due_at(r.args, r.raised_at) for r in page.items]
        if any(d is not None for d in dues):  # the column only where some interrupt has a deadline
            rows = [[row[0], time_left(d, now) or "-", *row[1:]] for row, d in zip(rows, dues, strict=True)]
            heads.insert(1, "DUE")
        out(red, table(rows, heads) if rows else "inbox is empty")
        if schemas and rows:
            out(red)
            for line in schema_blocks(red, [(r.interrupt_id, r.response_schema) for r in page.items], ""):
                out(red, line)
        more(red, page.next_cursor)

    # The fast path, as `hitl sessions` has: a page of a SQLite file read with plain
    # sqlite3 into plain rows, no pydantic model, no asyncio. None when it cannot
    # answer (a URL, no such file, another schema, a bad cursor): the store path then
    # answers or refuses the usual way. A FILTER needs the bulk selection (the store path).
    fast = None
    if not terms:
        from engine.store.factory import interrupt_rows

        fast = interrupt_rows(_opts().db_path(), app_name=app_name, session_id=session_id, limit=limit, cursor=cursor)
    if fast is not None:
        show(fast)
    else:
        run(red, body())


@click.command()
@common
@click.argument("session_id", metavar="SESSION")
@click.option("--after", type=click.IntRange(0), callback=_seq, default=0, metavar="SEQ", help="Only events after this seq.")
@click.option("--limit", type=click.IntRange(1), default=None, help="At most this many events.")
@click.option("--tail", is_flag=True, help="Keep printing new events as they are appended (Ctrl-C stops).")
@click.option(
    "--interval", type=click.FloatRange(0.05), default=0.5, show_default=True, help="Polling interval for --tail (a fallback on PostgreSQL, which notifies)."
)
def events(session_id: str, after: int, limit: int | None, tail: bool, interval: float) -> None:
    """A session's event log, one line per event (--tail follows it)."""
    red = _opts().redactor()  # the command's one Redactor, handed to what renders
    opts = _opts()

    async def body() -> None:
        from engine.store.capabilities import EventRows, capability

        async with open_store(write=False) as store:
            header = await store.get_session(session_id)
            printed = 0
            due = max(header.last_seq - after, 0) if limit is None else min(limit, max(header.last_seq - after, 0))
            progress = None if tail else Progress(f"events {session_id}", due)
            # Lines go out a batch at a time (one write, not one per event), and
            # each as it comes when following the log.
            batch = EventLines(red, opts.json, size=1 if tail else 500)
            rows = None if tail else capability(store, EventRows)
            if rows is not None and not opts.json:  # the stored text, a page at a time
                try:
                    await _stored_lines(red, rows, store, session_id, after, due, batch, progress)
                finally:
                    batch.flush()
                    if progress is not None:
                        progress.done()
                return
            if tail:  # woken by notifications where the store has them (PostgreSQL), else polling
                from engine.store.tail import follow

                source: Any = follow(store, session_id, after_seq=after, interval=interval)
            elif rows is not None:  # the stored text: what shows nothing to mask is not walked
                source = _masked_rows(red, store, session_id, after, due)
            else:
                source = _event_pages(store, session_id, after, limit)
            try:
                async for stored in source:
                    if isinstance(stored, tuple):
                        seq, e = stored
                    else:
                        seq, e = stored.seq, red.event(stored.event)  # it learns the event's secrets first
                    batch.add(seq, e)
                    printed += 1
                    if progress is not None:
                        progress.tick()
                    if limit is not None and printed >= limit:
                        return
            finally:
                batch.flush()
                if progress is not None:
                    progress.done()

    # The fast path, as `hitl sessions` has: a SQLite file's rows read with plain
    # sqlite3, no store (pydantic, asyncio) unless a row needs its Event. None when
    # it cannot answer (a URL, no such file or session, another schema): the store
    # path then answers or refuses the usual way.
    target = opts.db_path()
    if not tail and not opts.json:  # (a URL: event_log says None)
        from engine.store.factory import event_log

        log = event_log(target, session_id)
        if log is not None:
            due = max(log.last_seq - after, 0) if limit is None else min(limit, max(log.last_seq - after, 0))
            progress = Progress(f"events {session_id}", due)
            batch = EventLines(red, False, size=500)
            with suppress(KeyboardInterrupt), operator_errors(red), bulk_read(), log:
                try:
                    _log_lines(red, log, after, due, batch, progress)
                finally:
                    batch.flush()
                    progress.done()
            return
    # (a follow runs for ever: it collects as usual)
    with suppress(KeyboardInterrupt), nullcontext() if tail else bulk_read():
        run(red, body())


async def _masked_rows(red: Redactor, store: Any, session_id: str, after: int, count: int) -> AsyncIterator[tuple[int, Event]]:
    """``(seq, red.event(event))`` of ``count`` events after ``after``, parsed from
    the stored text; an event whose text shows nothing to learn or mask
    (:meth:`~engine.redact.Redactor.inert`) is the masked one as it is."""
    async for seq, raw in event_rows(store, session_id, after + count, after):
        event = parse_row(raw) or await reread(store, session_id, seq)
        yield seq, event if red.inert(raw) else red.event(event)


async def _stored_lines(
    red: Redactor, rows: EventRowsStore, store: Any, session_id: str, after: int, count: int, batch: EventLines,
    progress: Progress | None,
) -> None:
    """The text lines of ``count`` events after ``after``, read a page of stored
    text at a time (:func:`_page_lines`); a row it needs as an Event is parsed
    here, or read through the store, which says what is wrong with it."""
    last, left = after, count
    while left > 0 and (page := await rows.event_rows(session_id, after_seq=last, limit=min(EVENTS_PAGE, left))):
        lines = _page_lines(red, page, batch)
        with suppress(StopIteration):
            seq, raw = next(lines)
            while True:
                seq, raw = lines.send(parse_row(raw) or await reread(store, session_id, seq))
        if progress is not None:
            progress.tick(len(page))
        last, left = page[-1][0], left - len(page)


def _log_lines(red: Redactor, log: EventLog, after: int, count: int, batch: EventLines, progress: Progress) -> None:
    """:func:`_stored_lines` on a SQLite file read with plain sqlite3
    (:func:`engine.store.factory.event_log`): the store's modules are loaded only
    for a row that needs its Event (a bad one: CorruptEventError, as the store says it)."""
    last, left = after, count
    while left > 0 and (page := log.rows(last, min(EVENTS_PAGE, left))):
        lines = _page_lines(red, page, batch)
        with suppress(StopIteration):
            seq, raw = next(lines)
            while True:
                from engine.store.sql.rows import parse_event

                seq, raw = lines.send(parse_event(log.session_id, seq, raw))
        progress.tick(len(page))
        last, left = page[-1][0], left - len(page)


def _page_lines(red: Redactor, page: list[tuple[int, str]], batch: EventLines) -> Generator[tuple[int, str], Event, None]:
    """The lines of a page of stored rows, into ``batch``. A page whose text, all
    rows together, shows nothing to learn or mask (:meth:`~engine.redact.Redactor.inert`:
    what it finds in none of the joined rows is in none of them) is read as
    plain JSON, no Event built; in another page each row is tested. A row that
    is not inert (or not an event's shape as plain JSON) is yielded as
    ``(seq, text)`` and its Event sent back, then masked as ever -- after the
    lines before it went out masked with what was known then, as one line at a
    time would have it."""
    from pydantic_core import from_json

    page_inert = red.inert("\n".join(raw for _, raw in page))
    for seq, raw in page:
        if page_inert or red.inert(raw):
            try:
                data = from_json(raw)
                if type(data) is dict and data.keys() <= _EVENT_KEYS and _plain_shape(data):
                    batch.add_data(seq, data, inert=True)
                    continue
            except (ValueError, TypeError, KeyError, AttributeError):  # not an event's shape: parsed below
                pass
        batch.flush()  # it learns from the event first
        event = yield seq, raw
        batch.add_data(seq, red.event(event).model_dump(mode="json", exclude_none=True))


def _plain_shape(data: dict[str, Any]) -> bool:
    """What a line reads of an event's JSON has the Event's types (its ids, time and
    node path): else the row is parsed as an Event, which names what is wrong with it."""
    info = data.get("node_info")
    get = data.get
    return (  # (spelled out, no generator: once per line of a long log)
        type(get("id", "")) is str
        and type(get("invocation_id", "")) is str
        and type(get("author", "")) is str
        and type(get("timestamp", 0.0)) in (int, float)
        and (info is None or (type(info) is dict and type(info.get("path")) is str))
        and type(get("content") or {}) is dict
    )


_EVENT_KEYS = frozenset(("id", "invocation_id", "author", "timestamp", "node_info", "content", "long_running_tool_ids",
                         "output", "route", "state_delta", "error_code", "error_message", "custom_metadata"))
"""The fields of :class:`~engine.models.Event` (tests/cli/test_event_log_speed_paths.py
holds them equal): a JSON object with another key is parsed as an Event, which refuses it."""


class EventLines:
    """``hitl events`` output, written ``size`` lines at a time: the same bytes
    as one ``out``/``out_json`` call per event."""

    def __init__(self, red: Redactor, as_json: bool, size: int) -> None:
        self.red, self.as_json, self.size = red, as_json, size
        self.lines: list[str] = []
        """Lines ready to write."""
        self.text: list[str] = []
        """Text lines not masked yet (:meth:`flush` masks them together)."""
        self.inert = 0
        """How many of them are of events whose stored text is inert (:meth:`add_data`)."""
        self._ts: object = None
        self._clock = clock(None)
        from engine.event_kinds import stored_kind  # (here: the module is loaded by the commands that list, too)

        self._kind = stored_kind

    def add(self, seq: int, e: Event) -> None:
        data = e.model_dump(mode="json", exclude_none=True)
        if self.as_json:
            self.lines.append(json_text(self.red, {"seq": seq, **data}, masked=True))
            if len(self.lines) >= self.size:
                self.flush()
        else:
            self.add_data(seq, data)

    def add_data(self, seq: int, data: dict[str, Any], inert: bool = False) -> None:
        """The text line of the (masked) event whose JSON form is ``data``; ``inert``:
        ``data`` is the stored text of an event that shows nothing to learn or mask
        (:meth:`~engine.redact.Redactor.inert`)."""
        kind = self._kind(data)
        info = data.get("node_info")
        path = (info.get("path") if info else None) or "-"
        ts = data.get("timestamp")
        if ts != self._ts:  # a turn's events share their time: formatted once
            self._ts, self._clock = ts, clock(ts)
        # %-formatting: the text of f"{seq:>6}  {clock}  {kind:<9} {path:<40} {summary}", a
        # third cheaper (once per line of a long log)
        line = "%6d  %s  %-9s %-40s %s" % (seq, self._clock, kind, path, event_summary(data, kind))  # noqa: UP031
        self.text.append(line.rstrip())
        self.inert += inert
        if len(self.text) >= self.size:
            self.flush()

    def flush(self) -> None:
        if self.text:
            if self.inert == len(self.text) and not self.red.knows_secrets():
                # Lines of inert events, nothing learned: the free-text patterns find no
                # match in them -- each needs a word (token, pass...) or "://" that would
                # stand in one of the events' strings, which the text check found in none
                # (the words between the strings: the log's own, none of those). Cleaned only.
                self.lines.append(clean("\n".join(self.text)))
            else:
                self.lines.append(masked_lines(self.red, self.text))
            self.text, self.inert = [], 0
        if self.lines:
            click.echo("\n".join(self.lines))
            self.lines = []
