"""The graph of an invocation: nodes, edges, groups and marks, computed once.

A view over the projection (pure, like :mod:`engine.views`): the console's
graph screen and ``hitl show --graph`` (text and ``--json``) draw what
:func:`invocation_graph` returns; neither decides anything itself.

What it shows, from the events alone (no workflow code is imported):

* **Nodes** -- one per child name of a container run: loop iterations fold into
  their latest run (``deploy@3``, ``runs`` 3, by the folding rule of
  :mod:`engine.views`), and a caller's dynamic children of one name
  (``ctx.run_node``, a parallel worker's items) fold into one node
  ``label_item ×36`` with the count of each status.
* **Groups** -- a container run (the root workflow, a nested workflow, an
  orchestration node) is a group: its children are drawn inside it.
* **Edges** -- a Workflow child's start record names the siblings whose
  completion dispatched it (``NodeInfo.after``; ``[]`` is the edge from START,
  a join lists every predecessor). An edge whose target first ran before its
  source did goes back: a **loop** edge. Runs written before the field existed
  have no such record; their edge comes from the sibling that started just
  before them and is marked ``inferred``.
* **Marks** -- every WAITING node is ``waiting`` with its open ids; ``next``
  says what answering every open id of the invocation would do to it, by the
  projection's own rules (the dry run's): ``auto-complete`` (a leaf whose every
  id is then answered), ``re-execute`` (a rerun_on_resume node, and the
  containers above an answered node).

What it cannot see: nodes that have not run yet (the projection has no record of
them, so edges to them are not drawn), and edges to a node not yet dispatched.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from .models import Content, Event, NodeStatus
from .projection import NodeRun, Projection
from .status import DisplayStatus
from .views import display_status, visible_children

STATUS_PRIORITY: tuple[DisplayStatus, ...] = (
    DisplayStatus.FAILED,
    DisplayStatus.IN_DOUBT,
    DisplayStatus.INTERRUPTED,
    DisplayStatus.RUNNING,
    DisplayStatus.WAITING,
    DisplayStatus.PENDING,
    DisplayStatus.CANCELLED,
    DisplayStatus.COMPLETED,
)
"""A folded node's status: the first of these any of its runs has (what needs an operator first)."""

AUTO_COMPLETE = "auto-complete"
RE_EXECUTE = "re-execute"


@dataclass(frozen=True)
class GraphNode:
    """One node of the picture (a run, a folded loop, or folded dynamic children)."""

    key: str
    """Unique in the graph: the latest run's path, or ``PARENT/name×`` for folded dynamic children."""
    name: str
    path: str
    """The latest run's path (the one the console opens)."""
    run_id: str
    """The latest run's id."""
    status: DisplayStatus
    """The run's display status (liveness included); for folded children the most urgent."""
    group: str | None
    """The key of the group it is drawn in (None: the invocation's root)."""
    runs: int = 1
    """Runs folded into the node: loop iterations (by run id) or dynamic children."""
    dynamic: bool = False
    """Folded dynamic children of one caller (``runs`` items)."""
    counts: tuple[tuple[DisplayStatus, int], ...] = ()
    """For folded dynamic children: how many have each status (priority order)."""
    is_group: bool = False
    """A container whose children are drawn inside it."""
    open_ids: tuple[str, ...] = ()
    """Open interrupt ids of the node's own run(s) (not its children's)."""
    next: str | None = None
    """What answering every open id would do: ``auto-complete``, ``re-execute`` (or None)."""
    next_count: int = 0
    """For folded children: how many of them ``next`` applies to."""
    folded: tuple[str, ...] = ()
    """For siblings folded to fit a width (:func:`fold_siblings`): their labels."""

    @property
    def waiting(self) -> bool:
        return self.status is DisplayStatus.WAITING

    @property
    def label(self) -> str:
        """``name@run`` (``×N runs`` of a loop), ``name ×N`` for dynamic children, ``×N first…last``
        for folded siblings."""
        if self.folded:
            return f"×{self.runs} {self.name}"
        if self.dynamic:
            return f"{self.name} ×{self.runs}"
        return f"{self.name}@{self.run_id}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "name": self.name,
            "path": self.path,
            "run_id": self.run_id,
            "status": self.status.value,
            "group": self.group,
            "runs": self.runs,
            "dynamic": self.dynamic,
            "counts": {s.value: n for s, n in self.counts},
            "is_group": self.is_group,
            "waiting": self.waiting,
            "open_ids": list(self.open_ids),
            "next": self.next,
            "next_count": self.next_count,
        }


@dataclass(frozen=True)
class GraphEdge:
    src: str
    dst: str
    loop: bool = False
    """Goes back to a node that first ran before its source (a loop edge)."""
    inferred: bool = False
    """Not recorded by the events (run order): runs written before edges were recorded."""

    def to_dict(self) -> dict[str, Any]:
        return {"src": self.src, "dst": self.dst, "loop": self.loop, "inferred": self.inferred}


