"""PostgreSQL next to SQLite, in one run: appends, resumes, fresh runs, per-node
cost, store calls per operation, listing and inbox first pages with many
sessions, concurrent writers, console first paint and a long session's open.

    HITL_TEST_PG_URL=postgresql://... python benchmarks/bench_postgres.py [--quick] [--sessions N]

The server is the one at ``$HITL_BENCH_PG_URL`` or ``$HITL_TEST_PG_URL`` (e.g.
started by ``source scripts/services/postgres.sh``); every benchmark uses a new
schema of it. Prints one table; numbers are reported, never asserted.

"store calls" counts the SessionStore calls of one operation; "round trips"
counts what the client sent the PostgreSQL server during it (asyncpg writes
the socket once per round trip: a statement and its Sync; a statement's first
use on a connection adds its prepare). ``--trace`` prints the round trips of
every store call of one resume and one fresh run.

The full run (1,000,000 sessions for the pages, 100,000-event histories and
imports) takes a long while -- tens of minutes on a small machine, most of it
building the big stores; ``--quick`` (10,000 sessions, 10,000 events) is a
smoke run of a few minutes, ``--sessions N`` / ``--max-history N`` pick sizes.
"""

from __future__ import annotations

import argparse
import asyncio
import asyncio.selector_events
import multiprocessing
import os
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import bench_console  # noqa: E402
import bench_engine as be  # noqa: E402
import bench_store as bs  # noqa: E402

from engine import START, Content, Runner, Workflow  # noqa: E402
from engine.models import Event, Session  # noqa: E402
from engine.store import open_store  # noqa: E402

CONSOLE_RUNS = 3
"""Child processes per console measurement (the median is reported)."""


def pg_base() -> str:
    url = os.environ.get("HITL_BENCH_PG_URL") or os.environ.get("HITL_TEST_PG_URL")
    if not url:
        sys.exit("set HITL_BENCH_PG_URL or HITL_TEST_PG_URL (source scripts/services/postgres.sh)")
    return url


def target(kind: str, tmp: Path, name: str) -> str:
    if kind == "sqlite":
        return str(tmp / f"{name}-{uuid.uuid4().hex[:6]}.sqlite")
    base = pg_base()
    return f"{base}{'&' if '?' in base else '?'}schema=b_{name.replace('-', '_')}_{uuid.uuid4().hex[:8]}"


class RoundTrips:
    """Counts the messages this process sends over socket transports: with one
    PostgreSQL store open, its round trips (asyncpg writes once per Sync)."""

    sent = 0
    _installed = False

    @classmethod
    def install(cls) -> None:
        if cls._installed:
            return
        transport = asyncio.selector_events._SelectorSocketTransport  # type: ignore[attr-defined]
        write = transport.write

        def counting(self: Any, data: Any) -> None:
            cls.sent += 1
            write(self, data)

        transport.write = counting
        cls._installed = True


class Counting:
    """A store proxy counting awaited store calls and round trips (for 'per op');
    ``trace`` keeps (call, round trips) of each."""

    def __init__(self, store: Any) -> None:
        self._store = store
        self.calls = 0
        self.trace: list[tuple[str, int]] = []
        self._mark = RoundTrips.sent

    def reset(self) -> None:
        self.calls = 0
        self.trace = []
        self._mark = RoundTrips.sent

    @property
    def round_trips(self) -> int:
        return RoundTrips.sent - self._mark

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._store, name)
        if not callable(attr) or name.startswith("_") or name in ("export_session",):
            return attr

        async def wrapped(*a: Any, **kw: Any) -> Any:
            self.calls += 1
            before = RoundTrips.sent
            try:
                return await attr(*a, **kw)
            finally:
                self.trace.append((name, RoundTrips.sent - before))

        return wrapped


# ------------------------------------------------------------------ benchmarks


