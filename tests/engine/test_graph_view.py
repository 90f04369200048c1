"""engine.graph_view: the graph of an invocation from its events -- edges from
the start records' ``after``, loop edges, nested workflows as groups, dynamic
children folded, and what answering every open id would do (the projection's
rules on a fork, as the dry run)."""

from __future__ import annotations

from engine.graph_view import AUTO_COMPLETE, RE_EXECUTE, answer_effects, invocation_graph
from engine.models import Event, NodeInfo
from engine.projection import Projection
from engine.status import DisplayStatus
from tests.graphs import FANOUT, LOOP, LOOP_ANSWERS, NESTED, projection, stored


async def graph_of(workflow, answers=()):
    store, sid = await stored(workflow, workflow.name, list(answers))
    proj = await projection(store, sid)
    inv = next(iter(proj.invocations))
    return proj, inv, invocation_graph(proj, inv)


def edge_names(graph) -> set[tuple[str, str, bool]]:
    by = graph.by_key
    return {(by[e.src].name, by[e.dst].name, e.loop) for e in graph.edges}


async def test_start_records_name_the_siblings_that_dispatched_them() -> None:
    proj, inv, _ = await graph_of(FANOUT)
    runs = {r.name: r for r in proj.runs(inv)}
    assert runs["fetch"].after == []  # from START
    assert runs["items"].after == runs["notify"].after == runs["review_all"].after == ["fetch"]
    assert runs["fanout"].after is None and runs["check"].after is None  # the root; a dynamic child


async def test_fan_out_with_a_waiting_item() -> None:
    _, _, g = await graph_of(FANOUT)
    assert edge_names(g) == {("fetch", "items", False), ("fetch", "notify", False), ("fetch", "review_all", False)}
    items = g.by_key["fanout@1/items@1/check×"]
    assert (items.label, items.dynamic, items.runs, items.group) == ("check ×3", True, 3, "fanout@1/items@1")
    assert items.counts == ((DisplayStatus.WAITING, 1), (DisplayStatus.COMPLETED, 2))
    assert items.waiting and items.open_ids == ("item-2",)
    assert (items.next, items.next_count) == (AUTO_COMPLETE, 1)
    assert g.by_key["fanout@1/items@1"].is_group and g.by_key["fanout@1/items@1"].next == RE_EXECUTE
    assert g.by_key["fanout@1/review_all@1"].next == AUTO_COMPLETE
    assert g.by_key["fanout@1/notify@1"].next is None and not g.by_key["fanout@1/notify@1"].waiting
    assert g.root is not None and g.root.key == "fanout@1" and g.root.group is None
    # not run yet, so not in the picture (the events do not know them)
    assert {n.name for n in g.nodes} == {"fanout", "fetch", "items", "check", "notify", "review_all"}


async def test_a_nested_workflow_is_a_group_with_its_own_edges() -> None:
    _, _, g = await graph_of(NESTED)
    inner = g.by_key["outer@1/inner@1"]
    assert inner.is_group and inner.group == "outer@1"
    assert [n.name for n in g.members("outer@1/inner@1")] == ["annotate", "sign"]
    assert edge_names(g) == {("draft", "inner", False), ("annotate", "sign", False)}
    assert g.edges_in("outer@1/inner@1") == [e for e in g.edges if e.src.startswith("outer@1/inner@1/")]
    assert g.by_key["outer@1/inner@1/sign@1"].next == AUTO_COMPLETE
    assert inner.next == RE_EXECUTE  # the containers above an answered node re-execute


async def test_a_loop_folds_iterations_and_marks_the_edge_back() -> None:
    _, _, g = await graph_of(LOOP, LOOP_ANSWERS)
    assert edge_names(g) == {("build", "gate", False), ("gate", "verify", False), ("verify", "build", True)}
    build, gate = g.by_key["loop@1/build@3"], g.by_key["loop@1/gate@3"]
    assert (build.run_id, build.runs, gate.runs) == ("3", 3, 3)
    assert gate.waiting and gate.open_ids == ("gate-3",)


async def test_marks_follow_the_projection_rules_and_leave_the_projection_alone() -> None:
    proj, inv, _ = await graph_of(FANOUT)
    before = {r.path: r.status for r in proj.runs(inv)}
    effects = answer_effects(proj, inv)
    assert effects == {
        "fanout@1/items@1/check@2": AUTO_COMPLETE,
        "fanout@1/review_all@1": AUTO_COMPLETE,
        "fanout@1/items@1": RE_EXECUTE,
        "fanout@1": RE_EXECUTE,
    }
    assert {r.path: r.status for r in proj.runs(inv)} == before  # a fork was answered, not this