@dataclass(frozen=True)
class InvocationGraph:
    invocation_id: str
    nodes: tuple[GraphNode, ...]
    """Groups before their members, members in the order they first ran."""
    edges: tuple[GraphEdge, ...]
    """Between members of one group."""
    by_key: dict[str, GraphNode] = field(default_factory=dict, compare=False)

    @property
    def root(self) -> GraphNode | None:
        return self.nodes[0] if self.nodes else None

    def members(self, group: str | None) -> list[GraphNode]:
        return [n for n in self.nodes if n.group == group]

    def edges_in(self, group: str) -> list[GraphEdge]:
        keys = {n.key for n in self.members(group)}
        return [e for e in self.edges if e.src in keys]

    def to_dict(self) -> dict[str, Any]:
        return {
            "invocation_id": self.invocation_id,
            "nodes": [n.to_dict() for n in self.nodes],
            "edges": [e.to_dict() for e in self.edges],
            "groups": [n.key for n in self.nodes if n.is_group],
        }


def answer_effects(proj: Projection, invocation_id: str) -> dict[str, str]:
    """Path -> ``auto-complete`` / ``re-execute``: what answering every open id of
    the invocation would do, by the projection's rules (applied to a fork; the
    values do not matter to them, so none are given)."""
    open_ids = [i.id for i in proj.open_interrupts(invocation_id)]
    if not open_ids:
        return {}
    after = proj.fork()
    change = after.apply(
        Event(invocation_id=invocation_id, author="user", content=Content.from_responses(dict.fromkeys(open_ids)))
    )
    effects: dict[str, str] = {}
    for path in change.paths:
        run = after.get(invocation_id, path)
        if path in change.auto_completed:
            effects[path] = AUTO_COMPLETE
        elif run is not None and run.status is NodeStatus.PENDING:
            effects[path] = RE_EXECUTE
    return effects


def invocation_graph(
    proj: Projection, invocation_id: str, *, interrupted: bool = False, in_doubt: Iterable[str] = ()
) -> InvocationGraph:
    """The graph of ``invocation_id``'s current root run (liveness passed in, as to
    :func:`engine.views.display_status`)."""
    in_doubt = frozenset(in_doubt)
    root = proj.root(invocation_id)
    nodes: list[GraphNode] = []
    edges: list[GraphEdge] = []
    if root is None:
        return InvocationGraph(invocation_id, (), ())
    effects = answer_effects(proj, invocation_id)

    def status(run: NodeRun) -> DisplayStatus:
        return display_status(run, interrupted, in_doubt)

    def single(run: NodeRun, group: str | None, earlier: int) -> GraphNode:
        kids = visible_children(proj, run).shown
        return GraphNode(
            key=run.path,
            name=run.name,
            path=run.path,
            run_id=run.run_id,
            status=status(run),
            group=group,
            runs=earlier + 1,
            is_group=bool(kids),
            open_ids=tuple(run.own_pending),
            next=effects.get(run.path),
        )

    def visit(container: NodeRun, group: str | None, earlier: int) -> None:
        me = single(container, group, earlier)
        nodes.append(me)
        if not me.is_group:
            return
        shown = visible_children(proj, container).shown
        dynamic: dict[str, list[NodeRun]] = {}
        members: list[tuple[str, NodeRun]] = []  # (key, run) of workflow children, in the order they ran
        for run, hidden in shown:
            if run.call_key is not None:
                if run.name not in dynamic:
                    dynamic[run.name] = []
                    members.append((f"{container.path}/{run.name}×", run))
                dynamic[run.name].append(run)
            else:
                members.append((run.path, run))
                visit(run, me.key, hidden)
        for name, runs in dynamic.items():
            nodes.append(_folded(container.path, name, runs, me.key, status, effects))
        edges.extend(_edges(proj, container, members))

    visit(root, None, 0)
    return InvocationGraph(invocation_id, tuple(nodes), tuple(edges), {n.key: n for n in nodes})


def _folded(parent: str, name: str, runs: list[NodeRun], group: str, status: Any, effects: dict[str, str]) -> GraphNode:
    """A caller's dynamic children of one name as one node."""
    words = [status(r) for r in runs]
    counts = tuple((s, words.count(s)) for s in STATUS_PRIORITY if s in words)
    marks = [effects[r.path] for r in runs if r.path in effects]
    nxt = RE_EXECUTE if RE_EXECUTE in marks else (AUTO_COMPLETE if marks else None)
    latest = runs[-1]
    if len(runs) == 1:
        return GraphNode(
            key=f"{parent}/{name}×", name=name, path=latest.path, run_id=latest.run_id, status=words[0], group=group,
            open_ids=tuple(latest.own_pending), next=nxt, next_count=len(marks),
        )
    return GraphNode(
        key=f"{parent}/{name}×",
        name=name,
        path=next((r.path for r, w in zip(runs, words, strict=True) if w is counts[0][0]), latest.path),
        run_id=latest.run_id,
        status=counts[0][0],
        group=group,
        runs=len(runs),
        dynamic=True,
        counts=counts,
        open_ids=tuple(i for r in runs for i in r.own_pending),
        next=nxt,
        next_count=len(marks),
    )


