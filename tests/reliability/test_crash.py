"""Crash during a resume: child processes are SIGKILLed at many points of a turn
and the store, the projection and the operator's way forward are checked
after every kill.

A kill point is one child process that died by SIGKILL in the middle of a
turn. Three ways to pick the moment, mixed by a seeded RNG
(``HITL_CRASH_SEED``; ``HITL_CRASH_POINTS`` kill points, default 100):

* the child kills itself right after its n-th append returned (and was
  acknowledged) -- between events, after the FR is persisted, mid-node;
* the child kills itself inside a side effect, after the effect happened and
  before the node's end record -- the in-doubt window;
* the test kills it from outside after a random delay.

After each kill: the store opens and passes SQLite's integrity check; every
acknowledged event is there, at its seq; seqs are contiguous and event ids
unique; no side effect happened without a start record persisted before it;
the projection is honest (an unfinished turn is "interrupted mid-run", its
lease's owner is seen dead, in-doubt nodes are exactly the started leaves
without an end record; an answer to it is refused; a re-drive without
acknowledgement is refused and writes nothing); and the operator continues it
to completion -- sometimes through another child that is killed again.
Finally: a node that had completed before any kill never ran again, and every
side effect happened exactly once, except in-doubt nodes the operator
acknowledged, which ran at most once more per acknowledgement.
"""

from __future__ import annotations

import asyncio
import itertools
import os
import random
import shutil
import signal
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from console.cli import cli
from engine import Content, Runner
from engine.errors import InDoubtError, InvocationInterruptedError
from engine.liveness import owner_state, session_health
from engine.models import NodeStatus
from engine.projection import Projection, project
from engine.store.sqlite import SQLiteStore

from . import crash_app
from .conftest import logical_dump
from .workers import context, crash_child

SEED = int(os.environ.get("HITL_CRASH_SEED", "20260101"))
KILL_POINTS = int(os.environ.get("HITL_CRASH_POINTS", "100"))
APP_SPEC = f"{crash_app.APP}=tests.reliability.crash_app:workflow"
YES = {"approved": True, "note": "ok"}
EFFECT_PATHS = {
    "refund@1/settle@1/pay@1",
    "refund@1/settle@1/notify@1",
    "refund@1/ship@1/label@1",
    "refund@1/ship@1/label@2",
    "refund@1/archive@1",
}


@dataclass
class Figures:
    kill_points: int = 0
    finished_before_kill: int = 0
    by_how: Counter[str] = field(default_factory=Counter)
    by_state: Counter[str] = field(default_factory=Counter)
    acked_events_checked: int = 0
    in_doubt_acknowledged: int = 0
    reexecuted_in_doubt: int = 0
    lost_events: int = 0
    duplicated_events: int = 0


# ---------------------------------------------------------------- store reads
async def _read(db: Path, sid: str) -> tuple[list[Any], Projection, dict[str, Any]]:
    async with SQLiteStore.open(db) as store:  # a writer: "the store opens"
        assert await store.integrity_check() == []
        events = await store.events(sid)
        proj = project([(s.seq, s.event) for s in events])
        health = await session_health(store, sid, proj)
        leases = {lease.invocation_id: lease for lease in await store.list_leases(sid)}
    return events, proj, {"health": health, "leases": leases}


def read(db: Path, sid: str) -> tuple[list[Any], Projection, dict[str, Any]]:
    return asyncio.run(_read(db, sid))


def starts(proj: Projection, inv: str) -> dict[str, int]:
    return {r.path: r.starts for r in proj.runs(inv)}


