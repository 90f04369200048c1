"""Move a whole store to another backend (``hitl copy --from A --to B``).

Sessions are copied one at a time through the export format
(:mod:`engine.store.jsonl`): each is exported from the source, validated as a
whole and imported into the target in one transaction with its audit record
(``source`` = the source's label), so memory stays bounded by the largest
session and a crash never leaves half a session behind. The target is its
own checkpoint: a session it already holds with the same last seq is skipped,
so a copy that was stopped (Ctrl-C, crash, lost connection) is resumed by
running the same command again. A session present in both with a different
log is reported and left alone (it diverged; nothing is overwritten).

Copied: sessions, their state and event logs; everything derived (interrupt
index, invocations, summaries, answer/re-drive/cancel audit rows) is rebuilt
by the target's append path. Not copied: leases (transient) and snapshots
(caches); the source's own import audit rows are replaced by the copy's.
Copy from a store nobody writes meanwhile: a session appended to during the
copy is copied as of its export.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from ..errors import SessionNotFoundError, StoreError
from .base import SessionStore


@dataclass
class CopyReport:
    copied: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    """Already in the target with the same log (a resumed copy)."""
    diverged: list[str] = field(default_factory=list)
    """In both stores with different logs: left alone."""
    events: int = 0
    total: int = 0


async def session_ids(store: SessionStore, page_size: int = 1000) -> list[str]:
    """Every session id of ``store`` (keyset-paged)."""
    ids: list[str] = []
    cursor = None
    while True:
        page = await store.list_sessions(limit=page_size, cursor=cursor)
        ids += [s.id for s in page.items]
        if (cursor := page.next_cursor) is None:
            return list(dict.fromkeys(ids))


async def copy_store(
    source: SessionStore,
    target: SessionStore,
    *,
    source_label: str,
    operator: str | None = None,
    ids: list[str] | None = None,
    progress: Callable[[str, str], None] | None = None,
) -> CopyReport:
    """Copy every session of ``source`` into ``target`` (see the module docstring).
    ``ids``: the source's session ids if already listed; ``progress(session_id,
    outcome)`` is called after each session (``copied``/``skipped``/``diverged``)."""
    if target.read_only:
        raise StoreError("the target store is open read-only; nothing was copied")
    report = CopyReport()
    if ids is None:
        ids = await session_ids(source)
    report.total = len(ids)
    for sid in ids:
        src = await source.get_session(sid)
        try:
            have = await target.get_session(sid)
        except SessionNotFoundError:
            have = None
        if have is not None:
            outcome = "skipped" if have.last_seq == src.last_seq else "diverged"
            (report.skipped if outcome == "skipped" else report.diverged).append(sid)
        else:
            lines = [line async for line in source.export_session(sid)]
            # Derived data (the seek checkpoints included) is rebuilt by the import, never copied.
            copied = await target.import_session(
                lines, operator=operator, reason="hitl copy", source=source_label
            )
            if copied.last_seq != src.last_seq:  # cannot happen unless a backend is wrong: say so loudly
                raise StoreError(
                    f"session {sid} was copied with {copied.last_seq} events, the source has {src.last_seq}"
                )
            report.copied.append(sid)
            report.events += copied.last_seq
            outcome = "copied"
        if progress is not None:
            progress(sid, outcome)
    return report