def _edges(proj: Projection, container: NodeRun, members: list[tuple[str, NodeRun]]) -> list[GraphEdge]:
    """Edges between a container's workflow children, from every run of theirs the
    projection holds (earlier loop iterations included) -- see the module docstring."""
    key_of = {run.name: key for key, run in members if run.call_key is None}
    first: dict[str, int] = {}
    kids = [c for c in proj.children(container.invocation_id, container.path) if c.call_key is None]
    for c in kids:
        first.setdefault(c.name, c.started_pos)
    out: dict[tuple[str, str], GraphEdge] = {}
    previous: NodeRun | None = None
    for c in sorted(kids, key=lambda r: r.started_pos):
        dst = key_of.get(c.name)
        if dst is not None:
            if c.after is not None:
                sources, inferred = c.after, False
            else:
                sources, inferred = ([previous.name] if previous is not None else []), True
            for name in sources:
                src = key_of.get(name)
                if src is None or (src, dst) in out:
                    continue
                loop = first.get(c.name, 0) <= first.get(name, 0)
                out[(src, dst)] = GraphEdge(src, dst, loop=loop, inferred=inferred)
        previous = c
    return list(out.values())



QUIET = (DisplayStatus.COMPLETED, DisplayStatus.PENDING, DisplayStatus.CANCELLED)
"""Statuses that need no operator: a fold takes these siblings first."""


def sibling_sets(graph: InvocationGraph) -> list[list[GraphNode]]:
    """Members of one group that sit side by side in its picture -- the same edges in
    and out (a fan-out's branches; a caller's dynamic children of different names) and
    no members of their own -- in sets of three or more, the largest first."""
    ins: dict[str, set[str]] = {}
    outs: dict[str, set[str]] = {}
    for e in graph.edges:
        outs.setdefault(e.src, set()).add(e.dst)
        ins.setdefault(e.dst, set()).add(e.src)
    sets: dict[tuple[Any, ...], list[GraphNode]] = {}
    for n in graph.nodes:
        if n.group is not None and not n.is_group:
            sig = (n.group, frozenset(ins.get(n.key, ())), frozenset(outs.get(n.key, ())))
            sets.setdefault(sig, []).append(n)
    return sorted((m for m in sets.values() if len(m) >= 3), key=len, reverse=True)


def fold_siblings(graph: InvocationGraph, members: list[GraphNode]) -> InvocationGraph:
    """``graph`` with ``members`` (siblings of one :func:`sibling_sets` set) drawn as one
    node: ``×12 fraud…sanctions`` with the count of each status (the most urgent one
    is its status), their open ids and what an answer would do to them. Their edges
    become the node's. For a picture that must fit a width (``console.graph_render``);
    :func:`invocation_graph` itself never folds siblings."""
    keys = {m.key for m in members}
    first = members[0]
    words = [st for m in members for st, n in (m.counts if m.dynamic else ((m.status, 1),)) for _ in range(n)]
    counts = tuple((st, words.count(st)) for st in STATUS_PRIORITY if st in words)
    marks = [m.next for m in members if m.next]
    node = GraphNode(
        key=f"{first.key}+{len(members) - 1}",
        name=f"{first.name}…{members[-1].name}",
        path=next((m.path for m in members if m.status is counts[0][0]), first.path),
        run_id=first.run_id,
        status=counts[0][0],
        group=first.group,
        runs=len(members),
        dynamic=True,
        counts=counts,
        open_ids=tuple(i for m in members for i in m.open_ids),
        next=RE_EXECUTE if RE_EXECUTE in marks else (AUTO_COMPLETE if marks else None),
        next_count=sum(m.next_count if m.dynamic else 1 for m in members if m.next),
        folded=tuple(m.label for m in members),
    )
    nodes = [node if n.key == first.key else n for n in graph.nodes if n.key not in keys or n.key == first.key]
    edges: dict[tuple[str, str], GraphEdge] = {}
    for e in graph.edges:
        src = node.key if e.src in keys else e.src
        dst = node.key if e.dst in keys else e.dst
        if src != dst:
            edges.setdefault((src, dst), GraphEdge(src, dst, e.loop, e.inferred))
    return InvocationGraph(graph.invocation_id, tuple(nodes), tuple(edges.values()), {n.key: n for n in nodes})
