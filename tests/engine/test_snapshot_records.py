"""A turn's snapshot, written and read back, without the detours that cost a
worker's turn CPU and changed nothing stored:

* the last write's snapshot dict is built from the projection's records directly
  (``Projection.snapshot_dict``), not by cloning them into a compacted
  projection first and reading the clones back into dicts: the same dict, key
  for key and in the same order, so the same stored bytes;
* a snapshot read back restores its records without the dataclass ``__init__``
  when it holds exactly their fields; a snapshot of another layout (a field
  added since it was written) still gets the field's default.

Checked on every prefix of every session of the console's scenarios (loops,
fan-out, dynamic children, approvals, failures, re-drives): each prefix is a
state some turn's last write has seen.
"""

from __future__ import annotations

import json
from dataclasses import fields
from typing import Any

import pytest

from engine.models import NodeStatus
from engine.projection import Projection
from engine.projection_records import Interrupt, Invocation, NodeRun
from tests.console.scenarios import build_store


async def _prefixes() -> list[Projection]:
    store = await build_store()
    out = []
    for sid in sorted(store._sessions):
        p = Projection()
        for stored in await store.events(sid):
            p = p.fork()
            p.apply(stored.event, stored.seq)
            out.append(p)
    return out


@pytest.fixture(scope="module")
def prefixes() -> list[Projection]:
    import asyncio

    return asyncio.run(_prefixes())


def _bytes(data: dict[str, Any]) -> str:
    return json.dumps(data, separators=(",", ":"))  # key order counts: it is what is stored


def test_a_snapshot_dict_is_the_compacted_projections_dict(prefixes: list[Projection]) -> None:
    checked = 0
    for p in prefixes:
        for inv in p.invocations:
            assert _bytes(p.snapshot_dict(inv)) == _bytes(p.compact(inv).to_dict())
            checked += 1
        assert _bytes(p.snapshot_dict("no-such-invocation")) == _bytes(p.compact("no-such-invocation").to_dict())
    assert checked > 100  # the scenarios were folded (not an empty loop)


def _records(p: Projection) -> list[tuple[type, dict[str, Any]]]:
    recs = [*p.nodes.values(), *p.interrupts.values(), *p.invocations.values()]
    return [(type(r), {f.name: getattr(r, f.name) for f in fields(r)}) for r in recs]


def _through_init(data: dict[str, Any]) -> Projection:
    """What ``from_dict`` built before: every record through its ``__init__``."""
    p = Projection.from_dict({**data, "nodes": [], "interrupts": [], "invocations": []})
    for inv in data["invocations"]:
        p.invocations[inv["id"]] = Invocation(**inv)
    for n in data["nodes"]:
        run = NodeRun(**{**n, "status": NodeStatus(n["status"])})
        p.nodes[(run.invocation_id, run.path)] = run
    for i in data["interrupts"]:
        itr = Interrupt(**i)
        p.interrupts[(itr.invocation_id, itr.id)] = itr
    return p


def test_a_snapshot_read_back_restores_the_same_records(prefixes: list[Projection]) -> None:
    for p in prefixes[:: max(1, len(prefixes) // 60)]:
        for inv in p.invocations:
            stored = _bytes(p.snapshot_dict(inv))
            back = Projection.from_dict(json.loads(stored))
            assert _bytes(back.to_dict()) == stored
            expected = _through_init(json.loads(stored))
            assert _records(back) == _records(expected)
            for run in back.nodes.values():
                assert run._gen == 0
                assert run.clone(1).interrupt_ids is not run.interrupt_ids  # a fork still copies what it changes


def test_a_snapshot_of_another_layout_still_gets_the_defaults(prefixes: list[Projection]) -> None:
    p = next(p for p in reversed(prefixes) if p.interrupts)
    inv = next(iter(p.invocations))
    data = json.loads(_bytes(p.snapshot_dict(inv)))
    for n in data["nodes"]:
        del n["errors"]  # a snapshot written before the field existed
    for i in data["interrupts"]:
        del i["approvals"]
    back = Projection.from_dict(data)
    assert [r.errors for r in back.nodes.values()] == [0] * len(data["nodes"])
    assert all(i.approvals == [] for i in back.interrupts.values())
    data["nodes"][0]["no_such_field"] = 1  # a newer layout: refused as before (the caller folds the events)
    with pytest.raises(TypeError):
        Projection.from_dict(data)