async def b_append(kind: str, tmp: Path, n: int) -> dict[str, float]:
    store = await open_store(target(kind, tmp, "append"), inline=True)
    await store.create_session("app", "u", "s")
    ev = [Event(invocation_id="i", author="user", content=Content.from_text(f"m{k}")) for k in range(n)]
    times = []
    await store.append_event("s", ev[0])  # the statement's prepare, once per connection
    before = RoundTrips.sent
    for e in ev[1:]:
        t = time.perf_counter()
        await store.append_event("s", e)
        times.append(time.perf_counter() - t)
    trips = (RoundTrips.sent - before) / len(times)
    await store.close()
    return {"p50": statistics.median(times), "p99": bs.pct(times, 0.99), "trips": trips}


async def b_resume(kind: str, tmp: Path, n_events: int, samples: int) -> tuple[float, float, float, list[Any]]:
    """Median resume (answer -> settled turn) of SIMPLE next to n unrelated events; store calls and
    round trips per resume, and the trace of the last one."""
    template = await be.history_template(tmp)
    store = await open_store(target(kind, tmp, f"hist{n_events}"), inline=True)
    await store.bulk_load([(Session(id="big", app_name="bench", user_id="u"), be.replicate(template, n_events))])
    counting = Counting(store)
    runner = Runner("bench", be.SIMPLE, counting)  # type: ignore[arg-type]
    times, calls, trips = [], [], []
    for _ in range(samples):
        async for _ in runner.run("u", "big", Content.from_text("go")):
            pass
        iid = await be.open_interrupt(store, "big")  # type: ignore[arg-type]
        counting.reset()
        t = time.perf_counter()
        await be.answer(runner, "big", iid)
        times.append(time.perf_counter() - t)
        calls.append(counting.calls)
        trips.append(counting.round_trips)
    await store.close()
    return statistics.median(times), statistics.median(calls), statistics.median(trips), counting.trace


async def b_fresh(kind: str, tmp: Path, samples: int) -> tuple[float, float, float, list[Any]]:
    store = await open_store(target(kind, tmp, "fresh"), inline=True)
    counting = Counting(store)
    runner = Runner("bench", Workflow("w", [(START, be.ask)]), counting)  # type: ignore[arg-type]
    times, calls, trips = [], [], []
    for i in range(samples):
        counting.reset()
        t = time.perf_counter()
        async for _ in runner.run("u", f"s{i}", Content.from_text("go")):
            pass
        times.append(time.perf_counter() - t)
        calls.append(counting.calls)
        trips.append(counting.round_trips)
    await store.close()
    return statistics.median(times), statistics.median(calls), statistics.median(trips), counting.trace


async def b_per_node(kind: str, tmp: Path, n_nodes: int) -> float:
    from engine import node

    nodes = []
    for i in range(n_nodes):

        @node(name=f"n{i}")
        async def f(node_input: Any) -> Any:
            return node_input

        nodes.append(f)
    store = await open_store(target(kind, tmp, "seq"), inline=True)
    runner = Runner("bench", Workflow("seq", [(START, *nodes)]), store)
    t = time.perf_counter()
    async for _ in runner.run("u", "seq", Content.from_text("x")):
        pass
    dt = time.perf_counter() - t
    await store.close()
    return dt / n_nodes


async def b_pages(kind: str, tmp: Path, n_sessions: int, repeats: int, existing: str | None = None) -> dict[str, float]:
    """Build ``n_sessions`` sessions (or open ``existing``, a store a full run left:
    ``--pages-on``) and time the first pages."""
    store = await open_store(existing or target(kind, tmp, "pages"), inline=True)
    t = time.perf_counter()
    n_events = 0 if existing else await store.bulk_load(bs.generate(n_sessions), batch_size=1000)
    build = time.perf_counter() - t
    out = {"build_s": build, "events": n_events}
    for name, call in (
        ("waiting", lambda: store.list_sessions(status="waiting", limit=50)),
        ("triage", lambda: store.list_sessions(order="oldest_open", limit=50)),
        ("inbox", lambda: store.open_interrupts(limit=50)),
        ("inbox_app", lambda: store.open_interrupts(app_name="app3", limit=50)),
    ):
        await call()
        out[name] = statistics.median(await bs.timed(call, repeats))
    page = await store.list_sessions(status="waiting", limit=50)
    nxt = page.next_cursor
    out["waiting_next"] = statistics.median(
        await bs.timed(lambda: store.list_sessions(status="waiting", limit=50, cursor=nxt), repeats)
    )
    await store.close()
    return out


