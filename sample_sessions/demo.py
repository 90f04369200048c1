"""Build a demo store: the sample apps run through the real Runner into a store.

Every event in the store is one the engine wrote. The named sessions below are
left in every state an operator meets (waiting on one id, partially answered,
several invocations waiting, completed, failed, re-driven, cancelled, a long
history); ``sessions=N`` adds N more for scale tests by replicating the events
of a few of those sessions (fresh ids, shifted timestamps) through the store's
bulk API when it has one (``SQLiteStore.bulk_load``), else ``append_event``.

Time and ids come from :func:`sample_sessions.clock.frozen_engine`: the clock
starts at ``epoch`` (default: a week ago) and moves forward explicitly between
steps, so sessions look spread over days; with a fixed ``epoch`` the store is
byte-for-byte reproducible.

Command line (also ``hitl demo``)::

    python -m sample_sessions [--db PATH] [--sessions N] [--fresh] [--clock EPOCH] [--long-iterations N]
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from engine import Content, Event, Runner, WorkflowFailed, cancel_invocation
from engine.apps import AppRegistry
from engine.errors import ConflictError, SessionNotFoundError
from engine.models import Session
from engine.store.base import SessionStore

from . import contract_review, deploy_pipeline, document_review, incident, labelling_batch, refund_approval
from .clock import SimClock, frozen_engine

DEFAULT_LONG_ITERATIONS = 300
"""Loop iterations of ``deploy-long-1`` (about 11 events each)."""

FIXTURE_EPOCH = 1_767_225_600.0
"""2026-01-01T00:00:00Z, the clock of the committed fixture store."""

FIXTURE_PATH = Path(__file__).parent / "fixtures" / "demo.sqlite"


@dataclass(frozen=True)
class Expect:
    """What a named demo session looks like when the generator is done."""

    app_name: str
    user_id: str
    status: str
    """The session status (``store.list_sessions``)."""
    open_ids: int
    """Open interrupt ids in the session."""
    invocations: int
    about: str


EXPECTED: dict[str, Expect] = {
    "refund-waiting-1": Expect("refund_approval", "alice", "waiting", 2, 1, "waiting on finance and risk (two ids)"),
    "refund-partial-1": Expect("refund_approval", "bob", "waiting", 1, 1, "finance answered, risk still open"),
    "refund-multi-1": Expect(
        "refund_approval", "carol", "waiting", 5, 3, "three orders waiting in one session, one partially answered"
    ),
    "refund-completed-1": Expect("refund_approval", "alice", "completed", 0, 1, "approved by both and paid once"),
    "refund-rejected-1": Expect("refund_approval", "dave", "completed", 0, 1, "risk rejected; nothing paid"),
    "refund-cancelled-1": Expect("refund_approval", "bob", "cancelled", 0, 1, "cancelled by an operator while waiting"),
    "review-waiting-1": Expect("document_review", "erin", "waiting", 1, 1, "waiting on one id; draft output kept"),
    "review-completed-1": Expect(
        "document_review", "erin", "completed", 0, 1, "signed off (re-executed) and published"
    ),
    "deploy-waiting-1": Expect("deploy_pipeline", "dave", "waiting", 1, 1, "third loop iteration waiting at its gate"),
    "deploy-completed-1": Expect("deploy_pipeline", "dave", "completed", 0, 1, "promoted on the first iteration"),
    "deploy-long-1": Expect("deploy_pipeline", "ops-bot", "waiting", 1, 1, "a long loop: thousands of events"),
    "labels-partial-1": Expect("labelling_batch", "carol", "waiting", 24, 1, "36 dynamic children, 12 labelled"),
    "labels-completed-1": Expect("labelling_batch", "carol", "completed", 0, 1, "6 dynamic children, all labelled"),
    "incident-waiting-1": Expect(
        "incident", "oncall", "waiting", 1, 1, "one of two ids answered: the node keeps waiting, nothing ran"
    ),
    "incident-failed-1": Expect("incident", "oncall", "failed", 0, 1, "mitigate failed after the answer"),
    "incident-redriven-1": Expect("incident", "oncall", "completed", 0, 1, "failed, then re-driven to completion"),
    "contracts-partial-1": Expect(
        "contract_review", "frank", "waiting", 2, 1, "a parallel worker over 9 documents: 3 flagged, 1 answered"
    ),
}
"""The named sessions, in creation order."""

BULK_TEMPLATES = ["refund-waiting-1", "refund-completed-1", "incident-failed-1", "review-waiting-1"]
"""Sessions whose events are replicated for ``sessions=N``."""

BULK_USERS = 97
"""Bulk sessions cycle through this many users (``user-001`` ...)."""


@dataclass
class DemoReport:
    created: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    """Named sessions already in the store (left untouched)."""
    bulk: int = 0
    bulk_events: int = 0
    seconds: float = 0.0


class Demo:
    """Runs the sample apps against one store (what each scenario uses)."""

    def __init__(self, store: SessionStore, clock: SimClock, registry: AppRegistry) -> None:
        self.store = store
        self.clock = clock
        self.registry = registry
        self._runners: dict[str, Runner] = {}

    def runner(self, app_name: str) -> Runner:
        if app_name not in self._runners:
            self._runners[app_name] = self.registry.runner(app_name, self.store)
        return self._runners[app_name]

    async def _drain(self, events: AsyncIterator[Event]) -> Event | None:
        first: Event | None = None
        try:
            async for event in events:
                first = first or event
        except WorkflowFailed:
            pass  # expected by the failure scenarios; every event is persisted
        return first

    async def start(self, app_name: str, user_id: str, session_id: str, text: str) -> str:
        first = await self._drain(self.runner(app_name).run(user_id, session_id, Content.from_text(text)))
        assert first is not None
        return first.invocation_id

    async def answer(self, app_name: str, session_id: str, answers: dict[str, Any], **kw: Any) -> None:
        session = await self.store.get_session(session_id)
        kw.setdefault("operator", "demo")
        await self._drain(self.runner(app_name).run(session.user_id, session_id, Content.from_responses(answers), **kw))

    async def redrive(self, app_name: str, session_id: str, invocation_id: str, **kw: Any) -> None:
        session = await self.store.get_session(session_id)
        kw.setdefault("operator", "demo")
        await self._drain(self.runner(app_name).run(session.user_id, session_id, invocation_id=invocation_id, **kw))


# ------------------------------------------------------------------ scenarios
Scenario = Callable[[Demo, str], Awaitable[None]]

REFUND = refund_approval.app_name
REVIEW = document_review.app_name
DEPLOY = deploy_pipeline.app_name
LABELS = labelling_batch.app_name
CONTRACTS = contract_review.app_name
INCIDENT = incident.app_name


def _yes(note: str = "") -> dict[str, Any]:
    return {"approved": True, "note": note}


async def refund_waiting(d: Demo, sid: str) -> None:
    await d.start(REFUND, "alice", sid, "order-1001")


async def refund_partial(d: Demo, sid: str) -> None:
    await d.start(REFUND, "bob", sid, "order-1002")
    d.clock.advance(minutes=25)
    await d.answer(REFUND, sid, {"finance-order-1002": _yes("within budget")}, operator="fiona", reason="monthly run")


async def refund_multi(d: Demo, sid: str) -> None:
    for i, order in enumerate(("order-2001", "order-2002", "order-2003")):
        if i:
            d.clock.advance(minutes=40)
        await d.start(REFUND, "carol", sid, order)
    d.clock.advance(minutes=15)
    await d.answer(REFUND, sid, {"risk-order-2002": _yes("known customer")}, operator="rick")


async def refund_completed(d: Demo, sid: str) -> None:
    await d.start(REFUND, "alice", sid, "order-1003")
    d.clock.advance(minutes=12)
    await d.answer(REFUND, sid, {"finance-order-1003": _yes()}, operator="fiona")
    d.clock.advance(minutes=30)
    await d.answer(REFUND, sid, {"risk-order-1003": _yes("no signals")}, operator="rick", reason="fraud check done")


async def refund_rejected(d: Demo, sid: str) -> None:
    await d.start(REFUND, "dave", sid, "order-1004")
    d.clock.advance(minutes=50)
    await d.answer(
        REFUND,
        sid,
        {"finance-order-1004": _yes(), "risk-order-1004": {"approved": False, "note": "chargeback pattern"}},
        operator="rick",
    )


async def refund_cancelled(d: Demo, sid: str) -> None:
    inv = await d.start(REFUND, "bob", sid, "order-1005")
    d.clock.advance(hours=2)
    await cancel_invocation(d.store, sid, inv, operator="fiona", reason="customer withdrew the request")


async def review_waiting(d: Demo, sid: str) -> None:
    await d.start(REVIEW, "erin", sid, "Q3 security report")


async def review_completed(d: Demo, sid: str) -> None:
    await d.start(REVIEW, "erin", sid, "Onboarding guide")
    d.clock.advance(hours=3)
    await d.answer(REVIEW, sid, {"signoff-onboarding-guide": {"decision": "approve", "comment": "ship it"}})


async def _deploy_loop(d: Demo, sid: str, user: str, version: str, redeploys: int, finish: bool) -> None:
    await d.start(DEPLOY, user, sid, version)
    for i in range(1, redeploys + 1):
        d.clock.advance(minutes=9)
        await d.answer(DEPLOY, sid, {f"gate-{i}": {"decision": "redeploy", "note": f"canary {i} error rate high"}})
    if finish:
        d.clock.advance(minutes=9)
        await d.answer(DEPLOY, sid, {f"gate-{redeploys + 1}": {"decision": "promote"}})


async def deploy_waiting(d: Demo, sid: str) -> None:
    await _deploy_loop(d, sid, "dave", "v2.4.1", redeploys=2, finish=False)


async def deploy_completed(d: Demo, sid: str) -> None:
    await _deploy_loop(d, sid, "dave", "v2.3.0", redeploys=0, finish=True)


def deploy_long(iterations: int) -> Scenario:
    async def scenario(d: Demo, sid: str) -> None:
        await _deploy_loop(d, sid, "ops-bot", "v3.0.0-rc", redeploys=iterations, finish=False)

    return scenario


async def labels_partial(d: Demo, sid: str) -> None:
    await d.start(LABELS, "carol", sid, "birds-07 36")
    for k in range(1, 13):
        d.clock.advance(minutes=3)
        label = labelling_batch.LABELS[k % len(labelling_batch.LABELS)]
        await d.answer(LABELS, sid, {f"label-birds-07-{k:03d}": label}, operator="carol")


async def labels_completed(d: Demo, sid: str) -> None:
    await d.start(LABELS, "carol", sid, "pets-02 6")
    d.clock.advance(minutes=20)
    await d.answer(LABELS, sid, {f"label-pets-02-{k:03d}": "dog" for k in range(1, 4)}, operator="carol")
    d.clock.advance(minutes=20)
    await d.answer(LABELS, sid, {f"label-pets-02-{k:03d}": "cat" for k in range(4, 7)}, operator="carol")


def _incident_answers(alert: str, action: str, publish: bool) -> dict[str, Any]:
    inc = incident.incident_id(alert)
    return {f"mitigate-{inc}": {"action": action}, f"statuspage-{inc}": {"publish": publish, "text": alert}}


async def incident_waiting(d: Demo, sid: str) -> None:
    alert = "disk usage 91% on db-2"
    await d.start(INCIDENT, "oncall", sid, alert)
    d.clock.advance(minutes=6)
    notice = {f"statuspage-{incident.incident_id(alert)}": {"publish": False}}
    await d.answer(INCIDENT, sid, notice, operator="sam", reason="internal only")


async def incident_failed(d: Demo, sid: str) -> None:
    alert = "api-latency p99 > 2s"
    await d.start(INCIDENT, "oncall", sid, alert)
    d.clock.advance(minutes=7)
    await d.answer(INCIDENT, sid, _incident_answers(alert, "rollback", True), operator="sam")


async def incident_redriven(d: Demo, sid: str) -> None:
    alert = "queue depth > 10k on ingest"
    inv = await d.start(INCIDENT, "oncall", sid, alert)
    d.clock.advance(minutes=4)
    await d.answer(INCIDENT, sid, _incident_answers(alert, "scale_up", False), operator="sam")
    d.clock.advance(minutes=11)
    await d.redrive(INCIDENT, sid, inv, operator="sam", reason="pager API back")


async def contracts_partial(d: Demo, sid: str) -> None:
    await d.start(CONTRACTS, "frank", sid, "acme-q3 9")
    d.clock.advance(minutes=25)
    # Sent as a string, stored coerced to true by the Verdict schema.
    await d.answer(CONTRACTS, sid, {"legal-acme-q3-06": {"approve": "true"}}, operator="frank")


def scenarios(long_iterations: int) -> dict[str, Scenario]:
    table: dict[str, Scenario] = {
        "refund-waiting-1": refund_waiting,
        "refund-partial-1": refund_partial,
        "refund-multi-1": refund_multi,
        "refund-completed-1": refund_completed,
        "refund-rejected-1": refund_rejected,
        "refund-cancelled-1": refund_cancelled,
        "review-waiting-1": review_waiting,
        "review-completed-1": review_completed,
        "deploy-waiting-1": deploy_waiting,
        "deploy-completed-1": deploy_completed,
        "deploy-long-1": deploy_long(long_iterations),
        "labels-partial-1": labels_partial,
        "labels-completed-1": labels_completed,
        "incident-waiting-1": incident_waiting,
        "incident-failed-1": incident_failed,
        "incident-redriven-1": incident_redriven,
        "contracts-partial-1": contracts_partial,
    }
    assert list(table) == list(EXPECTED)
    return table


# ----------------------------------------------------------------------- bulk
def _remap(ident: str, k: int) -> str:
    """A per-replica id: the template id with its first 8 hex digits replaced by ``k``."""
    return f"{k:08x}{ident[8:]}"


async def _bulk(store: SessionStore, count: int, newest: float, report: DemoReport) -> None:
    """``count`` sessions ``bulk-000001``..., older than ``newest``, 45 s apart,
    each a replica of one template session's events."""
    templates: list[tuple[Session, list[Event]]] = []
    for sid in BULK_TEMPLATES:
        session = await store.get_session(sid)
        templates.append((session, [s.event for s in await store.events(sid)]))
    width = max(6, len(str(count)))

    def replicas() -> Iterator[tuple[Session, list[Event]]]:
        for k in range(1, count + 1):
            session, events = templates[k % len(templates)]
            start = newest - 45.0 * k
            shift = start - events[0].timestamp
            copies = [
                e.model_copy(
                    update={
                        "id": _remap(e.id, k),
                        "invocation_id": _remap(e.invocation_id, k),
                        "timestamp": round(e.timestamp + shift, 6),
                    }
                )
                for e in events
            ]
            report.bulk_events += len(copies)
            sid = f"bulk-{k:0{width}d}"
            user = f"user-{k % BULK_USERS + 1:03d}"
            yield Session(id=sid, app_name=session.app_name, user_id=user, created_at=start, updated_at=start), copies

    from engine.store.base import has_capability

    if has_capability(store, "bulk_load"):
        await store.bulk_load(replicas())  # type: ignore[attr-defined]
    else:
        for session, events in replicas():
            await store.create_session(session.app_name, session.user_id, session.id)
            for event in events:
                await store.append_event(session.id, event)
    report.bulk = count


