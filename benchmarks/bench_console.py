"""Console benchmarks: first paint with 100,000 sessions, opening a 100,000-event
session, the memory that takes, and the worst key latency per screen while a
1 MB payload, that session and a diff of thousands of changes are open.

    python benchmarks/bench_console.py           # full sizes
    python benchmarks/bench_console.py --quick   # 10x smaller, a few seconds

Stores are generated through the store API (``SQLiteStore.bulk_load``, the
normal append path; snapshots cached as the Runner caches them). Each
measurement runs the real ``HitlApp`` headless in a fresh child process, so its
RSS is the console's alone. Prints one table; exits non-zero only on an error.
Targets: first paint < 1 s, session open < 1 s, RSS < 300 MB.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from engine.models import Content, Event, NodeStatus, Session  # noqa: E402
from engine.projection import Projection  # noqa: E402
from tests.console.big_store import ask, loop_session  # noqa: E402 (the tests build the same long loop)
from tests.console.big_store import node_event as node  # noqa: E402

T0 = 1_767_261_600.0


def _store_cls() -> tuple[Any, str]:
    try:
        from engine.store.sqlite import SQLiteStore

        return SQLiteStore, "SQLiteStore"
    except ImportError:  # pragma: no cover - the SQLite store is part of the engine
        from engine.store import MemoryStore

        return MemoryStore, "MemoryStore (SQLite store unavailable)"


# --------------------------------------------------------------------------- event shapes


def small_session(k: int, rng: random.Random) -> tuple[Session, list[Event]]:
    """A typical session: one invocation, 4-8 events, a mix of endings."""
    ts = T0 + k * 25.0
    inv = f"inv-{k}"
    outcome = rng.choices(["completed", "waiting", "failed", "running"], [6, 3, 1, 0.5])[0]
    root = "wf@1"
    evs = [
        Event(invocation_id=inv, author="user", timestamp=ts, content=Content.from_text(f"order {k}")),
        node(inv, root, ts + 1, lifecycle="start", rerun_on_resume=True, is_container=True, input=f"order {k}"),
        node(inv, f"{root}/lookup@1", ts + 2, lifecycle="start", input=f"order {k}"),
        node(inv, f"{root}/lookup@1", ts + 3, lifecycle="end", status=NodeStatus.COMPLETED).model_copy(
            update={"output": {"order": k, "amount": 42.5}}
        ),
    ]
    if outcome == "waiting":
        evs += [
            node(inv, f"{root}/approve@1", ts + 4, lifecycle="start", input={"order": k}),
            ask(inv, f"{root}/approve@1", f"approve-{k}", ts + 5),
            node(inv, f"{root}/approve@1", ts + 6, lifecycle="end", status=NodeStatus.WAITING),
            node(inv, root, ts + 7, lifecycle="end", status=NodeStatus.WAITING),
        ]
    elif outcome == "failed":
        evs += [
            node(inv, f"{root}/pay@1", ts + 4, lifecycle="start"),
            node(inv, f"{root}/pay@1", ts + 5, lifecycle="end", status=NodeStatus.FAILED).model_copy(
                update={"error_code": "RuntimeError", "error_message": "card declined"}
            ),
            node(inv, root, ts + 6, lifecycle="end", status=NodeStatus.FAILED),
        ]
    elif outcome == "completed":
        evs.append(node(inv, root, ts + 4, lifecycle="end", status=NodeStatus.COMPLETED).model_copy(update={"output": "ok"}))
    session = Session(id=f"s{k:06d}", app_name=rng.choice(["refunds", "billing", "support"]), user_id=f"user{k % 997}",
                      created_at=ts)
    return session, evs


def chat_session(n_invocations: int, per: int) -> tuple[Session, list[Event], list[str]]:
    """Many invocations of ~``per`` events each (a long-lived conversation); the last waits."""
    evs: list[Event] = []
    invs: list[str] = []
    for k in range(n_invocations):
        inv = f"inv-{k:04d}"
        invs.append(inv)
        ts = T0 + k * 60
        root = f"chat@{k + 1}"
        evs += [
            Event(invocation_id=inv, author="user", timestamp=ts, content=Content.from_text(f"question {k}")),
            node(inv, root, ts, lifecycle="start", rerun_on_resume=True, is_container=True, input=f"question {k}"),
        ]
        for j in range(1, (per - 4) // 2 + 1):
            evs.append(node(inv, f"{root}/tool_{j}@1", ts + j, lifecycle="start", input={"q": k}))
            evs.append(node(inv, f"{root}/tool_{j}@1", ts + j, lifecycle="end", status=NodeStatus.COMPLETED)
                       .model_copy(update={"output": {"answer": j}}))
        if k == n_invocations - 1:
            evs += [ask(inv, f"{root}/tool_1@1", "final-approval", ts + 59),
                    node(inv, root, ts + 59, lifecycle="end", status=NodeStatus.WAITING)]
        else:
            evs.append(node(inv, root, ts + 59, lifecycle="end", status=NodeStatus.COMPLETED))
    return Session(id="long-chat", app_name="assistant", user_id="ops", created_at=T0), evs, invs


async def snapshot_invocations(store: Any, session_id: str, events: list[Event], invocations: list[str]) -> None:
    """Cache each invocation's compact projection, as the Runner does after a turn."""
    wanted = set(invocations)
    projs = {inv: Projection() for inv in invocations}
    for seq, e in enumerate(events, 1):
        if e.invocation_id in wanted:
            projs[e.invocation_id].apply(e, seq)
    for inv, p in projs.items():
        await store.put_snapshot(session_id, inv, p.position, p.compact(inv).to_dict())


