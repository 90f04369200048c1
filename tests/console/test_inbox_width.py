"""The inbox chooses what to show by width: the question and the age first, then
the session, the interrupt id, the app and the node path while each fits readably
(at 80 columns every column cut to a stub -- ``finance-ord…``, ``Finance: …``,
``refu…`` -- was unreadable)."""

from __future__ import annotations

from typing import Any

import pytest
from textual.widgets import DataTable

from console.screens.inbox import asks
from console.widgets.format import choose_columns

from .answer_store import demo_store
from .test_answer import app_for
from .test_trust import open_inbox


def labels(table: DataTable[Any]) -> list[str]:
    return [c.label.plain.split(" ")[0] for c in table.columns.values()]


@pytest.mark.parametrize(("size", "columns"), [
    ((80, 24), ["STATUS", "AGE", "SESSION", "ASKS"]),
    ((120, 40), ["STATUS", "AGE", "INTERRUPT", "SESSION", "ASKS", "APP"]),
    ((200, 50), ["STATUS", "AGE", "INTERRUPT", "SESSION", "ASKS", "NODE", "APP"]),
])
async def test_the_inbox_shows_the_question_and_age_first_and_fits(size, columns) -> None:
    store = await demo_store()
    app = app_for(store)
    async with app.run_test(size=size) as pilot:
        inbox = await open_inbox(pilot)
        table = inbox.query_one("#inbox-table", DataTable)
        assert labels(table) == columns
        drawn = sum(c.get_render_width(table) for c in table.columns.values())
        assert drawn <= table.scrollable_content_region.width
        for r in inbox.rows:
            key = inbox._key(r)
            question = table.get_cell(key, "asks").plain
            assert question.rstrip("…") and asks(r).startswith(question.rstrip("…"))
            assert len(question) >= min(len(asks(r)), 30), question  # readable, not "Finance: …"
            session = table.get_cell(key, "session").plain
            assert session == r.session_id  # whole: the demo's ids are short enough
        await pilot.press("I")  # a sort by a shown column still works
        assert inbox.sort_column == "session"


def test_a_column_that_does_not_fit_is_skipped_and_a_shorter_one_tried() -> None:
    natural = {"asks": 60, "session": 20, "interrupt": 30, "app": 8}
    readable = {"asks": 34, "session": 20, "interrupt": 20, "app": 16}
    assert choose_columns(natural, 70, first=("asks",), then=("session", "interrupt", "app"), readable=readable) == (
        "asks", "session", "app")
    assert choose_columns(natural, 30, first=("asks",), then=("session",), readable=readable) == ("asks",)
