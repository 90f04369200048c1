"""Every screen's footer keeps to its line: the keys that fit, then the palette's
key, nothing drawn under it (the response editor's footer ended in ``paletteo`` at
80 columns: a key that did not fit ran on under the palette's key)."""

from __future__ import annotations

from typing import Any

import pytest
from textual.widgets import Footer
from textual.widgets._footer import FooterKey

from console.screens.replay import ReplayScreen

from .answer_store import demo_store
from .test_answer import app_for, editor_screen, open_session, settle, wait_until


def assert_fits(screen: Any) -> None:
    footer = screen.query_one(Footer)
    keys = list(footer.query(FooterKey))
    palette = [k for k in keys if k.has_class("-command-palette")]
    others = [k for k in keys if not k.has_class("-command-palette")]
    assert palette and others
    assert any(k.key == "question_mark" for k in others)  # the help lists the keys left out
    edge = palette[0].region.x
    for k in others:
        assert k.region.right <= edge, (k.description, k.region, edge)


@pytest.mark.parametrize("size", [(80, 24), (120, 40)])
async def test_the_editor_and_replay_footers_end_with_the_palette_key(size) -> None:
    app = app_for(await demo_store())
    async with app.run_test(size=size) as pilot:
        await open_session(pilot, "labels-partial-1")
        screen = await editor_screen(pilot, "A", "e")
        await wait_until(pilot, lambda: not screen.filling)
        await settle(pilot)
        assert_fits(screen)
        await pilot.press("escape")
        await settle(pilot)
        await pilot.press("t")
        await settle(pilot)
        assert isinstance(app.screen, ReplayScreen)
        assert_fits(app.screen)


async def test_a_footer_whose_keys_change_keeps_its_key_widgets() -> None:
    """``ctrl+t`` in the editor swaps the footer's 9 keys for 6 and back: Textual's
    recompose removed and mounted every key (styled and laid out again, most of the
    key's cost); the keys drawn take the new values, the missing are mounted, and
    the footer shows what a new one would."""
    from console.widgets.footer import FittedFooter

    def drawn(footer: FittedFooter) -> list[tuple[object, ...]]:
        return [(k.key, k.key_display, k.description, k.action, k._disabled, k.has_class("-disabled"))
                for k in footer.query(FooterKey)]

    def composed(footer: FittedFooter) -> list[tuple[object, ...]]:
        keys = [(s.binding.key, s.display, s.binding.description, s.binding.action, not s.enabled, not s.enabled)
                for s in footer.fitted()]
        palette = footer._palette()
        assert palette is not None
        b, enabled = palette
        return [*keys, (b.key, app.get_key_display(b), b.description, b.action, not enabled, not enabled)]

    app = app_for(await demo_store())
    async with app.run_test(size=(120, 40)) as pilot:
        await open_session(pilot, "labels-partial-1")
        screen = await editor_screen(pilot, "A", "e")
        await wait_until(pilot, lambda: not screen.filling)
        await settle(pilot)
        footer = screen.query_one(FittedFooter)
        before = list(footer.query(FooterKey))
        shown = drawn(footer)
        for _ in range(2):
            await pilot.press("ctrl+t")
            await settle(pilot)
            assert drawn(footer) == composed(footer)
        after = list(footer.query(FooterKey))
        assert drawn(footer) == shown
        assert len(set(map(id, after)) & set(map(id, before))) >= len(before) - 3  # kept, not mounted again