# ----------------------------------------------------------------------- build
async def build_demo(
    store: SessionStore,
    *,
    sessions: int = 0,
    epoch: float | None = None,
    long_iterations: int = DEFAULT_LONG_ITERATIONS,
    registry: AppRegistry | None = None,
    progress: Callable[[str], None] | None = None,
) -> DemoReport:
    """Create the named demo sessions (skipping those already present) and
    ``sessions`` bulk sessions in ``store``."""
    t0 = time.perf_counter()
    report = DemoReport()
    registry = registry or AppRegistry()
    # By default the story ends about now: a week of sessions plus the long loop
    # (9 simulated minutes per iteration), so no timestamp lies in the future.
    start = epoch if epoch is not None else float(int(time.time() - 7 * 86400 - long_iterations * 9 * 60))
    table = scenarios(long_iterations)
    with frozen_engine(start) as frozen:
        clock = frozen.clock
        demo = Demo(store, clock, registry)
        for sid, scenario in table.items():
            clock.advance(hours=7)
            try:
                await store.get_session(sid)
            except SessionNotFoundError:
                pass
            else:
                report.skipped.append(sid)
                continue
            if progress:
                progress(sid)
            frozen.ids.reseed(f"hitl-demo:{sid}")
            await scenario(demo, sid)
            report.created.append(sid)
        if sessions > 0:
            if missing := [t for t in BULK_TEMPLATES if t not in report.created + report.skipped]:
                raise ConflictError(f"bulk templates missing: {missing}")
            if progress:
                progress(f"{sessions} bulk sessions")
            # Bulk sessions are older than every named one. The store stamps
            # updated_at with the clock at write time, so wind it back for them.
            clock.now = start - 1.0
            await _bulk(store, sessions, clock.now, report)
    report.seconds = time.perf_counter() - t0
    return report


