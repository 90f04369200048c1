"""Child processes for the reliability tests (started through a multiprocessing
``forkserver`` that preloads the engine, so each one costs milliseconds).

* :func:`crash_child` runs one turn (answers, a re-drive or a new invocation)
  of :mod:`tests.reliability.crash_app` and acknowledges every event the moment
  its append returned, by one ``write`` to an ack file; it may SIGKILL itself
  after the n-th append or inside a side effect, or be SIGKILLed from outside.
* :func:`answer_worker` answers interrupts of the sample refund app from a
  list, as fast as it can, and reports what happened to each attempt.
"""

from __future__ import annotations

import asyncio
import json
import multiprocessing
import os
import signal
import time
from typing import Any

PRELOAD = [
    "engine",
    "engine.store.sqlite",
    "engine.store.postgres",
    "engine.liveness",
    "engine.apps",
    "sample_sessions.refund_approval",
    "tests.reliability.crash_app",
    "tests.reliability.workers",
]


def context() -> multiprocessing.context.BaseContext:
    """A forkserver context with the engine preloaded (falls back to spawn)."""
    try:
        ctx = multiprocessing.get_context("forkserver")
        ctx.set_forkserver_preload(PRELOAD)
        return ctx
    except ValueError:  # pragma: no cover - platforms without fork
        return multiprocessing.get_context("spawn")


class AckStore:
    """A store whose appends are acknowledged (``seq event_id``) right after they return."""

    def __init__(self, store: Any, ack_fd: int, kill_after: int | str | None, kill_after_first: bool = False) -> None:
        """``kill_after``: die after that many commits, or ``"release"``: right after
        the commit that releases the lease (the turn's last, however many came before:
        parallel branches make the count depend on scheduling)."""
        self._store = store
        self._fd = ack_fd
        self._kill_on_release = kill_after == "release"
        self._kill_after = kill_after if isinstance(kill_after, int) else None
        self._kill_after_first = kill_after_first
        self.appends = 0

    @property
    def capabilities(self) -> frozenset[str]:
        """With ``kill_after_first``, the turn takes its lease the long way, so that its
        first write is the answer and the root's start alone (the usual first write
        also starts the first node that runs user code): killed right after it, the
        turn is interrupted with nothing in doubt."""
        caps = frozenset(self._store.capabilities)
        return caps - {"acquire_and_append"} if self._kill_after_first else caps

    async def append_event(self, session_id: str, event: Any, **kw: Any) -> Any:
        stored = await self._store.append_event(session_id, event, **kw)
        self._acked([stored])
        return stored

    async def append_events(self, session_id: str, events: Any, **kw: Any) -> Any:
        stored = await self._store.append_events(session_id, events, **kw)
        self._acked(stored)
        return stored

    async def append_and_release(self, session_id: str, invocation_id: str, events: Any, **kw: Any) -> Any:
        stored = await self._store.append_and_release(session_id, invocation_id, events, **kw)
        self._acked(stored)
        if self._kill_on_release:
            os.kill(os.getpid(), signal.SIGKILL)
        return stored

    def _acked(self, stored: list[Any]) -> None:
        """One commit: ack its events, then maybe die (a kill point after every commit)."""
        self.appends += 1
        for s in stored:
            os.write(self._fd, f"ack {s.seq} {s.event.id}\n".encode())
        os.write(self._fd, b"commit\n")
        if self._kill_after_first or (self._kill_after is not None and self.appends >= self._kill_after):
            os.kill(os.getpid(), signal.SIGKILL)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)


def crash_child(spec: dict[str, Any]) -> None:
    """Run one turn described by ``spec`` (see the test); exit 0 when it ends."""
    os.environ["HITL_CRASH_EFFECTS"] = spec["effects"]
    if spec.get("kill_at_effect"):
        os.environ["HITL_CRASH_KILL_AT"] = spec["kill_at_effect"]
    else:
        os.environ.pop("HITL_CRASH_KILL_AT", None)
    if spec.get("pause_at_effect"):  # the node sleeps after its effect: killed from outside while in doubt
        os.environ["HITL_CRASH_PAUSE"] = spec["pause_at_effect"]
    else:
        os.environ.pop("HITL_CRASH_PAUSE", None)
    fd = os.open(spec["acks"], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    asyncio.run(_crash_main(spec, fd))
    os.write(fd, b"done\n")
    os.close(fd)


async def _crash_main(spec: dict[str, Any], fd: int) -> None:
    from engine import Content, Runner, WorkflowFailed
    from engine.store import open_store
    from tests.reliability import crash_app

    inner = await open_store(spec["db"], inline=True, busy_timeout=30)
    store = AckStore(inner, fd, spec.get("kill_after_append"), bool(spec.get("kill_after_first_write")))
    runner = Runner(crash_app.APP, crash_app.workflow, store)  # type: ignore[arg-type]
    sid, user = spec["session"], "u"
    os.write(fd, b"ready\n")
    try:
        for turn in spec["turns"]:
            if turn["kind"] == "answer":
                events = runner.run(user, sid, Content.from_responses(turn["answers"]), operator="crash-child")
            elif turn["kind"] == "redrive":
                events = runner.run(
                    user, sid, invocation_id=turn["invocation"], acknowledge_in_doubt=True, operator="crash-child"
                )
            else:
                events = runner.run(user, sid, Content.from_text(turn["text"]))
            async for _ in events:
                pass
    except WorkflowFailed:
        pass
    finally:
        await inner.close()


# --------------------------------------------------------------------- answers

OUTCOMES = ("landed", "AlreadyResolvedError", "ConflictError", "InvocationBusyError")


def answer_worker(spec: dict[str, Any]) -> None:
    """Answer ``spec["attempts"]`` (``[session, {id: value}, busy_retries?]``) after
    the go-file appears; write ``[{session, ids, outcome, event_id, retries}]``
    to ``spec["report"]``."""
    asyncio.run(_answer_main(spec))


async def _answer_main(spec: dict[str, Any]) -> None:
    from engine import Content, HitlError
    from engine.apps import AppRegistry
    from engine.errors import InvocationBusyError
    from engine.store import open_store

    registry = AppRegistry()
    report: list[dict[str, Any]] = []
    store = await open_store(spec["db"], inline=spec.get("inline", True), busy_timeout=30)
    try:
        runner = registry.runner("refund_approval", store)
        runner.lease_wait = spec.get("lease_wait", 0.05)
        while not os.path.exists(spec["go"]):
            time.sleep(0.001)
        for sid, answers, *flags in spec["attempts"]:
            retry = flags[0] if flags else spec.get("busy_retries", 0)
            entry: dict[str, Any] = {"session": sid, "ids": sorted(answers), "retries": 0, "event_id": None}
            while True:
                try:
                    first = None
                    async for event in runner.run("u", sid, Content.from_responses(answers), operator=spec["name"]):
                        first = first or event
                    entry["outcome"] = "landed"
                    entry["event_id"] = first.id if first else None
                except InvocationBusyError:
                    if entry["retries"] < retry:
                        entry["retries"] += 1
                        await asyncio.sleep(0.002 * entry["retries"])
                        continue
                    entry["outcome"] = "InvocationBusyError"
                except HitlError as exc:
                    entry["outcome"] = type(exc).__name__
                    entry["error"] = str(exc)
                break
            report.append(entry)
    finally:
        await store.close()
    with open(spec["report"], "w", encoding="utf-8") as fh:
        json.dump(report, fh)
