"""The HTTP API and notifications, timed (issue 36).

    python benchmarks/bench_api.py            # 200 answers, 100 interrupts notified
    python benchmarks/bench_api.py --quick    # 40 / 20
    python benchmarks/bench_api.py --db postgresql://...   # on a PostgreSQL server (a fresh schema)

Rows (p50 / p99 / max of the wall time, milliseconds):

* ``api answer`` -- ``POST /api/v1/sessions/{id}/answer`` of one interrupt of a
  waiting refund (a real ``hitl serve`` app in this process, over loopback TCP,
  a bearer token already verified once): the request's round trip, the answer
  written and the auto-completion it implies.
* ``api dry run`` -- the same request with ``dry_run``: nothing written.
* ``api session read`` -- ``GET /api/v1/sessions/{id}``: the tree, the open
  interrupts with schema and form.
* ``interrupt -> webhook`` -- from an interrupt's raising event (its stored
  timestamp) to its webhook arriving at a loopback receiver, with a sender
  running as in ``hitl worker`` / ``hitl notify`` on its own store connection
  (woken by LISTEN/NOTIFY on PostgreSQL, SQLite's change counter otherwise),
  while another connection starts the runs that raise them.

Prints a table; exits non-zero only on an error.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

TOKEN = "bench-token"


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))]


def row(name: str, values: list[float]) -> str:
    ms = [v * 1000 for v in values]
    return f"{name:<24} {len(ms):>5} {statistics.median(ms):>9.2f} {pct(ms, 99):>9.2f} {max(ms):>9.2f}"


async def open_target(db: str | None, directory: Path) -> tuple[Any, Any]:
    from engine.store.factory import open_store

    if db and db.startswith("postgres"):
        url = f"{db}{'&' if '?' in db else '?'}schema=bench_{uuid.uuid4().hex[:12]}"
        return await open_store(url), url
    path = directory / "bench.sqlite"
    return await open_store(path), path


async def start_refunds(store: Any, prefix: str, count: int) -> list[str]:
    from engine import Content
    from engine.apps import AppRegistry
    from sample_sessions import refund_approval

    reg = AppRegistry()
    reg.register("refund_approval", refund_approval.workflow)
    runner = reg.runner("refund_approval", store)
    sids = []
    for i in range(count):
        sid = f"{prefix}-{i}"
        async for _ in runner.run("clerk", sid, Content.from_text(f"order-{prefix}-{i}")):
            pass
        sids.append(sid)
    return sids


async def bench_api(db: str | None, directory: Path, answers: int) -> list[str]:
    import aiohttp
    from aiohttp import web
    from argon2 import PasswordHasher

    from console.serve.config import OperatorEntry, ServeConfig
    from console.serve.web import ConsoleServer, ServeOptions

    store, target = await open_target(db, directory)
    sids = await start_refunds(store, "api", answers)
    await store.close()
    hasher = PasswordHasher(time_cost=1, memory_cost=1024, parallelism=1)
    config = ServeConfig(operators={"bench": OperatorEntry("bench", "operator", hasher.hash(TOKEN))})
    server = ConsoleServer(ServeOptions(db=target), config, host="127.0.0.1", port=0)
    runner = web.AppRunner(await server._make_app(), access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    base = f"http://127.0.0.1:{site._server.sockets[0].getsockname()[1]}/api/v1"  # type: ignore[union-attr]
    headers = {"Authorization": f"Bearer bench:{TOKEN}"}
    times: dict[str, list[float]] = {"api session read": [], "api dry run": [], "api answer": []}
    try:
        async with aiohttp.ClientSession(headers=headers) as http:
            async with http.get(f"{base}/sessions?limit=1") as r:  # the token's one argon2 verify
                assert r.status == 200, await r.text()
            for sid in sids:
                iid = f"finance-order-{sid}"
                for name, method, path, body in [
                    ("api session read", "GET", f"/sessions/{sid}", None),
                    ("api dry run", "POST", f"/sessions/{sid}/answer",
                     {"answers": {iid: {"approved": True}}, "dry_run": True}),
                    ("api answer", "POST", f"/sessions/{sid}/answer", {"answers": {iid: {"approved": True}}}),
                ]:
                    t0 = time.perf_counter()
                    async with http.request(method, base + path, json=body) as r:
                        text = await r.text()
                    times[name].append(time.perf_counter() - t0)
                    if r.status != 200:
                        raise SystemExit(f"{method} {path}: HTTP {r.status}: {text[:300]}")
    finally:
        await runner.cleanup()
    return [row(k, v) for k, v in times.items()]


async def bench_webhook(db: str | None, directory: Path, count: int) -> list[str]:
    from aiohttp import web

    from engine.notify.config import parse
    from engine.notify.sender import Sender
    from engine.store.factory import open_store

    arrived: dict[str, float] = {}
    raised: dict[str, float] = {}
    done = asyncio.Event()

    async def hook(request: web.Request) -> web.Response:
        now = time.time()
        body = json.loads(await request.read())
        arrived.setdefault(body["id"], now)
        raised[body["id"]] = body["raised_at"]
        if len(arrived) >= count:
            done.set()
        return web.Response(text="ok")

    app = web.Application()
    app.router.add_post("/hook", hook)
    receiver = web.AppRunner(app, access_log=None)
    await receiver.setup()
    site = web.TCPSite(receiver, "127.0.0.1", 0)
    await site.start()
    url = f"http://127.0.0.1:{site._server.sockets[0].getsockname()[1]}/hook"  # type: ignore[union-attr]
    writer, target = await _fresh(db, directory)
    sender_store = await open_store(target)
    config = parse({"channels": {"ops": {"type": "webhook", "url": url, "secret": "s"}},
                    "rules": [{"on": ["interrupt_opened"], "filter": "node=finance_approval", "channels": ["ops"]}]},
                   "bench", {})
    stop = asyncio.Event()
    sending = asyncio.ensure_future(Sender(sender_store, config).run(stop, poll=1.0))
    try:
        await start_refunds(writer, "hook", count)
        await asyncio.wait_for(done.wait(), 120)
    finally:
        stop.set()
        await sending
        await sender_store.close()
        await writer.close()
        await receiver.cleanup()
    return [row("interrupt -> webhook", [arrived[k] - raised[k] for k in arrived])]


async def _fresh(db: str | None, directory: Path) -> tuple[Any, Any]:
    sub = directory / "hook"
    sub.mkdir(exist_ok=True)
    return await open_target(db, sub)


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--db", help="a postgresql:// URL (default: a SQLite file in a temporary directory)")
    args = parser.parse_args()
    answers, notified = (40, 20) if args.quick else (200, 100)
    with tempfile.TemporaryDirectory() as tmp:
        lines = await bench_api(args.db, Path(tmp), answers)
        lines += await bench_webhook(args.db, Path(tmp), notified)
    print(f"store: {'PostgreSQL' if args.db else 'SQLite'}")
    print(f"{'row':<24} {'n':>5} {'p50 ms':>9} {'p99 ms':>9} {'max ms':>9}")
    for line in lines:
        print(line)


if __name__ == "__main__":
    asyncio.run(main())
