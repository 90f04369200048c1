"""console.graph_render on wide pictures: a 12-way fan-out and an orchestration
node with 14 dynamic children of different names fit 120 columns (``hitl show
--graph`` and the console draw the same characters), the waiting ones keeping
their own double box; a narrow picture is not folded."""

from __future__ import annotations

import pytest

from console.graph_render import MAX_WIDTH, _draw, plain_lines
from engine.graph_view import invocation_graph
from tests.graphs import FANOUT, FLEET, WIDE, projection, stored


async def graph_of(workflow):
    store, sid = await stored(workflow, workflow.name)
    proj = await projection(store, sid)
    inv = next(iter(proj.invocations))
    return invocation_graph(proj, inv)


@pytest.mark.parametrize(("workflow", "folded", "waiting"), [
    (WIDE, "×11 fraud…history", "kyc@1"),
    (FLEET, "×13 agent_00…agent_13", "agent_03@1"),
])
async def test_a_wide_fan_out_folds_to_fit_120_columns(workflow, folded, waiting):
    g = await graph_of(workflow)
    assert _draw(g, g.root).width > 200  # box by box it would not fit
    lines = plain_lines(g)
    assert max(len(line) for line in lines) <= MAX_WIDTH == 120
    text = "\n".join(lines)
    assert f"│ {folded}" in text and "COMPLETED" in text  # the quiet ones, counted
    assert f"║ {waiting}" in text and "answer → auto-complete" in text  # the waiting one keeps its double box
    assert ("▼" in text) == bool(g.edges)  # fetch -> the checks (dynamic children have no edges)


async def test_a_narrow_picture_is_drawn_box_by_box():
    g = await graph_of(FANOUT)
    text = "\n".join(plain_lines(g))
    assert "×" not in text.replace("check ×3", "")  # the parallel worker's own fold only
    assert "notify@1" in text and "review_all@1" in text
