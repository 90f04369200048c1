"""Bulk answers: one answer value for many open interrupts, across sessions.

"Approve the 40 refunds under 50 EUR older than 2 h": the inbox (console) and
``hitl bulk-answer`` (CLI) both call this module; it adds no rule of its own
to answering. Every invocation gets one ordinary answer through
:func:`engine.operations.answer` (the same validation, operator and reason as
a single answer), its preview is :func:`engine.operations.dry_run`, and the
answers of one bulk action share a batch id, recorded on each answer event and
so on each audit row (``details["batch"]``).

* :class:`Where` / :func:`parse_where` (:mod:`engine.bulk_filter`, re-exported
  here) -- the filter: app, node name, age,
  message text (the store's inbox query filters by those) and payload field
  tests such as ``amount<50`` or ``currency=EUR`` (applied here, to the rows
  the store returned: a payload is the app's JSON, not a column).
* :func:`select` -- the open interrupts a filter matches, oldest first;
  :func:`items` -- an explicit list of (session, invocation, interrupt id).
* :func:`group` -- one :class:`Group` per invocation (one message each);
  :func:`merge` adds explicit items to a filter's groups.
* :func:`dry_run` -- per invocation: auto-complete, re-execute, keep waiting,
  or refused and why; :meth:`BulkPlan.summary` says it in one line.
* :func:`submit` -- the answers, one invocation after the other, with a
  progress callback; a refusal or a failure is that item's result, never the
  batch's: the other items are still applied, and every result is returned.
* Workers: with ``via="auto"`` an item whose app has no code
  registered here (or every item, ``via="worker"``) is validated against the
  stored schema, appended through :func:`engine.handoff.queue_answer` (the
  same batch id, operator and reason on it) and its turn left to a worker: its
  result is ``queued``. :func:`routed_to_worker` is the rule; ``on_notice``
  hears, once per app and before anything is sent, that no worker of it is alive.

What this module cannot see: a bulk answer is not one transaction. Each
invocation's answer commits on its own (as a single answer would), so a batch
stopped half-way (Ctrl-C, a crash) leaves the answered half answered -- the
audit rows with its batch id say which.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from .bulk_filter import (  # noqa: F401 (re-exported: engine.bulk is the bulk-answer API)
    KEYWORDS,
    FieldTest,
    Where,
    format_age,
    parse_age,
    parse_where,
    split_terms,
)
from .errors import HitlError
from .operations import DryRun, Outcome, one_line
from .routing import Via, routed_to_worker  # noqa: F401 (re-exported: the rule bulk answers follow)
from .store.capabilities import WorkerQueue, capability

if TYPE_CHECKING:
    from .apps import AppRegistry
    from .store.base import InterruptRecord, SessionStore

MAX_SELECTED = 10_000
"""A filter matching more open interrupts than this is refused (narrow it)."""

PAGE = 500

Verdict = Literal["auto-complete", "re-execute", "keep waiting", "refused"]
VERDICTS: tuple[Verdict, ...] = ("auto-complete", "re-execute", "keep waiting", "refused")

ResultStatus = Literal["applied", "queued", "refused", "failed", "interrupted"]
RESULT_STATUSES: tuple[ResultStatus, ...] = ("applied", "queued", "refused", "failed", "interrupted")

# ------------------------------------------------------------------ selecting
async def select(
    store: SessionStore, where: Where, *, now: float | None = None, limit: int = MAX_SELECTED
) -> list[InterruptRecord]:
    """The open interrupts ``where`` matches, oldest first (the inbox's order).
    The store filters by app, session, node, text and age; the payload tests
    are applied here. HitlError when more than ``limit`` match."""
    now = time.time() if now is None else now
    before = now - where.older_than if where.older_than is not None else None
    found: list[InterruptRecord] = []
    cursor: str | None = None
    while True:
        page = await store.open_interrupts(
            session_id=where.session, app_name=where.app, node=where.node, text=where.text,
            raised_before=before, limit=PAGE, cursor=cursor,
        )
        found += [r for r in page.items if where.matches(r, now)]
        if len(found) > limit:
            raise HitlError(f"more than {limit:,} open interrupts match {str(where) or 'the filter'}: narrow it")
        cursor = page.next_cursor
        if cursor is None:
            return found


@dataclass(frozen=True)
class ItemRef:
    """One interrupt named explicitly: (session, invocation, interrupt id)."""

    session_id: str
    invocation_id: str
    interrupt_id: str


@dataclass
class Group:
    """The interrupts of one invocation a bulk answer answers: one message."""

    session_id: str
    invocation_id: str
    interrupt_ids: list[str]
    records: list[InterruptRecord] = field(default_factory=list)
    """Their inbox rows (fewer than the ids when an id is not open: its answer is refused)."""

    @property
    def app_name(self) -> str | None:
        return self.records[0].app_name if self.records else None

    @property
    def paths(self) -> list[str]:
        return list(dict.fromkeys(r.path for r in self.records))

    @property
    def label(self) -> str:
        """``SESSION / INVOCATION: id, id``: what a result line names."""
        return f"{self.session_id} / {self.invocation_id}: {', '.join(self.interrupt_ids)}"


def group(records: Iterable[InterruptRecord]) -> list[Group]:
    """One :class:`Group` per invocation, in the order their first row comes."""
    groups: dict[tuple[str, str], Group] = {}
    for r in records:
        g = groups.setdefault((r.session_id, r.invocation_id), Group(r.session_id, r.invocation_id, []))
        if r.interrupt_id not in g.interrupt_ids:
            g.interrupt_ids.append(r.interrupt_id)
            g.records.append(r)
    return list(groups.values())


def merge(groups: list[Group], more: Iterable[Group]) -> list[Group]:
    """``groups`` with ``more`` added: ids of an invocation already there join its group."""
    out = {(g.session_id, g.invocation_id): Group(g.session_id, g.invocation_id, list(g.interrupt_ids), list(g.records))
           for g in groups}
    for g in more:
        have = out.setdefault((g.session_id, g.invocation_id), Group(g.session_id, g.invocation_id, []))
        known = {r.interrupt_id for r in have.records}
        have.interrupt_ids += [i for i in g.interrupt_ids if i not in have.interrupt_ids]
        have.records += [r for r in g.records if r.interrupt_id not in known]
    return list(out.values())


async def items(store: SessionStore, refs: Iterable[ItemRef]) -> list[Group]:
    """Groups for an explicit list of interrupts, with the inbox rows of those
    still open; an id that is not (unknown, answered, cancelled, another
    invocation's) stays in its group, and the answer's validation refuses it
    with the usual message."""
    wanted: dict[tuple[str, str], list[str]] = {}
    for ref in refs:
        ids = wanted.setdefault((ref.session_id, ref.invocation_id), [])
        if ref.interrupt_id not in ids:
            ids.append(ref.interrupt_id)
    by_session: dict[str, list[str]] = {}
    for (sid, _), ids in wanted.items():
        by_session.setdefault(sid, []).extend(ids)
    rows: dict[tuple[str, str, str], InterruptRecord] = {}
    for sid, ids in by_session.items():
        try:
            found = await store.lookup_interrupts(sid, list(dict.fromkeys(ids)))
        except HitlError:
            continue  # an unknown session: its answer says so
        rows.update({(r.session_id, r.invocation_id, r.interrupt_id): r for r in found if r.status == "open"})
    out = []
    for (sid, inv), ids in wanted.items():
        recs = [rows[(sid, inv, i)] for i in ids if (sid, inv, i) in rows]
        out.append(Group(sid, inv, ids, recs))
    return out


# ------------------------------------------------------------------ dry run
@dataclass
class ItemPlan:
    """What the answer would do to one invocation."""

    group: Group
    verdict: Verdict
    """What the answered nodes do: ``auto-complete`` (they complete with the answer,
    their bodies do not run again), ``re-execute`` (one of them, ``rerun_on_resume``,
    runs again), ``keep waiting`` (answered, but they wait for other ids) or
    ``refused`` (the real answer would be refused: :attr:`reason`)."""
    reason: str | None = None
    dry: DryRun | None = None
    worker: bool = False
    """The answer would be stored and its turn left to a worker of the app."""

    @property
    def refused(self) -> bool:
        return self.verdict == "refused"

    @property
    def nodes(self) -> list[str]:
        """The answered nodes the verdict is about (auto-completed or re-executed)."""
        if self.dry is None or self.verdict == "refused":
            return []
        answered = set(self.group.paths)
        return [c.path for c in self.dry.plan.changes if c.path in answered and c.effect == self.verdict]


@dataclass
class BulkPlan:
    """The dry run of a bulk answer: one :class:`ItemPlan` per invocation."""

    value: Any
    items: list[ItemPlan]

    def count(self, verdict: Verdict) -> int:
        return sum(1 for i in self.items if i.verdict == verdict)

    @property
    def interrupts(self) -> int:
        return sum(len(i.group.interrupt_ids) for i in self.items)

    @property
    def refused(self) -> list[ItemPlan]:
        return [i for i in self.items if i.refused]

    def summary(self) -> str:
        """``40 interrupts in 40 invocations: 40 auto-complete, 0 re-execute, 0 refused``
        (``keep waiting`` only when there are some)."""
        parts = [f"{self.count(v)} {v}" for v in VERDICTS if v != "keep waiting" or self.count(v)]
        n, k = self.interrupts, len(self.items)
        workers = sum(1 for i in self.items if i.worker and not i.refused)
        tail = f"; {workers} left to a worker" if workers else ""
        return f"{n} interrupt{'s' * (n != 1)} in {k} invocation{'s' * (k != 1)}: " + ", ".join(parts) + tail

    def reasons(self) -> dict[str, int]:
        """Why items would be refused: each distinct reason with how many items."""
        out: dict[str, int] = {}
        for i in self.refused:
            out[i.reason or "refused"] = out.get(i.reason or "refused", 0) + 1
        return out


def _answers(g: Group, value: Any) -> dict[str, Any]:
    return {iid: value for iid in g.interrupt_ids}


async def dry_run(
    store: SessionStore,
    groups: list[Group],
    value: Any,
    *,
    registry: AppRegistry | Callable[[], AppRegistry] | None = None,
    on_progress: Callable[[int, int], None] | None = None,
    via: Via = "local",
) -> BulkPlan:
    """Each group's :func:`engine.operations.dry_run` (what the single answer's
    preview says), summarised; writes nothing. An item :func:`routed_to_worker`
    is not refused for want of the app's code here: a worker runs it."""
    from . import operations

    reg = _built(registry)
    plans: list[ItemPlan] = []
    for n, g in enumerate(groups, 1):
        plans.append(await _plan_one(store, g, value, reg, operations, via))
        if on_progress is not None:
            on_progress(n, len(groups))
    return BulkPlan(value, plans)


def _built(registry: AppRegistry | Callable[[], AppRegistry] | None) -> Any:
    """The registry built once for the whole batch; when building it fails, what
    was given, so that each item's answer is refused with that reason (as a
    single answer would be)."""
    from .operations import _registry

    try:
        return _registry(registry)
    except HitlError:
        return registry


async def _plan_one(
    store: SessionStore, g: Group, value: Any, registry: Any, operations: Any, via: str = "local"
) -> ItemPlan:
    try:
        app = g.app_name or (await store.get_session(g.session_id)).app_name
        dry = await operations.dry_run(
            store, g.session_id, _answers(g, value), g.invocation_id, app_name=app, registry=registry
        )
    except HitlError as exc:
        return ItemPlan(g, "refused", operations.nothing_written(one_line(exc)))
    worker = routed_to_worker(via, app, registry, store)
    if dry.refusal is not None and not worker:
        return ItemPlan(g, "refused", operations.nothing_written(dry.refusal), dry)
    # The answered nodes decide (a Workflow above them re-executes to go on either way).
    answered = set(g.paths)
    effects = {c.effect for c in dry.plan.changes if c.path in answered}
    if "re-execute" in effects:
        verdict: Verdict = "re-execute"
    elif "auto-complete" in effects:
        verdict = "auto-complete"
    else:
        verdict = "keep waiting"
    return ItemPlan(g, verdict, None, dry, worker=worker)


# ------------------------------------------------------------------ submit
@dataclass
class ItemResult:
    """What the answer did to one invocation."""

    group: Group
    status: ResultStatus
    """``applied`` (written; it ran what it unblocked), ``queued`` (written; a worker
    of the app runs the turn), ``refused`` (nothing written: :attr:`reason`),
    ``failed`` (written, then a node failed) or ``interrupted`` (written, then the
    turn stopped mid-run)."""
    outcome: Outcome | None = None
    reason: str | None = None

    @property
    def ok(self) -> bool:
        return self.status in ("applied", "queued")

    def line(self) -> str:
        """One line for the result list."""
        if self.status == "queued":
            return f"queued   {self.group.label} -> answered, queued for a worker of {self.group.app_name or '?'}"
        if self.status == "applied":
            o = self.outcome
            status = o.status_after.value if o is not None and o.status_after is not None else "?"
            ran = f", ran {len(o.ran)} node{'s' * (len(o.ran) != 1)}" if o is not None and o.ran else ", nothing ran"
            if o is not None and o.approval is not None:  # a multi-approver rule: recorded, not yet answered
                return f"applied  {self.group.label} -> approval recorded ({o.approval})"
            return f"applied  {self.group.label} -> {status}{ran}"
        return f"{self.status:<8} {self.group.label}: {self.reason}"


@dataclass
class BulkResult:
    """A submitted bulk answer: one :class:`ItemResult` per invocation, in order."""

    batch: str
    value: Any
    operator: str | None
    reason: str | None
    results: list[ItemResult]

    def count(self, status: ResultStatus) -> int:
        return sum(1 for r in self.results if r.status == status)

    @property
    def ok(self) -> bool:
        """Every item applied or queued for a worker (the CLI's exit 0)."""
        return all(r.ok for r in self.results)

    @property
    def not_applied(self) -> list[ItemResult]:
        return [r for r in self.results if not r.ok]

    def summary(self) -> str:
        """``batch b-1f3a: 38 applied, 2 refused`` (queued / failed / interrupted only when some)."""
        parts = [f"{self.count('applied')} applied"]
        parts += [f"{self.count('queued')} queued for a worker"] if self.count("queued") else []
        parts += [f"{self.count('refused')} refused"]
        parts += [f"{self.count(s)} {s}" for s in ("failed", "interrupted") if self.count(s)]
        return f"batch {self.batch}: " + ", ".join(parts) + f" of {len(self.results)} invocation{'s' * (len(self.results) != 1)}"


def new_batch_id() -> str:
    return f"batch-{uuid.uuid4().hex[:12]}"


async def submit(
    store: SessionStore,
    groups: list[Group],
    value: Any,
    *,
    registry: AppRegistry | Callable[[], AppRegistry] | None = None,
    operator: str | None = None,
    reason: str | None = None,
    batch: str | None = None,
    session_state: bool = False,
    on_result: Callable[[ItemResult, int, int], None] | None = None,
    on_step: Callable[[Group, Any], None] | None = None,
    via: Via = "local",
    on_notice: Callable[[str], None] | None = None,
    policy: Any = None,
) -> BulkResult:
    """Answer every group with ``value`` (one :func:`engine.operations.answer`
    each, ``operator`` and ``reason`` on every one, all with one batch id), one
    after the other. ``on_result(result, done, total)`` after each item;
    ``on_step(group, step)`` after each event a write persisted. A refusal or a
    failure is that item's result; the batch goes on. Items
    :func:`routed_to_worker` by ``via`` are queued for a worker
    (:func:`engine.handoff.queue_answer`); ``on_notice`` first hears, once per
    app, that no worker of it is alive (:func:`engine.handoff.worker_notice`).
    Every item passes :mod:`engine.answer_gate` (``policy``: who may answer, default
    the process's): an item the operator may not answer, or someone else owns, is
    refused with its reason; a bulk answer never forces."""
    from . import operations

    batch = batch or new_batch_id()
    reg = _built(registry)
    apps = {g.session_id: g.app_name or await _app_of(store, g.session_id) for g in groups}
    to_worker = {sid: routed_to_worker(via, app, reg, store) for sid, app in apps.items()}
    if on_notice is not None:
        from .handoff import worker_notice

        for app in sorted({a for sid, a in apps.items() if to_worker[sid] and a}):
            if capability(store, WorkerQueue) is not None and (notice := await worker_notice(store, app)):
                on_notice(notice)
    results: list[ItemResult] = []
    for n, g in enumerate(groups, 1):
        step = (lambda s, g=g: on_step(g, s)) if on_step is not None else None
        if to_worker[g.session_id]:
            results.append(await _queue_one(store, g, value, operator, reason, batch, step, policy))
        else:
            done = await operations.answer(
                store, g.session_id, _answers(g, value), g.invocation_id, registry=reg, operator=operator,
                reason=reason, session_state=session_state, on_step=step, batch=batch, policy=policy,
            )
            results.append(_result(g, done))
        if on_result is not None:
            on_result(results[-1], n, len(groups))
    return BulkResult(batch, value, operator, reason, results)


async def _app_of(store: SessionStore, session_id: str) -> str | None:
    try:
        return (await store.get_session(session_id)).app_name
    except HitlError:
        return None  # an unknown session: its answer says so


async def _queue_one(
    store: SessionStore, g: Group, value: Any, operator: str | None, reason: str | None, batch: str,
    step: Callable[[Any], None] | None, policy: Any = None,
) -> ItemResult:
    """One item left to a worker: validated against the stored schema and appended;
    ``queued`` when the answer unblocks a turn, ``applied`` when nothing runs."""
    from .handoff import queue_answer
    from .liveness import is_mid_run

    if capability(store, WorkerQueue) is None:
        from .operations import nothing_written

        why = "this store keeps no turn requests: no worker can run the turn (--via local)"
        return ItemResult(g, "refused", Outcome("answer", g.session_id, g.invocation_id), nothing_written(why))
    done = await queue_answer(
        store, g.session_id, _answers(g, value), g.invocation_id, operator=operator, reason=reason, on_step=step,
        batch=batch, policy=policy,
    )
    if done.error is None and done.after is not None and done.invocation_id is not None \
            and is_mid_run(done.after, done.invocation_id):
        return ItemResult(g, "queued", done)
    return _result(g, done)


def _result(g: Group, done: Outcome) -> ItemResult:
    if done.error is None:
        return ItemResult(g, "applied", done)
    if not done.written:
        return ItemResult(g, "refused", done, done.refusal)
    kind: ResultStatus = "failed" if done.error_kind == "failed" else "interrupted"
    return ItemResult(g, kind, done, f"answer written, then {one_line(done.error)}")