def remove_db(path: Path) -> None:
    """Delete a SQLite database and its -wal/-shm files (``--fresh``)."""
    for suffix in ("", "-wal", "-shm", "-journal"):
        p = Path(f"{path}{suffix}")
        if p.exists():
            p.unlink()


async def build_demo_db(
    path: str | Path,
    *,
    sessions: int = 0,
    fresh: bool = False,
    epoch: float | None = None,
    long_iterations: int = DEFAULT_LONG_ITERATIONS,
    registry: AppRegistry | None = None,
    progress: Callable[[str], None] | None = None,
    store_options: dict[str, Any] | None = None,
) -> DemoReport:
    """:func:`build_demo` into a store: a SQLite file (``fresh``: delete it first)
    or a URL (``postgresql://...``; ``fresh`` is refused there: drop the schema yourself)."""
    from engine.errors import HitlError
    from engine.store.base import has_capability
    from engine.store.factory import is_url, open_store, store_label

    if is_url(str(path)) and not str(path).startswith("sqlite:"):
        if fresh:
            raise HitlError(f"--fresh deletes a file; {store_label(str(path))} is a server store: drop its schema instead")
        target: str | Path = str(path)
    else:
        from engine.store.factory import sqlite_path

        target = sqlite_path(path)
        if fresh:
            remove_db(target)
    store = await open_store(target, inline=True, **(store_options or {}))
    try:
        report = await build_demo(
            store, sessions=sessions, epoch=epoch, long_iterations=long_iterations, registry=registry, progress=progress
        )
        if has_capability(store, "checkpoint"):
            await store.checkpoint()  # type: ignore[attr-defined]
    finally:
        await store.close()
    return report


