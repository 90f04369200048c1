"""The graph of one invocation (``v`` on the session screen).

Draws :func:`engine.graph_view.invocation_graph` of the session screen's
projection with :mod:`console.graph_render` -- the same picture as ``hitl show
--graph`` -- coloured by status: the waiting nodes in double boxes, what an
answer would do marked under them. It reads nothing itself: the session screen
below keeps its projection up to date (live polls, writes), and ``r`` redraws
from it. Larger than the terminal, it scrolls (arrows, page keys, home/end).
``j``/``k`` pick a node (the first waiting one at first; its name shows above the
picture), ``enter`` opens it in the session's node tree, ``e`` answers it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.containers import ScrollableContainer

from engine.graph_view import GraphNode, InvocationGraph, invocation_graph
from engine.views import invocation_display

from ..actions import bindings
from ..graph_render import EDGE_STYLE, LEGEND, LOOP_STYLE, MARK_STYLE, notes, rich_text
from ..text import counted
from ..widgets.footer import FittedFooter
from ..widgets.format import STATUS_CLASSES, STATUS_ICON, short, short_id
from ..widgets.plain import Static
from .base import HitlScreen

if TYPE_CHECKING:
    from .session import SessionScreen


class GraphView(Static):
    """The picture; colours come from app.tcss component classes."""

    COMPONENT_CLASSES: ClassVar[set[str]] = STATUS_CLASSES | {EDGE_STYLE, LOOP_STYLE, MARK_STYLE}

    def show(self, graph: InvocationGraph) -> None:
        styles = {c: self.get_component_rich_style(c, partial=True) for c in self.COMPONENT_CLASSES}
        self.update(rich_text(graph, styles) if graph.nodes else Text("no run yet"))


class GraphKeys:
    """The session screen's side of the graph: ``v`` (``session.graph``) opens it,
    and a graph open over the screen is redrawn when its projection changes."""

    def action_open_graph(self: Any) -> None:
        """The shown invocation as a graph, drawn from the session screen's projection."""
        self.app.push_screen(GraphScreen(self))

    def can_open_graph(self: Any) -> bool:
        return self.invocation_id is not None

    def redraw_graph(self: Any) -> None:
        for screen in self.app.screen_stack:
            if isinstance(screen, GraphScreen) and screen.session is self:
                screen.action_reload()


class GraphScreen(HitlScreen):
    AREA = "graph"
    HELP_AREAS = ("graph",)
    BINDINGS: ClassVar[list[BindingType]] = bindings("graph")

    def __init__(self, session: SessionScreen) -> None:
        super().__init__(classes="graph-screen")
        self.session = session
        self.session_id = session.session_id
        self.invocation_id = session.invocation_id
        self.graph: InvocationGraph | None = None
        """What is drawn (tests and the palette read it)."""
        self.picked: str | None = None
        """The key of the picked node (``j``/``k``): what ``enter`` opens and ``e`` answers."""

    def compose(self) -> ComposeResult:
        red = self.hitl.redactor
        yield self.compose_title(f"hitl ▸ Graph {short(self.session_id, 60, red)} ▸ {short_id(self.invocation_id or '')}")
        yield Static("", id="graph-info", classes="infoline")
        with ScrollableContainer(id="graph-scroll"):
            yield GraphView(id="graph")
        yield Static(LEGEND, id="graph-legend", classes="infoline")
        yield FittedFooter()

    def on_mount(self) -> None:
        self.action_reload()
        self.query_one("#graph-scroll").focus()

    def action_reload(self) -> None:
        """Redraw from the session screen's projection as it is now."""
        s = self.session
        inv = self.invocation_id
        if inv is None:
            return
        self.graph = invocation_graph(s.proj, inv, interrupted=s.interrupted, in_doubt=s.in_doubt)
        self.query_one(GraphView).show(self.graph)
        word = invocation_display(s.proj, inv, s.interrupted, s.queued_for is not None)
        waiting = [n for n in self.graph.nodes if n.waiting and not n.is_group]
        open_ids = sum(len(n.open_ids) for n in self.graph.nodes)
        info = Text(f"invocation {short_id(inv)}  ")
        if word is not None:
            info.append(f"{STATUS_ICON[word]} {word.value}")
        info.append(f"  {counted(len(self.graph.nodes), 'node')}  {counted(len(self.graph.edges), 'edge')}")
        if waiting:
            info.append(f"  {len(waiting)} waiting, {counted(open_ids, 'open id')}")
        for note in notes(self.graph):
            info.append(f"  ({note})")
        if not s.complete:
            info.append("  (earlier loop runs loading: redrawn when they are in)")
        nodes = self._pickable()
        if self.picked not in {n.key for n in nodes}:
            self.picked = next((n.key for n in nodes if n.open_ids), nodes[0].key if nodes else None)
        node = self.picked_node
        if node is not None:
            info.append("\n▸ ", "bold")
            info.append(short(node.path, 60, self.hitl.redactor), "bold")
            info.append(f"  {STATUS_ICON.get(node.status, '')} {node.status.value}")
            info.append("  (enter: open in the tree" + (", e: answer)" if node.open_ids else ")"), "dim")
        self.query_one("#graph-info", Static).update(info)

    def _pickable(self) -> list[GraphNode]:
        """The nodes ``j``/``k`` step through, in the picture's order (groups too: a group opens)."""
        return [n for n in (self.graph.nodes if self.graph else []) if n.path]

    @property
    def picked_node(self) -> GraphNode | None:
        return next((n for n in self._pickable() if n.key == self.picked), None)

    def action_pick(self, delta: int) -> None:
        nodes = self._pickable()
        if not nodes:
            return
        keys = [n.key for n in nodes]
        i = keys.index(self.picked) if self.picked in keys else -delta
        self.picked = keys[(i + delta) % len(keys)]
        self.action_reload()

    def action_open_node(self) -> None:
        """Back to the session screen, its tree cursor on the picked node."""
        node = self.picked_node
        if node is None:
            return
        self.app.pop_screen()
        self.session.run_tree.select_path(node.path)
        self.session.run_tree.focus()

    def can_answer_node(self) -> bool:
        node = self.picked_node
        return node is not None and bool(node.open_ids)

    def action_answer_node(self) -> None:
        """The response editor over the picked node's open ids (as ``e`` on it in the tree)."""
        node = self.picked_node
        if node is None or not node.open_ids:
            self.notify("The picked node waits for nothing: pick a waiting one (j / k).")
            return
        self.action_open_node()
        self.session.action_answer(list(node.open_ids))
