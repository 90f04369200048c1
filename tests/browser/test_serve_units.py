"""The pieces of ``hitl serve`` without a server: the limiter, sessions, the bind
rule, the per-connection command line, and the console hooks it relies on."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from console.serve.auth import FailureLimiter, Identity, SessionBook, Verifier
from console.serve.child import build_argv
from console.serve.config import ServeConfig, ServeConfigError, check_bind, is_loopback, load_serve_config
from console.serve.web import ConsoleServer, ServeOptions

from .served import PASSWORDS, write_config


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_limiter_refuses_past_the_limit_until_the_window_moves_on() -> None:
    clock = Clock()
    limiter = FailureLimiter(3, 60, clock, address_limit=5)
    for n in range(1, 4):
        wait, stamp = limiter.reserve("x", "a")  # reserved before the secret is checked
        assert wait == 0 and stamp == clock.now and limiter.count("x", "a") == n
        clock.now += 1
    assert limiter.reserve("x", "a") == (pytest.approx(57), 0.0)  # the pair is limited ...
    assert limiter.count("x", "a") == 3  # ... and a refusal stores nothing
    assert limiter.retry_after("x", "b") == 0  # the name from elsewhere is not locked out
    assert limiter.retry_after("y", "a") == 0  # another name from the address: not yet
    limiter.reserve("y", "a")
    limiter.reserve("z", "a")
    assert limiter.retry_after("w", "a") == pytest.approx(57)  # the address backs off: 5 in its window
    wait, stamp = limiter.reserve("x", "b")
    limiter.succeeded("x", "b", stamp)  # a success takes its reservation back
    assert limiter.count("x", "b") == 0 and len(limiter) == 4  # three pairs and one address
    clock.now += 60
    assert limiter.retry_after("x", "a") == 0 and limiter.retry_after("w", "a") == 0
    assert len(limiter) == 2  # expired keys are forgotten as they are looked at (y and z: not yet)


def test_limiter_tables_are_capped() -> None:
    clock = Clock()
    limiter = FailureLimiter(3, 60, clock, max_keys=100)
    for n in range(1000):
        limiter.reserve(f"name-{n}", f"10.0.{n // 250}.{n % 250}")
        clock.now += 0.01
    assert len(limiter) <= 100
    clock.now += 61
    limiter.reserve("late", "10.9.9.9")
    limiter._cap()
    assert len(limiter) <= 100


def test_sessions_expire_and_sign_out_closes_their_consoles() -> None:
    clock = Clock()
    book = SessionBook(3600, clock)
    token, session = book.create(Identity("alice", "operator", "password"))
    assert book.get(token) is session and book.get("forged") is None and book.get(None) is None
    closed: list[str] = []
    session.closers.add(lambda: closed.append("console"))
    clock.now += 3599
    assert book.get(token) is session and book.remaining(session) == pytest.approx(1)
    book.drop(token)
    assert closed == ["console"] and book.get(token) is None
    token2, _ = book.create(Identity("val", "viewer", "password"))
    clock.now += 3600
    assert book.get(token2) is None  # expired
    assert token != token2 and len(token) >= 40


def test_verifier_checks_the_hash_and_unknown_names(tmp_path: Path) -> None:
    config = load_serve_config(write_config(tmp_path))
    verifier = Verifier(config)
    entry = verifier.verify("alice", PASSWORDS["alice"])
    assert entry is not None and entry.role == "operator"
    assert verifier.verify("alice", PASSWORDS["val"]) is None
    assert verifier.verify("nobody", PASSWORDS["alice"]) is None


def test_bind_rule() -> None:
    open_config = ServeConfig()
    for host in ("127.0.0.1", "localhost", "::1", "127.3.4.5"):
        assert is_loopback(host)
        check_bind(host, open_config, None)
    for host in ("0.0.0.0", "::", "10.1.2.3", "example.test", ""):
        assert not is_loopback(host)
        with pytest.raises(ServeConfigError, match="refusing to serve on"):
            check_bind(host, open_config, None)
        check_bind(host, open_config, "X-Remote-User")  # an authenticating proxy in front


def option(argv: list[str], name: str) -> str:
    """The value of ``--name=VALUE`` in ``argv`` (each value is one item, joined to its option)."""
    found = [item.split("=", 1)[1] for item in argv if item.startswith(name + "=")]
    assert len(found) == 1, argv
    return found[0]


def test_viewer_console_is_read_only_and_pinned(tmp_path: Path) -> None:
    config = load_serve_config(write_config(tmp_path))
    options = ServeOptions(db=str(tmp_path / "s.sqlite"), config=str(tmp_path / "hitl.toml"), apps=["x=mod:wf"],
                           secret_patterns=("password", "iban"))
    server = ConsoleServer(options, config, host="127.0.0.1", port=0)
    viewer = server.argv_for(Identity("val; rm -rf /", "viewer", "password"))
    assert viewer[:3] == [sys.executable, "-m", "console.serve.child"]
    assert "--read-only" in viewer
    assert option(viewer, "--operator") == "val; rm -rf /"  # one argv item, never a shell word
    assert "viewer" in option(viewer, "--read-only-reason")
    assert option(viewer, "--app") == "x=mod:wf"
    operator = server.argv_for(Identity("alice", "operator", "password"))
    assert "--read-only" not in operator and option(operator, "--operator") == "alice"
    server.options.read_only = True
    assert "--read-only" in server.argv_for(Identity("alice", "operator", "password"))
    assert build_argv("py", db=Path("d"), read_only=False, config=None, apps=[], show_secrets=False,
                      secret_patterns=[], operator=None, read_only_reason=None) == ["py", "-m", "console.serve.child",
                                                                                    "--db=d"]


def test_a_name_starting_with_a_dash_is_a_value_not_an_option(tmp_path: Path) -> None:
    """Issue 34: a name starting with '-' made the console's own command line fail
    ("Application failed to start", a blank page)."""
    from console.serve import child

    config = load_serve_config(write_config(tmp_path))
    server = ConsoleServer(ServeOptions(db=str(tmp_path / "s.sqlite")), config, host="127.0.0.1", port=0)
    argv = server.argv_for(Identity("-rf", "viewer", "proxy"))
    seen: dict[str, Any] = {}

    class FakeApp:
        def __init__(self, **kw: Any) -> None:
            seen.update(kw)

        def run(self) -> None:
            seen["ran"] = True

    import console.app

    original = console.app.HitlApp
    console.app.HitlApp = FakeApp  # type: ignore[misc]
    try:
        child.main(argv[3:])
    finally:
        console.app.HitlApp = original  # type: ignore[misc]
    assert seen["ran"] and seen["operator"] == "-rf" and seen["read_only"]
    assert seen["screenshot_limit"] == child.SCREENSHOTS_PER_CONSOLE  # a browser user cannot fill the disk
    assert seen["read_only_reason"].startswith("-rf is signed in as a viewer")


# ------------------------------------------------------------------ console hooks
async def _session_app(**kw: Any) -> Any:
    from tests.console.answer_store import demo_store
    from tests.console.test_answer import app_for

    return app_for(await demo_store(), **kw)


async def test_signed_in_operator_is_pinned_in_the_write_confirmation(monkeypatch: pytest.MonkeyPatch,
                                                                      tmp_path: Path) -> None:
    from textual.widgets import Input

    from console.screens.answer_dialogs import ConfirmWrite
    from tests.console.test_answer import open_session, settle, wait_until

    monkeypatch.setenv("USER", "server-user")
    monkeypatch.chdir(tmp_path)
    app = await _session_app(operator="alice")
    async with app.run_test(size=(120, 40)) as pilot:
        session = await open_session(pilot, "refund-waiting-1")
        assert session is app.screen
        await pilot.press("X")  # cancel asks first: the confirmation shows who writes
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmWrite))
        field = app.screen.query_one("#confirm-operator", Input)
        assert field.value == "alice" and field.disabled
        await settle(pilot)


async def test_read_only_write_keys_say_why(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from tests.console.test_answer import open_session, settle

    monkeypatch.chdir(tmp_path)
    app = await _session_app(read_only=True, read_only_reason="val is signed in as a viewer")
    async with app.run_test(size=(120, 40)) as pilot:
        session = await open_session(pilot, "refund-waiting-1")
        await pilot.press("X", "n")  # X: cancel writes; e opens a read-only dry run instead
        await settle(pilot)
        notes = [n.message for n in app._notifications]
        assert notes == ["Read-only: Cancel is disabled -- val is signed in as a viewer."]  # no internal action id
        assert app.screen is session
        for _ in range(5):  # a viewer pressing write keys again and again: one toast, not a stack
            await pilot.press("X")
        await settle(pilot)
        assert [n.message for n in app._notifications] == notes


async def test_read_only_editor_does_not_show_submit(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Issue 34: a viewer's dry-run editor showed a normal-looking ``^s Submit``."""
    from textual.widgets._footer import FooterKey

    from console.screens.answer import AnswerScreen
    from tests.console.test_answer import open_session, settle, wait_until

    monkeypatch.chdir(tmp_path)
    app = await _session_app(read_only=True, read_only_reason="val is signed in as a viewer")
    async with app.run_test(size=(140, 40)) as pilot:
        await open_session(pilot, "refund-waiting-1")
        await pilot.press("e")
        await wait_until(pilot, lambda: isinstance(app.screen, AnswerScreen))
        await settle(pilot)
        labels = [k.description for k in app.screen.query(FooterKey)]
        assert labels and "Submit" not in labels, labels
        await pilot.press("ctrl+s")  # pressed anyway: it says why
        await settle(pilot)
        assert any("Submit is disabled" in n.message for n in app._notifications)


async def test_screenshots_are_limited_per_console(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Issue 34: a viewer could write unlimited screenshot files to the server's disk."""
    from tests.console.test_answer import settle

    monkeypatch.chdir(tmp_path)
    app = await _session_app(read_only=True)
    app.screenshot_dir = tmp_path / "shots"
    app.screenshot_limit = 3
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        saved = [app.deliver_screenshot() for _ in range(6)]
        await settle(pilot)
        assert [s is not None for s in saved] == [True] * 3 + [False] * 3
        assert len(list((tmp_path / "shots").iterdir())) == 3
        assert any("the server's limit per console" in n.message for n in app._notifications)


async def test_typing_a_write_key_into_an_input_is_not_refused(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The read-only hint is for key bindings, not for text typed into the filter."""
    from tests.console.test_answer import settle

    monkeypatch.chdir(tmp_path)
    app = await _session_app(read_only=True, read_only_reason="a viewer")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("slash")
        await settle(pilot)
        await pilot.press("e", "space", "a")
        await settle(pilot)
        assert [n.message for n in app._notifications] == []
