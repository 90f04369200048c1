"""The README's "Tell people when a human is needed", followed as written: its
receiver.py and hitl.toml (on free loopback ports), the demo store, aiosmtpd's
command-line sink; ``hitl notify --once`` reaches both, the e-mail's link
answers on ``hitl serve``, and ``hitl audit`` shows the recipient."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.parse
from pathlib import Path

from tests.browser.served import hitl_bin, request, serve
from tests.cli.test_readme import blocks, section

BOUND = 60.0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(path: Path, pattern: str) -> re.Match[str]:
    deadline = time.monotonic() + BOUND
    while True:
        found = re.search(pattern, path.read_text(encoding="utf-8", errors="replace") if path.exists() else "")
        if found:
            return found
        assert time.monotonic() < deadline, f"{pattern!r} never appeared in {path}:\n{path.read_text()[-2000:]}"
        time.sleep(0.1)


def test_the_readme_section_sends_a_webhook_and_an_email_whose_link_answers(demo_db: Path, tmp_path: Path) -> None:
    text = section("Tell people when a human is needed")
    files = {body.splitlines()[0][2:]: body for lang, body in blocks(text) if lang in ("python", "toml")}
    ports = {"8001": str(free_port()), "8025": str(free_port()), "8000": str(free_port())}
    for name, body in files.items():
        for old, new in ports.items():  # the section's ports, wherever they are written
            body = re.sub(rf"\b{old}\b", new, body)
        (tmp_path / name).write_text(body, encoding="utf-8")
    db = tmp_path / "demo.sqlite"
    shutil.copy(demo_db, db)
    env = {**os.environ, "HITL_WEBHOOK_SECRET": "whsec-demo", "HITL_LINK_SECRET": "readme-link-secret",
           "PYTHONPATH": os.pathsep.join(sys.path), "PYTHONUNBUFFERED": "1"}
    hook_log, mail_log = tmp_path / "receiver.out", tmp_path / "smtp.out"
    procs = [
        subprocess.Popen([sys.executable, "receiver.py"], cwd=tmp_path, env=env, stdout=hook_log.open("w"),
                         stderr=subprocess.STDOUT),
        subprocess.Popen([sys.executable, "-m", "aiosmtpd", "-n", "-l", f"127.0.0.1:{ports['8025']}"], cwd=tmp_path,
                         env=env, stdout=mail_log.open("w"), stderr=subprocess.STDOUT),
    ]
    try:
        deadline = time.monotonic() + BOUND
        for port in (ports["8001"], ports["8025"]):  # both listening
            while True:
                with socket.socket() as s:
                    if s.connect_ex(("127.0.0.1", int(port))) == 0:
                        break
                assert time.monotonic() < deadline, f"nothing listens on {port}"
                time.sleep(0.1)
        config = str(tmp_path / "hitl.toml")
        done = subprocess.run([hitl_bin(), "--db", str(db), "--config", config, "notify", "--once"], env=env,
                              capture_output=True, text=True, timeout=300, cwd=tmp_path)
        assert done.returncode == 0 and " sent, 0 failed" in done.stdout, done.stdout + done.stderr
        wait_for(hook_log, r"signed interrupt_opened:refund-waiting-1:\S+:finance-order-1001:")
        assert "FORGED" not in hook_log.read_text()
        link = wait_for(mail_log, r"http://127\.0\.0\.1:\d+/answer/([A-Za-z0-9_\-]+\.[A-Za-z0-9_\-]+)")
        listed = subprocess.run([hitl_bin(), "--db", str(db), "--config", config, "--json", "notifications"],
                                env=env, capture_output=True, text=True, timeout=120)
        rows = json.loads(listed.stdout)["deliveries"]
        assert rows and {r["status"] for r in rows} == {"sent"} and {r["channel"] for r in rows} == {"ops", "mail"}
        token = link.group(1)
        with serve(db, "--config", config, cwd=tmp_path, env=env) as served:  # --port 0: no port picked ahead
            status, _, page = request(f"{served.url}/answer/{token}")
            assert status == 200 and 'id="approve"' in page, page[:500]
            question = re.search(r'<h1 id="heading">refund_approval: ([^<]+)</h1>', page).group(1)
            status, _, page = request(f"{served.url}/answer/{token}",
                                      data=urllib.parse.urlencode({"action": "approve"}).encode())
            assert status == 200 and "answered by alice@example.com" in page, page[:500]
        audit = subprocess.run([hitl_bin(), "--db", str(db), "--json", "audit", "--operator", "alice@example.com"],
                               capture_output=True, text=True, timeout=120, check=True)
        (row,) = json.loads(audit.stdout)["audit"]
        assert row["details"]["ids"] == [question]
    finally:
        for p in procs:
            p.send_signal(signal.SIGTERM)
            p.wait(timeout=30)
