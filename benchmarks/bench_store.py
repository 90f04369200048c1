"""Session store benchmarks: append cost, size on disk, listing and inbox pages.

    python benchmarks/bench_store.py            # full run (100,000 sessions), < 90 s
    python benchmarks/bench_store.py --quick    # smaller numbers, a few seconds

Prints one table and exits non-zero only on an error (numbers are reported,
never asserted). Each benchmark is an async function registered with
``@bench`` that returns rows; add more (e.g. runner-level resume costs) the
same way -- they share the ``Context`` (sizes, a scratch directory and the big
generated store, built once on first use).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import statistics
import sys
import tempfile
import time
import traceback
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from engine.models import (  # noqa: E402
    Content,
    Event,
    FunctionCall,
    NodeInfo,
    NodeStatus,
    Part,
    Session,
    new_id,
)
from engine.store import MemoryStore, SQLiteStore  # noqa: E402


@dataclass
class Row:
    group: str
    metric: str
    value: float
    unit: str
    note: str = ""


@dataclass
class Context:
    quick: bool
    workdir: Path
    sessions: int
    appends: int
    repeats: int
    _big: SQLiteStore | None = None
    big_info: dict[str, Any] = field(default_factory=dict)

    async def big_store(self) -> SQLiteStore:
        """A store of ``sessions`` generated sessions (built on first use)."""
        if self._big is None:
            self._big = await build_big_store(self)
        return self._big


BENCHES: list[Callable[[Context], Awaitable[list[Row]]]] = []


def bench(fn: Callable[[Context], Awaitable[list[Row]]]) -> Callable[[Context], Awaitable[list[Row]]]:
    BENCHES.append(fn)
    return fn


# --------------------------------------------------------------------------- event shapes


def node(inv: str, path: str, ts: float, **kw: Any) -> Event:
    name, _, run_id = path.rsplit("/", 1)[-1].partition("@")
    return Event(invocation_id=inv, author=name, timestamp=ts, node_info=NodeInfo(path=path, run_id=run_id, **kw))


def ask(inv: str, path: str, ids: list[str], ts: float) -> Event:
    calls = [
        Part(
            function_call=FunctionCall(
                id=i,
                name="request_input",
                args={
                    "message": f"Approve refund {i[:6]}?",
                    "payload": {"amount": 42.5, "currency": "EUR"},
                    "response_schema": {"type": "object", "properties": {"approved": {"type": "boolean"}}},
                },
            )
        )
        for i in ids
    ]
    ev = node(inv, path, ts)
    return ev.model_copy(update={"content": Content(role="model", parts=calls), "long_running_tool_ids": ids})


def turn(inv: str, ts: float, outcome: str, rng: random.Random) -> list[Event]:
    """One invocation: a user message, root and child lifecycle records, and an
    ending of the given kind (waiting / completed / failed / running)."""
    evs = [
        Event(invocation_id=inv, author="user", timestamp=ts, content=Content.from_text("please refund order 1234")),
        node(inv, "wf@1", ts + 0.1, lifecycle="start", rerun_on_resume=True, is_container=True, input="order 1234"),
        node(inv, "wf@1/lookup@1", ts + 0.2, lifecycle="start", rerun_on_resume=False, input="order 1234"),
        node(inv, "wf@1/lookup@1", ts + 0.3, lifecycle="end", status=NodeStatus.COMPLETED).model_copy(
            update={"output": {"order": 1234, "amount": 42.5}, "state_delta": {"order": 1234}}
        ),
    ]
    if outcome == "waiting":
        ids = [f"{inv}-{k}" for k in range(rng.choice((1, 1, 2)))]
        evs += [
            node(inv, "wf@1/approve@1", ts + 0.4, lifecycle="start", rerun_on_resume=False),
            ask(inv, "wf@1/approve@1", ids, ts + 0.5),
            node(inv, "wf@1/approve@1", ts + 0.6, lifecycle="end", status=NodeStatus.WAITING),
            node(inv, "wf@1", ts + 0.7, lifecycle="end", status=NodeStatus.WAITING),
        ]
    elif outcome == "completed":
        evs.append(
            node(inv, "wf@1", ts + 0.7, lifecycle="end", status=NodeStatus.COMPLETED).model_copy(
                update={"output": "refunded"}
            )
        )
    elif outcome == "failed":
        evs += [
            node(inv, "wf@1/pay@1", ts + 0.4, attempt=1).model_copy(
                update={"error_code": "TimeoutError", "error_message": "payment gateway timed out"}
            ),
            node(inv, "wf@1", ts + 0.7, lifecycle="end", status=NodeStatus.FAILED),
        ]
    return evs


def generate(n: int, seed: int = 7) -> Iterator[tuple[Session, list[Event]]]:
    """``n`` sessions of one invocation each: 40% waiting, 40% completed, 10%
    failed, 10% still running; spread over 30 days, 5 apps, 200 users.

    Each outcome's events are built (and validated) once as a template, then
    copied with the session's own invocation id, timestamps and event ids:
    generating is then cheap next to what is measured (the store's append path)."""
    rng = random.Random(seed)
    now = time.time()
    outcomes = ["waiting"] * 4 + ["completed"] * 4 + ["failed", "running"]
    templates = {(o, k): turn("tmpl", 0.0, o, random.Random(k)) for o in outcomes for k in range(3)}
    for i in range(n):
        created = now - rng.uniform(0, 30 * 86400)
        sid = f"{rng.getrandbits(64):016x}{i:08d}"
        session = Session(id=sid, app_name=f"app{i % 5}", user_id=f"user{i % 200}", created_at=created)
        inv = f"inv{i}"
        events = [
            ev.model_copy(update={"id": new_id(), "invocation_id": inv, "timestamp": created + ev.timestamp})
            for ev in templates[rng.choice(outcomes), rng.randrange(3)]
        ]
        yield session, events


async def build_big_store(ctx: Context) -> SQLiteStore:
    path = ctx.workdir / "big.sqlite"
    store = await SQLiteStore.open(path)
    t0 = time.perf_counter()
    n_events = await store.bulk_load(generate(ctx.sessions), batch_size=1000)
    elapsed = time.perf_counter() - t0
    await store.checkpoint()
    ctx.big_info = {"events": n_events, "seconds": elapsed, "bytes": path.stat().st_size}
    return store


# --------------------------------------------------------------------------- timing helpers


async def timed(fn: Callable[[], Awaitable[Any]], repeats: int) -> list[float]:
    out = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        await fn()
        out.append(time.perf_counter() - t0)
    return out


def pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))]


