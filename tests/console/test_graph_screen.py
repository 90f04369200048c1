"""The graph screen (``v`` on the session screen): a fan-out with a waiting item,
a nested workflow, a loop -- snapshots at 120x36 -- and a Pilot test that opens
it from the session screen, scrolls it and goes back."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from textual.containers import ScrollableContainer
from textual.pilot import Pilot

from console.screens.answer import AnswerScreen
from console.screens.graph import GraphScreen
from console.screens.session import SessionScreen
from engine.store import MemoryStore
from tests.graphs import FANOUT, LOOP, LOOP_ANSWERS, NESTED, WIDE, stored

from .conftest import drive, make_app, settle
from .scenarios import pin


async def _build() -> MemoryStore:
    raw = MemoryStore()
    await stored(FANOUT, "fanout", store=raw, session_id="fanout-1")
    await stored(NESTED, "outer", store=raw, session_id="nested-1")
    await stored(LOOP, "loop", LOOP_ANSWERS, store=raw, session_id="loop-1")
    await stored(WIDE, "wide", store=raw, session_id="wide-1")
    return await pin(raw)  # ids and times pinned; snapshots cached (the loop's leaves out earlier runs)


@pytest.fixture(scope="module")
def store() -> MemoryStore:
    return asyncio.run(_build())


def open_graph(session_id: str):
    async def run_before(pilot: Pilot[Any]) -> None:
        await drive(pilot, "v", session=session_id)

    return run_before


def test_graph_fan_out_with_a_waiting_item(snap_compare, store):
    """fetch fans out to items (a parallel worker: check ×3, 1 waiting), notify and
    review_all; the waiting ones in double boxes, what an answer does under them."""
    assert snap_compare(make_app(store), terminal_size=(120, 36), run_before=open_graph("fanout-1"))


def test_graph_nested_workflow(snap_compare, store):
    """inner@1 is a group inside outer@1, with its own edge annotate -> sign."""
    assert snap_compare(make_app(store), terminal_size=(120, 36), run_before=open_graph("nested-1"))


def test_graph_loop(snap_compare, store):
    """build/gate ran 3 times, verify twice; verify's edge back to build is the loop edge (◀)."""
    assert snap_compare(make_app(store), terminal_size=(120, 36), run_before=open_graph("loop-1"))


def test_graph_wide_fan_out_folds_to_fit(snap_compare, store):
    """fetch fans out to twelve checks: the eleven completed ones are one node
    (×11 fraud…history), kyc keeps its double box; the picture fits 120 columns."""
    assert snap_compare(make_app(store), terminal_size=(120, 36), run_before=open_graph("wide-1"))


async def test_v_opens_the_graph_of_the_shown_invocation_and_esc_goes_back(store) -> None:
    app = make_app(store)
    async with app.run_test(size=(80, 24)) as pilot:
        session = await drive(pilot, session="fanout-1", expect=SessionScreen)
        graph_key = app.active_bindings["v"]  # derived from the registry (session.graph): footer, help, palette
        assert graph_key.binding.id == "session.graph" and graph_key.binding.description == "Graph"
        await pilot.press("v")
        await settle(pilot)
        graph = app.screen
        assert isinstance(graph, GraphScreen) and graph.graph is not None
        assert graph.invocation_id == session.invocation_id
        waiting = {n.label for n in graph.graph.nodes if n.waiting and not n.is_group}
        assert waiting == {"check ×3", "review_all@1"}
        # 98 columns of picture in an 80-column terminal: it scrolls
        scroll = graph.query_one("#graph-scroll", ScrollableContainer)
        assert scroll.max_scroll_x > 0
        await pilot.press("right", "right")
        await settle(pilot)
        assert scroll.scroll_x > 0
        info = str(graph.query_one("#graph-info").render())
        assert "2 waiting" in info and "2 open ids" in info
        await pilot.press("escape")
        await settle(pilot)
        assert app.screen is session


async def test_the_loop_graph_is_redrawn_once_earlier_runs_are_in(store) -> None:
    """Opened before the history is folded in, the loop's back edge would be read
    from the latest runs only; the session screen redraws the graph when it is in."""
    app = make_app(store)
    async with app.run_test(size=(120, 36)) as pilot:
        await drive(pilot, session="loop-1")
        session = app.screen
        assert isinstance(session, SessionScreen) and session.complete
        await pilot.press("v")
        await settle(pilot)
        g = app.screen.graph
        by = g.by_key
        assert {(by[e.src].name, by[e.dst].name) for e in g.edges if e.loop} == {("verify", "build")}


def test_counts_agree_with_their_nouns() -> None:
    from console.text import counted

    assert [counted(1, "edge"), counted(2, "edge"), counted(1, "open id"), counted(0, "node")] == \
        ["1 edge", "2 edges", "1 open id", "0 nodes"]


@pytest.mark.parametrize("size", [(80, 24), (120, 40)])
async def test_enter_opens_the_picked_node_in_the_tree_and_e_answers_it(store, size) -> None:
    """The graph is not a static picture: j/k pick a node (the first waiting one at
    first), enter opens it in the node tree, e opens the editor over its open ids."""
    app = make_app(store)
    async with app.run_test(size=size) as pilot:
        session = await drive(pilot, session="fanout-1", expect=SessionScreen)
        await pilot.press("v")
        await settle(pilot)
        graph = app.screen
        assert isinstance(graph, GraphScreen) and graph.graph is not None
        first = graph.picked_node
        assert first is not None and first.open_ids  # a waiting node is picked at first
        assert f"▸ {first.path}" in str(graph.query_one("#graph-info").render())
        await pilot.press("j")
        assert graph.picked_node is not None and graph.picked_node.key != first.key
        await pilot.press("k")
        assert graph.picked_node is not None and graph.picked_node.key == first.key
        await pilot.press("enter")
        await settle(pilot)
        assert app.screen is session and session.run_tree.cursor_path == first.path
        await pilot.press("v")
        await settle(pilot)
        await pilot.press("e")
        await settle(pilot)
        editor = app.screen
        assert isinstance(editor, AnswerScreen)
        assert sorted(editor.selected) == sorted(first.open_ids)
