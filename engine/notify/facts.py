"""What needs a notification now, each with a stable key.

Read from the rows the store writes in the same transaction as the event
that causes them (the outbox, :mod:`engine.store.notify`): the interrupt
index (an interrupt opens, or is still open after a duration), the
invocation index (a turn failed), the turn requests (a turn held in doubt;
an app's turns waiting while no worker of it is alive). A fact's key names
the event (``interrupt_opened:SESSION:INVOCATION:ID:SEQ``), so the same fact
is the same notification however often it is read, by whichever sender.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..store.capabilities import WorkerQueue, capability

if TYPE_CHECKING:
    from ..store.base import SessionStore
    from .config import NotifyConfig, Rule

FAILED_SCAN = 200
"""Failed sessions read per rule and pass (newest first)."""
STEP_WINDOW = 7 * 86400.0
"""Seconds after a deadline step fired during which its notifications are still sent (retries included)."""


@dataclass
class Notification:
    key: str
    kind: str
    rule: str
    channels: tuple[str, ...]
    attempts: int
    subject: str
    """One line: what happened and what is asked."""
    data: dict[str, Any] = field(default_factory=dict)
    """The webhook's JSON body (without ``links``, added per recipient)."""
    session_id: str | None = None
    interrupt_id: str | None = None
    raised_seq: int | None = None


def _interrupt(kind: str, rule: Rule, r: Any, red: Any) -> Notification:
    key = f"{kind}:{r.session_id}:{r.invocation_id}:{r.interrupt_id}:{r.raised_seq}"
    message = red.text(str(r.args.get("message", "")))
    subject = (f"{r.app_name}: {message}" if kind == "interrupt_opened"
               else f"{r.app_name}: still waiting since {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime(r.raised_at))}: "
                    f"{message}")
    data = {"id": key, "kind": kind, "rule": rule.name, "app_name": r.app_name, "session_id": r.session_id,
            "invocation_id": r.invocation_id, "interrupt_id": r.interrupt_id, "path": r.path, "message": message,
            "payload": red.value(r.args.get("payload")), "response_schema": r.args.get("response_schema"),
            "raised_at": r.raised_at}
    return Notification(key, kind, rule.name, rule.channels, rule.attempts, " ".join(subject.split()), data,
                        r.session_id, r.interrupt_id, r.raised_seq)


async def collect(store: SessionStore, config: NotifyConfig, red: Any, now: float | None = None) -> list[Notification]:
    """Every notification the rules ask for now (one per fact and rule; the
    sender sends each key once per channel)."""
    from .. import bulk

    now = time.time() if now is None else now
    out: list[Notification] = []
    for rule in config.rules:
        where = rule.where()
        for kind in rule.on:
            if kind == "interrupt_opened":
                w = dataclasses.replace(where, older_than=None)
                out += [_interrupt(kind, rule, r, red) for r in await bulk.select(store, w, now=now)]
            elif kind == "interrupt_open_for":
                out += [_interrupt(kind, rule, r, red) for r in await bulk.select(store, where, now=now)]
            elif kind == "turn_failed":
                out += await _failed(store, rule, where.app)
            elif kind == "turn_in_doubt":
                out += await _held(store, rule, where.app)
            elif kind == "pool_empty":
                out += await _pool_empty(store, rule, where.app)
    if config.channels:
        out += await _deadline_steps(store, config, red, now)
    return out