def stream(n: int) -> list[Event]:
    """``n`` events shaped like a real session: repeated turns, waiting ones answered."""
    rng = random.Random(3)
    out: list[Event] = []
    k = 0
    while len(out) < n:
        inv = f"inv{k}"
        evs = turn(inv, 1000.0 + k, "waiting" if k % 2 == 0 else "completed", rng)
        if k % 2 == 0:
            ids = evs[-3].long_running_tool_ids or []
            evs.append(
                Event(
                    invocation_id=inv,
                    author="user",
                    content=Content.from_responses({i: {"approved": True} for i in ids}),
                )
            )
        out += evs
        k += 1
    return out[:n]


# --------------------------------------------------------------------------- benchmarks


@bench
async def append_cost(ctx: Context) -> list[Row]:
    rows: list[Row] = []
    events = stream(ctx.appends)
    for sync in ("NORMAL", "FULL"):
        path = ctx.workdir / f"append-{sync}.sqlite"
        async with SQLiteStore.open(path, synchronous=sync) as store:
            await store.create_session("app", "u", "s1")
            times = []
            for ev in events:
                t0 = time.perf_counter()
                await store.append_event("s1", ev)
                times.append(time.perf_counter() - t0)
            await store.checkpoint()
        note = f"{len(events)} appends to one session, WAL"
        rows += [
            Row("append", f"append_event, synchronous={sync}, mean", statistics.fmean(times) * 1e6, "us", note),
            Row("append", f"append_event, synchronous={sync}, median", statistics.median(times) * 1e6, "us", ""),
            Row("append", f"append_event, synchronous={sync}, p99", pct(times, 0.99) * 1e6, "us", "WAL checkpoints"),
        ]
        if sync == "NORMAL":
            size = path.stat().st_size
            rows.append(
                Row("disk", "bytes on disk per event (one long session)", size / len(events), "B", f"{size:,} B file")
            )
    mem = MemoryStore()
    await mem.create_session("app", "u", "s1")
    t0 = time.perf_counter()
    for ev in events:
        await mem.append_event("s1", ev)
    rows.append(
        Row("append", "append_event, MemoryStore (reference)", (time.perf_counter() - t0) / len(events) * 1e6, "us")
    )
    return rows


