"""``hitl serve`` over plain HTTP (no browser): every route guarded, sign-in, cookies,
the failed sign-in limit, sign-out, the proxy header, the bind rule, config errors."""

from __future__ import annotations

import html
import subprocess
from pathlib import Path
from urllib.parse import urlencode

import pytest
from argon2 import PasswordHasher

from .served import PASSWORDS, hitl_bin, label, request, serve, write_config

GUARDED = ["/", "/ws", "/static/js/textual.js", "/static/css/xterm.css", "/static/", "/download/abc", "/nope"]
WS_HEADERS = {"Connection": "Upgrade", "Upgrade": "websocket", "Sec-WebSocket-Version": "13",
              "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ=="}


def form(name: str, secret: str) -> bytes:
    return urlencode({"name": name, "secret": secret}).encode()


def sign_in(url: str, name: str, secret: str | None = None) -> tuple[int, dict[str, str], str]:
    return request(url + "/login", data=form(name, PASSWORDS[name] if secret is None else secret))


def cookie_of(headers: dict[str, str]) -> str:
    return headers["Set-Cookie"].split(";", 1)[0]


def test_without_credentials_every_route_is_refused(store: Path, tmp_path: Path) -> None:
    config = write_config(tmp_path)
    with serve(store, "--config", str(config), cwd=tmp_path) as served:
        for path in GUARDED:
            for headers in ({}, {"Cookie": "hitl_session=forged-token"}):
                status, got, body = request(served.url + path, headers={**headers, **(WS_HEADERS if path == "/ws" else {})})
                if path == "/":
                    assert (status, got["Location"]) == (303, "/login"), path
                else:
                    assert status == 401, (path, status)
                assert "textual.js" not in body and "terminal" not in body
        status, _, _ = request(served.url + "/logout", data=b"")
        assert status == 401
        status, _, body = request(served.url + "/login")
        assert status == 200 and 'name="secret"' in body
        assert store.name not in body and str(store.parent) not in body  # nothing about the server before sign-in
    assert "console opened" not in served.log()  # no console process was ever started


def test_sign_in_sets_a_safe_cookie_and_sign_out_ends_the_session(any_store: Path | str, tmp_path: Path) -> None:
    store = any_store
    config = write_config(tmp_path)
    with serve(store, "--config", str(config), cwd=tmp_path) as served:
        status, headers, _ = sign_in(served.url, "alice")
        assert (status, headers["Location"]) == (303, "/")
        attrs = [a.strip() for a in headers["Set-Cookie"].split(";")]
        assert "HttpOnly" in attrs and "SameSite=Strict" in attrs and "Path=/" in attrs
        assert "Max-Age=28800" in attrs  # 8 hours, the default session length
        assert "Secure" not in attrs  # plain http on loopback; see the --public-url test
        cookie = cookie_of(headers)
        status, _, page = request(served.url + "/", headers={"Cookie": cookie})
        assert status == 200
        shown = html.escape(label(store))
        assert f"<title>hitl console (test) · {shown}</title>" in page
        assert f'connected to <span class="store">{shown}</span>' in page
        assert "signed in as alice" in page and 'rel="icon" href="data:image/svg+xml' in page
        status, _, _ = request(served.url + "/static/js/textual.js", headers={"Cookie": cookie})
        assert status == 200

        status, headers, _ = request(served.url + "/logout", data=b"", headers={"Cookie": cookie})
        assert (status, headers["Location"]) == (303, "/login")
        assert 'hitl_session=""' in headers["Set-Cookie"] or "Max-Age=0" in headers["Set-Cookie"]
        status, _, _ = request(served.url + "/static/js/textual.js", headers={"Cookie": cookie})
        assert status == 401  # the old cookie is dead server-side too
    log = served.log()
    assert "signed in: 'alice' (operator) from 127.0.0.1" in log and "signed out: 'alice'" in log
    assert PASSWORDS["alice"] not in log and cookie.split("=", 1)[1] not in log


def test_cookie_is_secure_behind_tls(store: Path, tmp_path: Path) -> None:
    config = write_config(tmp_path)
    with serve(store, "--config", str(config), "--public-url", "https://hitl.example.test", cwd=tmp_path) as served:
        status, headers, _ = request(served.url + "/login", data=form("alice", PASSWORDS["alice"]),
                                     headers={"Origin": "https://hitl.example.test"})
        assert status == 303 and "Secure" in [a.strip() for a in headers["Set-Cookie"].split(";")]
        _, _, page = request(served.url + "/", headers={"Cookie": cookie_of(headers)})
        assert 'data-session-websocket-url="wss://hitl.example.test/ws"' in page


