"""What signing in to ``hitl serve`` costs: a real server in a child process, real
argon2 hashes (argon2-cffi's default parameters, what ``hitl serve --hash-password``
writes), timed from a client on loopback.

    python benchmarks/bench_serve.py            # 30 sign-ins per row
    python benchmarks/bench_serve.py --quick    # 8

Rows: a sign-in (POST /login → 303 + cookie); the round trip an operator makes
(sign in, then load the console page with the cookie); a refused sign-in (the
same argon2 work: an unknown name costs the same); a guarded request with a
cookie (the per-request check); a console connection (websocket upgrade to the
console process's first screen bytes). Prints one table; exits non-zero only on
an error.
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

ROOT = Path(__file__).resolve().parents[1]


def hitl() -> str:
    return str(Path(sys.executable).parent / "hitl")


def start_server(tmp: Path) -> tuple[subprocess.Popen[str], str]:
    from argon2 import PasswordHasher

    db = tmp / "bench.sqlite"
    subprocess.run([hitl(), "demo", "--db", str(db)], check=True, capture_output=True)
    (tmp / "hitl.toml").write_text(
        "[serve]\nmax_failed_signins = 1000000\n\n[serve.operators.alice]\nrole = \"operator\"\n"
        f'password_hash = "{PasswordHasher().hash("bench password")}"\n',
        encoding="utf-8",
    )
    proc = subprocess.Popen([hitl(), "serve", "--db", str(db), "--port", "0", "--config", str(tmp / "hitl.toml")],
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


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    n = 8 if parser.parse_args().quick else 30
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
