"""``engine.views.waits_below`` (the details pane's "waits on") gives what walking
the subtree gives -- ``Projection.pending_ids`` less the run's own ids, in the same
order -- from the invocation's open interrupts, for every run of every scenario
session, at every prefix of its log (ids open, answered, raised again)."""

from __future__ import annotations

import asyncio

from engine.projection import Projection
from engine.views import waits_below
from tests.console.scenarios import build_store


def test_waits_below_is_the_subtree_walk_without_the_runs_own_ids() -> None:
    async def sessions() -> list[list[object]]:
        store = await build_store()
        return [[se.event for se in await store.events(s.id)] for s in (await store.list_sessions(limit=1000)).items]

    checked = 0
    for events in asyncio.run(sessions()):
        proj = Projection()
        for event in events:
            proj.apply(event)  # type: ignore[arg-type]
            for (inv, path), run in list(proj.nodes.items()):
                if not run.children:
                    continue
                walked = [i for i in proj.pending_ids(inv, path) if i not in run.own_pending]
                assert waits_below(proj, inv, path) == walked, (inv, path)
                checked += bool(walked)
    assert checked > 50  # runs that wait on something below them were compared, not only empty lists