def test_wrong_password_is_refused_then_rate_limited(store: Path, tmp_path: Path) -> None:
    config = write_config(tmp_path, max_failed=3)
    with serve(store, "--config", str(config), cwd=tmp_path) as served:
        for attempt in range(3):
            status, headers, body = sign_in(served.url, "alice", f"guess-{attempt}")
            assert status == 401 and "Wrong name or password." in body and "Set-Cookie" not in headers
        status, headers, body = sign_in(served.url, "alice")  # the right password, too late
        assert status == 429 and "Too many failed sign-ins" in body and int(headers["Retry-After"]) > 0
        assert "Set-Cookie" not in headers
        status, _, _ = sign_in(served.url, "val")  # same address, another name: not locked out
        assert status == 303
    log = served.log()
    assert "sign-in failed: 'alice' from 127.0.0.1 (3 of 3 in 600s)" in log
    assert "sign-in refused (rate-limited" in log
    assert "guess-" not in log and PASSWORDS["alice"] not in log and PASSWORDS["val"] not in log


def test_cross_origin_sign_in_is_refused(store: Path, tmp_path: Path) -> None:
    config = write_config(tmp_path)
    with serve(store, "--config", str(config), cwd=tmp_path) as served:
        status, headers, _ = request(served.url + "/login", data=form("alice", PASSWORDS["alice"]),
                                     headers={"Origin": "http://evil.example.test"})
        assert status == 403 and "Set-Cookie" not in headers


def test_non_loopback_bind_without_auth_refuses_to_start(store: Path, tmp_path: Path) -> None:
    for host in ("0.0.0.0", "::", "192.0.2.10", "hitl.example.test"):
        out = subprocess.run([hitl_bin(), "serve", "--db", str(store), "--host", host, "--port", "0"],
                             cwd=tmp_path, capture_output=True, text=True, timeout=60)
        assert out.returncode == 1, (host, out.stderr)
        assert out.stderr.startswith(f"error: refusing to serve on {host}: it is not a loopback address"), out.stderr
        assert "Traceback" not in out.stderr


def test_non_loopback_bind_with_operators_starts_and_still_guards(store: Path, tmp_path: Path) -> None:
    config = write_config(tmp_path)
    with serve(store, "--config", str(config), "--host", "0.0.0.0", cwd=tmp_path) as served:
        local = served.url.replace("0.0.0.0", "127.0.0.1")
        assert request(local + "/static/js/textual.js")[0] == 401


def test_loopback_without_auth_serves_as_the_local_console(store: Path, tmp_path: Path) -> None:
    with serve(store, cwd=tmp_path) as served:
        status, _, page = request(served.url + "/")
        assert status == 200 and "no sign-in (loopback)" in page
        assert "(no sign-in (loopback only))" in served.log() or "no sign-in" in served.log()


def test_trusted_proxy_header_names_the_operator(store: Path, tmp_path: Path) -> None:
    config = write_config(tmp_path)
    with serve(store, "--config", str(config), "--host", "0.0.0.0", "--trust-proxy-header", "X-Remote-User",
               cwd=tmp_path) as served:
        url = served.url.replace("0.0.0.0", "127.0.0.1")
        assert request(url + "/")[0] == 401
        status, _, page = request(url + "/", headers={"X-Remote-User": "alice"})
        assert status == 200 and "signed in as alice" in page and ">operator<" in page
        _, _, page = request(url + "/", headers={"X-Remote-User": "mallory"})  # not listed: proxy_role
        assert "signed in as mallory" in page and "viewer · read-only" in page
        assert request(url + "/", headers={"X-Remote-User": "x" * 65})[0] == 401  # not a valid name


def test_proxy_header_from_an_untrusted_peer_is_ignored(store: Path, tmp_path: Path) -> None:
    config = write_config(tmp_path, extra='trusted_proxies = ["192.0.2.7"]')
    with serve(store, "--config", str(config), "--trust-proxy-header", "X-Remote-User", cwd=tmp_path) as served:
        assert request(served.url + "/", headers={"X-Remote-User": "alice"})[0] == 401
    assert "refused X-Remote-User header from untrusted peer 127.0.0.1" in served.log()