async def b_import(kind: str, tmp: Path, n_events: int) -> dict[str, float]:
    """A long session: bulk load, export, import (hitl copy's unit) and a whole-store copy from SQLite."""
    from engine.store.copy import copy_store

    s, evs, _inv = bench_console.loop_session(n_events)
    store = await open_store(target(kind, tmp, "import"), inline=True)
    t = time.perf_counter()
    await store.bulk_load([(s, evs)])
    out = {"bulk": time.perf_counter() - t}
    t = time.perf_counter()
    lines = [line async for line in store.export_session(s.id)]
    out["export"] = time.perf_counter() - t
    t = time.perf_counter()
    await store.import_session(lines, session_id="copy")
    out["import"] = time.perf_counter() - t
    await store.close()
    source = await open_store(str(tmp / f"copysrc-{uuid.uuid4().hex[:6]}.sqlite"), inline=True)
    await source.bulk_load([(s, evs)])
    dest = await open_store(target(kind, tmp, "copy"), inline=True)
    t = time.perf_counter()
    await copy_store(source, dest, source_label="bench")
    out["copy"] = time.perf_counter() - t
    await source.close()
    await dest.close()
    return out


def _writer(args: tuple[str, str, int, Any]) -> list[float]:
    url, sid, n, barrier = args

    async def go() -> list[float]:
        store = await open_store(url, inline=True, busy_timeout=60, max_size=1)
        await store.create_session("app", "u", sid)
        barrier.wait()
        out = []
        for k in range(n):
            e = Event(invocation_id="i", author="user", content=Content.from_text(f"m{k}"))
            t = time.perf_counter()
            await store.append_event(sid, e)
            out.append(time.perf_counter() - t)
        await store.close()
        return out

    return asyncio.run(go())


def b_concurrent(kind: str, tmp: Path, writers: int, per: int) -> tuple[float, float]:
    url = target(kind, tmp, f"conc{writers}")

    async def init() -> None:
        await (await open_store(url)).close()

    asyncio.run(init())
    ctx = multiprocessing.get_context("spawn")
    with ctx.Manager() as m:
        barrier = m.Barrier(writers + 1)
        with ctx.Pool(writers) as pool:
            res = pool.map_async(_writer, [(url, f"w{k}", per, barrier) for k in range(writers)])
            barrier.wait()
            t = time.perf_counter()
            lat = [x for r in res.get(600) for x in r]
            dt = time.perf_counter() - t
    return len(lat) / dt, bs.pct(lat, 0.99)


async def console_stores(kind: str, tmp: Path, n_sessions: int, n_events: int) -> tuple[str, str]:
    import random

    rng = random.Random(7)
    big, long = target(kind, tmp, "csessions"), target(kind, tmp, "clong")
    store = await open_store(big, inline=True)
    await store.bulk_load(bench_console.small_session(k, rng) for k in range(n_sessions))
    await store.close()
    store = await open_store(long, inline=True)
    s, evs, inv = bench_console.loop_session(n_events)
    await store.bulk_load([(s, evs)])
    await bench_console.snapshot_invocations(store, s.id, evs, [inv])
    await store.close()
    return big, long


def console_runs(kind: str, tmp: Path, n_sessions: int, n_events: int, runs: int) -> dict[str, Any]:
    """Medians over ``runs`` console child processes (one run is noise on a shared
    machine): the sessions screen's first paint and a long session's open, each as
    wall time and as the console process's own CPU time over the same interval (the
    CPU figure leaves out the time spent waiting for a busy machine or the server)."""
    big, long = asyncio.run(console_stores(kind, tmp, n_sessions, n_events))
    paints = [bench_console.child(["sessions", big]) for _ in range(runs)]
    opens = [bench_console.child(["open", long, "long-loop"]) for _ in range(runs)]
    return {
        "paint": statistics.median(x["first_paint_s"] for x in paints),
        "paint_cpu": statistics.median(x["first_paint_cpu_s"] for x in paints),
        "open": statistics.median(x["open_s"] for x in opens),
        "open_cpu": statistics.median(x["open_cpu_s"] for x in opens),
        "log_total": opens[0]["log_total"],
    }