# ---------------------------------------------------------------- the scenario
class Scenario:
    """One session of the crash app, driven by killed children and the operator."""

    def __init__(self, root: Path, template: Path, sid: str, inv: str, figures: Figures) -> None:
        self.root = root
        root.mkdir()
        self.db = root / "db.sqlite"
        shutil.copy(template, self.db)
        self.effects = root / "effects.log"
        self.sid, self.inv = sid, inv
        self.figures = figures
        self.completed_at_kill: dict[str, tuple[int, int]] = {}
        """path -> (effects, starts) when first seen COMPLETED after a kill."""
        self.acknowledged: Counter[str] = Counter()
        self.children = 0

    def spec(self, turns: list[dict[str, Any]], **kill: Any) -> dict[str, Any]:
        self.children += 1
        return {
            "db": str(self.db),
            "session": self.sid,
            "effects": str(self.effects),
            "acks": str(self.root / f"acks-{self.children}.log"),
            "turns": turns,
            **kill,
        }

    def run_child(self, spec: dict[str, Any], delay: float | None) -> bool:
        """Run a child; kill it after ``delay`` seconds (if given). True if it died by SIGKILL."""
        proc = context().Process(target=crash_child, args=(spec,), daemon=True)
        proc.start()
        try:
            if delay is not None:
                acks = Path(spec["acks"])
                deadline = time.monotonic() + 20
                while not (acks.exists() and b"ready" in acks.read_bytes()):
                    if not proc.is_alive() or time.monotonic() > deadline:
                        break
                    time.sleep(0.0005)
                time.sleep(delay)
                proc.kill()  # not os.kill: a forkserver child may be reaped (gone) between a check and the signal
            proc.join(30)
            assert proc.exitcode is not None, "child hung"
        finally:
            if proc.is_alive():
                proc.kill()
                proc.join()
        if proc.exitcode == 0:
            return False
        assert proc.exitcode == -signal.SIGKILL, f"child failed: exit code {proc.exitcode}"
        return True

    # ------------------------------------------------------------- checks
    def check(self, spec: dict[str, Any], killed: bool) -> Projection:
        events, proj, extra = read(self.db, self.sid)
        seqs = [s.seq for s in events]
        assert seqs == list(range(1, len(events) + 1)), "seqs are not contiguous"
        ids = [s.event.id for s in events]
        dupes = len(ids) - len(set(ids))
        self.figures.duplicated_events += dupes
        assert dupes == 0, "duplicate event ids"
        acked = [line.split() for line in Path(spec["acks"]).read_text().splitlines() if line.startswith("ack ")]
        for _, seq, event_id in acked:
            present = int(seq) <= len(events) and events[int(seq) - 1].event.id == event_id
            self.figures.lost_events += not present
            assert present, f"acknowledged event {event_id} at seq {seq} is missing"
        self.figures.acked_events_checked += len(acked)
        effects = crash_app.read_effects(self.effects)
        runs = starts(proj, self.inv)
        for path, n in effects.items():  # every side effect was preceded by a persisted start record
            assert n <= runs.get(path, 0), f"{path}: {n} effects but {runs.get(path, 0)} start records"
        health = extra["health"][self.inv]
        mid_run = proj.invocation_status(self.inv) in (NodeStatus.RUNNING, NodeStatus.PENDING, None)
        assert not health.live
        assert health.interrupted == mid_run
        if mid_run:
            lease = extra["leases"].get(self.inv)
            assert lease is not None, "a turn that did not end must leave its lease"
            assert owner_state(lease.owner) == "dead", lease.owner
            leaves = {r.path for r in proj.runs(self.inv) if r.status is NodeStatus.RUNNING and not r.is_container}
            assert set(health.in_doubt) == leaves
        else:
            assert health.in_doubt == ()
        for run in proj.runs(self.inv):
            if run.status is NodeStatus.COMPLETED and run.path in EFFECT_PATHS:
                self.completed_at_kill.setdefault(run.path, (effects.get(run.path, 0), run.starts))
        if killed:
            self.figures.kill_points += 1
            state = "in doubt" if health.in_doubt else "mid-run" if mid_run else proj.invocation_status(self.inv)
            self.figures.by_state[str(getattr(state, "value", state)).lower()] += 1
        return proj

    def cli_show(self) -> str:
        result = CliRunner().invoke(cli, ["--db", str(self.db), "show", self.sid])
        assert result.exit_code == 0, result.output
        return result.stdout

    # ------------------------------------------------------------- operator
    async def _inspect(self) -> tuple[NodeStatus | None, list[str], Any]:
        async with SQLiteStore.open(self.db, read_only=True) as store:
            events = await store.events(self.sid)
            proj = project([(s.seq, s.event) for s in events])
            health = (await session_health(store, self.sid, proj))[self.inv]
        return proj.invocation_status(self.inv), sorted(i.id for i in proj.open_interrupts(self.inv)), health

    async def _run(self, message: Content | None = None, **kw: Any) -> None:
        async with SQLiteStore.open(self.db, inline=True) as store:
            runner = Runner(crash_app.APP, crash_app.workflow, store)
            async for _ in runner.run("u", self.sid, message, **kw):
                pass

    def _cli(self, *args: str) -> Any:
        return CliRunner().invoke(cli, ["--db", str(self.db), "--app", APP_SPEC, *args])

    def _operator_step(self, use_cli: bool) -> bool:
        """One operator action; False when the invocation is done."""
        status, open_ids, health = asyncio.run(self._inspect())
        if status is NodeStatus.COMPLETED:
            return False
        if health.interrupted:
            before = logical_dump(self.db)
            if open_ids:  # answers are refused until the operator continues it
                if use_cli:
                    r = self._cli("resume", self.sid, f"{open_ids[0]}=" + '{"approved": true}')
                    assert r.exit_code == 1 and "interrupted mid-run" in r.stderr, r.output
                else:
                    with pytest.raises(InvocationInterruptedError, match="interrupted mid-run"):
                        asyncio.run(self._run(Content.from_responses({open_ids[0]: YES})))
            if health.in_doubt:
                if use_cli:
                    r = self._cli("redrive", self.sid, self.inv)
                    assert r.exit_code == 1 and "--ack-in-doubt" in r.stderr, r.output
                else:
                    with pytest.raises(InDoubtError) as info:
                        asyncio.run(self._run(invocation_id=self.inv))
                    assert info.value.paths == list(health.in_doubt)
                self.figures.in_doubt_acknowledged += len(health.in_doubt)
                self.acknowledged.update(health.in_doubt)
            assert logical_dump(self.db) == before, "a refused action wrote something"
            if use_cli:
                r = self._cli("redrive", self.sid, self.inv, "--ack-in-doubt")
                assert r.exit_code == 0, r.output
            else:
                asyncio.run(self._run(invocation_id=self.inv, acknowledge_in_doubt=True))
            return True
        assert status is NodeStatus.WAITING, status
        assert open_ids
        asyncio.run(self._run(Content.from_responses({i: YES for i in open_ids})))
        return True

    def operator(self, use_cli: bool) -> None:
        for _ in range(6):
            if not self._operator_step(use_cli):
                return
        pytest.fail("the invocation did not complete after 6 operator actions")

    def final_check(self) -> None:
        events, proj, _ = read(self.db, self.sid)
        assert proj.invocation_status(self.inv) is NodeStatus.COMPLETED
        effects = crash_app.read_effects(self.effects)
        assert set(effects) == EFFECT_PATHS
        runs = starts(proj, self.inv)
        for path, (n_effects, n_starts) in self.completed_at_kill.items():
            assert effects[path] == n_effects, f"{path} completed before a kill and ran again"
            assert runs[path] == n_starts, f"{path} completed before a kill and was started again"
        for path in EFFECT_PATHS:
            assert 1 <= effects[path] <= 1 + self.acknowledged[path], (path, effects[path], self.acknowledged[path])
            self.figures.reexecuted_in_doubt += effects[path] - 1


