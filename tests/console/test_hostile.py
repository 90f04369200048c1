"""Data is text: hostile strings in every field a session carries, through every
screen and modal of the console, never crash it, never become markup or
terminal control, and are shown literally.

The fuzz test is bounded (a few generated examples plus fixed ones; each drives
the whole console once) so it runs in CI in well under a minute.
"""

from __future__ import annotations

import asyncio
import re
from typing import Any

from hypothesis import HealthCheck, Phase, example, given, settings
from hypothesis import strategies as st
from textual.pilot import Pilot

from console.app import HitlApp
from console.screens.session import SessionScreen
from console.text import BIDI, clean, literal

from .conftest import make_app
from .hostile import NASTY, hostile_store, marker

CONTROL = re.compile(f"[\x00-\x08\x0b-\x1f\x7f-\x9f{BIDI}]")


def screen_lines(app: HitlApp) -> list[str]:
    """What the terminal shows now (the screen, modals over their background, toasts)."""
    update = app.screen._compositor.render_update(full=True, screen_stack=app._background_screens)
    return ["".join(seg.text for seg in strip) for strip in update.strips]  # type: ignore[union-attr]


def screen_text(app: HitlApp) -> str:
    return "\n".join(screen_lines(app))


async def idle(pilot: Pilot[Any], rounds: int = 3) -> None:
    for _ in range(rounds):
        await pilot.pause()
        await pilot.app.workers.wait_for_complete()
        await pilot.pause()


async def enter_line(pilot: Pilot[Any], key: str, text: str) -> None:
    """``key`` opens a line (filter, command); type ``text``, press enter, wait till idle."""
    await pilot.press(key)
    await pilot.press(*text)
    await pilot.press("enter")
    await idle(pilot)


async def wait_for(pilot: Pilot[Any], predicate: Any, message: str, timeout: float = 20.0) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not predicate():
        if loop.time() > deadline:
            raise AssertionError(f"timed out waiting for {message}; screen:\n{screen_text(pilot.app)}")  # type: ignore[arg-type]
        await pilot.pause(0.02)


def check(app: HitlApp, where: str, *tags: str) -> str:
    """No crash, no control character on screen, and each tag's literal marker shown."""
    assert app._exception is None, f"{where}: {app._exception!r}"
    assert app.is_running, f"{where}: the console exited"
    text = screen_text(app)
    bad = CONTROL.findall(text)
    assert not bad, f"{where}: terminal control reached the screen: {bad!r}"
    for tag in tags:
        assert marker(tag) in text, f"{where}: {marker(tag)!r} not shown literally:\n{text}"
    return text


async def drive_everything(h: str) -> None:
    store, reg, ids = await hostile_store(h)
    app = make_app(store, registry=reg)
    async with app.run_test(size=(160, 50)) as pilot:
        await wait_for(pilot, lambda: getattr(app.screen, "loaded_once", False), "the sessions list")
        await idle(pilot)
        check(app, "sessions", "APP", "USR", "SID")
        # the filter box, with hostile text typed in
        await enter_line(pilot, "slash", "[/x]")
        check(app, "sessions filter")
        await pilot.press("escape")
        await idle(pilot)
        app.open_session(ids["session"], invocation_id=ids["inv"])
        await wait_for(pilot, lambda: isinstance(app.screen, SessionScreen) and app.screen.proj is not None, "the session")
        await idle(pilot)
        check(app, "session", "SID")
        text = ""
        for _ in range(5):  # every node of the tree (the cursor starts on the failed leaf)
            await pilot.press("up")
            await idle(pilot)
            text += check(app, "session tree")
        for tag in ("OUT", "ERR", "ANS", "TXT"):
            assert marker(tag) in text, f"the tree and details never showed {tag}"
        await pilot.press("tab")  # the event log
        text = ""
        for _ in range(25):
            await pilot.press("up")
            await idle(pilot, 1)
            text += check(app, "event log")
        for tag in ("OPR", "RSN", "OPC", "RSC"):  # operator and reason of the answer and the cancel
            assert marker(tag) in text, f"the event log never showed {tag}"
        await pilot.press("p")  # the invocations picker
        await idle(pilot)
        check(app, "invocations", "TXT")
        await pilot.press("escape")
        await idle(pilot)
        await pilot.press("t")  # replay
        await idle(pilot)
        for key in ("G", "left_curly_bracket", "m", "g", "right_square_bracket", "d", "right_curly_bracket"):
            await pilot.press(key)
            await idle(pilot)
            check(app, f"replay {key}")
        await pilot.press("escape")
        await idle(pilot)
        await pilot.press("escape")
        await idle(pilot)
        # the waiting invocation: answer screen, confirmation, copy
        app.open_session(ids["session"], invocation_id=ids["inv2"])
        await wait_for(pilot, lambda: isinstance(app.screen, SessionScreen) and app.screen.invocation_id == ids["inv2"]
                       and app.screen.proj is not None, "the waiting invocation")
        await idle(pilot)
        await pilot.press("n", "e")
        await idle(pilot)
        check(app, "answer editor", "MSG", "PAY")
        await pilot.press(*'"[/var/log/pay]"')
        await idle(pilot)
        await pilot.press("ctrl+o")
        await idle(pilot)
        check(app, "copied")
        await pilot.press("ctrl+s")
        await idle(pilot)
        await pilot.press(*"[/x] reason")
        await idle(pilot)
        text = check(app, "confirmation")
        assert "[/var/log/pay]" in text and "[/x] reason" in text
        await pilot.press("escape")
        await idle(pilot)
        await pilot.press("escape")
        await idle(pilot)
        # inbox, help, command line, palette
        await pilot.press("i")
        await wait_for(pilot, lambda: "MSG" in screen_text(app), "the inbox")
        check(app, "inbox", "MSG")
        await pilot.press("question_mark")
        await idle(pilot)
        check(app, "help")
        await pilot.press("escape")
        await enter_line(pilot, "colon", "open [/x]")
        check(app, ":open [/x]")
        await enter_line(pilot, "colon", "sessions user=[/u]")
        check(app, ":sessions user=[/u]")
        await pilot.press("ctrl+p")
        await pilot.press(*"[/p] [@click=app.quit]")
        await idle(pilot)
        check(app, "palette")
        await pilot.press("escape")
        await idle(pilot)
        check(app, "end")


@settings(
    max_examples=1,  # + the explicit all-NASTY example: ~25 s each, the whole test under 60 s in CI
    deadline=None,
    suppress_health_check=list(HealthCheck),
    derandomize=True,  # the same examples on every run: CI stays deterministic
    phases=(Phase.explicit, Phase.generate),  # no shrinking: each example drives the whole console
    database=None,
)
@given(
    st.lists(st.one_of(st.sampled_from(NASTY), st.text(max_size=20)), min_size=1, max_size=4).map("".join)
)
@example("".join(NASTY))
def test_hostile_strings_everywhere(h: str) -> None:
    asyncio.run(drive_everything(h))


def test_clean_neutralises_terminal_control() -> None:
    assert clean("\x1b[2J") == "␛[2J"
    assert clean("\x1b]52;c;SGVsbG8=\x07") == "␛]52;c;SGVsbG8=␇"
    assert clean("a\u202eb") == "a�b"
    assert clean("\x9b\x00\x7f") == "�␀␡"
    assert clean("two\nlines\tok") == "two\nlines\tok"
    assert clean("two\nlines", one_line=True) == "two␊lines"
    assert literal("[b]x[/b] [red]y").plain == "[b]x[/b] [red]y"