def console_rows(s: dict[str, Any], p: dict[str, Any], n_sessions: int, runs: int) -> list[tuple[str, str, str]]:
    def cell(r: dict[str, Any], key: str) -> str:
        return f"{ms(r[key])} (CPU {ms(r[key + '_cpu'])})"

    return [
        (f"console first paint ({n_sessions:,} sessions; median of {runs})", cell(s, "paint"), cell(p, "paint")),
        (f"console open, {s['log_total']:,}-event session (median of {runs})", cell(s, "open"), cell(p, "open")),
    ]


# ------------------------------------------------------------------ main


def ms(x: float) -> str:
    return f"{x * 1000:.2f} ms"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--sessions", type=int, default=None, help="sessions for the listing/inbox pages")
    ap.add_argument("--no-console", action="store_true")
    ap.add_argument("--console-only", action="store_true",
                    help="only the console's first paint and long-session open (wall and the console process's CPU)")
    ap.add_argument("--console-runs", type=int, default=CONSOLE_RUNS, help="child processes per console measurement")
    ap.add_argument("--trace", action="store_true", help="print the round trips of each store call of a resume")
    ap.add_argument("--only", choices=("sqlite", "postgres"), help="measure one backend (its column only)")
    ap.add_argument(
        "--max-history",
        type=int,
        default=None,
        help="largest unrelated history for resume and the console's long session (default 100,000; 10,000 quick)",
    )
    ap.add_argument("--pages-on", metavar="URL",
                    help="only time the first pages on a store a full run built (e.g. its PostgreSQL schema)")
    ns = ap.parse_args()
    if ns.pages_on:  # re-time the pages without rebuilding a million sessions (tens of minutes)
        pages = asyncio.run(b_pages("", Path("."), 0, 20, existing=ns.pages_on))
        print(f"load average (1 min) {os.getloadavg()[0]:.1f}; store {ns.pages_on}")
        for key in ("waiting", "waiting_next", "triage", "inbox", "inbox_app"):
            print(f"{key:14} {ms(pages[key])}")
        return 0
    pg_base()
    RoundTrips.install()
    q = ns.quick
    biggest = ns.max_history or (10_000 if q else 100_000)
    sizes = [n for n in (100, 10_000, 100_000) if n <= biggest]
    n_sessions = ns.sessions or (10_000 if q else 1_000_000)
    samples = 5 if q else 15
    rows: list[tuple[str, str, str]] = []
    load_at_start = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        res: dict[str, dict[str, Any]] = {"sqlite": {}, "postgres": {}}
        kinds = (ns.only,) if ns.only else ("sqlite", "postgres")
        for kind in kinds:
            r = res[kind]
            if not ns.console_only:  # ``--console-only``: the console rows alone
                print(f"[{kind}] appends", file=sys.stderr)
                r["append"] = asyncio.run(b_append(kind, tmp, 300 if q else 1000))
                for n in sizes:
                    print(f"[{kind}] resume with {n} events", file=sys.stderr)
                    r[f"resume{n}"] = asyncio.run(b_resume(kind, tmp, n, samples))
                r["fresh"] = asyncio.run(b_fresh(kind, tmp, samples))
                r["node"] = asyncio.run(b_per_node(kind, tmp, 100))
                print(f"[{kind}] import/copy of a {biggest}-event session", file=sys.stderr)
                r["import"] = asyncio.run(b_import(kind, tmp, biggest))
                print(f"[{kind}] {n_sessions} sessions for the pages", file=sys.stderr)
                r["pages"] = asyncio.run(b_pages(kind, tmp, n_sessions, 20))
                for w in (4, 16):
                    print(f"[{kind}] {w} concurrent writers", file=sys.stderr)
                    r[f"conc{w}"] = b_concurrent(kind, tmp, w, 100 if q else 300)
            if not ns.no_console:
                print(f"[{kind}] console", file=sys.stderr)
                r.update(console_runs(kind, tmp, n_sessions, biggest, ns.console_runs))
        if ns.only:  # one column: show it in both (the other backend was not measured)
            res = {"sqlite": res[ns.only], "postgres": res[ns.only]}
        s, p = res["sqlite"], res["postgres"]
        if not ns.console_only:
            rows.append(("append p50 / p99 (PG round trips per append)", f"{ms(s['append']['p50'])} / {ms(s['append']['p99'])}",
                         f"{ms(p['append']['p50'])} / {ms(p['append']['p99'])} ({p['append']['trips']:.0f} rt)"))
            for n in sizes:
                rows.append((f"resume, {n:,} unrelated events (store calls; PG round trips)",
                             f"{ms(s[f'resume{n}'][0])} ({s[f'resume{n}'][1]:.0f})",
                             f"{ms(p[f'resume{n}'][0])} ({p[f'resume{n}'][1]:.0f}; {p[f'resume{n}'][2]:.0f} rt)"))
            rows.append(("fresh run to first interrupt (store calls; PG round trips)",
                         f"{ms(s['fresh'][0])} ({s['fresh'][1]:.0f})",
                         f"{ms(p['fresh'][0])} ({p['fresh'][1]:.0f}; {p['fresh'][2]:.0f} rt)"))
            rows.append(("per node (sequential workflow)", ms(s["node"]), ms(p["node"])))
            si, pi = s["import"], p["import"]
            for key, label in (("bulk", "bulk load"), ("export", "export"), ("import", "import (hitl copy's unit)"),
                               ("copy", "hitl copy from SQLite")):
                rows.append((f"{label}, one {biggest:,}-event session", f"{si[key]:.1f} s", f"{pi[key]:.1f} s"))
            sp, pp = s["pages"], p["pages"]
            rows.append((f"bulk load {n_sessions:,} sessions ({sp['events']:,} events)", f"{sp['build_s']:.1f} s",
                         f"{pp['build_s']:.1f} s"))
            for key, label in (("waiting", "first page, waiting sessions"), ("waiting_next", "  next page"),
                               ("triage", "first page, oldest open first"), ("inbox", "first page, inbox"),
                               ("inbox_app", "first page, inbox of one app")):
                rows.append((f"{label} ({n_sessions:,} sessions)", ms(sp[key]), ms(pp[key])))
            for w in (4, 16):
                rows.append((f"{w} concurrent writers: appends/s, p99", f"{s[f'conc{w}'][0]:.0f}/s, {ms(s[f'conc{w}'][1])}",
                             f"{p[f'conc{w}'][0]:.0f}/s, {ms(p[f'conc{w}'][1])}"))
        if not ns.no_console:
            rows += console_rows(s, p, n_sessions, ns.console_runs)
    if ns.trace:
        for label, (_, _, _, trace) in (("resume", p[f"resume{sizes[0]}"]), ("fresh run", p["fresh"])):
            print(f"PostgreSQL round trips per store call, one {label}:")
            for name, n in trace:
                print(f"  {name:<22} {n}")
            print(f"  {'total':<22} {sum(n for _, n in trace)}")
    print(f"load average (1 min) {load_at_start:.1f} at the start, {os.getloadavg()[0]:.1f} at the end, "
          f"{os.cpu_count()} CPUs; the PostgreSQL server is on the same machine")
    head = ("metric", "SQLite", "PostgreSQL")
    if ns.only:
        head = ("metric", {"sqlite": "SQLite", "postgres": "PostgreSQL"}[ns.only])
        rows = [(r[0], r[2] if ns.only == "postgres" else r[1]) for r in rows]
    widths = [max(len(r[i]) for r in [*rows, head]) for i in range(len(head))]
    print("  ".join(h.ljust(w) for h, w in zip(head, widths, strict=True)))
    for r in rows:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