# ---------------------------------------------------------------- the test
def _template(tmp: Path) -> tuple[Path, str]:
    """A store with session ``s`` waiting on finance and risk (no effects yet)."""
    path = tmp / "template.sqlite"

    async def go() -> str:
        async with SQLiteStore.open(path) as store:
            runner = Runner(crash_app.APP, crash_app.workflow, store)
            first = None
            async for event in runner.run("u", "s", Content.from_text("order-7")):
                first = first or event
            assert first is not None
            return first.invocation_id

    return path, asyncio.run(go())


TURNS = {
    "one message": [{"kind": "answer", "answers": {"finance": YES, "risk": YES}}],
    "two turns": [
        {"kind": "answer", "answers": {"finance": YES}},
        {"kind": "answer", "answers": {"risk": YES}},
    ],
}


def test_sigkill_at_many_points_loses_nothing_and_reruns_nothing_completed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    template, inv = _template(tmp_path)
    rng = random.Random(SEED)
    figures = Figures()
    # Calibrate: one unkilled run per shape gives the number of appends and the duration.
    appends: dict[str, int] = {}
    duration: dict[str, float] = {}
    for name, turns in TURNS.items():
        sc = Scenario(tmp_path / f"calibrate-{len(appends)}", template, "s", inv, figures)
        spec = sc.spec(turns)
        t0 = time.monotonic()
        assert sc.run_child(spec, None) is False
        duration[name] = time.monotonic() - t0
        appends[name] = sum(1 for line in Path(spec["acks"]).read_text().splitlines() if line == "commit")
        sc.check(spec, killed=False)
        sc.final_check()
    monkeypatch.setenv("HITL_CRASH_EFFECTS", "")  # set per scenario below; the operator runs effects too
    n = 0
    t_start = time.monotonic()
    while figures.kill_points < KILL_POINTS:
        n += 1
        assert n < KILL_POINTS * 3, "too many children finished before their kill"
        name = rng.choice(list(TURNS))
        sc = Scenario(tmp_path / f"kp-{n}", template, "s", inv, figures)
        monkeypatch.setenv("HITL_CRASH_EFFECTS", str(sc.effects))
        how = rng.choice(["append", "append", "effect", "timer"])
        delay = None
        if how == "append":
            spec = sc.spec(TURNS[name], kill_after_append=rng.randint(1, appends[name]))
        elif how == "effect":
            spec = sc.spec(TURNS[name], kill_at_effect=rng.choice(crash_app.EFFECT_NODES))
        else:
            spec = sc.spec(TURNS[name])
            delay = rng.uniform(0, duration[name] * 0.8)
        killed = sc.run_child(spec, delay)
        figures.finished_before_kill += not killed
        if killed:
            figures.by_how[how] += 1
        proj = sc.check(spec, killed)
        if n % 10 == 1:  # the CLI says the same as the projection
            shown = sc.cli_show()
            assert ("interrupted mid-run" in shown) == (proj.invocation_status(inv) in (NodeStatus.RUNNING, NodeStatus.PENDING))
        # Sometimes the continue itself is killed (a crash during recovery).
        events, proj, extra = read(sc.db, "s")
        if extra["health"][inv].interrupted and rng.random() < 0.35:
            spec = sc.spec([{"kind": "redrive", "invocation": inv}], kill_after_append=rng.randint(1, 6))
            if extra["health"][inv].in_doubt:
                sc.acknowledged.update(extra["health"][inv].in_doubt)
                figures.in_doubt_acknowledged += len(extra["health"][inv].in_doubt)
            killed = sc.run_child(spec, None)
            if killed:
                figures.by_how["append, during a re-drive"] += 1
            sc.check(spec, killed)
        sc.operator(use_cli=n % 4 == 0)
        sc.final_check()
    elapsed = time.monotonic() - t_start
    print(
        f"\ncrash figures (seed {SEED}): {figures.kill_points} kill points survived in {elapsed:.1f}s "
        f"({figures.finished_before_kill} children finished before their kill); by how: {dict(figures.by_how)}; "
        f"state at kill: {dict(figures.by_state)}; acknowledged events checked: {figures.acked_events_checked}; "
        f"in-doubt nodes acknowledged: {figures.in_doubt_acknowledged}, of which re-executed a side effect: "
        f"{figures.reexecuted_in_doubt}; lost events: {figures.lost_events}; duplicated events: "
        f"{figures.duplicated_events}"
    )
    assert figures.lost_events == 0 and figures.duplicated_events == 0
    assert figures.by_state["in doubt"] > 0 and figures.by_state["mid-run"] > 0, figures.by_state


