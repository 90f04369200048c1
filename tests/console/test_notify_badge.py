"""A notification channel that failed for good is named in the console's title
bar (nobody is told that a human is needed); a later success clears it."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.store.notify import Delivery, failing_channels, ledger
from engine.store.sqlite import SQLiteStore

from .conftest import make_app, settle


async def _record(db: Path, rows: list[tuple[str, str, bool]]) -> None:
    """(key, channel, sent) deliveries, one try each, in order; not sent = given up."""
    async with SQLiteStore.open(db) as store:
        book = ledger(store)
        for n, (key, channel, sent) in enumerate(rows):
            now = 1000.0 + n
            assert await book.claim(Delivery(key=key, channel=channel, kind="interrupt_opened"), "o", 60, now)
            await book.finish(key, channel, "o", sent=sent, error=None if sent else "HTTP 500", next_at=now,
                              give_up=not sent, now=now)


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "store.sqlite"


async def test_a_failed_channel_is_named_in_the_title_bar(db: Path) -> None:
    await _record(db, [("k1", "ops", False), ("k2", "mail", True), ("k3", "slack", False), ("k4", "slack", True)])
    async with SQLiteStore.open(db) as store:
        assert await failing_channels(store) == ["ops"]  # slack's later success clears it
    app = make_app(None, db_path=db)
    async with app.run_test(size=(120, 30)) as pilot:
        await settle(pilot)
        assert "notify failing: ops" in str(app.screen.query_one("#badges").render())


async def test_no_failure_no_badge(db: Path) -> None:
    await _record(db, [("k1", "ops", True)])
    app = make_app(None, db_path=db)
    async with app.run_test(size=(120, 30)) as pilot:
        await settle(pilot)
        assert "notify failing" not in str(app.screen.query_one("#badges").render())
