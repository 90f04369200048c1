"""Keys whose work is bounded: what a key does on the UI's thread must not grow
with a payload, a history or how often it was pressed. Behaviour only (counts of
what was built or visited), never a time: benchmarks/bench_console.py measures
the latencies."""

from __future__ import annotations

from typing import Any

from console.screens import help as help_module
from console.screens.help import HelpScreen
from console.screens.sessions import SessionsScreen

from .conftest import make_app, settle
from .scenarios import build_store


async def test_the_help_is_laid_out_once_however_often_it_is_opened(monkeypatch: Any) -> None:
    """``?`` built and laid out the whole help table from the registry on every
    press (a Rich table measures and wraps every cell each time it is drawn)."""
    tables: list[int] = []
    real = help_module.help_table

    def counted(*args: Any, **kw: Any) -> Any:
        tables.append(1)
        return real(*args, **kw)

    monkeypatch.setattr(help_module, "help_table", counted)
    app = make_app(await build_store())
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        assert isinstance(app.screen, SessionsScreen)
        for _ in range(3):
            await pilot.press("question_mark")
            await settle(pilot)
            assert isinstance(app.screen, HelpScreen)
            await pilot.press("escape")
            await settle(pilot)
            assert isinstance(app.screen, SessionsScreen)
        assert len(tables) == 1
        from console.screens.help import help_cache

        (drawn,) = [d for key, d in help_cache(app).drawn.items() if key[0] == "table"]
        widths = len(drawn.lines)  # laid out at each width tried (with and without a scrollbar)
        await pilot.press("question_mark")
        await settle(pilot)
        await pilot.press("escape")
        await settle(pilot)
        assert len(drawn.lines) == widths and len(tables) == 1
        await pilot.press("i")  # another screen lists other keys: its own table, once
        await settle(pilot)
        for _ in range(2):
            await pilot.press("question_mark")
            await settle(pilot)
            await pilot.press("escape")
            await settle(pilot)
        assert len(tables) == 2