async def _deadline_steps(store: SessionStore, config: NotifyConfig, red: Any, now: float) -> list[Notification]:
    """The reminders and escalations a deadline rule fired (:mod:`engine.deadline_sweep`):
    one notification per fired step that names channels, sent to those configured."""
    from ..store.deadlines import timers
    from ..store.notify import ledger

    fired = [t for t in await timers(store).listing(status="fired", since=now - STEP_WINDOW)
             if t.timer.get("do") in ("remind", "notify", "assign") and t.timer.get("channels")]
    keys = {t.name: f"deadline_{t.timer['do']}:{t.name}" for t in fired}
    finished = {k for k, _ in await ledger(store).finished(sorted(keys.values()))}
    out = []
    for t in fired:
        key = keys[t.name]
        channels = tuple(c for c in t.timer["channels"] if c in config.channels)
        if not channels or (key in finished and all((key, c) in finished for c in channels)):
            continue
        rows = [r for r in await store.lookup_interrupts(t.session_id, [t.interrupt_id])
                if r.invocation_id == t.invocation_id]
        r = rows[0] if rows else None
        message = red.text(str(r.args.get("message", ""))) if r is not None else ""
        owner = getattr(r, "owner", None) if r is not None else None
        do = t.timer["do"]
        what = {"remind": "reminder", "notify": "escalated", "assign": f"escalated to {t.timer.get('group')}"}[do]
        subject = f"{t.app_name}: {what}" + (f" (owner {owner})" if owner else "") + \
            f": still waiting since {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime(t.due_at - float(t.timer.get('after', 0))))}: {message}"
        kind = f"deadline_{do}"
        data = {"id": key, "kind": kind, "rule": t.outcome or "", "app_name": t.app_name, "session_id": t.session_id,
                "invocation_id": t.invocation_id, "interrupt_id": t.interrupt_id, "path": t.path, "message": message,
                "owner": owner, "group": t.timer.get("group"), "fired_at": t.fired_at}
        out.append(Notification(key, kind, kind, channels, 8, " ".join(subject.split()), data, t.session_id,
                                t.interrupt_id, t.raised_seq if r is not None and r.status == "open" else None))
    return out


async def _failed(store: SessionStore, rule: Rule, app: str | None) -> list[Notification]:
    page = await store.list_sessions(app_name=app, status="failed", limit=FAILED_SCAN)
    out = []
    for s in page.items:
        for inv in await store.list_invocations(s.id):
            if inv.status != "failed":
                continue
            key = f"turn_failed:{s.id}:{inv.invocation_id}:{inv.updated_at:.6f}"
            subject = f"{s.app_name}: a turn of session {s.id} failed (invocation {inv.invocation_id})"
            data = {"id": key, "kind": "turn_failed", "rule": rule.name, "app_name": s.app_name, "session_id": s.id,
                    "invocation_id": inv.invocation_id, "failed_at": inv.updated_at}
            out.append(Notification(key, "turn_failed", rule.name, rule.channels, rule.attempts, subject, data, s.id))
    return out


async def _requests(store: SessionStore, app: str | None) -> list[Any]:
    if (q := capability(store, WorkerQueue)) is None:
        return []
    return list(await q.turn_requests([app] if app else None, limit=1000))


async def _held(store: SessionStore, rule: Rule, app: str | None) -> list[Notification]:
    out = []
    for r in await _requests(store, app):
        if r.held is None:
            continue
        key = f"turn_in_doubt:{r.session_id}:{r.invocation_id}:{r.requested_at:.6f}"
        subject = f"{r.app_name}: a turn of session {r.session_id} is held: {' '.join(r.held.split())}"
        data = {"id": key, "kind": "turn_in_doubt", "rule": rule.name, "app_name": r.app_name,
                "session_id": r.session_id, "invocation_id": r.invocation_id, "held": r.held}
        out.append(Notification(key, "turn_in_doubt", rule.name, rule.channels, rule.attempts, subject, data,
                                r.session_id))
    return out


async def _pool_empty(store: SessionStore, rule: Rule, app: str | None) -> list[Notification]:
    from ..handoff import live_workers

    waiting: dict[str, list[Any]] = {}
    for r in await _requests(store, app):
        if r.held is None:
            waiting.setdefault(r.app_name, []).append(r)
    out = []
    for name, rows in sorted(waiting.items()):
        if await live_workers(store, name):
            continue
        oldest = min(r.requested_at for r in rows)
        key = f"pool_empty:{name}:{oldest:.6f}"
        subject = f"{name}: {len(rows)} turn(s) wait and no worker of {name} is alive (hitl worker --app {name}=...)"
        data = {"id": key, "kind": "pool_empty", "rule": rule.name, "app_name": name, "waiting": len(rows),
                "oldest_requested_at": oldest}
        out.append(Notification(key, "pool_empty", rule.name, rule.channels, rule.attempts, subject, data))
    return out