async def generate(workdir: Path, n_sessions: int, n_events: int) -> dict[str, Any]:
    cls, label = _store_cls()
    rng = random.Random(7)
    info: dict[str, Any] = {"backend": label}
    t = time.perf_counter()
    big = workdir / "sessions.sqlite"
    long = workdir / "long.sqlite"
    for f in workdir.glob("*.sqlite*"):
        f.unlink()
    store = await cls.open(big)
    try:
        await store.bulk_load(small_session(k, rng) for k in range(n_sessions))
        await store.checkpoint()
    finally:
        await store.close()
    info["gen_sessions_s"] = time.perf_counter() - t
    t = time.perf_counter()
    store = await cls.open(long)
    try:
        s, evs, inv = loop_session(n_events)
        await store.bulk_load([(s, evs)])
        await snapshot_invocations(store, s.id, evs, [inv])
        c, cevs, invs = chat_session(max(n_events // 100, 2), 100)
        await store.bulk_load([(c, cevs)])
        await snapshot_invocations(store, c.id, cevs, invs)
        await store.checkpoint()
    finally:
        await store.close()
    info["gen_long_s"] = time.perf_counter() - t
    info["loop_events"] = len(evs)
    info["chat_events"] = len(cevs)
    info["chat_invocations"] = len(invs)
    return info


# --------------------------------------------------------------------------- measurements (child process)


def rss_mb() -> tuple[float, float]:
    """(current RSS, peak RSS) of this process in MB. The peak is VmHWM: ru_maxrss
    would include the generating parent's peak (Linux keeps it across exec)."""
    cur = peak = 0.0
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    cur = int(line.split()[1]) / 1024
                elif line.startswith("VmHWM:"):
                    peak = int(line.split()[1]) / 1024
    except OSError:
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return cur, peak


async def painted(app: Any) -> float:
    """The time at which the screen has been refreshed after everything pending."""
    fut: asyncio.Future[float] = asyncio.get_running_loop().create_future()
    app.screen.call_after_refresh(lambda: fut.done() or fut.set_result(time.perf_counter()))
    return await fut


async def until(predicate: Any, step: float = 0.001) -> None:
    while not predicate():
        await asyncio.sleep(step)


async def measure_sessions(db: str) -> dict[str, Any]:
    from textual.widgets import DataTable

    from console.app import HitlApp
    from console.screens.sessions import SessionsScreen

    t0, c0 = time.perf_counter(), time.process_time()
    app = HitlApp(db_path=db, read_only=True, poll_interval=None, refresh_interval=None, cursor_blink=False)
    async with app.run_test(size=(120, 40)):
        await until(lambda: isinstance(app.screen, SessionsScreen) and any(t.row_count for t in app.screen.query(DataTable)))
        first_paint = await painted(app) - t0
        first_paint_cpu = time.process_time() - c0  # the console's own cost (wall time measures the load)
        screen = app.screen
        rows = screen.query_one(DataTable).row_count
        # the home summary line (issue 16), read in a worker after the first page is drawn
        await until(lambda: getattr(screen, "summary", True) is not None)
        summary = await painted(app) - t0
        t1 = time.perf_counter()
        screen.action_set_status("waiting")
        await until(lambda: not screen._busy and screen.rows and all(r.status == "waiting" for r in screen.rows))
        filtered = await painted(app) - t1
        table = screen.query_one(DataTable)
        t2 = time.perf_counter()
        table.action_scroll_bottom()
        await until(lambda: table.row_count > 100 and not screen._busy_more)
        next_page = await painted(app) - t2
    return {"first_paint_s": first_paint, "first_paint_cpu_s": first_paint_cpu, "rows": rows, "filter_s": filtered, "next_page_s": next_page,
            "summary_s": summary, "summary_call_s": await summary_call(db), "rss_mb": rss_mb()}


async def summary_call(db: str) -> float | None:
    """One ``engine.home.home_summary`` on the store (None: an engine without it)."""
    try:
        from engine.home import home_summary
    except ImportError:
        return None
    from engine.store import open_store

    store = await open_store(db, read_only=True)
    try:
        t0 = time.perf_counter()
        await home_summary(store, time.time())
        return time.perf_counter() - t0
    finally:
        await store.close()


async def measure_open(db: str, session_id: str) -> dict[str, Any]:
    from console.app import HitlApp
    from console.screens.session import SessionScreen
    from console.screens.sessions import SessionsScreen
    from console.widgets.event_log import EventLog

    app = HitlApp(db_path=db, read_only=True, poll_interval=0.5, refresh_interval=None, cursor_blink=False)
    async with app.run_test(size=(120, 40)):
        await until(lambda: isinstance(app.screen, SessionsScreen))
        await painted(app)
        base = rss_mb()[0]
        t0, c0 = time.perf_counter(), time.process_time()
        app.open_session(session_id)
        await until(lambda: isinstance(app.screen, SessionScreen) and app.screen.view is not None)
        opened = await painted(app) - t0
        opened_cpu = time.process_time() - c0
        screen = app.screen
        tree_nodes = len(screen.run_tree._by_path)
        complete_at_open = screen.complete
        log = screen.query_one(EventLog)
        await until(lambda: log.line(log.total) is not None)
        log_tail = await painted(app) - t0
        await until(lambda: not screen.history_loading, 0.01)
        history = await painted(app) - t0
        t1 = time.perf_counter()
        log.focus()
        log.action_first()
        await until(lambda: log.line(1) is not None)
        jump = await painted(app) - t1
        t2 = time.perf_counter()
        screen.action_next_waiting()
        next_waiting = await painted(app) - t2
        await asyncio.sleep(1.2)  # two live polls of an idle session
        cur, peak = rss_mb()
        return {
            "open_s": opened,
            "open_cpu_s": opened_cpu,
            "log_tail_s": log_tail,
            "history_s": history,
            "complete_at_open": complete_at_open,
            "tree_nodes": tree_nodes,
            "runs": len(screen.proj.nodes),
            "log_total": log.total,
            "cached_lines": sum(len(p) for p in log._pages.values()),
            "jump_first_s": jump,
            "next_waiting_s": next_waiting,
            "rss_before_mb": base,
            "rss_mb": cur,
            "peak_rss_mb": peak,
        }


async def measure_live(rounds: int = 5) -> dict[str, Any]:
    """Live update latency: another task answers an interrupt; seconds until the
    open session's tree shows the node COMPLETED (the console polls every 0.5 s).
    Moved here from tests/console/test_live.py: a number, not an assertion."""
    from console.app import HitlApp
    from console.screens.session import SessionScreen
    from engine import START, Content, JoinNode, RequestInput, Runner, Workflow, node
    from engine.store import MemoryStore

    def asker(i: int) -> Any:
        @node(name=f"ask{i}")
        async def ask(node_input: Any) -> Any:
            yield RequestInput(f"ok {i}?", response_schema=bool, interrupt_id=f"q{i}")

        return ask

    # The join is the one terminal node: parallel terminal nodes that each complete
    # with an answer would be two outputs (MultipleOutputsError, DESIGN.md 3.9).
    wf = Workflow("live", [(START, tuple(asker(i) for i in range(rounds)), JoinNode("join"))])
    store = MemoryStore()
    runner = Runner("live", wf, store)
    async for _ in runner.run("u", "s", Content.from_text("go")):
        pass
    app = HitlApp(store, poll_interval=0.5, refresh_interval=None, cursor_blink=False)
    took: list[float] = []
    async with app.run_test(size=(120, 40)):
        app.open_session("s")
        await until(lambda: isinstance(app.screen, SessionScreen) and app.screen.view is not None)
        screen = app.screen
        for i in range(rounds):
            async for _ in runner.run("u", "s", Content.from_responses({f"q{i}": True})):
                pass
            t0 = time.perf_counter()
            node_ = None

            def shown(i: int = i) -> bool:
                nonlocal node_
                node_ = screen.run_tree.node_for(f"live@1/ask{i}@1")
                return node_ is not None and "COMPLETED" in str(node_.label)

            await until(shown, 0.005)
            took.append(await painted(app) - t0)
    took.sort()
    return {"live_median_s": took[len(took) // 2], "live_max_s": took[-1], "live_rounds": rounds}


KEYS: dict[str, list[str]] = {
    "sessions": ["down", "down", "up", "s", "0", "question_mark", "escape", "G", "g"],
    "inbox": ["down", "up", "question_mark", "escape", "G", "g"],
    "session, 1 MB payload": ["n", "down", "up", "n", "question_mark", "escape", "tab", "down", "shift+tab"],
    "session, long loop": ["G", "g", "n", "down", "question_mark", "escape", "tab", "G", "shift+tab",
                           "slash", "s", "p", "i", "n", "enter", "semicolon", "comma"],  # find in the tree
    "answer editor, 1 MB payload": ["ctrl+t", "ctrl+t", "y", "question_mark", "escape"],
    "replay, long loop": ["right_square_bracket", "left_square_bracket", "right_square_bracket", "question_mark",
                          "escape"],
    "replay, diff open": ["right", "left", "right", "escape", "right_square_bracket", "left_square_bracket"],
}
"""Keys pressed on each screen (each timed from the press until the console has
handled it and painted, :func:`press_settled`: wall time, which a loaded machine
inflates, and the console process's CPU time)."""


def _unpainted(screen: Any) -> bool:
    """Whether the screen has a layout, scroll or repaint it has not done yet."""
    return bool(screen._layout_required or screen._scroll_required or screen._repaint_required or screen._dirty_widgets)


def _working(app: Any) -> bool:
    return any(w.is_running for w in app.workers)


def _pending(app: Any) -> bool:
    """Whether the console still has something to do for the last key: a message
    queued in the app or any widget of its screen, a worker running, or a layout,
    scroll, repaint or recompose the screen has not done yet."""
    screen = app.screen
    if _unpainted(screen) or screen._recompose_required or _working(app):
        return True
    return any(w._message_queue.qsize() for w in (app, *screen.walk_children(with_self=True)))


async def press_settled(pilot: Any, key: str) -> None:
    """Press ``key`` and return once the console has handled it and painted the
    result. Pilot's ``press`` and ``pause`` wait for "idle" by sleeping in 20 ms
    steps (two or more per key), which put a floor of about 100 ms under every key;
    this waits on the console's own state instead: every message handled, every
    worker done, the screen's pending layout and paint done -- the paint forced
    rather than left to the next frame tick (at most 1/60 s later in a terminal)."""
    import unicodedata

    from textual import events
    from textual.keys import REPLACED_KEYS, _character_to_key, _get_unicode_name_from_key

    app = pilot.app
    name = _character_to_key(key) if len(key) == 1 and not key.isalnum() else key
    try:
        char: str | None = unicodedata.lookup(_get_unicode_name_from_key(REPLACED_KEYS.get(name, name)))
    except KeyError:
        char = name if len(name) == 1 else None
    event = events.Key(name, char)
    event.set_sender(app)
    app._driver.send_message(event)
    for _ in range(100_000):  # bounded: a console that never settles fails the run below
        await pilot._wait_for_screen()
        if _working(app):
            await app.workers.wait_for_complete()
            continue
        if _unpainted(app.screen):
            app.screen._on_timer_update()
            continue
        await asyncio.sleep(0)
        if not _pending(app):
            return
    raise RuntimeError(f"the console did not settle after {key!r}")


async def measure_keys(db: str, big_db: str, loop_events: int) -> dict[str, Any]:
    """The worst key latency per screen while a 1 MB payload, a long session and a
    diff of thousands of changes are open: each key from the press until the
    console's workers are done and the screen is painted."""
    from console.app import HitlApp
    from console.screens.answer import AnswerScreen
    from console.screens.inbox import InboxScreen
    from console.screens.replay import DiffScreen, ReplayScreen, ReplaySource
    from console.screens.session import SessionScreen
    from console.screens.sessions import SessionsScreen
    from engine.store import open_store

    worst: dict[str, tuple[float, str, float]] = {}
    """screen -> (the slowest key's wall time, the key, its CPU time)."""
    worst_cpu: dict[str, tuple[float, str]] = {}
    extra: dict[str, Any] = {}

    async def quiet(pilot: Any) -> None:
        for _ in range(2):
            await pilot.app.workers.wait_for_complete()
            await pilot.pause()

    async def keys(pilot: Any, screen: str) -> None:
        for key in KEYS[screen]:
            t, c = time.perf_counter(), time.process_time()
            await press_settled(pilot, key)
            took, cpu = time.perf_counter() - t, time.process_time() - c  # CPU: the console's own (this process)
            if took > worst.get(screen, (0.0, "", 0.0))[0]:
                worst[screen] = (took, key, cpu)
            if cpu > worst_cpu.get(screen, (0.0, ""))[0]:
                worst_cpu[screen] = (cpu, key)

    big = await open_store(big_db)
    app = HitlApp(big, poll_interval=None, refresh_interval=None, cursor_blink=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await until(lambda: isinstance(app.screen, SessionsScreen))
        await quiet(pilot)
        await keys(pilot, "sessions")
        await pilot.press("i")
        await until(lambda: isinstance(app.screen, InboxScreen))
        await quiet(pilot)
        await keys(pilot, "inbox")
        t = time.perf_counter()
        app.open_session("big")
        await until(lambda: isinstance(app.screen, SessionScreen) and app.screen.view is not None)
        await quiet(pilot)
        extra["big_open_s"] = time.perf_counter() - t
        await keys(pilot, "session, 1 MB payload")
        await pilot.press("n")
        await quiet(pilot)
        t = time.perf_counter()
        await pilot.press("e")
        await until(lambda: isinstance(app.screen, AnswerScreen) and app.screen.focused is not None)
        extra["big_editor_s"] = time.perf_counter() - t
        await quiet(pilot)
        await keys(pilot, "answer editor, 1 MB payload")
    await big.close()
    long = await open_store(db, read_only=True)
    app = HitlApp(long, read_only=True, poll_interval=None, refresh_interval=None, cursor_blink=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await until(lambda: isinstance(app.screen, SessionsScreen))
        app.open_session("long-loop")
        await until(lambda: isinstance(app.screen, SessionScreen) and app.screen.view is not None)
        await quiet(pilot)
        await until(lambda: not app.screen.history_loading, 0.01)
        await keys(pilot, "session, long loop")
        app.push_screen(ReplayScreen(ReplaySource(session_id="long-loop", at=max(0, loop_events - 8000))))
        await until(lambda: isinstance(app.screen, ReplayScreen) and app.screen.frame is not None, 0.01)
        await quiet(pilot)
        await keys(pilot, "replay, long loop")  # ] onto a loop's next run: the tree rebuilt
        t = time.perf_counter()
        await pilot.press("m", "G", "d")
        await until(lambda: isinstance(app.screen, DiffScreen) and app.screen.rows is not None, 0.01)
        extra["diff_s"] = time.perf_counter() - t
        extra["diff_changes"] = len(app.screen.rows)
        await quiet(pilot)
        await keys(pilot, "replay, diff open")
    await long.close()
    return {"worst": worst, "worst_cpu": worst_cpu, **extra}


async def make_big(path: str) -> None:
    """A store with session ``big``: one interrupt whose payload is about 1 MB."""
    sys.path.insert(0, str(ROOT))
    from engine.store import open_store
    from tests.console.big_store import big_store

    store = await open_store(path)
    try:
        await big_store(store)
    finally:
        await store.close()


def child(args: list[str]) -> dict[str, Any]:
    out = subprocess.run(
        [sys.executable, __file__, "--child", *args], capture_output=True, text=True, cwd=ROOT, check=False, timeout=300
    )
    if out.returncode != 0:
        raise RuntimeError(f"child {args} failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="10,000 sessions and 10,000 events")
    ap.add_argument("--workdir", help="keep the generated stores here")
    ap.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    ns = ap.parse_args()
    if ns.child:
        kind, *rest = ns.child
        if kind == "live":
            result = asyncio.run(measure_live())
        elif kind == "keys":
            result = asyncio.run(measure_keys(rest[0], rest[1], int(rest[2])))
        else:
            result = asyncio.run(measure_sessions(*rest) if kind == "sessions" else measure_open(*rest))
        print(json.dumps(result))
        return 0
    n_sessions, n_events = (10_000, 10_000) if ns.quick else (100_000, 100_000)
    tmp = tempfile.TemporaryDirectory() if not ns.workdir else None
    workdir = Path(ns.workdir or tmp.name)  # type: ignore[union-attr]
    workdir.mkdir(parents=True, exist_ok=True)
    try:
        info = asyncio.run(generate(workdir, n_sessions, n_events))
        s = child(["sessions", str(workdir / "sessions.sqlite")])
        loop = child(["open", str(workdir / "long.sqlite"), "long-loop"])
        chat = child(["open", str(workdir / "long.sqlite"), "long-chat"])
        live = child(["live"])
        asyncio.run(make_big(str(workdir / "big.sqlite")))
        keys = child(["keys", str(workdir / "long.sqlite"), str(workdir / "big.sqlite"), str(info["loop_events"])])
    finally:
        if tmp is not None:
            tmp.cleanup()
    rows = [
        ("sessions screen, first paint", f"{n_sessions:,} sessions", f"{s['first_paint_s'] * 1000:.0f} ms", "< 1 s",
         f"app start → first {s['rows']} rows drawn; CPU {s['first_paint_cpu_s'] * 1000:.0f} ms"),
        ("  summary line shown", "", f"{s['summary_s'] * 1000:.0f} ms", "< 1 s",
         f"app start → counts drawn (engine.home.home_summary alone: {s['summary_call_s'] * 1000:.0f} ms)"),
        ("  status filter (waiting)", "", f"{s['filter_s'] * 1000:.0f} ms", "", "keyset query + redraw"),
        ("  next page", "", f"{s['next_page_s'] * 1000:.0f} ms", "", "cursor to the end loads 100 more"),
        ("open session, tree shown", f"{loop['log_total']:,} events, 1 loop", f"{loop['open_s'] * 1000:.0f} ms",
         "< 1 s", f"snapshot + tail: latest runs ({loop['tree_nodes']} tree nodes)"),
        ("  log tail drawn", "", f"{loop['log_tail_s'] * 1000:.0f} ms", "", "last page of 200 lines"),
        ("  all loop runs in the tree", "", f"{loop['history_s'] * 1000:.0f} ms", "",
         f"background fold, {loop['runs']:,} runs (older ones folded under one node)"),
        ("  log: jump to first event", "", f"{loop['jump_first_s'] * 1000:.0f} ms", "", "one page fetched on demand"),
        ("  n: next WAITING node", "", f"{loop['next_waiting_s'] * 1000:.0f} ms", "", ""),
        ("  RSS, session open", "", f"{loop['rss_mb']:.0f} MB", "< 300 MB",
         f"peak {loop['peak_rss_mb']:.0f} MB; {loop['rss_before_mb']:.0f} MB before opening; "
         f"{loop['cached_lines']} log lines cached"),
        ("open session, tree shown", f"{chat['log_total']:,} events, {info['chat_invocations']} invocations",
         f"{chat['open_s'] * 1000:.0f} ms", "< 1 s", f"latest waiting invocation; {chat['tree_nodes']} tree nodes"),
        ("  log tail drawn", "", f"{chat['log_tail_s'] * 1000:.0f} ms", "", ""),
        ("  RSS, session open", "", f"{chat['rss_mb']:.0f} MB", "< 300 MB", f"peak {chat['peak_rss_mb']:.0f} MB"),
        ("live update: answer → tree", f"{live['live_rounds']} answers by another task",
         f"{live['live_median_s'] * 1000:.0f} ms", "< 1 s",
         f"median; max {live['live_max_s'] * 1000:.0f} ms (polls every 0.5 s)"),
    ]
    rows.append(("key latency (worst key)", "1 MB payload, long loop, diff open", "", "< 100 ms",
                 f"1 MB session opens in {keys['big_open_s'] * 1000:.0f} ms; its editor in "
                 f"{keys['big_editor_s'] * 1000:.0f} ms; diff of {keys['diff_changes']:,} changes in "
                 f"{keys['diff_s'] * 1000:.0f} ms (a worker)"))
    for screen, (took, key, cpu) in keys["worst"].items():
        most_cpu, cpu_key = keys["worst_cpu"][screen]
        rows.append((f"  {screen}", "", f"{took * 1000:.0f} ms", "< 100 ms",
                     f"worst key: {key} (CPU {cpu * 1000:.0f} ms); most CPU: {cpu_key} {most_cpu * 1000:.0f} ms"))
    widths = [max(len(r[i]) for r in rows) for i in range(5)]
    head = ("measurement", "size", "result", "target", "note")
    widths = [max(w, len(h)) for w, h in zip(widths, head, strict=True)]
    print(f"backend: {info['backend']}  (stores generated in {info['gen_sessions_s']:.0f} s + {info['gen_long_s']:.0f} s)")
    print("  ".join(h.ljust(w) for h, w in zip(head, widths, strict=True)))
    print("  ".join("-" * w for w in widths))
    for r in rows:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)))
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except Exception as e:  # noqa: BLE001 -- a benchmark error exits non-zero with its message
        print(f"error: {e}", file=sys.stderr)
        sys.stderr.flush()
        os._exit(1)  # a store thread left open must not keep the process alive
