"""The event log's scrollbar shows where the log is, also after a burst of lines.

Textual moves a scrollbar's thumb only while the scrollbar is shown. When the
lines that make a log taller than its view arrive in one burst (a turn's last
events come with its end, in one write), the log follows them to the end
before its scrollbar appears; the thumb then stayed at the top.
"""

from __future__ import annotations

from textual.app import App, ComposeResult

from console.widgets.event_log import EventLog


class LogApp(App[None]):
    CSS = "EventLog { overflow-x: hidden; }"

    def compose(self) -> ComposeResult:
        log = EventLog()
        log.follow = True
        yield log


async def test_the_thumb_follows_a_burst_that_makes_the_log_scroll() -> None:
    app = LogApp()
    async with app.run_test(size=(60, 12)) as pilot:
        log = app.query_one(EventLog)
        log.set_total(5)  # fits: no scrollbar
        await pilot.pause()
        assert not log.show_vertical_scrollbar
        log.set_total(40)  # one burst: the log follows to the end at once
        await pilot.pause()
        await pilot.pause()
        assert log.show_vertical_scrollbar
        assert log.scroll_y > 0  # at the end
        assert log.vertical_scrollbar.position == log.scroll_y