@pytest.mark.parametrize(
    ("section", "message"),
    [
        ('[serve.operators.bob]\nrole = "operator"\npassword = "hunter2"\n',
         "serve.operators.bob.password: store a hash, never the secret itself"),
        ('[serve.operators.bob]\nrole = "admin"\npassword_hash = "$argon2id$x"\n',
         "serve.operators.bob.role must be one of viewer, operator, not 'admin'"),
        ('[serve.operators.bob]\nrole = "viewer"\npassword_hash = "md5:abc"\n',
         "serve.operators.bob.password_hash is not an argon2 hash"),
        ('[serve.operators.bob]\nrole = "viewer"\n', "serve.operators.bob needs exactly one of password_hash, token_hash"),
        ('[serve]\nsession_hours = -1\n', "serve.session_hours must be a positive number"),
        ('[serve]\nlogin = 1\n', "unknown key serve.login"),
    ],
)
def test_config_errors_are_one_line_and_nothing_starts(store: Path, tmp_path: Path, section: str, message: str) -> None:
    (tmp_path / "hitl.toml").write_text(section, encoding="utf-8")
    out = subprocess.run([hitl_bin(), "serve", "--db", str(store), "--port", "0"], cwd=tmp_path,
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 1 and message in out.stderr and len(out.stderr.strip().splitlines()) == 1, out.stderr
    assert "hunter2" not in out.stderr


def test_store_urls_are_served(store: Path, tmp_path: Path) -> None:
    """--db sqlite:///PATH and $HITL_DB=sqlite:///PATH serve the file (issue 34: both crashed at start;
    postgresql:// is served by every test that takes any_store)."""
    config = write_config(tmp_path)
    for db, env in ((f"sqlite://{store}", {}), (None, {"HITL_DB": f"sqlite://{store}"})):
        with serve(db, "--config", str(config), cwd=tmp_path, env=env) as served:
            status, headers, _ = sign_in(served.url, "alice")
            assert status == 303
            status, _, page = request(served.url + "/", headers={"Cookie": cookie_of(headers)})
            assert status == 200 and f'connected to <span class="store">{store}</span>' in page
        assert f"serving {store} on " in served.log()
    out = subprocess.run([hitl_bin(), "serve", "--db", "postgresql://nobody@/none?host=/nonexistent", "--port", "0"],
                         cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert out.returncode == 1 and out.stderr.startswith("error: cannot open the session store postgresql://")
    assert len(out.stderr.strip().splitlines()) == 1, out.stderr


def test_missing_store_is_one_line(tmp_path: Path) -> None:
    out = subprocess.run([hitl_bin(), "serve", "--db", str(tmp_path / "none.sqlite"), "--port", "0"], cwd=tmp_path,
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 1 and out.stderr.startswith("error: no session store at ")
    assert not (tmp_path / "none.sqlite").exists()


def test_hash_password_prints_an_argon2_hash_that_verifies(tmp_path: Path) -> None:
    out = subprocess.run([hitl_bin(), "serve", "--hash-password"], input="s3cret phrase\n", cwd=tmp_path,
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    digest = out.stdout.strip()
    assert digest.startswith("$argon2id$") and PasswordHasher().verify(digest, "s3cret phrase")
    assert "s3cret" not in out.stdout


def test_sign_out_closes_the_open_console(store: Path, tmp_path: Path) -> None:
    import asyncio

    import aiohttp

    async def scenario(url: str) -> str:
        async with aiohttp.ClientSession(cookie_jar=aiohttp.DummyCookieJar()) as http:
            async with http.post(url + "/login", data={"name": "alice", "secret": PASSWORDS["alice"]},
                                 allow_redirects=False) as r:
                cookie = r.headers["Set-Cookie"].split(";", 1)[0]
            ws_url = url.replace("http", "ws", 1) + "/ws?width=100&height=30"
            async with http.ws_connect(ws_url, headers={"Cookie": cookie}) as ws:
                got = 0
                while got < 2000:  # the console's first screen
                    msg = await ws.receive(timeout=60)
                    assert msg.type == aiohttp.WSMsgType.BINARY, msg
                    got += len(msg.data)
                async with http.post(url + "/logout", headers={"Cookie": cookie}, allow_redirects=False) as r:
                    assert r.status == 303
                while True:
                    msg = await ws.receive(timeout=60)
                    if msg.type in (aiohttp.WSMsgType.CLOSE, aiohttp.WSMsgType.CLOSED, aiohttp.WSMsgType.CLOSING):
                        return "closed"

    with serve(store, "--config", str(write_config(tmp_path)), cwd=tmp_path) as served:
        assert asyncio.run(scenario(served.url)) == "closed"
        served.wait_log("console closed for 'alice'")