@bench
async def big_store_pages(ctx: Context) -> list[Row]:
    store = await ctx.big_store()
    info = ctx.big_info
    n, r = ctx.sessions, ctx.repeats
    rows = [
        Row("bulk", f"generate {n:,} sessions via bulk_load", info["seconds"], "s", f"{info['events']:,} events"),
        Row("bulk", "bulk_load throughput", info["events"] / info["seconds"], "ev/s", "append path, 1000 sessions/tx"),
        Row(
            "disk",
            f"bytes on disk per event ({n:,} sessions)",
            info["bytes"] / info["events"],
            "B",
            f"{info['bytes'] / 1e6:,.1f} MB file",
        ),
    ]

    async def deep(fn: Callable[..., Awaitable[Any]], pages: int, **kw: Any) -> Callable[[], Awaitable[Any]]:
        cursor = None
        for _ in range(pages):
            cursor = (await fn(limit=50, cursor=cursor, **kw)).next_cursor
        return lambda: fn(limit=50, cursor=cursor, **kw)

    # A fresh connection for the cold number: the first page an operator waits for.
    cold_store = await SQLiteStore.open(store.path, read_only=True)
    t0 = time.perf_counter()
    first = await cold_store.list_sessions(status="waiting", limit=50)
    cold = time.perf_counter() - t0
    await cold_store.close()
    assert len(first.items) == 50
    rows.append(Row("list", "first page of WAITING sessions, cold connection", cold * 1e3, "ms", "limit 50"))

    cases: list[tuple[str, str, Callable[[], Awaitable[Any]]]] = [
        ("list", "first page of WAITING sessions", lambda: store.list_sessions(status="waiting", limit=50)),
        ("list", "first page, all sessions", lambda: store.list_sessions(limit=50)),
        ("list", "100th page of WAITING sessions (keyset)", await deep(store.list_sessions, 100, status="waiting")),
        ("list", "first page, app + WAITING", lambda: store.list_sessions(app_name="app3", status="waiting", limit=50)),
        ("list", "first page, text search on id", lambda: store.list_sessions(text="abc", limit=50)),
        ("inbox", "first page of the inbox (open interrupts)", lambda: store.open_interrupts(limit=50)),
        ("inbox", "first page of the inbox, one app", lambda: store.open_interrupts(app_name="app2", limit=50)),
        ("inbox", "100th page of the inbox (keyset)", await deep(store.open_interrupts, 100)),
    ]
    for group, name, fn in cases:
        times = await timed(fn, r)
        rows.append(Row(group, name, statistics.median(times) * 1e3, "ms", f"median of {r}, limit 50"))

    sid = first.items[0].id
    events = stream(ctx.appends // 4)
    times = []
    for ev in events:
        t0 = time.perf_counter()
        await store.append_event(sid, ev.model_copy(update={"invocation_id": "bench-" + ev.invocation_id}))
        times.append(time.perf_counter() - t0)
    rows.append(
        Row(
            "append",
            f"append_event in the {n:,}-session store, mean",
            statistics.fmean(times) * 1e6,
            "us",
            "compare: one-session store above",
        )
    )
    return rows


# --------------------------------------------------------------------------- main


def print_table(rows: list[Row]) -> None:
    headers = ("group", "metric", "value", "unit", "note")
    cells = [
        (r.group, r.metric, f"{r.value:,.1f}" if r.value < 1e6 else f"{r.value:,.0f}", r.unit, r.note) for r in rows
    ]
    widths = [max(len(h), *(len(c[i]) for c in cells)) for i, h in enumerate(headers)]
    line = "  ".join(h.ljust(w) if i != 2 else h.rjust(w) for i, (h, w) in enumerate(zip(headers, widths, strict=True)))
    print(line)
    print("  ".join("-" * w for w in widths))
    for c in cells:
        print("  ".join(v.rjust(w) if i == 2 else v.ljust(w) for i, (v, w) in enumerate(zip(c, widths, strict=True))))


async def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="small sizes (a few seconds)")
    parser.add_argument("--sessions", type=int, help="sessions in the big store (default 100,000; quick 10,000)")
    parser.add_argument("--workdir", type=Path, help="keep the generated files here (default: a temporary directory)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="hitl-bench-") as tmp:
        workdir = args.workdir or Path(tmp)
        workdir.mkdir(parents=True, exist_ok=True)
        for stale in workdir.glob("*.sqlite*"):
            stale.unlink()
        ctx = Context(
            quick=args.quick,
            workdir=workdir,
            sessions=args.sessions or (10_000 if args.quick else 100_000),
            appends=500 if args.quick else 2000,
            repeats=10 if args.quick else 30,
        )
        rows: list[Row] = []
        t0 = time.perf_counter()
        try:
            for fn in BENCHES:
                rows += await fn(ctx)
        finally:
            if ctx._big is not None:
                await ctx._big.close()
        print(
            f"hitl-console store benchmarks ({'quick' if args.quick else 'full'}; python {sys.version.split()[0]}, "
            f"{os.cpu_count()} cpus) in {time.perf_counter() - t0:.1f} s\n"
        )
        print_table(rows)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(asyncio.run(main()))
    except Exception:
        traceback.print_exc()
        sys.exit(1)
