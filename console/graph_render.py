"""Draw an :class:`~engine.graph_view.InvocationGraph` on a character grid.

One drawing for every surface: ``hitl show --graph`` prints :func:`plain_lines`,
the console's graph screen shows :func:`rich_text` (the same characters, each
coloured by its node's status class). Nothing here decides what the graph is
(:mod:`engine.graph_view` does); this only places it.

Layout is grandalf's Sugiyama layering (pure Python; it places the nodes of each
group in layers, top to bottom, ordering each layer to reduce crossings and
routing long edges through dummy positions). We chose it over netext, which
renders through Rich only (the CLI prints plain text), is a compiled extension
pulling in networkx, and says its API will still change. Groups are laid out
inside out: a nested workflow's members are laid out first and the group is one
box of that size in its parent's layout.

Drawing: a node is a box (double border when it is WAITING: the ones an
operator is looked for), its label ``name@run``, its status word and counts,
and the mark of what an answer would do (``answer → auto-complete``); a group is
a rounded box titled the same way. Edges go down from a node's bottom border
to an arrow above the next node's top border, turning in the row between
layers; a loop edge goes out of its source's right side, up a lane right of the
group and into its target's right side (``◀``). Lines pass behind boxes.

A picture wider than :data:`MAX_WIDTH` folds its widest fan-out (:func:`draw_graph`):
``hitl show --graph`` and the console draw the same folded picture; ``--json``
keeps every node.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from grandalf.graphs import Edge, Graph, Vertex
from grandalf.layouts import SugiyamaLayout

from engine.graph_view import QUIET, GraphNode, InvocationGraph, fold_siblings, sibling_sets
from engine.status import DisplayStatus

from .widgets.format import STATUS_ICON

if TYPE_CHECKING:
    from rich.style import Style
    from rich.text import Text

MAX_WIDTH = 120
"""Columns a picture is folded to fit (:func:`draw_graph`): the console's and ``hitl show --graph``'s alike."""
NODE_TEXT = 30
"""Widest text inside a node box (longer labels are cut with ``…``)."""
XSPACE = 3
"""Columns between boxes of one layer."""
GAP = 2
"""Rows between layers: the row where edges turn, the arrows."""
LOOP_LANE = 3
"""Columns per loop edge right of a group."""

UP, DOWN, LEFT, RIGHT = 1, 2, 4, 8
LINES = {
    UP | DOWN: "│", LEFT | RIGHT: "─", DOWN | RIGHT: "┌", DOWN | LEFT: "┐", UP | RIGHT: "└", UP | LEFT: "┘",
    UP | DOWN | RIGHT: "├", UP | DOWN | LEFT: "┤", DOWN | LEFT | RIGHT: "┬", UP | LEFT | RIGHT: "┴",
    UP | DOWN | LEFT | RIGHT: "┼", UP: "│", DOWN: "│", LEFT: "─", RIGHT: "─",
}
LEGEND = "╔═╗ waiting · answer → what answering every open id does · ◀ loop edge · nodes not run yet are not drawn"
"""Under every picture: what its marks mean."""
EDGE_STYLE = "graph--edge"
LOOP_STYLE = "graph--loop"
MARK_STYLE = "graph--next"


@dataclass
class Canvas:
    """A grid of characters, each with a style class (None: plain)."""

    width: int
    height: int
    chars: list[list[str]] = field(default_factory=list)
    styles: list[list[str | None]] = field(default_factory=list)
    solid: list[list[bool]] = field(default_factory=list)
    """Cells of a box (edges pass behind them)."""
    lines: dict[tuple[int, int], int] = field(default_factory=dict)
    """Edge cells: (x, y) -> the directions they connect."""
    line_styles: dict[tuple[int, int], str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.chars = [[" "] * self.width for _ in range(self.height)]
        self.styles = [[None] * self.width for _ in range(self.height)]
        self.solid = [[False] * self.width for _ in range(self.height)]

    def put(self, x: int, y: int, text: str, style: str | None, *, solid: bool = True) -> None:
        for i, ch in enumerate(text):
            if 0 <= x + i < self.width and 0 <= y < self.height:
                self.chars[y][x + i] = ch
                self.styles[y][x + i] = style
                self.solid[y][x + i] = self.solid[y][x + i] or solid

    def blit(self, other: Canvas, x: int, y: int) -> None:
        other.flatten()
        for row in range(other.height):
            for col in range(other.width):
                if other.chars[row][col] != " " or other.solid[row][col]:
                    self.put(x + col, y + row, other.chars[row][col], other.styles[row][col],
                             solid=other.solid[row][col])

    def link(self, x: int, y: int, dirs: int, style: str) -> None:
        if 0 <= x < self.width and 0 <= y < self.height and not self.solid[y][x]:
            self.lines[(x, y)] = self.lines.get((x, y), 0) | dirs
            self.line_styles.setdefault((x, y), style)

    def vline(self, x: int, y0: int, y1: int, style: str) -> None:
        lo, hi = sorted((y0, y1))
        for y in range(lo, hi + 1):
            self.link(x, y, (UP if y > lo else 0) | (DOWN if y < hi else 0), style)

    def hline(self, y: int, x0: int, x1: int, style: str) -> None:
        lo, hi = sorted((x0, x1))
        for x in range(lo, hi + 1):
            self.link(x, y, (LEFT if x > lo else 0) | (RIGHT if x < hi else 0), style)

    def flatten(self) -> None:
        """Turn the edge cells into box-drawing characters (once drawing is done)."""
        for (x, y), dirs in self.lines.items():
            if not self.solid[y][x] and dirs:
                self.chars[y][x] = LINES[dirs]
                self.styles[y][x] = self.line_styles[(x, y)]
        self.lines.clear()

    def rows(self) -> Iterator[list[tuple[str, str | None]]]:
        self.flatten()
        for y in range(self.height):
            yield list(zip(self.chars[y], self.styles[y], strict=True))


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def status_style(status: DisplayStatus) -> str:
    return status.css_class


def node_lines(node: GraphNode) -> list[str]:
    """The text of a node's box (or a group's title, joined by `` · ``)."""
    icon = STATUS_ICON.get(node.status.value, "")
    lines = [node.label]
    if node.dynamic:
        lines.append(" · ".join(f"{n} {s.value}" for s, n in node.counts))
    else:
        word = f"{icon} {node.status.value}".strip()
        lines.append(word + (f" · {node.runs} runs" if node.runs > 1 else ""))
    if node.open_ids:
        lines.append(f"waits on {node.open_ids[0]}" if len(node.open_ids) == 1 else f"{len(node.open_ids)} open ids")
    if node.next:
        count = f"{node.next_count} " if node.dynamic and node.next_count else ""
        lines.append(f"answer → {count}{node.next}")
    return lines


def _leaf_box(node: GraphNode) -> Canvas:
    text = [_cut(line, NODE_TEXT) for line in node_lines(node)]
    inner = max(len(t) for t in text)
    c = Canvas(inner + 4, len(text) + 2)
    style = status_style(node.status)
    h, v, corners = ("═", "║", "╔╗╚╝") if node.waiting else ("─", "│", "┌┐└┘")
    c.put(0, 0, corners[0] + h * (inner + 2) + corners[1], style)
    for i, t in enumerate(text):
        line_style = MARK_STYLE if t.startswith("answer →") else style
        c.put(0, i + 1, v + " ", style)
        c.put(2, i + 1, t.ljust(inner), line_style)
        c.put(inner + 2, i + 1, " " + v, style)
    c.put(0, len(text) + 1, corners[2] + h * (inner + 2) + corners[3], style)
    return c


class _View:
    def __init__(self, w: int, h: int) -> None:
        self.w, self.h = w, h
        self.xy: tuple[float, float] = (0.0, 0.0)


class _EdgeView:
    def __init__(self) -> None:
        self.points: list[tuple[float, float]] = []

    def setpath(self, pts: list[tuple[float, float]]) -> None:
        self.points = list(pts)


def draw_graph(graph: InvocationGraph, width: int = MAX_WIDTH) -> Canvas:
    """The whole picture (empty when the invocation has no run yet), at most ``width``
    columns wide where folding can make it so: while it is wider, the largest set of
    side-by-side siblings (:func:`engine.graph_view.sibling_sets`, a 12-way fan-out)
    gives way -- first its members that need no operator (completed, pending,
    cancelled: the waiting and failed ones keep their own boxes), then all of them --
    into one ``×12 first…last`` node (:func:`engine.graph_view.fold_siblings`)."""
    if graph.root is None:
        return Canvas(0, 0)
    canvas = _draw(graph, graph.root)
    while canvas.width > width:
        folded = _fold_widest(graph)
        if folded is None or folded.root is None:
            break
        graph = folded
        canvas = _draw(graph, folded.root)
    return canvas


def _fold_widest(graph: InvocationGraph) -> InvocationGraph | None:
    for members in sibling_sets(graph):
        quiet = [m for m in members if m.status in QUIET and not m.open_ids]
        if 2 <= len(quiet) < len(members):
            return fold_siblings(graph, quiet)
        return fold_siblings(graph, members)
    return None


def _draw(graph: InvocationGraph, node: GraphNode) -> Canvas:
    if not node.is_group:
        return _leaf_box(node)
    inner = _layout(graph, node.key)
    title = " " + " · ".join(node_lines(node)) + " "
    style = status_style(node.status)
    width = max(inner.width + 4, len(title) + 4)
    c = Canvas(width, inner.height + 4)
    h, v = ("═", "║") if node.waiting else ("─", "│")
    top = ("╔" if node.waiting else "╭") + h + title + h * (width - len(title) - 3) + ("╗" if node.waiting else "╮")
    c.put(0, 0, top, style)
    for y in range(1, c.height - 1):
        c.put(1, y, " " * (width - 2), None)  # the inside is the group's: outer lines pass behind it
        c.put(0, y, v, style)
        c.put(width - 1, y, v, style)
    c.put(0, c.height - 1, ("╚" if node.waiting else "╰") + h * (width - 2) + ("╝" if node.waiting else "╯"), style)
    c.blit(inner, 2, 2)
    return c


def _layout(graph: InvocationGraph, group: str) -> Canvas:
    """A group's members placed by grandalf, with their edges drawn."""
    members = graph.members(group)
    boxes = {m.key: _draw(graph, m) for m in members}
    edges = graph.edges_in(group)
    vertices = {m.key: Vertex(m.key) for m in members}
    for m in members:
        vertices[m.key].view = _View(boxes[m.key].width, boxes[m.key].height)
    forward = [e for e in edges if not e.loop and e.src != e.dst]
    g_edges = []
    for e in forward:
        ge = Edge(vertices[e.src], vertices[e.dst])
        ge.view = _EdgeView()
        g_edges.append((e, ge))
    g = Graph(list(vertices.values()), [ge for _, ge in g_edges])
    # Each connected part is laid out on its own and the parts are set side by
    # side, in the order their first member ran.
    order = {m.key: i for i, m in enumerate(members)}
    parts = sorted(g.C, key=lambda part: min(order[v.data] for v in part.sV))
    place: dict[str, tuple[int, int]] = {}  # key -> (left x, layer)
    layers_of: list[dict[float, int]] = []
    x_off = 0
    part_points: dict[int, list[tuple[float, float]]] = {}
    for part in parts:
        sug = SugiyamaLayout(part)
        sug.xspace, sug.yspace = XSPACE, GAP
        roots = [v for v in part.sV if not v.e_in()]
        sug.init_all(roots=sorted(roots, key=lambda v: order[v.data]) or None)
        sug.draw()
        ys = sorted({round(v.view.xy[1], 3) for v in part.sV})
        layer_no = {y: i for i, y in enumerate(ys)}
        layers_of.append(layer_no)
        # long edges pass dummy positions of the layers between: they count for the width too
        bends = [px for _, ge in g_edges if ge in part.sE for px, _ in ge.view.points]
        left = min([v.view.xy[0] - v.view.w / 2 for v in part.sV] + [px - 1 for px in bends])
        right = max([v.view.xy[0] + v.view.w / 2 for v in part.sV] + [px + 2 for px in bends])
        for v in part.sV:
            x = round(v.view.xy[0] - v.view.w / 2 - left) + x_off
            place[v.data] = (x, layer_no[round(v.view.xy[1], 3)])
        for e, ge in g_edges:
            if ge in part.sE:
                part_points[id(e)] = [(px - left + x_off, py) for px, py in ge.view.points]
        x_off += round(right - left) + XSPACE + 1
    # Rows: every layer is as tall as its tallest box; GAP rows between layers.
    n_layers = max((p[1] for p in place.values()), default=-1) + 1
    heights = [0] * n_layers
    for key, (_, layer) in place.items():
        heights[layer] = max(heights[layer], boxes[key].height)
    tops = []
    y = 0
    for h in heights:
        tops.append(y)
        y += h + GAP
    height = max(y - GAP, 1)
    loops = [e for e in edges if e.loop or e.src == e.dst]
    width = max([place[k][0] + boxes[k].width for k in place] + [x_off - XSPACE - 1], default=1)
    lane0 = width + 1
    c = Canvas(width + (1 + LOOP_LANE * len(loops) if loops else 0), height)
    for key, (x, layer) in place.items():
        c.blit(boxes[key], x, tops[layer])

    def centre(key: str) -> int:
        return place[key][0] + boxes[key].width // 2

    def bottom(key: str) -> int:
        return tops[place[key][1]] + boxes[key].height - 1

    def channel(layer: int) -> int:
        return tops[layer] + heights[layer] + GAP - 2

    fan_in = {k: sum(1 for e in forward if e.dst == k) for k in place}
    for e in forward:
        pts = part_points.get(id(e), [])
        src_layer, dst_layer = place[e.src][1], place[e.dst][1]
        xs = [round(px + 0) for px, _ in pts] if len(pts) >= 2 else [centre(e.src), centre(e.dst)]
        xs[0], xs[-1] = centre(e.src), centre(e.dst)
        if len(xs) == 2 and abs(xs[1] - xs[0]) <= 2 and fan_in[e.dst] == 1:
            xs[1] = xs[0]  # straight down rather than a one-column jog (edges into a join meet at its centre)
        style = EDGE_STYLE
        _tee(c, centre(e.src), bottom(e.src))
        cur_x, cur_y = xs[0], bottom(e.src) + 1
        c.link(cur_x, cur_y, UP, style)  # joins the tee above
        layers = list(range(src_layer, dst_layer))
        for i, layer in enumerate(layers):
            row = channel(layer)
            nxt = xs[min(i + 1, len(xs) - 1)]
            c.vline(cur_x, cur_y, row, style)
            c.hline(row, cur_x, nxt, style)
            cur_x, cur_y = nxt, row
            if i + 1 < len(layers):  # through a dummy position of the next layer
                c.vline(cur_x, row, channel(layer + 1), style)
                cur_y = channel(layer + 1)
        arrow_y = tops[dst_layer] - 1
        c.vline(cur_x, cur_y, arrow_y, style)
        c.lines.pop((cur_x, arrow_y), None)
        c.put(cur_x, arrow_y, "▼", style, solid=False)
    for i, e in enumerate(loops):
        lane = lane0 + LOOP_LANE * i + 1
        sy = tops[place[e.src][1]] + 1
        dy = tops[place[e.dst][1]] + 2
        sx = place[e.src][0] + boxes[e.src].width
        dx = place[e.dst][0] + boxes[e.dst].width
        c.hline(sy, sx, lane, LOOP_STYLE)
        c.vline(lane, sy, dy, LOOP_STYLE)
        c.hline(dy, dx + 1, lane, LOOP_STYLE)
        c.lines.pop((dx, dy), None)
        c.put(dx, dy, "◀", LOOP_STYLE, solid=False)
    return c