def test_sigkill_while_starting_an_invocation(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Killed after each append of a new invocation's first turn: the invocation
    is interrupted (even before its root ran), re-driving it raises each
    interrupt exactly once, and answering completes it."""
    template = tmp_path / "empty.sqlite"

    async def make() -> None:
        async with SQLiteStore.open(template) as store:
            await store.create_session(crash_app.APP, "u", "n")

    asyncio.run(make())
    figures = Figures()
    for k in itertools.count(1):  # a kill after every commit of the start, the last one included
        sc = Scenario(tmp_path / f"start-{k}", template, "n", "?", figures)
        monkeypatch.setenv("HITL_CRASH_EFFECTS", str(sc.effects))
        spec = sc.spec([{"kind": "start", "text": "order-9"}], kill_after_append=k)
        assert sc.run_child(spec, None), f"the start finished in fewer than {k} commits"

        async def after_kill(db: Path, k: int) -> bool:
            """Recover; True when the kill came after the start's last commit."""
            async with SQLiteStore.open(db, inline=True) as store:
                (inv,) = [i.invocation_id for i in await store.list_invocations("n")]
                health = (await session_health(store, "n"))[inv]
                last = not health.interrupted
                if last:  # its last commit wrote the root's end with the lease's release
                    assert health.status is NodeStatus.WAITING and health.lease is None, (k, health)
                runner = Runner(crash_app.APP, crash_app.workflow, store)
                if not last:
                    async for _ in runner.run("u", "n", invocation_id=inv, acknowledge_in_doubt=True):
                        pass
                events = await store.events("n")
                raised = Counter(c.id for e in events for c in e.event.interrupt_calls)
                assert raised == {"finance": 1, "risk": 1}, (k, raised)
                async for _ in runner.run("u", "n", Content.from_responses({"finance": YES, "risk": YES})):
                    pass
                proj = project([(s.seq, s.event) for s in await store.events("n")])
                assert proj.invocation_status(inv) is NodeStatus.COMPLETED
                return last

        last = asyncio.run(after_kill(sc.db, k))
        sc.inv = next(iter(read(sc.db, "n")[1].invocations))
        sc.final_check()
        if last:
            break
    assert k >= 3, f"the start wrote only {k} commits"
    print(f"\nstart kill points: {k} survived (after each of the {k} commits of a new invocation's start)")


def _sigint_to_another_thread(pid: int) -> None:
    """SIGINT delivered to one of the process's threads other than the main one, as
    the kernel may choose for a signal sent to the process (Ctrl-C at a terminal)."""
    import ctypes

    deadline = time.monotonic() + 30  # the node writes its side effect, then starts its thread
    while not (others := [int(t) for t in os.listdir(f"/proc/{pid}/task") if int(t) != pid]):
        assert time.monotonic() < deadline, "hitl resume has no thread besides the main one (the app's thread expected)"
        time.sleep(0.005)
    assert ctypes.CDLL(None, use_errno=True).tgkill(pid, others[0], signal.SIGINT) == 0, ctypes.get_errno()


@pytest.mark.parametrize("delivered_to", ["process", "another thread"])
def test_ctrl_c_during_hitl_resume_leaves_it_interrupted(tmp_path: Path, delivered_to: str) -> None:
    """SIGINT to a real ``hitl resume`` while a node with a side effect runs: exit
    code 1, no CANCELLED records, the invocation interrupted mid-run with that node
    in doubt; ``hitl redrive --ack-in-doubt`` finishes it. Also when the signal lands
    on a thread other than the main one: the node pauses a minute, and before the
    fix the main loop slept through Ctrl-C until then (seen as a hung CI run). The
    CLI itself starts no thread (the inline store), so there the thread is the app's."""
    import subprocess
    import sys

    template, inv = _template(tmp_path)
    db = tmp_path / "sigint.sqlite"
    shutil.copy(template, db)
    effects = tmp_path / "effects.log"
    # PYTHONFAULTHANDLER: a process that does not stop is aborted and shows where it hung
    env = {**os.environ, "HITL_CRASH_EFFECTS": str(effects), "HITL_CRASH_PAUSE": "pay", "PYTHONFAULTHANDLER": "1"}
    if delivered_to == "another thread":  # the CLI starts none of its own: the app's code does
        env["HITL_CRASH_THREAD"] = "1"
    hitl = [sys.executable, "-c", "from console.cli import main; main()", "--db", str(db), "--app", APP_SPEC]
    proc = subprocess.Popen(
        [*hitl, "resume", "s", 'finance={"approved": true}', 'risk={"approved": true}'],
        env=env,
        cwd=Path(__file__).resolve().parents[2],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 30
        while "refund@1/settle@1/pay@1" not in crash_app.read_effects(effects):
            assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
            time.sleep(0.01)
        if delivered_to == "process":
            proc.send_signal(signal.SIGINT)  # the process we started, by its pid
        else:
            _sigint_to_another_thread(proc.pid)
        try:
            _, err = proc.communicate(timeout=45)  # well before the paused node's minute is up
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGABRT)  # faulthandler prints every thread's stack
            raise AssertionError("hitl resume did not stop after Ctrl-C:\n" + proc.communicate()[1]) from None
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 1 and "Traceback" not in err, err
    assert err.strip().splitlines()[-1].startswith("error: stopped by Ctrl-C"), err
    events, proj, extra = read(db, "s")
    assert not any(e.event.node_info and e.event.node_info.status is NodeStatus.CANCELLED for e in events)
    health = extra["health"][inv]
    assert health.interrupted and health.in_doubt == ("refund@1/settle@1/pay@1",)
    env.pop("HITL_CRASH_PAUSE")
    shown = subprocess.run([*hitl, "show", "s"], env=env, capture_output=True, text=True, check=True).stdout
    assert "interrupted mid-run" in shown and f"hitl redrive s {inv} --ack-in-doubt" in shown
    done = subprocess.run([*hitl, "redrive", "s", inv, "--ack-in-doubt"], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    _, proj, _ = read(db, "s")
    assert proj.invocation_status(inv) is NodeStatus.COMPLETED
    assert crash_app.read_effects(effects)["refund@1/settle@1/pay@1"] == 2  # the acknowledged re-run