def format_report(report: DemoReport, path: str | Path) -> str:
    lines = [f"demo store: {path}"]
    for sid in report.created:
        e = EXPECTED[sid]
        lines.append(f"  created  {sid:<22} {e.app_name:<16} {e.status:<10} {e.about}")
    for sid in report.skipped:
        lines.append(f"  kept     {sid:<22} (already present; --fresh rebuilds)")
    if report.bulk:
        lines.append(f"  bulk     {report.bulk} sessions, {report.bulk_events} events")
    lines.append(f"done in {report.seconds:.1f}s")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    import argparse

    from engine.errors import HitlError
    from engine.store.factory import default_db_path

    parser = argparse.ArgumentParser(prog="python -m sample_sessions", description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--db", default=None, help="database file (default: $HITL_DB or ~/.local/share/hitl-console/hitl.sqlite)"
    )
    parser.add_argument("--sessions", type=int, default=0, help="add N bulk sessions for scale tests")
    parser.add_argument("--fresh", action="store_true", help="delete the database first")
    parser.add_argument(
        "--clock", type=float, default=None, metavar="EPOCH", help="start the clock here (reproducible)"
    )
    parser.add_argument(
        "--long-iterations", type=int, default=DEFAULT_LONG_ITERATIONS, help="loop iterations of deploy-long-1"
    )
    args = parser.parse_args(argv)
    path = Path(args.db) if args.db else default_db_path()
    try:
        report = asyncio.run(
            build_demo_db(
                path, sessions=args.sessions, fresh=args.fresh, epoch=args.clock, long_iterations=args.long_iterations
            )
        )
    except HitlError as exc:
        print(f"error: {exc}")
        return 1
    print(format_report(report, path))
    return 0
