"""Random key sequences an operator could type, fast and without waiting for the
screen, on every screen the keys reach: the console never crashes, and the
screens with a fixed id (sessions, inbox, audit) are never on the stack twice.

Seeded: each seed is the same sequence every run. How the keys interleave with
the console's own loads differs from run to run; the assertion does not depend
on it (whatever the timing, nothing may crash). Found the inbox pushed over an
inbox (``i``, ``enter``, ``i``: a DuplicateIds traceback). Keys that quit, submit
or confirm writes are left out: the walk is about navigation and overlays.
"""

from __future__ import annotations

import random

import pytest

from console.screens.audit import AuditScreen
from console.screens.inbox import InboxScreen
from console.screens.sessions import SessionsScreen

from .conftest import make_app, settle
from .scenarios import build_store

STEPS = [
    ["i"], ["enter"], ["escape"], ["i"], ["enter"], ["escape"], ["question_mark"], ["colon", *"audit", "enter"], ["colon", *"inbox", "enter"],
    ["colon", *"sessions", "enter"], ["1"], ["2"], ["0"], ["G"], ["g"], ["down"], ["up"], ["n"], ["tab"],
    ["slash", *"refund", "enter"], ["slash", "escape"], ["space"], ["s"], ["o"], ["l"], ["a"], ["e"], ["b"],
]
"""Key groups (a command line is typed whole), moving between screens most often. ``a``/``e``/``b`` open the answer
editor or the bulk dialog where they apply; nothing here submits one."""


@pytest.mark.parametrize("seed", [3, 4, 6])  # each hit the duplicate-screen crash before its fix
async def test_random_keys_never_crash_the_console(seed: int) -> None:
    store = await build_store()
    app = make_app(store)
    rnd = random.Random(seed)
    async with app.run_test(size=(120, 34)) as pilot:
        await settle(pilot)
        for _ in range(40):
            for key in rnd.choice(STEPS):
                await pilot.press(key)
            if rnd.random() < 0.25:  # now and then let the loads land, as a reading operator would
                await settle(pilot)
            for kind in (SessionsScreen, InboxScreen, AuditScreen):
                assert sum(isinstance(s, kind) for s in app.screen_stack) <= 1, (kind, app.screen_stack)
        await settle(pilot)
    assert app.return_code in (None, 0), app.return_code
