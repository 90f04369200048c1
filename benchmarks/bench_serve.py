"""What signing in to ``hitl serve`` costs: a real server in a child process, real
argon2 hashes (argon2-cffi's default parameters, what ``hitl serve --hash-password``
writes), timed from a client on loopback.

    python benchmarks/bench_serve.py            # 30 sign-ins per row
    python benchmarks/bench_serve.py --quick    # 8

    python benchmarks/bench_serve.py --consoles 1,10,25,50            # the cost per operator
    python benchmarks/bench_serve.py --consoles 1,10,25,50 --no-fork  # ... each console started afresh
    python benchmarks/bench_serve.py --consoles 50 --starts 2         # ... with [serve] console_starts = 2

Rows: a sign-in (POST /login → 303 + cookie); the round trip an operator makes
(sign in, then load the console page with the cookie); a refused sign-in (the
same argon2 work: an unknown name costs the same); a guarded request with a
cookie (the per-request check); a console connection (websocket upgrade to the
console process's first screen bytes). Prints one table; exits non-zero only on
an error.

``--consoles N,...``: for each N, N signed-in websocket connections opened at once,
each timed to its first paint (the sessions list drawn: "N shown" on screen); the
unique memory (PSS, from /proc/PID/smaps_rollup, summed over the server and every
process under it, fork server included) added per console; and, while they start,
a fresh sign-in every 0.25 s (its slowest round trip: is the server responsive); the
CPU seconds each console used to its first paint (the consoles' own, summed over them,
divided by N) and the web server's over the same time (relaying every first screen,
the sign-ins); the 1-minute load average before and after (the machine is shared).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def start_server(tmp: Path, fork: bool = True, starts: int | None = None) -> tuple[subprocess.Popen[str], str]:
    from argon2 import PasswordHasher

    db = tmp / "bench.sqlite"
    if not db.exists():
        subprocess.run([sys.executable, "-m", "console.cli", "demo", "--db", str(db)], check=True, capture_output=True)
    (tmp / "hitl.toml").write_text(
        "[serve]\nmax_failed_signins = 1000000\nmax_failed_signins_per_address = 1000000\n"
        f"max_consoles = 200\nmax_consoles_per_user = 200\nfork_consoles = {'true' if fork else 'false'}\n"
        + (f"console_starts = {starts}\n" if starts else "") + "\n"
        "[serve.operators.alice]\nrole = \"operator\"\n"
        f'password_hash = "{PasswordHasher().hash("bench password")}"\n',
        encoding="utf-8",
    )
    (tmp / "hitl.toml").chmod(0o600)
    proc = subprocess.Popen([sys.executable, "-m", "console.cli", "serve", "--db", str(db), "--port", "0", "--config", str(tmp / "hitl.toml")],
                            cwd=tmp, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
    assert proc.stderr is not None
    for line in proc.stderr:
        if line.startswith("serving "):
            return proc, line.split(" on ", 1)[1].split(" ", 1)[0].rstrip("/")
    raise SystemExit(f"hitl serve did not start (exit {proc.wait()})")


async def measure(url: str, n: int) -> list[tuple[str, list[float]]]:
    import aiohttp

    good = {"name": "alice", "secret": "bench password"}
    rows: dict[str, list[float]] = {k: [] for k in ("sign-in (POST /login)", "sign-in + console page",
                                                     "refused sign-in", "guarded request with cookie",
                                                     "console connection to first bytes")}
    async with aiohttp.ClientSession(cookie_jar=aiohttp.DummyCookieJar()) as http:
        for _ in range(n):
            t0 = time.perf_counter()
            async with http.post(url + "/login", data=good, allow_redirects=False) as r:
                assert r.status == 303, r.status
                cookie = r.headers["Set-Cookie"].split(";", 1)[0]
            t1 = time.perf_counter()
            async with http.get(url + "/", headers={"Cookie": cookie}) as r:
                assert r.status == 200
                await r.read()
            t2 = time.perf_counter()
            rows["sign-in (POST /login)"].append(t1 - t0)
            rows["sign-in + console page"].append(t2 - t0)
            t0 = time.perf_counter()
            async with http.post(url + "/login", data={"name": "alice", "secret": "wrong"},
                                 allow_redirects=False) as r:
                assert r.status == 401
            rows["refused sign-in"].append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            async with http.get(url + "/static/css/xterm.css", headers={"Cookie": cookie}) as r:
                assert r.status == 200
                await r.read()
            rows["guarded request with cookie"].append(time.perf_counter() - t0)
        for _ in range(max(2, n // 4)):
            t0 = time.perf_counter()
            async with http.ws_connect(url.replace("http", "ws") + "/ws?width=120&height=36",
                                       headers={"Cookie": cookie}) as ws:
                got = 0
                while got < 2000:  # the first screen, not just the prelude
                    msg = await ws.receive(timeout=60)
                    if msg.type == aiohttp.WSMsgType.BINARY:
                        got += len(msg.data)
                    elif msg.type in (aiohttp.WSMsgType.CLOSED, aiohttp.WSMsgType.ERROR):
                        raise SystemExit("the console closed before its first screen")
                rows["console connection to first bytes"].append(time.perf_counter() - t0)
    return list(rows.items())


def tree(root: int) -> set[int]:
    """``root`` and every process under it."""
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            parents[int(entry)] = int(stat.rsplit(")", 1)[1].split()[1])
    found, frontier = {root}, [root]
    while frontier:
        pid = frontier.pop()
        for child, parent in parents.items():
            if parent == pid and child not in found:
                found.add(child)
                frontier.append(child)
    return found


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of one live process (0 when it is gone)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def tree_pss_kib(root: int) -> int:
    """PSS of ``root`` and every process under it (KiB)."""
    total = 0
    for pid in tree(root):
        try:
            for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
                if line.startswith("Pss:"):
                    total += int(line.split()[1])
        except OSError:
            pass
    return total


async def consoles(url: str, proc: subprocess.Popen[str], n: int) -> dict[str, float]:
    """N consoles at once: first paint (s) median and slowest, PSS per console (MiB), slowest sign-in meanwhile."""
    import aiohttp

    good = {"name": "alice", "secret": "bench password"}
    async with aiohttp.ClientSession(cookie_jar=aiohttp.DummyCookieJar()) as http:
        async with http.post(url + "/login", data=good, allow_redirects=False) as r:
            cookie = r.headers["Set-Cookie"].split(";", 1)[0]
        await asyncio.sleep(1.0)
        before = tree_pss_kib(proc.pid)
        idle = tree(proc.pid)
        cpu_before = {pid: cpu_seconds(pid) for pid in idle}
        sockets: list[Any] = []
        painted: list[float] = []

        async def one() -> None:
            t0 = time.perf_counter()
            ws = await http.ws_connect(url.replace("http", "ws") + "/ws?width=120&height=36",
                                       headers={"Cookie": cookie}, max_msg_size=0)
            sockets.append(ws)
            seen = b""
            while b" shown" not in seen:
                msg = await ws.receive(timeout=600)
                if msg.type != aiohttp.WSMsgType.BINARY:
                    raise SystemExit(f"a console ended before its first paint: {msg}")
                seen = seen[-200:] + msg.data
            painted.append(time.perf_counter() - t0)
            while True:  # keep reading, as a browser does
                msg = await ws.receive()
                if msg.type != aiohttp.WSMsgType.BINARY:
                    return

        signins: list[float] = []
        done = asyncio.Event()

        async def probe() -> None:
            while not done.is_set():
                t0 = time.perf_counter()
                async with http.post(url + "/login", data=good, allow_redirects=False) as r:
                    assert r.status == 303, r.status
                signins.append(time.perf_counter() - t0)
                await asyncio.sleep(0.25)

        readers = [asyncio.create_task(one()) for _ in range(n)]
        prober = asyncio.create_task(probe())
        while len(painted) < n:
            await asyncio.sleep(0.1)
            for t in readers:
                if t.done() and t.exception():
                    raise t.exception()  # type: ignore[misc]
        done.set()
        now = tree(proc.pid)
        consoles_cpu = sum(cpu_seconds(pid) for pid in now - idle)
        server_cpu = cpu_seconds(proc.pid) - cpu_before.get(proc.pid, 0.0)
        await prober
        await asyncio.sleep(2.0)  # settled: what the consoles hold while they sit on their first screen
        after = tree_pss_kib(proc.pid)
        for ws in sockets:
            await ws.close()
        for t in readers:
            t.cancel()
        await asyncio.gather(*readers, return_exceptions=True)
    painted.sort()
    return {"median": statistics.median(painted), "last": painted[-1],
            "pss": (after - before) / 1024 / n, "signin": max(signins) if signins else 0.0,
            "cpu": consoles_cpu / n, "server": server_cpu}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--consoles", help="N,N,...: concurrent consoles per run (the cost per operator)")
    parser.add_argument("--no-fork", action="store_true", help="start every console afresh ([serve] fork_consoles = false)")
    parser.add_argument("--starts", type=int, help="[serve] console_starts (default: the server's)")
    args = parser.parse_args()
    if args.consoles:
        counts = [int(c) for c in args.consoles.split(",")]
        fork = not args.no_fork
        print(f"hitl serve on loopback, {os.cpu_count()} cores, consoles {'forked' if fork else 'started afresh'}")
        print(f"{'N':>4} {'median paint s':>15} {'slowest paint s':>16} {'PSS/console MiB':>16} {'slowest sign-in s':>18}"
              f" {'CPU s/console':>14} {'server CPU s':>13} {'load before/after':>18}")
        with tempfile.TemporaryDirectory() as d:
            for count in counts:
                proc, url = start_server(Path(d), fork, args.starts)
                load = os.getloadavg()[0]
                try:
                    r = asyncio.run(consoles(url, proc, count))
                finally:
                    proc.terminate()
                    proc.wait(timeout=120)
                print(f"{count:>4} {r['median']:>15.2f} {r['last']:>16.2f} {r['pss']:>16.1f} {r['signin']:>18.2f}"
                      f" {r['cpu']:>14.3f} {r['server']:>13.2f} {load:>8.1f}/{os.getloadavg()[0]:<9.1f}", flush=True)
        return
    n = 8 if args.quick else 30
    with tempfile.TemporaryDirectory() as d:
        proc, url = start_server(Path(d))
        try:
            rows = asyncio.run(measure(url, n))
        finally:
            proc.terminate()
            proc.wait(timeout=30)
    print(f"hitl serve on loopback, {os.cpu_count()} cores, argon2-cffi default parameters")
    print(f"{'what':38} {'n':>4} {'median ms':>10} {'p95 ms':>8} {'max ms':>8}")
    for name, samples in rows:
        ms = sorted(s * 1000 for s in samples)
        p95 = ms[min(len(ms) - 1, round(0.95 * (len(ms) - 1)))]
        print(f"{name:38} {len(ms):>4} {statistics.median(ms):>10.1f} {p95:>8.1f} {ms[-1]:>8.1f}")


if __name__ == "__main__":
    main()