async def test_to_dict_is_nodes_edges_and_groups() -> None:
    _, inv, g = await graph_of(NESTED)
    d = g.to_dict()
    assert d["invocation_id"] == inv and d["groups"] == ["outer@1", "outer@1/inner@1"]
    assert {"src": "outer@1/draft@1", "dst": "outer@1/inner@1", "loop": False, "inferred": False} in d["edges"]
    sign = next(n for n in d["nodes"] if n["name"] == "sign")
    assert sign["status"] == "WAITING" and sign["waiting"] and sign["open_ids"] == ["sign"]


def test_runs_recorded_without_after_get_an_inferred_edge_from_run_order() -> None:
    def start(path: str, container: bool = False) -> Event:
        return Event(invocation_id="i", author="x", node_info=NodeInfo(
            path=path, run_id=path[-1], lifecycle="start", is_container=container or None))

    proj = Projection()
    for n, e in enumerate([start("wf@1", True), start("wf@1/a@1"), start("wf@1/b@1")], 1):
        proj.apply(e, n)
    g = invocation_graph(proj, "i")
    assert [(e.src, e.dst, e.inferred) for e in g.edges] == [("wf@1/a@1", "wf@1/b@1", True)]


def test_an_invocation_without_a_run_has_an_empty_graph() -> None:
    proj = Projection()
    proj.apply(Event(invocation_id="i", author="user"), 1)
    assert invocation_graph(proj, "i").nodes == ()


def test_the_drawing_says_when_edges_are_inferred() -> None:
    from console.graph_render import INFERRED_NOTE, notes

    def fold(after: dict[str, list[str] | None]) -> Projection:
        proj = Projection()
        proj.apply(Event(invocation_id="i", author="x", node_info=NodeInfo(
            path="wf@1", run_id="1", lifecycle="start", is_container=True)), 1)
        for n, (name, aft) in enumerate(after.items(), 2):
            proj.apply(Event(invocation_id="i", author=name, node_info=NodeInfo(
                path=f"wf@1/{name}@1", run_id="1", lifecycle="start", after=aft)), n)
        return proj

    assert notes(invocation_graph(fold({"a": None, "b": None}), "i")) == [INFERRED_NOTE]
    assert notes(invocation_graph(fold({"a": [], "b": ["a"]}), "i")) == []


# ---------------------------------------------------------------- wide fan-outs


async def test_side_by_side_siblings_are_one_set_and_fold_into_one_node() -> None:
    """WIDE: twelve checks between fetch and the join (kyc waits): one sibling set;
    folding the eleven completed ones keeps kyc's own box and fetch's edges."""
    from engine.graph_view import fold_siblings, sibling_sets
    from tests.graphs import CHECKS, WIDE

    _, _, g = await graph_of(WIDE)
    sets = sibling_sets(g)
    assert [sorted(n.name for n in s) for s in sets] == [sorted(CHECKS)]
    quiet = [n for n in sets[0] if n.name != "kyc"]
    folded = fold_siblings(g, quiet)
    node = next(n for n in folded.nodes if n.folded)
    assert node.label.startswith("×11 ") and node.dynamic and node.runs == 11
    assert node.counts == ((DisplayStatus.COMPLETED, 11),) and node.status is DisplayStatus.COMPLETED
    assert set(node.folded) == {f"{c}@1" for c in CHECKS if c != "kyc"}
    assert "wide@1/kyc@1" in folded.by_key and len(folded.nodes) == len(g.nodes) - 10
    names = edge_names(folded)
    assert ("fetch", node.name, False) in names and ("fetch", "kyc", False) in names
    assert len(folded.edges) == 2  # eleven edges from fetch became one
    # folding all twelve: the most urgent status (WAITING) and kyc's open id go to the node
    everything = fold_siblings(g, sets[0])
    whole = next(n for n in everything.nodes if n.folded)
    assert whole.status is DisplayStatus.WAITING and whole.open_ids == ("kyc-ok",) and whole.next == AUTO_COMPLETE
    assert dict(whole.counts) == {DisplayStatus.WAITING: 1, DisplayStatus.COMPLETED: 11}
    assert invocation_graph(*(await graph_of(WIDE))[:2]).nodes == g.nodes  # the view itself never folds


async def test_fan_outs_of_three_or_fewer_are_not_sets() -> None:
    from engine.graph_view import sibling_sets

    _, _, g = await graph_of(FANOUT)  # fetch -> items, notify, review_all: three, but items is a group
    assert sibling_sets(g) == []