def _tee(c: Canvas, x: int, y: int) -> None:
    """Where an edge leaves a box: its bottom border gets a tee."""
    if 0 <= y < c.height and 0 <= x < c.width:
        c.chars[y][x] = {"─": "┬", "═": "╤"}.get(c.chars[y][x], c.chars[y][x])


INFERRED_NOTE = "some edges are inferred from run order: these runs were recorded before edges were"


def notes(graph: InvocationGraph) -> list[str]:
    """What the picture cannot show by itself, one line each (under the legend)."""
    return [INFERRED_NOTE] if any(e.inferred for e in graph.edges) else []


def plain_lines(graph: InvocationGraph) -> list[str]:
    """The picture as text (``hitl show --graph``), trailing blanks trimmed."""
    return ["".join(ch for ch, _ in row).rstrip() for row in draw_graph(graph).rows()]


def rich_text(graph: InvocationGraph, styles: Mapping[str, str | Style]) -> Text:
    """The picture for the console: ``styles`` maps a style class to a Rich style."""
    from rich.text import Text  # not for the CLI's plain text

    text = Text(no_wrap=True, overflow="ignore")
    for n, row in enumerate(draw_graph(graph).rows()):
        if n:
            text.append("\n")
        for ch, cls in row:
            text.append(ch, styles.get(cls or "", ""))
    text.rstrip()
    return text
