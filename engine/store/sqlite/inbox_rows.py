"""The inbox on plain :mod:`sqlite3` (``hitl inbox`` on a SQLite file): one page of
open interrupts as plain rows, no pydantic, no asyncio. Its own module, loaded by
that command only: the store's import (every turn's) does not build these classes.
The statement and the cursor are :mod:`.listing`'s, which the store uses too."""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from .listing import _read_file, interrupt_cursor, interrupt_page_query


@dataclass(frozen=True, slots=True)
class InterruptRow:
    """One line of the inbox: the fields of :class:`~engine.store.base.InterruptRecord`
    as plain values (a listing builds no pydantic model)."""

    interrupt_id: str
    session_id: str
    app_name: str
    user_id: str
    invocation_id: str
    path: str
    event_id: str
    name: str
    args: dict[str, Any]
    raised_seq: int
    raised_at: float
    status: str
    resolved_by: str | None
    resolved_seq: int | None
    owner: str | None
    owned_at: float | None

    @property
    def message(self) -> str:
        return str(self.args.get("message", ""))

    @property
    def response_schema(self) -> dict[str, Any] | None:
        return self.args.get("response_schema")

    def model_dump(self) -> dict[str, Any]:
        """The ``InterruptRecord.model_dump()`` of the row (same keys, same order)."""
        return {f.name: getattr(self, f.name) for f in fields(self)}


@dataclass(slots=True)
class InterruptRows:
    items: list[InterruptRow]
    next_cursor: str | None


def read_interrupt_rows(conn: sqlite3.Connection, **filters: Any) -> InterruptRows:
    """One page of the inbox on ``conn`` (which has ``hitl_lower`` registered)."""
    sql, params = interrupt_page_query(**filters)
    limit = params[-1] - 1
    rows = conn.execute(sql, params).fetchall()
    items = [InterruptRow(*(r[:8] + (json.loads(r[8]),) + r[9:])) for r in rows[:limit]]  # args is JSON text
    nxt = None
    if len(rows) > limit:
        last = items[-1]
        nxt = interrupt_cursor(last.raised_at, last.session_id, last.raised_seq, last.interrupt_id)
    return InterruptRows(items, nxt)


def list_interrupt_rows(path: str | Path, **filters: Any) -> InterruptRows | None:
    """:func:`read_interrupt_rows` of the SQLite file at ``path``, read-only; None
    when this fast path cannot answer (as :func:`.listing.list_session_rows`)."""
    return _read_file(path, lambda conn: read_interrupt_rows(conn, **filters))
